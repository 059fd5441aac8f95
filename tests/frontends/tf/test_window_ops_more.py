"""tf.nn's rarer window ops run lazily (no fallback) and give eager TF's numbers, and their
gradients through the tape: depthwise_conv2d_backprop_input/filter, atrous_conv2d_transpose,
dilation2d, erosion2d and max_pool_with_argmax (its argmax, ties and NaNs included)."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

R = np.random.default_rng(7)
X = R.standard_normal((2, 7, 6, 3)).astype(np.float32)
DK = R.standard_normal((3, 3, 3, 2)).astype(np.float32)
F = R.standard_normal((3, 2, 3)).astype(np.float32)


def _same_as_tf(fn, *arrays, rtol=1e-5):
    want = fn(*[tf.constant(a) for a in arrays])
    lazyx.reset_metrics()
    got = fn(*[ltf.constant(a) for a in arrays])
    assert lazyx.metrics()["fallbacks"] == 0
    for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        g, w = np.asarray(g), w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_gradients(padding, stride):
    strides = [1, stride, stride, 1]
    out = tf.nn.depthwise_conv2d(X, DK, strides, padding)
    g = R.standard_normal(out.shape).astype(np.float32)
    _same_as_tf(lambda k, g: tf.nn.depthwise_conv2d_backprop_input(
        X.shape, k, g, strides, padding), DK, g)
    _same_as_tf(lambda x, g: tf.nn.depthwise_conv2d_backprop_filter(
        x, DK.shape, g, strides, padding), X, g)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("rate", [1, 2])
def test_atrous_conv2d_transpose(padding, rate):
    kernel = R.standard_normal((3, 3, 4, 3)).astype(np.float32)
    shape = [2, 7, 6, 4]
    value = tf.nn.atrous_conv2d(np.zeros(shape, np.float32), kernel, rate, padding)
    value = R.standard_normal(value.shape).astype(np.float32)
    _same_as_tf(lambda v, k: tf.nn.atrous_conv2d_transpose(v, k, shape, rate, padding),
                value, kernel)


@pytest.mark.parametrize("op", ["dilation2d", "erosion2d"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride,rate", [(1, 1), (2, 1), (1, 2)])
def test_morphology(op, padding, stride, rate):
    fn = getattr(tf.nn, op)
    _same_as_tf(lambda x, f: fn(x, f, [1, stride, stride, 1], padding, "NHWC",
                                [1, rate, rate, 1]), X, F)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("ksize,stride", [(2, 2), (3, 1), (3, 2)])
@pytest.mark.parametrize("batch_in_index,dtype", [(False, tf.int64), (True, tf.int32)])
def test_max_pool_with_argmax(padding, ksize, stride, batch_in_index, dtype):
    _same_as_tf(lambda x: tf.nn.max_pool_with_argmax(
        x, ksize, stride, padding, output_dtype=dtype,
        include_batch_in_index=batch_in_index), X)


@pytest.mark.parametrize("values,shape,ksize,stride,padding", [
    ([1, 2, 2, 0], (1, 2, 2, 1), 2, 2, "VALID"),            # a tie: the first wins
    ([np.nan, 1, 2, 1], (1, 2, 2, 1), 2, 2, "VALID"),       # a NaN first tap stays
    ([1, np.nan, 2, 1], (1, 2, 2, 1), 2, 2, "VALID"),       # a later NaN never wins
    ([-np.inf] * 4, (1, 2, 2, 1), 2, 2, "VALID"),
    ([np.nan, 1, 5, 1, 1, 7, -np.inf, np.nan, 0], (1, 3, 3, 1), 3, 1, "SAME"),
])
def test_max_pool_with_argmax_ties_and_nans(values, shape, ksize, stride, padding):
    _same_as_tf(lambda x: tf.nn.max_pool_with_argmax(x, ksize, stride, padding),
                np.array(values, np.float32).reshape(shape))


@pytest.mark.parametrize("fn", [
    lambda x, f: tf.nn.dilation2d(x, f, [1, 1, 1, 1], "SAME", "NHWC", [1, 1, 1, 1]),
    lambda x, f: tf.nn.erosion2d(x, f, [1, 2, 2, 1], "VALID", "NHWC", [1, 1, 1, 1]),
    lambda x, f: tf.nn.max_pool_with_argmax(x, 2, 2, "SAME").output * 2.0,
], ids=["dilation2d", "erosion2d", "max_pool_with_argmax"])
def test_gradients_match_tf(fn):
    def grads(tape_cls, const):
        x, f = tf.Variable(X), tf.Variable(F)
        with tape_cls() as tape:
            y = tf.reduce_sum(tf.sin(fn(const(X) + x - X, const(F) + f - F)))
        return [np.asarray(g) for g in tape.gradient(y, [x, f])
                if g is not None]
    want = grads(tf.GradientTape, tf.constant)
    got = grads(ltf.GradientTape, ltf.constant)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
