"""Keras' cross-entropies and tf.nn's *_cross_entropy_with_logits on lazy values: lazy, no
fallback, TF's numbers and gradients (issue 15). They used to come back as eager tensors:
Keras calls tf.convert_to_tensor on the prediction, which materialized it uncounted."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.tf as ltf
from .conftest import assert_matches

keras = pytest.importorskip("keras")
RNG = np.random.default_rng(3)
N, C = 6, 5
LOGITS = (RNG.standard_normal((N, C)) * 3).astype(np.float32)
PROBS = tf.nn.softmax(LOGITS).numpy()
LABELS = RNG.integers(0, C, N)
ONE_HOT = np.eye(C, dtype=np.float32)[LABELS]
SIGMOID_PROBS = tf.sigmoid(LOGITS).numpy()

LOSSES = {  # name -> (make the loss(from_logits, reduction), targets)
    "CategoricalCrossentropy": (keras.losses.CategoricalCrossentropy, ONE_HOT),
    "BinaryCrossentropy": (keras.losses.BinaryCrossentropy, ONE_HOT),
    "SparseCategoricalCrossentropy": (keras.losses.SparseCategoricalCrossentropy, LABELS),
}
OPS = {
    "categorical_crossentropy": (keras.ops.categorical_crossentropy, ONE_HOT),
    "binary_crossentropy": (keras.ops.binary_crossentropy, ONE_HOT),
    "sparse_categorical_crossentropy": (keras.ops.sparse_categorical_crossentropy, LABELS),
}


def _prediction(name, from_logits):
    if from_logits:
        return LOGITS
    return SIGMOID_PROBS if "binary" in name.lower() else PROBS


def _lazy_and_equal(fn, pred, rtol=1e-5):
    lazyx.reset_metrics()
    eager = fn(tf.constant(pred))
    lazy = fn(ltf.constant(pred))
    assert isinstance(lazy, ltf.Tensor), type(lazy)
    metrics = lazyx.metrics()
    assert metrics["fallback_ops"] == {} and metrics["syncs"] == 0, metrics
    assert_matches(lazy, eager, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", None])
@pytest.mark.parametrize("from_logits", [False, True])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_keras_cross_entropy_losses(name, from_logits, reduction):
    cls, targets = LOSSES[name]
    loss = cls(from_logits=from_logits, reduction=reduction)
    _lazy_and_equal(lambda p: loss(targets, p), _prediction(name, from_logits))


@pytest.mark.parametrize("from_logits", [False, True])
@pytest.mark.parametrize("name", sorted(OPS))
def test_keras_ops_cross_entropies(name, from_logits):
    fn, targets = OPS[name]
    _lazy_and_equal(lambda p: fn(targets, p, from_logits=from_logits),
                    _prediction(name, from_logits))


@settings(max_examples=15, deadline=None)
@given(batch=st.lists(st.integers(1, 4), max_size=2), classes=st.integers(1, 7),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_tf_nn_cross_entropies_match_tf(batch, classes, dtype, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(batch) + (classes,)
    logits = (rng.standard_normal(shape) * 4).astype(dtype)
    labels = rng.integers(0, classes, tuple(batch)).astype(rng.choice([np.int32, np.int64]))
    soft = rng.random(shape).astype(dtype)
    cases = [
        lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x),
        lambda x: tf.nn.softmax_cross_entropy_with_logits(soft, x),
        lambda x: tf.nn.sigmoid_cross_entropy_with_logits(soft, x),
    ]
    for fn in cases:
        _lazy_and_equal(fn, logits, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_softmax_cross_entropy_axis():
    x = RNG.standard_normal((3, 4, 2)).astype(np.float32)
    z = RNG.random((3, 4, 2)).astype(np.float32)
    _lazy_and_equal(lambda v: tf.nn.softmax_cross_entropy_with_logits(z, v, axis=1), x)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_cross_entropy_gradients_match_eager(name):
    cls, targets = LOSSES[name]
    loss = cls(from_logits=True)
    w0 = RNG.standard_normal((3, C)).astype(np.float32)
    x = RNG.standard_normal((N, 3)).astype(np.float32)
    grads = []
    for make in (tf.constant, ltf.constant):
        w = tf.Variable(w0)
        with tf.GradientTape() as tape:
            value = loss(targets, make(x) @ w)
        grads.append((float(value), tape.gradient(value, w).numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-5)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-4, atol=1e-6)


def test_bad_labels_raise_tf_errors_at_the_call():
    x = ltf.constant(LOGITS)
    with pytest.raises(tf.errors.InvalidArgumentError):  # a known label >= classes
        tf.nn.sparse_softmax_cross_entropy_with_logits(np.array([0, 1, 2, 3, 4, C]), x)
    with pytest.raises(ValueError):  # labels' shape is not logits' without the last axis
        tf.nn.sparse_softmax_cross_entropy_with_logits(np.zeros((N, 1), np.int32), x)
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tf.nn.softmax_cross_entropy_with_logits(ONE_HOT[:, :2], x)
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tf.nn.sigmoid_cross_entropy_with_logits(ONE_HOT.astype(np.float64), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_cross_entropy_gradient_sums_nothing_over_the_classes(dtype):
    """The loss is log(sum(exp(x - max))) - (x - max)[label], TF's kernel's rounding (equal to
    eager TF bit for bit on the reference backend), and its gradient softmax - one_hot adds
    no reduction over the classes to the forward's (picking from log_softmax summed the
    picked cotangents over every class: 2.5x the loss's time at 8,192 classes)."""
    logits = (RNG.standard_normal((4, 9)) * 3).astype(dtype)
    labels = np.array([0, 8, 3, 3])
    rtol = 1e-6 if dtype == np.float32 else 1e-14
    _lazy_and_equal(lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x),
                    logits, rtol=rtol)
    grads = []
    for make in (tf.constant, ltf.constant):
        x = make(logits)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x))
        grads.append(tape.gradient(loss, x))
    text = lazyx.ir_text(grads[1])  # the softmax's max and sum, and no other reduction
    assert text.count("= reduce_") == 2 and text.count("= reduce_sum(") == 1, text
    np.testing.assert_allclose(grads[1].numpy(), grads[0].numpy(), rtol=rtol, atol=rtol)
