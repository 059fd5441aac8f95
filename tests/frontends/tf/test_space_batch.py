"""tf.space_to_batch_nd / tf.batch_to_space (frontends/tf/api_space_batch.py), the Conv2D op TF's
own dilated convolution calls, and channels-first strides, against eager TF: values and shapes
with no fallback, TF's errors for what it refuses."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.tf as ltf


def _same(fn, *arrays, rtol=0.0):
    want = fn(*[tf.constant(a) for a in arrays])
    lazyx.reset_metrics()
    got = fn(*[ltf.constant(a) for a in arrays])
    assert isinstance(got, ltf.Tensor)
    assert lazyx.metrics()["fallback_ops"] == {}
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=rtol, atol=rtol)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_space_to_batch_and_back(data):
    m = data.draw(st.integers(1, 2))
    block = data.draw(st.lists(st.integers(1, 3), min_size=m, max_size=m))
    pads = [data.draw(st.tuples(st.integers(0, 3), st.integers(0, 3))) for _ in range(m)]
    # a spatial size that the block divides once padded
    spatial = [b * data.draw(st.integers(1, 3)) - lo - hi for b, (lo, hi) in zip(block, pads)]
    # grown by whole blocks until positive (padding up to 6 can exceed 3 blocks of 1)
    spatial = [s + b * max(0, -(-(1 - s) // b)) for s, b in zip(spatial, block)]
    shape = [data.draw(st.integers(1, 2))] + spatial + [data.draw(st.integers(1, 2))]
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    _same(lambda t: tf.space_to_batch_nd(t, block, pads), x)
    _same(lambda t: tf.batch_to_space(tf.space_to_batch(t, block, pads), block, pads), x)


def test_what_tf_refuses_is_tfs_error():
    x = np.zeros((1, 5, 4, 1), np.float32)
    for fn in (lambda t: tf.space_to_batch_nd(t, [2, 2], [[0, 0], [0, 0]]),  # 5 % 2
               lambda t: tf.batch_to_space(t, [2, 2], [[0, 0], [0, 0]]),  # batch 1 % 4
               lambda t: tf.space_to_batch_nd(t, [0, 1], [[0, 0], [0, 0]])):
        with pytest.raises(tf.errors.InvalidArgumentError):
            fn(tf.constant(x))
        with pytest.raises(tf.errors.InvalidArgumentError):
            np.asarray(fn(ltf.constant(x)))


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("rate", [1, 2, 3])
def test_atrous_conv2d_stays_lazy(padding, rate):
    rng = np.random.default_rng(rate)
    x = rng.standard_normal((2, 9, 8, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
    _same(lambda t, k: tf.nn.atrous_conv2d(t, k, rate, padding), x, w, rtol=1e-5)


def test_channels_first_strides_are_read_at_their_axes():
    """strides=[1, 1, 2, 3] in NCHW are (2, 3) spatially (they were read as NHWC's (1, 2))."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 9, 10)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    got = tf.nn.conv2d(ltf.constant(x), ltf.constant(w), [1, 1, 2, 3], "SAME", data_format="NCHW")
    # TF's CPU kernels take NHWC only: the same convolution, transposed around it
    want = tf.transpose(tf.nn.conv2d(tf.transpose(x, [0, 2, 3, 1]), w, [1, 2, 3, 1], "SAME"),
                        [0, 3, 1, 2])
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-5, atol=1e-5)
