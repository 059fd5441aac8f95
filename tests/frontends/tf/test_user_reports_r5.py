"""Outside prober's reports, round 5, each compared with eager TF: lazyx.compile keeps a Keras
model's metric state (a train_step's loss tracker beside an Adam optimizer)."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

RNG = np.random.RandomState(5)
X = RNG.randn(6, 3).astype(np.float32)
Y = RNG.randn(6, 2).astype(np.float32)


class _Tracked(keras.Model):
    """keras.io's "customize train_step" shape: a metric and an optimizer with slots."""

    def __init__(self, tape):
        super().__init__()
        self.tape = tape
        self.dense = keras.layers.Dense(2, kernel_initializer="glorot_uniform")
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae = keras.metrics.MeanAbsoluteError(name="mae")
        self.optimizer = keras.optimizers.Adam(0.05)

    def step(self, x, y):
        with self.tape() as t:
            pred = self.dense(x)
            loss = tf.reduce_mean((pred - y) ** 2)
        grads = t.gradient(loss, self.dense.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.dense.trainable_variables))
        self.loss_tracker.update_state(loss)
        self.mae.update_state(y, pred)
        return self.loss_tracker.result(), self.mae.result()


def _model(tape):
    keras.utils.set_random_seed(3)
    m = _Tracked(tape)
    m.dense.build((None, 3))
    return m


def test_compiled_step_keeps_a_models_metric_and_optimizer_state():
    # the metric's variables are in metrics_variables, not variables: the trace baked them
    # (a Mean's result was each call's own loss) and, beside an optimizer, no call replayed
    eager = _model(tf.GradientTape)
    want = [[float(v) for v in eager.step(tf.constant(X), tf.constant(Y))] for _ in range(5)]
    lazy = _model(ltf.GradientTape)
    f = lazyx.compile(lazy.step)
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [[float(v) for v in f(ltf.constant(X), ltf.constant(Y))] for _ in range(5)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # (the first call builds Adam's slots, so the second traces again; the rest replay)
    assert lazyx.metrics()["replays"] >= 3
    assert float(lazy.loss_tracker.count.numpy()) == 5.0
    np.testing.assert_allclose(lazy.dense.kernel.numpy(), eager.dense.kernel.numpy(), rtol=1e-5)
    assert int(lazy.optimizer.iterations.numpy()) == 5


def test_compiled_metric_of_a_model_accumulates():
    class M(keras.Model):
        def __init__(self):
            super().__init__()
            self.tracker = keras.metrics.Mean()

        def step(self, x):
            self.tracker.update_state(x)
            return self.tracker.result()

    eager, lazy = M(), M()
    f = lazyx.compile(lazy.step)
    for k in range(1, 5):
        want = float(eager.step(tf.constant(float(k))))
        assert float(f(ltf.constant(float(k)))) == pytest.approx(want)
    assert float(lazy.tracker.count.numpy()) == 4.0
