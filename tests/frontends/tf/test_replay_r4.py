"""lazyx.compile with TensorFlow: a Python float argument is a run-time parameter whatever its
value (2.0 and 0.5 as well as 1.25), also through TF's own conversion of it; a step may
return a plain TF tensor (an EagerTensor), as the uncompiled step does; a Keras model holding
a constant tensor replays after an optimizer's warm-up call. Each compares with eager TF."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

X = np.linspace(-1.0, 1.0, 6, dtype=np.float32) + 0.25


@pytest.mark.parametrize("ks", [(2.0, 3.0, 4.0, 7.0, 0.25), (0.5, 1.5, 2.5, -0.5, 6.0)])
@pytest.mark.parametrize("fn", [
    lambda x, k: tf.reduce_sum(x) * k,
    lambda x, k: k * x - k,
    lambda x, k: tf.maximum(x, k / 4),
    lambda x, k: tf.clip_by_value(x, -abs(k), abs(k)),
], ids=["scale", "rmul", "maximum", "clip"])
def test_float_argument_is_a_run_time_parameter(fn, ks):
    # TF's conversion of the number (convert_to_tensor) made it a plain NumPy scalar: a
    # whole or half number, looking like a code constant, was baked and guarded by value
    g = lazyx.compile(fn)
    lazyx.reset_metrics()
    for k in ks:
        want = fn(tf.constant(X), k).numpy()
        np.testing.assert_allclose(np.asarray(g(ltf.constant(X), k)), want, rtol=1e-6)
    m = lazyx.metrics()
    # the second call traces once more to confirm that k only feeds the graph
    assert m["replays"] == len(ks) - 2 and m["replay_misses"] == 0, m


@pytest.mark.parametrize("fn", [
    lambda x, k: keras.ops.multiply(x, k),
    lambda x, k: x + tf.constant(k),
    lambda x, k: x * tf.cast(k, tf.float32),
    lambda x, k: keras.ops.clip(x, -k, k) + keras.ops.convert_to_tensor(k),
], ids=["keras_multiply", "tf_constant", "tf_cast", "keras_clip"])
def test_float_argument_converted_by_tf_or_keras_is_a_run_time_parameter(fn):
    # TF or Keras makes an EagerTensor of the number before lazyx sees it: linked by value,
    # whole numbers too (the first call with a new value traces once more to confirm); a
    # number TF's scalar cache holds from an earlier trace is no branch of this one; and
    # Keras read a symbolic number's dtype as "Invalid dtype: SymFloat"
    warm = lazyx.compile(lambda x, k: tf.where(x > 0.3, x, k))  # (TF caches its k)
    for k in (2.0, 3.0):
        warm(ltf.constant(X), k)
    g = lazyx.compile(fn)
    lazyx.reset_metrics()
    ks = (2.0, 3.0, 4.0, 0.5, 7.0, 1.0)
    for k in ks:
        want = np.asarray(fn(tf.constant(X), k))
        got = np.asarray(g(ltf.constant(X), k))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    m = lazyx.metrics()
    assert m["replays"] >= len(ks) - 2 and m["replay_misses"] == 0, m


def test_loss_scale_float_in_a_tape_step_replays():
    def make(tape_cls, v):
        def train(x, k):
            with tape_cls() as t:
                loss = tf.reduce_sum(x * v) * k
            v.assign_sub(0.1 * t.gradient(loss, v))
            return loss
        return train
    ks = (2.0, 3.0, 0.5, 4.0, 1.0, 5.0)
    v_eager = tf.Variable(np.ones(6, np.float32))
    eager = make(tf.GradientTape, v_eager)
    want = [float(eager(tf.constant(X), k)) for k in ks]
    v = tf.Variable(np.ones(6, np.float32))
    g = lazyx.compile(make(ltf.GradientTape, v))
    lazyx.reset_metrics()
    got = [float(np.asarray(g(ltf.constant(X), k))) for k in ks]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(v.numpy(), v_eager.numpy(), rtol=1e-5)
    m = lazyx.metrics()
    # the second call traces once more to confirm that k only feeds the graph
    assert m["replays"] == len(ks) - 2 and m["replay_misses"] == 0, m


def test_int_used_as_a_size_is_still_guarded():
    def step(x, n):
        return tf.reshape(x, [n, -1]) * n
    g = lazyx.compile(step)
    lazyx.reset_metrics()
    for n in (2, 3, 2, 3, 6):
        want = step(tf.constant(X), n).numpy()
        got = np.asarray(g(ltf.constant(X), n))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want)
    m = lazyx.metrics()
    assert m["replays"] == 2, m


def test_eager_tensor_result_is_returned():
    def step(x):
        scale = tf.constant(2.0)  # a schedule value, also returned for logging
        return x * scale, scale, tf.ones([2]) * 3.0
    g = lazyx.compile(step)
    lazyx.reset_metrics()
    for k in range(4):
        x = np.array([1.0, 2.0 + k], np.float32)
        want = [t.numpy() for t in step(tf.constant(x))]
        out = g(ltf.constant(x))
        assert isinstance(out, tuple) and len(out) == 3
        for a, b in zip(out, want):
            np.testing.assert_array_equal(np.asarray(a), b)
    assert lazyx.metrics()["replays"] >= 2


def test_eager_tensor_result_made_from_a_changing_number_is_not_stale():
    def step(x, k):
        return x * k, tf.constant(k)  # the EagerTensor's value changes with the call
    g = lazyx.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in (1.5, 2.5, 3.5, 4.5):
            out = g(ltf.constant(X), k)
            np.testing.assert_allclose(np.asarray(out[0]), X * np.float32(k))
            assert float(np.asarray(out[1])) == np.float32(k)
    assert any("computed outside lazyx" in str(w.message) for w in caught)


def _model_with_constant(opt_name):
    keras.utils.set_random_seed(0)
    i = keras.Input((8, 16))
    h = keras.layers.Dense(16)(i)
    enc = np.sin(np.arange(8 * 16, dtype=np.float32)).reshape(1, 8, 16)
    h = h + tf.constant(enc)  # a fixed positional encoding: a constant the model holds
    return keras.Model(i, keras.layers.Dense(1)(h)), keras.optimizers.get(opt_name)


@pytest.mark.parametrize("opt_name", ["adam", "rmsprop"])
def test_keras_model_holding_a_constant_replays_after_optimizer_warm_up(opt_name):
    data = []
    for k in range(6):
        r = np.random.default_rng(k)
        data.append((r.standard_normal((4, 8, 16)).astype(np.float32),
                     r.standard_normal((4, 8, 1)).astype(np.float32)))
    results = {}
    for mode in ("eager", "compiled"):
        m, opt = _model_with_constant(opt_name)
        tape = tf.GradientTape if mode == "eager" else ltf.GradientTape
        mk = tf.constant if mode == "eager" else ltf.constant

        def step(x, y):
            with tape() as t:
                loss = tf.reduce_mean((m(x, training=True) - y) ** 2)
            g = t.gradient(loss, m.trainable_variables)
            opt.apply_gradients(zip(g, m.trainable_variables))
            return loss
        f = lazyx.compile(step) if mode == "compiled" else step
        lazyx.reset_metrics()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = [float(np.asarray(f(mk(x), mk(y)))) for x, y in data]
        results[mode] = (losses, [np.asarray(w) for w in m.weights])
        if mode == "compiled":
            assert not [w for w in caught if "lazyx.compile" in str(w.message)]
            assert lazyx.metrics()["replays"] >= len(data) - 2, lazyx.metrics()
    np.testing.assert_allclose(results["compiled"][0], results["eager"][0], rtol=1e-4,
                               atol=1e-5)
    for a, b in zip(results["compiled"][1], results["eager"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)
