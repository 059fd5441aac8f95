"""Statistics, searching and sorting: NumPy's reductions as IR reductions and decompositions.

Accumulator dtypes follow NumPy: sums and products of bool / small integers accumulate in the
default (64-bit) integer of their signedness; means of integers are float64; float16 means
and variances are computed in float32 and rounded back, as NumPy does.
"""
import builtins
import math

import numpy as np

from ...core import dtypes as dt
from ...core import compose, ops, runtime
from ._base import wrap
from ._entry import ACCUMULATE, REDUCE, register, traced
from ._indexing import take
from ._fallback import run_eagerly
from ._promote import (as_lazy, as_node, axes_tuple, axis_index, broadcast_node, ir_dtype,
                       normalize_axis_tuple, result_ir_dtype)
from ._ufuncs import fill


def _finish(node, shape, axes, keepdims):
    if keepdims:
        node = compose.keepdims(node, shape, axes)
    return node


def _sum_dtype(dtype):
    if dtype == dt.BOOL or (dtype in dt.SIGNED and dtype != "int64"):
        return "int64"
    if dtype in dt.UNSIGNED and dtype != "uint64":
        return "uint64"
    return dtype


def _masked(node, where, identity):
    if where is None or where is True:
        return node
    mask = broadcast_node(where if where.dtype == dt.BOOL else ops.convert(where, dtype=dt.BOOL),
                          node.shape)
    return ops.select(mask, node, fill(identity, node.dtype, node.shape))


def _sum_like(reduce_op, identity, combine):
    @traced("a", "where")  # NumPy's names: np.sum(a=x)
    def reduction(a, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                  where=None):
        node = a
        axes = axes_tuple(axis, node.ndim)
        acc = ir_dtype(dtype) if dtype is not None else _sum_dtype(node.dtype)
        if acc == dt.BOOL:  # numpy allows dtype=bool: compute in int64, then cast
            return ops.convert(reduction.lowering(a, axis, "int64", None, keepdims, initial,
                                                  where), dtype=dt.BOOL)
        node = _masked(ops.convert(node, dtype=acc) if node.dtype != acc else node, where,
                       identity)
        result = reduce_op(node, axes=axes)
        if initial is not None:
            result = combine(result, fill(initial, acc, result.shape))
        return _finish(result, node.shape, axes, keepdims)
    return reduction


sum = _sum_like(ops.reduce_sum, 0, ops.add)  # noqa: A001 - NumPy's name
prod = _sum_like(ops.reduce_prod, 1, ops.mul)


def _extreme(reduce_op, name):
    @traced("a", "where")
    def reduction(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        node = a
        if dt.is_complex(node.dtype):  # NumPy orders complex lexicographically; lazyx does not
            raise TypeError(f"lazyx.frontends.numpy: {name[:3]} is not supported on complex "
                            f"arrays")
        axes = axes_tuple(axis, node.ndim)
        if initial is None and builtins.any(node.shape[a] == 0 for a in axes):
            raise ValueError(f"zero-size array to reduction operation {name} which has no "
                             f"identity")
        if where is not None and where is not True:
            if initial is None:
                raise ValueError(f"reduction operation '{name}' does not have an identity, "
                                 f"so to use a where mask one has to specify 'initial'")
            node = _masked(node, where, initial)
        result = reduce_op(node, axes=axes)
        if initial is not None:
            combine = ops.max_ if reduce_op is ops.reduce_max else ops.min_
            result = combine(result, fill(initial, node.dtype, result.shape))
        return _finish(result, node.shape, axes, keepdims)
    return reduction


max = _extreme(ops.reduce_max, "maximum")  # noqa: A001
min = _extreme(ops.reduce_min, "minimum")  # noqa: A001


def _logical(reduce_op, identity):
    @traced("a", "where")
    def reduction(a, axis=None, out=None, keepdims=False, *, where=None):
        node = a
        axes = axes_tuple(axis, node.ndim)
        if node.dtype != dt.BOOL:
            node = ops.ne(node, fill(0, node.dtype, node.shape))
        node = _masked(node, where, identity)
        return _finish(reduce_op(node, axes=axes), node.shape, axes, keepdims)
    return reduction


all = _logical(ops.reduce_and, True)  # noqa: A001
any = _logical(ops.reduce_or, False)  # noqa: A001


def _mean_dtypes(node_dtype, dtype):
    """(compute dtype, result dtype) for a mean: ints -> float64, float16 via float32."""
    if dtype is not None:
        out = ir_dtype(dtype)
        return ("float32" if out == "float16" else out), out
    if dt.is_complex(node_dtype):
        return node_dtype, node_dtype
    if not dt.is_float(node_dtype):
        return "float64", "float64"
    return ("float32" if node_dtype == "float16" else node_dtype), node_dtype


def _count(shape, axes):
    return math.prod(shape[a] for a in axes)


@traced("a", "where")
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    node = a
    axes = axes_tuple(axis, node.ndim)
    compute, result_dtype = _mean_dtypes(node.dtype, dtype)
    work = ops.convert(node, dtype=compute) if node.dtype != compute else node
    if where is not None and where is not True:
        mask = broadcast_node(where if where.dtype == dt.BOOL
                              else ops.convert(where, dtype=dt.BOOL), node.shape)
        total = ops.reduce_sum(ops.select(mask, work, fill(0, compute, work.shape)), axes=axes)
        count = ops.reduce_sum(ops.convert(mask, dtype=compute), axes=axes)
    else:
        total = ops.reduce_sum(work, axes=axes)
        count = fill(_count(node.shape, axes), compute, total.shape)
    result = ops.div(total, count)
    if result.dtype != result_dtype:
        result = ops.convert(result, dtype=result_dtype)
    return _finish(result, node.shape, axes, keepdims)


@traced("a", "where", "mean")
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    if correction is not None:
        ddof = correction
    node = a
    axes = axes_tuple(axis, node.ndim)
    compute, result_dtype = _mean_dtypes(node.dtype, dtype)
    work = ops.convert(node, dtype=compute) if node.dtype != compute else node
    mask = None
    n = _count(node.shape, axes)  # a Python int unless masked: the graph torch's var makes
    if where is not None and where is not True:  # NumPy's masked sums and counts
        mask = broadcast_node(where if where.dtype == dt.BOOL
                              else ops.convert(where, dtype=dt.BOOL), node.shape)
        n = ops.reduce_sum(ops.convert(mask, dtype=compute), axes=axes)
    if mean is not None:  # NumPy 2's precomputed mean (keepdims shape), used as given
        centre = broadcast_node(ops.convert(mean, dtype=compute) if mean.dtype != compute
                                else mean, node.shape)
    else:
        total = ops.reduce_sum(_masked(work, mask, 0), axes=axes)
        centre = ops.div(total, n if mask is not None else fill(n, compute, total.shape))
        kept = tuple(d for i, d in enumerate(node.shape) if i not in axes)
        centre = ops.broadcast_in_dim(centre, shape=node.shape, broadcast_dimensions=tuple(
            i for i in range(node.ndim) if i not in axes)) if kept != node.shape else centre
    dev = ops.sub(work, centre)
    if dt.is_complex(compute):  # NumPy: the mean of |x - mean|**2, a real number
        dev_sq = ops.real(ops.mul(dev, ops.conj(dev)))
        compute, result_dtype = dev_sq.dtype, dt.real_part(result_dtype) \
            if dt.is_complex(result_dtype) else result_dtype
        n = ops.real(n) if mask is not None else n
    else:
        dev_sq = ops.mul(dev, dev)
    sq = ops.reduce_sum(_masked(dev_sq, mask, 0), axes=axes)
    if mask is None:  # NumPy divides by max(n - ddof, 0)
        dof = fill(builtins.max(n - ddof, 0), compute, sq.shape)
    else:
        dof = ops.max_(ops.sub(n, fill(ddof, compute, n.shape)), fill(0, compute, n.shape))
    result = ops.div(sq, dof)
    if result.dtype != result_dtype:
        result = ops.convert(result, dtype=result_dtype)
    return _finish(result, node.shape, axes, keepdims)


@traced("a", "where", "mean")
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    return ops.sqrt(var.lowering(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                                 correction=correction))


# ---------------------------------------------------------------- scans

_SCANS = {"sum": ops.cumsum, "prod": ops.cumprod, "max": ops.cummax, "min": ops.cummin}


def _scan(kind, node, axis, dtype):
    """The node of a cumulative `kind` ("sum", "prod", "max", "min") along `axis`."""
    node, axis = compose.flat_if_none(node, axis)
    axis = axis_index(axis, node.ndim)
    acc = ir_dtype(dtype) if dtype is not None else (
        _sum_dtype(node.dtype) if kind in ("sum", "prod") else node.dtype)
    if node.dtype != acc:
        node = ops.convert(node, dtype=acc)
    return _SCANS[kind](node, axis=axis)


@traced("a")
def cumsum(a, axis=None, dtype=None, out=None):
    return _scan("sum", a, axis, dtype)


@traced("a")
def cumprod(a, axis=None, dtype=None, out=None):
    return _scan("prod", a, axis, dtype)


def _cumulative(kind, identity, x, axis, dtype, include_initial):
    """The Array API's cumulative_sum / cumulative_prod: axis required past rank 1, and with
    include_initial the identity first."""
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"cumulative_{kind}: axis must be given for arrays of rank > 1")
        axis = 0
    axis = axis_index(axis, x.ndim)
    result = _scan(kind, x, axis, dtype)
    if include_initial:
        config = tuple((1, 0, 0) if i == axis else (0, 0, 0) for i in range(result.ndim))
        result = ops.pad(result, fill(identity, result.dtype, ()), padding_config=config)
    return result


@traced("x")
def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative("sum", 0, x, axis, dtype, include_initial)


@traced("x")
def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative("prod", 1, x, axis, dtype, include_initial)


_UFUNC_REDUCE = {np.add: sum, np.multiply: prod, np.maximum: max, np.minimum: min,
                 np.logical_and: all, np.logical_or: any}


def ufunc_reduce(ufunc, x, axis=0, dtype=None, keepdims=False, initial=None, where=True,
                 out=None):
    """np.<ufunc>.reduce for the ufuncs with a reduction primitive."""
    fn = _UFUNC_REDUCE[ufunc]
    kwargs = {"keepdims": keepdims, "where": None if where is True else where}
    if fn in (sum, prod):
        kwargs.update(dtype=dtype, initial=initial)
    elif fn in (max, min):
        kwargs.update(initial=initial)
    return fn(x, axis, **kwargs)


_UFUNC_SCAN = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min"}


def ufunc_accumulate(ufunc, x, axis=0, dtype=None):
    return _accumulate(x, _UFUNC_SCAN[ufunc], axis, dtype)


@traced("x")
def _accumulate(x, kind, axis, dtype):
    return _scan(kind, x, axis, dtype)


def logaddexp_reduce(ufunc, x, axis=0, dtype=None, keepdims=False, initial=None, where=True):
    """np.logaddexp.reduce / np.logaddexp2.reduce (log-domain sums: HMMs, mixtures) as the
    max-shifted log-sum-exp, NumPy's special values kept: all -inf gives -inf, an inf gives
    inf, a NaN gives NaN. NumPy folds pairwise in order; the two agree to a few ulps.
    Integers compute in float64 as NumPy's loop does; half floats, empty axes, `initial`,
    `where` and `dtype` run NumPy's."""
    lazy = as_lazy(x)
    kind = lazy.dtype.kind
    if initial is not None or where is not True or dtype is not None or not lazy.size or \
            kind not in "iuf" or lazy.dtype == np.float16:
        return run_eagerly(ufunc.reduce, f"numpy.{ufunc.__name__}.reduce", (x,),
                           dict(axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                                where=where))
    if kind in "iu":
        lazy = lazy.astype(np.float64)
    axes = tuple(range(lazy.ndim)) if axis is None else normalize_axis_tuple(axis, lazy.ndim)
    exp, log = (np.exp2, np.log2) if ufunc is np.logaddexp2 else (np.exp, np.log)
    top = np.max(lazy, axis=axes, keepdims=True)
    shift = np.where(np.isfinite(top), top, 0)  # (an inf or NaN maximum: exp gives it back)
    out = log(np.sum(exp(lazy - shift), axis=axes, keepdims=True)) + shift
    return out if keepdims else np.squeeze(out, axis=axes)


for _ufunc in _UFUNC_REDUCE:
    register(REDUCE, _ufunc, ufunc_reduce)
register(REDUCE, np.logaddexp, logaddexp_reduce)
register(REDUCE, np.logaddexp2, logaddexp_reduce)
for _ufunc in _UFUNC_SCAN:
    register(ACCUMULATE, _ufunc, ufunc_accumulate)


# ---------------------------------------------------------------- searching

def _arg(op, name):
    @traced("a")
    def arg(a, axis=None, out=None, *, keepdims=False):
        node = a
        if dt.is_complex(node.dtype):  # NumPy orders complex lexicographically; lazyx does not
            raise TypeError(f"lazyx.frontends.numpy: {name} is not supported on complex arrays")
        if axis is None:
            shape = node.shape
            node, ax = compose.flat_if_none(node, axis)
        else:
            shape = node.shape
            ax = axis_index(axis, node.ndim)
        if node.shape[ax] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        result = op(node, axis=ax, index_dtype="int64")
        if keepdims:
            result = ops.reshape(result, new_sizes=(1,) * len(shape) if axis is None else tuple(
                1 if i == ax else d for i, d in enumerate(shape)))
        return result
    return arg


argmax = _arg(ops.argmax, "argmax")
argmin = _arg(ops.argmin, "argmin")


def searchsorted(a, v, side="left", sorter=None):
    """Insertion points by counting: NaN sorts last, as in np.sort."""
    runtime.maybe_cut()
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    a = as_lazy(a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array")
    if sorter is not None:
        a = take(a, sorter)
    n = a.shape[0]
    if type(v) is int and dt.is_int(a._node.dtype):
        info = np.iinfo(a.dtype)
        if not info.min <= v <= info.max:  # NumPy compares it exactly: before or after all
            return wrap(fill(0 if v < info.min else n, "int64", ()))
    dtype = result_ir_dtype(a, v)
    a_node, v_node = as_node(a, dtype), as_node(v, dtype)
    v_shape = v_node.shape
    a_b = ops.broadcast_in_dim(a_node, shape=v_shape + (n,), broadcast_dimensions=(len(v_shape),))
    v_b = ops.broadcast_in_dim(v_node, shape=v_shape + (n,),
                               broadcast_dimensions=tuple(range(len(v_shape))))
    if side == "left":
        before = _nan_last_less(a_b, v_b)
    else:
        before = ops.not_(_nan_last_less(v_b, a_b))
    counts = ops.reduce_sum(ops.convert(before, dtype="int64"), axes=(len(v_shape),))
    return wrap(counts)


def _nan_last_less(x, y):
    """x < y in the order where NaN is above everything (np.sort's order)."""
    lt = ops.lt(x, y)
    if not dt.is_float(x.dtype):
        return lt
    x_nan, y_nan = ops.ne(x, x), ops.ne(y, y)
    return ops.or_(lt, ops.and_(y_nan, ops.not_(x_nan)))


# ---------------------------------------------------------------- sorting

def _sort_axis(node, axis):
    node, axis = compose.flat_if_none(node, axis)
    return node, axis_index(axis, node.ndim)


@traced("a")
def sort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")
    node, ax = _sort_axis(a, axis)
    return (ops.sort(node, axis=ax, descending=bool(descending)))


@traced("a")
def argsort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """Always stable (NumPy's default quicksort may order ties differently). A 0-d array is
    sorted as the 1-d array of its element, as NumPy does (array([0]); np.sort refuses it)."""
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")
    if a.ndim == 0:
        a = ops.reshape(a, new_sizes=(1,))
    node, ax = _sort_axis(a, axis)
    return (ops.argsort(node, axis=ax, descending=bool(descending), index_dtype="int64"))
