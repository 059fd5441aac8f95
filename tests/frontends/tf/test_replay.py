"""lazyx.compile with TensorFlow: a step updating tf.Variables under ltf.GradientTape
replays with the uncompiled lazy run's numbers (and eager TF's within tolerance), the
variables are written back, and a Keras model with a Keras optimizer trains with the
uncompiled run's numbers (Keras reads its `iterations` counter eagerly, so that step runs
lazily instead of being replayed, with a warning)."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


def _data(steps):
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((8, 4)).astype(np.float32),
             rng.standard_normal((8, 3)).astype(np.float32)) for _ in range(steps)]


def _variables():
    rng = np.random.default_rng(1)
    return (tf.Variable(rng.standard_normal((4, 3)).astype(np.float32)),
            tf.Variable(np.zeros(3, np.float32)))


def _sgd_step(w, b, tape_cls):
    def step(x, y, lr):
        with tape_cls() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(lr * gw)
        b.assign_sub(lr * gb)
        return loss
    return step


def test_variable_updates_replay_like_the_uncompiled_run():
    data = _data(5)
    eager_w, eager_b = _variables()
    plain_w, plain_b = _variables()
    comp_w, comp_b = _variables()
    eager = _sgd_step(eager_w, eager_b, tf.GradientTape)
    plain = _sgd_step(plain_w, plain_b, ltf.GradientTape)
    comp = lazyx.compile(_sgd_step(comp_w, comp_b, ltf.GradientTape))
    lazyx.reset_metrics()
    for k, (x, y) in enumerate(data):
        lr = 0.1 / (k + 1)
        want = float(eager(tf.constant(x), tf.constant(y), lr))
        a = plain(ltf.constant(x), ltf.constant(y), lr)
        ltf.sync()
        b = comp(ltf.constant(x), ltf.constant(y), lr)
        assert float(np.asarray(b)) == float(np.asarray(a))
        np.testing.assert_allclose(float(np.asarray(b)), want, rtol=1e-5)
    assert lazyx.metrics()["replays"] >= 3
    np.testing.assert_array_equal(comp_w.numpy(), plain_w.numpy())  # written back
    np.testing.assert_allclose(comp_w.numpy(), eager_w.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(comp_b.numpy(), plain_b.numpy())


def test_keras_model_with_keras_optimizer_trains_like_the_uncompiled_run():
    data = _data(4)
    losses, weights = [], []
    for compiled in (False, True):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(3)])
        opt = keras.optimizers.Adam(0.01)

        def step(x, y):
            with ltf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        run = lazyx.compile(step) if compiled else step
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for x, y in data:
                loss = run(ltf.constant(x), ltf.constant(y))
                ltf.sync()
                out.append(float(np.asarray(loss)))
        losses.append(out)
        weights.append([v.numpy() for v in model.trainable_variables])
    assert losses[0] == losses[1]
    for a, b in zip(*weights):
        np.testing.assert_array_equal(a, b)


def test_eager_tensors_are_refused():
    step = lazyx.compile(lambda x: x * 2)
    with pytest.raises(TypeError, match="lazy"):
        step(tf.ones(2))
