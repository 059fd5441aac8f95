"""tf.map_fn, tf.vectorized_map, tf.scan, tf.foldl / foldr and keras.ops.map / scan /
vectorized_map over lazy elements: the Python body runs per element (the trip count is
static) and the results are stacked -- lazy, no fallback, eager TF's numbers and gradients
under both tapes. Keras' map and scan raised inside TF; the others were counted fallbacks."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

K = keras.ops
X = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)

CASES = {
    "map_fn": lambda x: tf.map_fn(lambda r: tf.reduce_sum(r * r) + r[0], x),
    "map_fn_nested": lambda x: tf.map_fn(
        lambda p: (p[0] * p[1], tf.reduce_max(p[1])), (x, tf.tanh(x)),
        fn_output_signature=(tf.float32, tf.float32)),
    "vectorized_map": lambda x: tf.vectorized_map(lambda r: tf.nn.softmax(r) * r, x),
    "scan": lambda x: tf.scan(lambda a, r: a * 0.5 + tf.sin(r), x, initializer=tf.zeros(4)),
    "scan_no_init_reverse": lambda x: tf.scan(lambda a, r: a * r + 1.0, x, reverse=True),
    "scan_nested": lambda x: tf.scan(lambda a, r: (a[0] + r, a[1] * tf.cos(r)), x,
                                     initializer=(tf.zeros(4), tf.ones(4))),
    "foldl": lambda x: tf.foldl(lambda a, r: a * 0.9 + r * r, x),
    "foldr": lambda x: tf.foldr(lambda a, r: a * 0.9 + tf.exp(r), x, initializer=tf.ones(4)),
    "keras_map": lambda x: K.map(lambda r: K.sum(r * r), x),
    "keras_map_nested": lambda x: K.map(lambda d: {"s": d["a"] + d["b"]}, {"a": x, "b": x * x}),
    "keras_scan": lambda x: K.scan(lambda c, r: (c * 0.5 + r, c * 2.0), K.zeros((4,)), x),
    "keras_scan_reverse": lambda x: K.scan(lambda c, r: (c + r, K.tanh(c)), x[0] * 0.0, x,
                                           reverse=True),
    "keras_scan_length": lambda x: K.scan(lambda c, _: (c * 1.5, c), x[1], None, length=3),
    "keras_vectorized_map": lambda x: K.vectorized_map(lambda r: K.sum(r) * r, x),
}


def _close(got, want):
    got, want = tf.nest.flatten(got), tf.nest.flatten(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, ltf.Tensor), type(g)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_mapping_over_lazy_elements_stays_lazy(name):
    want = CASES[name](tf.constant(X))
    lazyx.reset_metrics()
    got = CASES[name](ltf.constant(X))
    assert lazyx.metrics()["fallback_ops"] == {} and lazyx.metrics()["syncs"] == 0
    _close(got, want)


@pytest.mark.parametrize("tape", ["tf", "ltf"])
@pytest.mark.parametrize("name", ["map_fn", "scan", "scan_no_init_reverse", "foldr",
                                  "keras_scan", "keras_map", "vectorized_map"])
def test_gradients_through_the_loop_match_tf(name, tape):
    w = tf.Variable(np.linspace(0.5, 1.5, 4).astype(np.float32))

    def grad(tape_type, make):
        x = make(X)
        with tape_type() as t:
            t.watch(x)
            loss = sum(tf.reduce_sum(tf.cast(o, tf.float32) ** 2)
                       for o in tf.nest.flatten(CASES[name](x * w)))
        return t.gradient(loss, [x, w])

    got = grad(ltf.GradientTape if tape == "ltf" else tf.GradientTape, ltf.constant)
    want = grad(tf.GradientTape, tf.constant)
    for g, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), v.numpy(), rtol=1e-4, atol=1e-5)


def test_a_compiled_step_with_a_scan_replays():
    step = lazyx.compile(lambda x: tf.scan(lambda a, r: a * 0.5 + r, x))
    lazyx.reset_metrics()
    for k in range(3):
        _close(step(ltf.constant(X + k)), tf.scan(lambda a, r: a * 0.5 + r, tf.constant(X + k)))
    assert lazyx.metrics()["replays"] >= 1 and lazyx.metrics()["fallback_ops"] == {}


def test_no_static_trip_count_is_tfs_own_call():
    # zero elements: no body run to stack, so TF's function runs on the materialized value
    empty = np.zeros((0, 4), np.float32)
    want = tf.map_fn(lambda r: r * 2.0, tf.constant(empty))
    got = tf.map_fn(lambda r: r * 2.0, ltf.constant(empty))
    assert np.asarray(got).shape == tuple(want.shape)
    # eager elements and inside a tf.function: TF's own
    f = tf.function(lambda t: tf.map_fn(lambda r: r * 3.0, t))
    np.testing.assert_allclose(f(tf.constant(X)).numpy(), X * 3.0, rtol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda x: tf.scan(lambda a, r: a * 0.5 + r, x),
    lambda x: K.scan(lambda c, r: (c * 0.5 + r, c), K.zeros((4,)), x),
    lambda x: K.map(lambda r: K.sum(r), x),
], ids=["tf_scan", "keras_scan", "keras_map"])
def test_longer_than_the_unroll_limit_is_a_counted_fallback(fn, monkeypatch):
    # XLA's compile time grows with the copies of the body: a long sequence runs TF's loop
    from lazyx.frontends.tf import control_flow
    monkeypatch.setattr(control_flow, "UNROLL_LIMIT", 4)
    want = fn(tf.constant(X))
    lazyx.reset_metrics()
    got = fn(ltf.constant(X))
    assert sum(lazyx.metrics()["fallback_ops"].values()) >= 1
    for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-5, atol=1e-6)
