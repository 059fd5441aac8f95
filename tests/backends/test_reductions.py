"""Reductions (incl. empty axes and zero-size inputs), arg-reductions and scans on both
backends against NumPy."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from backend_harness import check, leaf
from lazyx.core import dtypes as dt
from lazyx.core import ops

shapes = st.sampled_from([(), (0,), (5,), (2, 0, 3), (3, 4), (2, 3, 2)])


def values(draw, dtype, shape, nan=False):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.is_int(dtype):
        # small magnitudes: products of a few entries stay exact in every width
        lo = 0 if dt.is_unsigned(dtype) else -3
        return rng.integers(lo, 4, shape).astype(dtype)
    x = rng.uniform(-2, 2, shape)
    if nan and x.size:
        x.flat[rng.integers(0, x.size)] = np.nan
    return x.astype(dt.to_numpy(dtype))


def is_float(x):
    return dt.is_float(dt.from_numpy(x.dtype))  # bfloat16's NumPy kind is 'V', not 'f'


def identity_full(fn_name, x, axes):
    """np.max/np.min raise on empty axes; the IR returns the identity (-inf / +inf / limits)."""
    out_shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if x.dtype == bool:
        return np.full(out_shape, fn_name == "min")
    if is_float(x):
        return np.full(out_shape, -np.inf if fn_name == "max" else np.inf, x.dtype)
    info = np.iinfo(x.dtype)
    return np.full(out_shape, info.min if fn_name == "max" else info.max, x.dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32",
                                   "uint8", "int64"])
@given(shape=shapes, data=st.data())
def test_reductions_over_any_axes(dtype, shape, data):
    x = values(data.draw, dtype, shape)
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)))))) \
        if shape else ()
    empty = any(shape[a] == 0 for a in axes)
    node = leaf(x)
    wide = x.astype(np.float64) if is_float(x) else x
    roots = [ops.reduce_sum(node, axes=axes), ops.reduce_prod(node, axes=axes),
             ops.reduce_max(node, axes=axes), ops.reduce_min(node, axes=axes)]
    expected = [np.sum(wide, axis=axes).astype(x.dtype), np.prod(wide, axis=axes).astype(x.dtype),
                identity_full("max", x, axes) if empty else np.max(x, axis=axes),
                identity_full("min", x, axes) if empty else np.min(x, axis=axes)]
    # summation order differs between the backends; the half types accumulate in float32 on
    # the reference and may round every step on XLA (a product of 12 bfloat16 values can then
    # be several ulps of 2**-8 apart)
    rtol = {"reduce_sum": 1e-2, "reduce_prod": 5e-2} if dt.ITEMSIZE[dtype] == 2 else None
    atol = {"reduce_sum": 0.1} if dt.ITEMSIZE[dtype] == 2 else None
    check(roots, expected, rtol=rtol, atol=atol)


@given(shape=shapes, data=st.data())
def test_bool_reductions(shape, data):
    x = values(data.draw, "bool", shape)
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)))))) \
        if shape else ()
    node = leaf(x)
    check([ops.reduce_and(node, axes=axes), ops.reduce_or(node, axes=axes),
           ops.reduce_max(node, axes=axes), ops.reduce_min(node, axes=axes)],
          [np.all(x, axis=axes), np.any(x, axis=axes), np.any(x, axis=axes),
           np.all(x, axis=axes)])


@pytest.mark.parametrize("dtype", ["float32", "int16", "float64", "bfloat16"])
@given(shape=st.sampled_from([(5,), (3, 4), (2, 3, 2)]), data=st.data())
def test_argmax_argmin_first_on_ties_and_nan(dtype, shape, data):
    x = values(data.draw, dtype, shape, nan=data.draw(st.booleans()))
    if dt.is_float(dtype):
        x = np.round(x)  # many ties
    axis = data.draw(st.integers(0, len(shape) - 1))
    index_dtype = data.draw(st.sampled_from(["int32", "int64"]))
    node = leaf(x)
    check([ops.argmax(node, axis=axis, index_dtype=index_dtype),
           ops.argmin(node, axis=axis, index_dtype=index_dtype)],
          [np.argmax(x, axis=axis), np.argmin(x, axis=axis)])


def _scan_expected(fn, x, axis, reverse):
    if reverse:
        return np.flip(fn(np.flip(x, axis), axis=axis), axis)
    return fn(x, axis=axis)


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "uint8", "float16"])
@given(shape=st.sampled_from([(0,), (6,), (3, 4), (2, 3, 2)]), data=st.data())
def test_scans_forward_and_reverse(dtype, shape, data):
    x = values(data.draw, dtype, shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    reverse = data.draw(st.booleans())
    node = leaf(x)
    wide = x.astype(np.float64) if is_float(x) else x
    fns = {"cumsum": np.cumsum, "cumprod": np.cumprod, "cummax": np.maximum.accumulate,
           "cummin": np.minimum.accumulate}
    check([ops.OPS[name](node, axis=axis, reverse=reverse) for name in fns],
          [_scan_expected(fn, wide, axis, reverse).astype(x.dtype) for fn in fns.values()],
          rtol=1e-2 if dtype == "float16" else None, atol=0.05 if dtype == "float16" else None)
