"""Keras' divide of tf.IndexedSlices by a dense tensor (RMSprop's and Adagrad's update of an
Embedding's gradient) with lazy slices: no read of Keras' "divisor has a zero row" tf.cond --
no fallback, no sync mid-step, lazyx.compile replays -- and eager TF's numbers."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402
from .conftest import keras_step  # noqa: E402

V, T = 20, 6


@pytest.mark.parametrize("zero_rows", [[], [3], [3, 5]])
def test_dividing_slices_matches_keras(zero_rows):
    r = np.random.default_rng(1)
    values = r.standard_normal((5, 3)).astype(np.float32)
    # a duplicate index only without a zero row: Keras' union of indices then keeps one of
    # its slices (eager TF drops the other), where the sum of both is the gradient
    indices = np.array([1, 4, 6, 7, 9] if zero_rows else [1, 4, 4, 7, 9], np.int32)
    divisor = r.uniform(0.5, 2.0, (10, 3)).astype(np.float32)
    for row in zero_rows:
        divisor[row, 1] = 0.0

    def run(make):
        slices = tf.IndexedSlices(make(values), make(indices), tf.constant([10, 3]))
        return tf.convert_to_tensor(keras.ops.divide(slices, make(divisor)))

    want = run(tf.constant)
    lazyx.reset_metrics()
    got = run(ltf.constant)
    assert lazyx.metrics()["fallback_ops"] == {} and lazyx.metrics()["syncs"] == 0
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("opt_name", ["rmsprop", "adagrad"])
def test_embedding_trained_with_rmsprop_or_adagrad_stays_lazy(opt_name):
    def run(mode):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((T,), dtype="int32"), keras.layers.Embedding(V, 4),
                                  keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])
        opt = keras.optimizers.get(opt_name)
        f, make = keras_step(model, opt, mode, lambda p, y: tf.reduce_mean((p - y) ** 2))
        lazyx.reset_metrics()
        losses = []
        for k in range(4):
            r = np.random.default_rng(k)
            loss = f(make(r.integers(0, V, (4, T)).astype(np.int32)),
                     make(r.standard_normal((4, 1)).astype(np.float32)))
            if mode != "eager":
                ltf.sync()
            losses.append(float(np.asarray(loss)))
        return losses, [v.numpy() for v in model.weights], lazyx.metrics()

    want_losses, want_weights, _ = run("eager")
    for mode in ("lazy", "compiled"):
        losses, weights, m = run(mode)
        np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
        for w, v in zip(weights, want_weights):
            np.testing.assert_allclose(w, v, rtol=1e-5, atol=1e-6)
        assert m["fallback_ops"] == {} and m["syncs"] <= 4, (mode, m)  # one ltf.sync a step
        if mode == "compiled":
            assert m["replays"] >= 2, m
