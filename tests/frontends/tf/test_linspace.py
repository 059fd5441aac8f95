"""tf.linspace of lazy endpoints (frontends/tf/api_array.linspace) against eager TF: values
(TF's steps; XLA may fuse a step's multiply-add, one rounding where TF has two), shapes and
dtypes with no fallback, gradients, and TF's own function where the count is not known."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.tf as ltf

_ULPS = {np.float32: 4e-7, np.float64: 1e-15}


@settings(max_examples=60, deadline=None)
@given(st.data(), st.sampled_from([np.float32, np.float64]), st.integers(0, 9))
def test_linspace_is_tfs(data, dtype, num):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    # (no subnormals: TF's CPU kernels flush them to zero -- start 1e-45, stop 0 gave TF
    # [1e-45, 0, 0] and lazyx [1e-45, 1e-45, 0], a hypothesis find of 2026-11-29)
    elements = st.floats(-50, 50, width=32 if dtype is np.float32 else 64,
                         allow_subnormal=False)
    start = data.draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=elements))
    stop = data.draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=elements))
    rank = len(shapes.result_shape) + 1
    axis = data.draw(st.integers(-rank, rank - 1))
    want = tf.linspace(tf.constant(start), tf.constant(stop), num, axis=axis)
    lazyx.reset_metrics()
    got = tf.linspace(ltf.constant(start), ltf.constant(stop), num, axis=axis)
    assert isinstance(got, ltf.Tensor)
    assert lazyx.metrics()["fallback_ops"] == {}
    got = np.asarray(got)
    assert got.shape == tuple(want.shape) and got.dtype == dtype
    scale = max(np.abs(start).max(initial=0), np.abs(stop).max(initial=0))
    np.testing.assert_allclose(got, want.numpy(), rtol=_ULPS[dtype],
                               atol=4 * _ULPS[dtype] * scale)


def test_linspace_gradient_is_tfs():
    a, b = np.array([0.0, 5.0], np.float32), np.array([10.0, 40.0], np.float32)

    def grads(make, tape_cls):
        x, y = make(a), make(b)
        with tape_cls() as tape:
            tape.watch([x, y])
            loss = tf.reduce_sum(tf.linspace(x, y, 5, axis=-1) ** 2)
        return tape.gradient(loss, [x, y])
    for got, want in zip(grads(ltf.constant, ltf.GradientTape), grads(tf.constant, tf.GradientTape)):
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6)


def test_what_linspace_leaves_to_tf():
    """A lazy count would need its value -- unless the host holds it (a lazy constant: read
    there, no sync); integer endpoints follow TF's casts: TF's function runs (counted), with
    its numbers and its errors."""
    start, stop = ltf.constant(1.0), ltf.constant(2.0)
    lazyx.reset_metrics()
    got = tf.linspace(start, stop, ltf.constant(3))
    assert lazyx.metrics()["fallback_ops"] == {}
    np.testing.assert_allclose(np.asarray(got), [1.0, 1.5, 2.0])
    computed = tf.reduce_sum(ltf.constant([[3]]), axis=0)[0]  # a count only the device knows
    lazyx.reset_metrics()
    got = tf.linspace(start, stop, computed)
    assert lazyx.metrics()["fallback_ops"] == {"tf.linspace": 1}
    np.testing.assert_allclose(np.asarray(got), [1.0, 1.5, 2.0])
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)):
        np.asarray(tf.linspace(start, stop, 3, axis=3))
