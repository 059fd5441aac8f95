"""tf.math.bincount with a length the call fixes (maxlength, and minlength >= maxlength),
Keras' CategoryEncoding (which passes depth for both), and tf.math.confusion_matrix with
num_classes are lowered (they were counted fallbacks): lazy against eager TF, no fallback;
a length left to the data stays a counted fallback."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

RNG = np.random.default_rng(1)
LABELS = RNG.integers(0, 9, (4, 6)).astype(np.int32)  # values past a length of 6 are dropped


def compare(fn, *args, **kwargs):
    lazyx.reset_metrics()
    got = fn(*[ltf.constant(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    fallbacks = lazyx.metrics()["fallbacks"]
    want = fn(*args, **kwargs)
    assert isinstance(got, ltf.Tensor)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6)
    return fallbacks


@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.float32])
@pytest.mark.parametrize("lengths", [(6, 6), (9, 6), (None, 0), (3, 0)])
def test_bincount_counts(axis, index_dtype, lengths):
    arr = LABELS.astype(index_dtype) + (0.6 if index_dtype == np.float32 else 0)  # truncated
    assert compare(tf.math.bincount, arr, minlength=lengths[0], maxlength=lengths[1],
                   axis=axis) == 0


@pytest.mark.parametrize("weight_dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("axis", [0, -1])
def test_bincount_weights(weight_dtype, axis):
    w = (RNG.standard_normal(LABELS.shape) * 4).astype(weight_dtype)
    assert compare(tf.math.bincount, LABELS, weights=w, minlength=7, maxlength=7,
                   axis=axis) == 0


@pytest.mark.parametrize("dtype", [tf.int64, tf.float32])
def test_bincount_binary_output(dtype):
    assert compare(tf.math.bincount, LABELS, minlength=5, maxlength=5, axis=-1,
                   binary_output=True, dtype=dtype) == 0


def test_bincount_length_from_the_data_stays_a_counted_fallback():
    assert compare(tf.math.bincount, LABELS, minlength=3) == 1


@pytest.mark.parametrize("call", [
    lambda a: tf.math.bincount(a, weights=tf.ones([2]), minlength=3, maxlength=3),
    lambda a: tf.math.bincount(a, minlength=3, maxlength=3, axis=1),
    lambda a: tf.math.bincount(a, weights=tf.ones(a.shape), minlength=3, maxlength=3,
                               binary_output=True),
    lambda a: tf.math.bincount(tf.cast(a, tf.int8), minlength=3, maxlength=3),
    lambda a: tf.math.bincount(a, minlength=3, maxlength=3, dtype=tf.float16),
], ids=["weights-shape", "axis", "weights-and-binary", "int8", "float16"])
def test_bincount_bad_calls_raise_as_tf(call):
    with pytest.raises(Exception) as eager:
        call(tf.constant(LABELS))
    with pytest.raises(type(eager.value)):
        call(ltf.constant(LABELS))


@pytest.mark.parametrize("mode", ["multi_hot", "count", "one_hot"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_category_encoding(mode, dtype):
    layer = keras.layers.CategoryEncoding(num_tokens=9, output_mode=mode, dtype=dtype)
    inputs = LABELS[:, :1] if mode == "one_hot" else LABELS
    assert compare(layer, inputs) == 0


def test_category_encoding_count_weights():
    layer = keras.layers.CategoryEncoding(num_tokens=9, output_mode="count")
    w = RNG.standard_normal(LABELS.shape).astype(np.float32)
    assert compare(lambda x, w: layer(x, count_weights=w), LABELS, w) == 0


@pytest.mark.parametrize("dtype", [tf.int32, tf.float64])
def test_confusion_matrix(dtype):
    labels, predictions = LABELS.ravel(), LABELS[::-1].ravel().copy()
    w = RNG.uniform(0, 2, labels.size).astype(np.float32)
    assert compare(tf.math.confusion_matrix, labels, predictions, num_classes=9,
                   dtype=dtype) == 0
    assert compare(tf.math.confusion_matrix, labels[:, None].astype(np.int64), predictions,
                   num_classes=np.int32(10), weights=w, dtype=dtype) == 0


def test_confusion_matrix_gradient_of_its_weights():
    labels, predictions = LABELS.ravel(), LABELS[::-1].ravel().copy()
    w0 = RNG.uniform(0, 2, labels.shape).astype(np.float32)

    def grad(const, tape_cls):
        w = tf.Variable(w0)
        with tape_cls() as tape:
            cm = tf.math.confusion_matrix(const(labels), predictions, num_classes=9,
                                          weights=w, dtype=tf.float32)
            y = tf.reduce_sum(cm * np.arange(81.0, dtype=np.float32).reshape(9, 9))
        return np.asarray(tape.gradient(y, w))
    np.testing.assert_array_equal(grad(ltf.constant, ltf.GradientTape),
                                  grad(tf.constant, tf.GradientTape))


def test_confusion_matrix_size_from_the_data_stays_a_counted_fallback():
    assert compare(tf.math.confusion_matrix, LABELS.ravel(), LABELS.ravel()) == 1
