"""The shared rules in core/compose.py that every frontend now calls, against NumPy."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lazyx.core import compose, ops

from backend_harness import check, leaf


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(max_dims=3, max_side=4),
                  elements=st.floats(-50, 50, width=32, allow_subnormal=False)),
       st.sampled_from([0.7, -0.7, 3.0, -2.5]))
def test_floating_floor_mod_has_the_divisors_sign(x, d):
    """torch.remainder's and tf.math.floormod's formula: fmod moved by the divisor when the
    signs differ (a zero result keeps fmod's sign, unlike NumPy's own remainder). Subnormal
    operands are left out: XLA's CPU code flushes them to zero, the reference does not."""
    a = leaf(x)
    b = compose.const(d, "float32", x.shape)
    r = np.fmod(x, np.float32(d))
    expected = np.where((r != 0) & ((r < 0) != (d < 0)), r + np.float32(d), r)
    check([compose.floor_mod(a, b)], [expected])


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.int32, hnp.array_shapes(max_dims=2, max_side=4),
                  elements=st.integers(-20, 20)), st.integers(-5, 5))
def test_integer_floor_mod_is_pythons_and_zero_for_zero(x, d):
    a, b = leaf(x), compose.const(d, "int32", x.shape)
    expected = np.zeros_like(x) if d == 0 else np.mod(x, np.int32(d))
    check([compose.floor_mod(a, b)], [expected])


@pytest.mark.parametrize("shape,target", [((3,), (2, 3)), ((1, 3), (4, 2, 3)), ((), (2, 2)),
                                          ((2, 1), (2, 5))])
def test_broadcast_to_aligns_trailing_axes(shape, target):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    node = compose.broadcast_to(leaf(x), target)
    check([node], [np.broadcast_to(x, target)])
    assert compose.broadcast_to(leaf(x), shape).op == "param"  # no node for a no-op


def test_constants_and_scalars_by_dtype_and_shape_or_like_a_node():
    like = leaf(np.zeros((2, 3), np.float64))
    for node in (compose.const(1.5, "float64", (2, 3)), compose.const_like(1.5, like),
                 compose.scalar(1.5, "float64", (2, 3)), compose.scalar_like(1.5, like)):
        assert (node.shape, node.dtype) == ((2, 3), "float64")
    assert compose.const(2, "int32").shape == ()
    check([compose.const_like(1.5, like), compose.scalar_like(-2.0, like)],
          [np.full((2, 3), 1.5), np.full((2, 3), -2.0)])
    # a constant is baked into the program, a scalar is a run-time parameter
    assert compose.const(1.5, "float64").op == "constant"
    assert compose.scalar(1.5, "float64").op == "param"


def test_keepdims_flatten_and_axis_none():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = leaf(x)
    kept = compose.keepdims(ops.reduce_sum(a, axes=(0, 2)), a.shape, (0, 2))
    flat, axis = compose.flat_if_none(a, None)
    same, same_axis = compose.flat_if_none(a, 1)
    assert (axis, same, same_axis) == (0, a, 1)
    check([kept, flat], [x.sum(axis=(0, 2), keepdims=True), x.reshape(-1)])


@pytest.mark.parametrize("axis,ndim,want", [(-1, 3, 2), (2, 3, 2), (3, 3, None), (-4, 3, None),
                                            (0, 0, 0), (-1, 0, 0), (1, 0, None)])
def test_wrap_axis(axis, ndim, want):
    assert compose.wrap_axis(axis, ndim) == want


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
def test_batch_matmul(batch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(batch + (3, 4)).astype(np.float32)
    y = rng.standard_normal(batch + (4, 5)).astype(np.float32)
    check([compose.batch_matmul(leaf(x), leaf(y))], [x @ y], rtol=1e-5, atol=1e-5)
