"""NEP 18: plain NumPy functions called on lazy arrays. One table {numpy function: impl};
anything else falls back (runs eagerly on NumPy, counted and warned once)."""

import numpy as np

from ...core.tables import Table
from . import (_assembly, _choosing, _creation, _elementwise, _elementwise_routines, _histograms,
               _indexing, _linalg, _manipulation, _numpy_linalg, _polynomials, _products,
               _reductions, _sorting, _statistics, _view_ops, _views)
from . import fft as _fft
from . import linalg as _linalg_api
from ._base import LazyArray
from ._entry import apply
from ._fallback import observe_with, run_eagerly
from ._promote import UnsupportedDtype, as_lazy, assign, ir_dtype, result_ir_dtype


def _shape(a):
    return tuple(as_lazy(a).shape)


def _ndim(a):
    return as_lazy(a).ndim


def _shares_memory(a, b, max_work=None):
    """np.shares_memory: a lazy array shares memory with itself and with the views of its
    family that overlap it (_views.py) -- answered without running anything (sklearn and
    scipy ask it of every input they may write to)."""
    if isinstance(a, LazyArray) and isinstance(b, LazyArray):
        return _views.shares_memory(a, b)
    if isinstance(a, LazyArray) or isinstance(b, LazyArray):
        return False
    return np.shares_memory(a, b, max_work)


def _may_share_memory(a, b, max_work=None):
    if isinstance(a, LazyArray) and isinstance(b, LazyArray):
        return _views.shares_memory(a, b, exact=False)
    if isinstance(a, LazyArray) or isinstance(b, LazyArray):
        return False
    return np.may_share_memory(a, b, max_work)


def _size(a, axis=None):
    x = as_lazy(a)
    return x.size if axis is None else x.shape[axis]


def _result_type(*arrays_and_dtypes):
    return np.dtype(result_ir_dtype(*[a if isinstance(a, LazyArray) or not _is_dtype(a)
                                      else np.empty(0, a) for a in arrays_and_dtypes]))


def _is_dtype(x):
    if isinstance(x, (np.dtype, type)) or isinstance(x, str):
        return True
    return False


def _can_cast(from_, to, casting="safe"):
    if isinstance(from_, LazyArray):
        from_ = from_.dtype
    return np.can_cast(from_, to, casting=casting)


def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = as_lazy(a), as_lazy(b) if isinstance(b, LazyArray) else b
    dtype = np.dtype(result_ir_dtype(a, b, 1.0))
    a, b = a.astype(dtype), as_lazy(b, ir_dtype(dtype))
    diff = apply(np.absolute, (a - b,))
    close = diff <= atol + rtol * apply(np.absolute, (b,))
    both_inf = (a == b)
    result = apply(np.logical_or, (close, both_inf))
    finite = apply(np.logical_and, (apply(np.isfinite, (a,)), apply(np.isfinite, (b,))))
    result = _choosing.where(finite, result, both_inf)
    if equal_nan:
        result = apply(np.logical_or, (result, apply(np.logical_and, (
            apply(np.isnan, (a,)), apply(np.isnan, (b,))))))
    return result


def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(_reductions.all(_isclose(a, b, rtol, atol, equal_nan)))


def _array_equal(a1, a2, equal_nan=False):
    if _shape(a1) != _shape(a2):
        return False
    eq = as_lazy(a1) == a2
    if equal_nan:
        eq = apply(np.logical_or, (eq, apply(np.logical_and, (
            apply(np.isnan, (a1,)), apply(np.isnan, (a2,))))))
    return bool(_reductions.all(eq))


def _amax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _reductions.max(a, axis, out, keepdims, initial, where)


def _amin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _reductions.min(a, axis, out, keepdims, initial, where)


def _copyto(dst, src, casting="same_kind", where=True):
    if where is not True:
        src = _choosing.where(where, src, dst)
    assign(dst, src, casting=casting)


def _astype(x, dtype, /, *, copy=True, device=None):
    return _manipulation.astype(x, dtype, copy=copy)


def _nan_reduce(reduce, fill_value):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        x = as_lazy(a)
        if x.dtype.kind == "f":
            x = _choosing.where(apply(np.isnan, (x,)), fill_value, x)
        kw = {"keepdims": keepdims, "out": out}
        if dtype is not None:
            kw["dtype"] = dtype
        return reduce(x, axis, **kw)
    return fn


FUNCTIONS = Table("lazyx.frontends.numpy FUNCTIONS (__array_function__)", {
    # reductions and statistics
    np.sum: _reductions.sum, np.prod: _reductions.prod, np.mean: _reductions.mean,
    np.var: _reductions.var, np.std: _reductions.std, np.max: _reductions.max,
    np.min: _reductions.min, np.amax: _amax, np.amin: _amin, np.all: _reductions.all,
    np.any: _reductions.any, np.cumsum: _reductions.cumsum, np.cumprod: _reductions.cumprod,
    np.argmax: _reductions.argmax, np.argmin: _reductions.argmin, np.sort: _reductions.sort,
    np.argsort: _reductions.argsort, np.searchsorted: _reductions.searchsorted,
    np.count_nonzero: _indexing.count_nonzero,
    np.nansum: _nan_reduce(_reductions.sum, 0), np.nanprod: _nan_reduce(_reductions.prod, 1),
    # manipulation
    np.reshape: _view_ops.reshape, np.ravel: _view_ops.ravel,
    np.transpose: _view_ops.transpose, np.swapaxes: _view_ops.swapaxes,
    np.moveaxis: _view_ops.moveaxis, np.expand_dims: _view_ops.expand_dims,
    np.squeeze: _view_ops.squeeze, np.broadcast_to: _view_ops.broadcast_to,
    np.broadcast_arrays: _manipulation.broadcast_arrays,
    np.concatenate: _manipulation.concatenate, np.stack: _manipulation.stack,
    np.vstack: _manipulation.vstack, np.hstack: _manipulation.hstack,
    np.dstack: _manipulation.dstack, np.column_stack: _manipulation.column_stack,
    np.atleast_1d: _manipulation.atleast_1d, np.atleast_2d: _manipulation.atleast_2d,
    np.atleast_3d: _manipulation.atleast_3d, np.flip: _manipulation.flip,
    np.roll: _manipulation.roll, np.tile: _manipulation.tile, np.repeat: _manipulation.repeat,
    np.split: _manipulation.split, np.array_split: _manipulation.array_split,
    np.pad: _manipulation.pad, np.diff: _manipulation.diff, np.append: _manipulation.append,
    np.copy: _manipulation.copy, np.where: _choosing.where, np.clip: _choosing.clip,
    np.matrix_transpose: _view_ops.matrix_transpose, np.astype: _astype,
    np.copyto: _copyto, np.select: _choosing.select, np.piecewise: _choosing.piecewise,
    np.lib.stride_tricks.sliding_window_view: _manipulation.sliding_window_view,
    # creation from arrays
    np.zeros_like: _creation.zeros_like, np.ones_like: _creation.ones_like,
    np.full_like: _creation.full_like, np.empty_like: _creation.empty_like,
    np.tril: _creation.tril, np.triu: _creation.triu, np.meshgrid: _creation.meshgrid,
    # indexing and data-dependent shapes
    np.take: _indexing.take, np.take_along_axis: _indexing.take_along_axis,
    np.nonzero: _indexing.nonzero, np.argwhere: _indexing.argwhere,
    np.flatnonzero: _indexing.flatnonzero, np.unique: _indexing.unique,
    np.compress: _indexing.compress, np.extract: _indexing.extract,
    # linear algebra
    np.dot: _linalg.dot, np.tensordot: _linalg.tensordot, np.inner: _linalg.inner,
    np.outer: _linalg.outer, np.einsum: _view_ops.einsum, np.linalg.norm: _linalg.norm,
    np.convolve: _linalg.convolve,
    np.diagonal: _view_ops.diagonal, np.trace: _linalg.trace, np.diag: _linalg.diag,
    # comparisons and facts
    np.isclose: _isclose, np.allclose: _allclose, np.array_equal: _array_equal,
    np.shape: _shape, np.ndim: _ndim, np.size: _size, np.result_type: _result_type,
    np.shares_memory: _shares_memory, np.may_share_memory: _may_share_memory,
    np.can_cast: _can_cast, np.round: _elementwise.round, np.around: _elementwise.round,
    np.real: _view_ops.real, np.imag: _view_ops.imag,
})
for _name in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
    if hasattr(np, _name):
        FUNCTIONS[getattr(np, _name)] = getattr(_indexing, _name)


def _cumulative(fn, numpy_fn):
    """NumPy's cumulative_sum / cumulative_prod signature (out= runs NumPy's) onto the Array
    API's."""
    def call(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        if out is not None:
            return run_eagerly(numpy_fn, f"numpy.{numpy_fn.__name__}", (x,), dict(
                axis=axis, dtype=dtype, out=out, include_initial=include_initial))
        return fn(x, axis=axis, dtype=dtype, include_initial=include_initial)
    return call


def _nan_scan(scan, fill_value, numpy_fn):
    """np.nancumsum / np.nancumprod: NaNs count as `fill_value` (out= runs NumPy's)."""
    def call(a, axis=None, dtype=None, out=None):
        if out is not None:
            return run_eagerly(numpy_fn, f"numpy.{numpy_fn.__name__}", (a,), dict(
                axis=axis, dtype=dtype, out=out))
        x = as_lazy(a)
        if x.dtype.kind in "fc":
            x = _choosing.where(apply(np.isnan, (x,)), fill_value, x)
        return scan(x, axis, dtype)
    return call


FUNCTIONS[np.nancumsum] = _nan_scan(_reductions.cumsum, 0, np.nancumsum)
FUNCTIONS[np.nancumprod] = _nan_scan(_reductions.cumprod, 1, np.nancumprod)
for _name in ("cumulative_sum", "cumulative_prod"):
    if hasattr(np, _name):
        FUNCTIONS[getattr(np, _name)] = _cumulative(getattr(_reductions, _name), getattr(np, _name))
if hasattr(np, "unstack"):
    FUNCTIONS[np.unstack] = _manipulation.unstack
if hasattr(np.linalg, "vecdot"):
    FUNCTIONS[np.linalg.vecdot] = _linalg.vecdot
if hasattr(np.linalg, "matmul"):
    FUNCTIONS[np.linalg.matmul] = _linalg.matmul
if hasattr(np.linalg, "tensordot"):
    FUNCTIONS[np.linalg.tensordot] = _linalg.tensordot
if hasattr(np.linalg, "matrix_transpose"):
    FUNCTIONS[np.linalg.matrix_transpose] = _view_ops.matrix_transpose
FUNCTIONS.update(_numpy_linalg.FUNCTIONS)  # NumPy's signatures: svd, qr, eigh, ...
FUNCTIONS.update(_statistics.FUNCTIONS)  # median, quantile, nanmean, cov, ...
FUNCTIONS.update(_products.FUNCTIONS)  # cross, kron, gradient, vdot, correlate
FUNCTIONS.update(_elementwise_routines.FUNCTIONS)  # nan_to_num, sinc, fix, unwrap, ...
FUNCTIONS.update(_assembly.FUNCTIONS)  # delete, block, resize, hsplit, ...
FUNCTIONS.update(_polynomials.FUNCTIONS)  # polyval, vander, interp, polyfit
FUNCTIONS.update(_histograms.FUNCTIONS)  # histogram, histogram_bin_edges (a given range)
FUNCTIONS.update(_sorting.FUNCTIONS)  # partition, argpartition, lexsort


# numpy.linalg and numpy.fft functions whose NumPy signature the lazy one takes as is.
for _name in ("det", "slogdet", "inv", "solve", "cholesky", "matrix_power", "cross", "outer",
              "matrix_norm", "vector_norm", "trace", "diagonal"):
    if hasattr(np.linalg, _name):
        FUNCTIONS[getattr(np.linalg, _name)] = getattr(_linalg_api, _name)


# lnp.fft's functions take numpy.fft's signatures (positional n/axis, norm=None, out=)
for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn",
              "irfftn", "fft2", "ifft2", "rfft2", "irfft2", "fftshift", "ifftshift"):
    FUNCTIONS[getattr(np.fft, _name)] = getattr(_fft, _name)
FUNCTIONS[np.angle] = _elementwise.angle


FUNCTIONS[np.linspace] = _creation.linspace  # NumPy's signature


# Functions whose job is to hand the values to the host -- a file, a string: observations
# (the user asked for the values), not fallbacks
HOST_OUTPUTS = {np.save, np.savez, np.savez_compressed, np.savetxt, np.array2string,
                np.array_repr, np.array_str}


def array_function(func, types, args, kwargs):
    """The body of LazyArray.__array_function__."""
    for t in types:
        if not (issubclass(t, LazyArray) or issubclass(t, np.ndarray)):
            return NotImplemented
    impl = FUNCTIONS.get(func)
    if impl is not None:
        try:
            return impl(*args, **kwargs)
        except UnsupportedDtype:  # a datetime64 or string operand or dtype=: NumPy's own
            pass
    if func in HOST_OUTPUTS:
        return observe_with(func, args, kwargs)
    name = f"{func.__module__.replace('numpy._core', 'numpy').split('.')[0]}.{func.__name__}" \
        if func.__module__.startswith("numpy") and "linalg" not in func.__module__ else \
        f"{func.__module__}.{func.__name__}"
    return run_eagerly(func, name, args, kwargs)
