"""Shape manipulation: every function here is static layout work on IR nodes.

All sizes are known at trace time, so each function checks its arguments and raises NumPy's
exception with NumPy's wording at the call.
"""
import builtins
import math
import operator

import numpy as np

from ...core import compose, ops, runtime
from ._base import LazyArray, wrap
from ._fallback import run_eagerly
from ._entry import apply, traced
from ._indexing import take
from ._promote import (as_lazy, as_node, assign, axes_tuple, axis_index, broadcast_node,
                       broadcast_shapes, holdable, ir_dtype, normalize_axis_tuple, result_ir_dtype,
                       shape_of, shape_text)


def _shape_arg(shape):
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    return tuple(operator.index(d) for d in shape)


@traced("a")
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    # 'A' follows the array's layout, which for a lazy array is C's
    if order == "K":
        raise ValueError("order 'K' is not permitted for reshaping")
    if order not in ("C", "F", "A", None):
        raise ValueError("order must be one of 'C', 'F', 'A', or 'K' (got '%s')" % (order,))
    node = a
    shape = _shape_arg(shape if shape is not None else newshape)
    unknown = [i for i, d in enumerate(shape) if d < 0]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if unknown:
        known = math.prod(d for d in shape if d >= 0)
        if known == 0 or node.size % known:
            raise ValueError(f"cannot reshape array of size {node.size} into shape "
                             f"{shape_text(shape)}")
        shape = tuple(node.size // known if d < 0 else d for d in shape)
    if math.prod(shape) != node.size:
        raise ValueError(f"cannot reshape array of size {node.size} into shape "
                         f"{shape_text(shape)}")
    if order == "F" and node.ndim > 1 or order == "F" and len(shape) > 1:
        # column-major: the reversed axes, reshaped row-major to the reversed shape, reversed
        reverse = tuple(range(node.ndim))[::-1]
        flipped = ops.transpose(node, permutation=reverse) if node.ndim > 1 else node
        out = ops.reshape(flipped, new_sizes=shape[::-1])
        return ops.transpose(out, permutation=tuple(range(len(shape)))[::-1]) \
            if len(shape) > 1 else out
    return node if node.shape == shape else ops.reshape(node, new_sizes=shape)


def ravel(a, order="C"):
    return reshape(a, (-1,), "C" if order == "K" else order)


@traced("x")
def permute_dims(x, /, axes):
    node = x
    if axes is None:
        axes = tuple(range(node.ndim))[::-1]
    axes = tuple(operator.index(a) for a in axes)
    if len(axes) != node.ndim:
        raise ValueError("axes don't match array")
    try:
        axes = normalize_axis_tuple(axes, node.ndim)
    except ValueError as err:
        if "repeated" in str(err) and not isinstance(err, IndexError):
            raise ValueError("repeated axis in transpose") from None
        raise
    if axes == tuple(range(node.ndim)):
        return node
    return ops.transpose(node, permutation=axes)


def transpose(a, axes=None):
    return permute_dims(a, axes)


def matrix_transpose(x, /):
    x = as_lazy(x)
    if x.ndim < 2:
        raise ValueError("matrix_transpose requires an array of at least 2 dimensions")
    return swapaxes(x, -1, -2)


def swapaxes(a, axis1, axis2):
    node = as_node(a)
    i, j = axis_index(axis1, node.ndim, "axis1"), axis_index(axis2, node.ndim, "axis2")
    perm = list(range(node.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return permute_dims(a, perm)


def moveaxis(a, source, destination):
    node = as_node(a)
    source = normalize_axis_tuple(source, node.ndim, "source")
    destination = normalize_axis_tuple(destination, node.ndim, "destination")
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    order = [n for n in range(node.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return permute_dims(a, order)


def expand_dims(a, axis=0):
    node = as_node(a)
    axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out_ndim = node.ndim + len(axis)
    axis = normalize_axis_tuple(axis, out_ndim)
    it = iter(node.shape)
    shape = tuple(1 if i in axis else next(it) for i in range(out_ndim))
    return wrap(ops.reshape(node, new_sizes=shape))


def squeeze(a, axis=None):
    node = as_node(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(node.shape) if d == 1)
    else:
        axes = normalize_axis_tuple(axis, node.ndim)
        if builtins.any(node.shape[i] != 1 for i in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal "
                             "to one")
    shape = tuple(d for i, d in enumerate(node.shape) if i not in axes)
    return wrap(node if shape == node.shape else ops.reshape(node, new_sizes=shape))


@traced("array")
def broadcast_to(array, shape, subok=False):
    shape = _shape_arg(shape)
    if builtins.any(d < 0 for d in shape):
        raise ValueError("all elements of broadcast shape must be non-negative")
    node = array
    if node.ndim > len(shape):
        raise ValueError(f"input operand has more dimensions than allowed by the axis "
                         f"remapping")
    return broadcast_node(node, shape)


def broadcast_arrays(*args, subok=False):
    shape = broadcast_shapes(*[tuple(shape_of(a)) for a in args])
    return [wrap(broadcast_node(as_node(a), shape)) for a in args]  # the Array API's list


def _common(arrays, dtype=None):
    arrays = list(arrays)
    if dtype is not None:
        target = ir_dtype(dtype)
    else:
        target = result_ir_dtype(*[a if isinstance(a, LazyArray) else np.asarray(a)
                                   for a in arrays])
    return [as_node(a, target) for a in arrays]


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    runtime.maybe_cut()
    if isinstance(arrays, LazyArray):
        arrays = list(unstack(arrays))
    nodes = _common(arrays, dtype)
    if not nodes:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        nodes, axis = [compose.flatten(n) for n in nodes], 0
    first = nodes[0]
    if first.ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = axis_index(axis, first.ndim)
    for i, n in enumerate(nodes[1:], 1):
        if n.ndim != first.ndim:
            raise ValueError(f"all the input arrays must have same number of dimensions, but "
                             f"the array at index 0 has {first.ndim} dimension(s) and the array "
                             f"at index {i} has {n.ndim} dimension(s)")
        for d in range(first.ndim):
            if d != axis and n.shape[d] != first.shape[d]:
                raise ValueError(f"all the input array dimensions except for the "
                                 f"concatenation axis must match exactly, but along dimension "
                                 f"{d}, the array at index 0 has size {first.shape[d]} and the "
                                 f"array at index {i} has size {n.shape[d]}")
    result = wrap(nodes[0] if len(nodes) == 1 else ops.concatenate(*nodes, dimension=axis))
    return result if out is None else assign(out, result, casting=casting)


def concat(arrays, /, *, axis=0):
    return concatenate(arrays, axis=axis)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    runtime.maybe_cut()
    nodes = _common(arrays, dtype)
    if not nodes:
        raise ValueError("need at least one array to stack")
    if builtins.any(n.shape != nodes[0].shape for n in nodes):
        raise ValueError("all input arrays must have the same shape")
    axis = axis_index(axis, nodes[0].ndim + 1)
    shape = nodes[0].shape[:axis] + (1,) + nodes[0].shape[axis:]
    nodes = [ops.reshape(n, new_sizes=shape) for n in nodes]
    result = wrap(nodes[0] if len(nodes) == 1 else ops.concatenate(*nodes, dimension=axis))
    return result if out is None else assign(out, result, casting=casting)


def atleast_1d(*arys):
    out = [a if as_lazy(a).ndim >= 1 else reshape(a, (1,)) for a in map(as_lazy, arys)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*arys):
    def one(a):
        a = as_lazy(a)
        return a if a.ndim >= 2 else reshape(a, (1, -1) if a.ndim == 1 else (1, 1))
    out = [one(a) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*arys):
    def one(a):
        a = as_lazy(a)
        if a.ndim >= 3:
            return a
        shape = {0: (1, 1, 1), 1: (1, a.size, 1), 2: a.shape + (1,)}[a.ndim]
        return reshape(a, shape)
    out = [one(a) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(a) for a in tup], 0, dtype=dtype)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype)


def dstack(tup):
    return concatenate([atleast_3d(a) for a in tup], 2)


def column_stack(tup):
    arrs = [as_lazy(a) for a in tup]
    return concatenate([reshape(a, (-1, 1)) if a.ndim < 2 else a for a in arrs], 1)


def unstack(x, /, *, axis=0):
    node = as_node(x)
    axis = axis_index(axis, node.ndim)
    shape = node.shape[:axis] + node.shape[axis + 1:]
    return tuple(wrap(ops.reshape(compose.slice_axis(node, axis, i, i + 1), new_sizes=shape))
                 for i in range(node.shape[axis]))


def flip(m, axis=None):
    node = as_node(m)
    axes = axes_tuple(axis, node.ndim)
    return wrap(ops.rev(node, dimensions=axes) if axes else node)


def roll(a, shift, axis=None):
    runtime.maybe_cut()
    node = as_node(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), node.shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, (int, np.integer)) else tuple(shift)
    if len(shifts) != len(axes):
        if len(shifts) == 1:
            shifts = shifts * len(axes)
        elif len(axes) == 1:
            axes = axes * len(shifts)
        else:
            raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    total = {}
    for s, ax in zip(shifts, axes):
        ax = axis_index(ax, node.ndim)
        total[ax] = total.get(ax, 0) + operator.index(s)
    return wrap(compose.roll(node, total))


@traced("A")
def tile(A, reps):
    node = A
    reps = (operator.index(reps),) if isinstance(reps, (int, np.integer)) else \
        tuple(operator.index(r) for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    ndim = builtins.max(node.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - node.ndim) + node.shape
    interleaved = tuple(v for r, d in zip(reps, shape) for v in (r, d))
    out = ops.broadcast_in_dim(ops.reshape(node, new_sizes=shape), shape=interleaved,
                               broadcast_dimensions=tuple(range(1, 2 * ndim, 2)))
    return ops.reshape(out, new_sizes=tuple(r * d for r, d in zip(reps, shape)))


def repeat(a, repeats, axis=None):
    runtime.maybe_cut()
    node = as_node(a)
    node, axis = compose.flat_if_none(node, axis)
    axis = axis_index(axis, node.ndim)
    if isinstance(repeats, LazyArray):  # the output size depends on the values
        repeats = repeats._host("data_dependent")
    reps = np.asarray(repeats)
    if reps.ndim == 0 or reps.size == 1:
        r = int(reps.reshape(()))
        if r < 0:
            raise ValueError("negative dimensions are not allowed")
        n = node.shape[axis]
        shape = node.shape[:axis + 1] + (r,) + node.shape[axis + 1:]
        dims = tuple(i if i <= axis else i + 1 for i in range(node.ndim))
        out = ops.broadcast_in_dim(node, shape=shape, broadcast_dimensions=dims)
        return wrap(ops.reshape(out, new_sizes=node.shape[:axis] + (n * r,) +
                                node.shape[axis + 1:]))
    if reps.shape != (node.shape[axis],):
        raise ValueError(f"operands could not be broadcast together with shape "
                         f"({node.shape[axis]},) ({reps.size},)")
    return take(wrap(node), np.repeat(np.arange(node.shape[axis]), reps), axis=axis)


def split(ary, indices_or_sections, axis=0):
    node = as_node(ary)
    ax = axis_index(axis, node.ndim)
    if isinstance(indices_or_sections, (int, np.integer)) and \
            node.shape[ax] % int(indices_or_sections):
        raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def array_split(ary, indices_or_sections, axis=0):
    node = as_node(ary)
    ax = axis_index(axis, node.ndim)
    n = node.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo, hi = builtins.min(builtins.max(lo + n if lo < 0 else lo, 0), n), \
            builtins.min(builtins.max(hi + n if hi < 0 else hi, 0), n)
        out.append(wrap(compose.slice_axis(node, ax, lo, builtins.max(lo, hi))))
    return out


# np.pad modes whose padding copies elements of the array: each is a gather along each axis,
# by the index vector NumPy's own pad gives arange(n) (so every rule -- reflections longer
# than the axis, wrap-around -- and every error is NumPy's)
_INDEX_PAD_MODES = frozenset(("edge", "reflect", "symmetric", "wrap"))


def pad(array, pad_width, mode="constant", **kwargs):
    if mode in _INDEX_PAD_MODES and kwargs.get("reflect_type", "even") == "even" and \
            set(kwargs) <= {"reflect_type"}:
        return _pad_by_index(array, pad_width, mode)
    if mode != "constant" or set(kwargs) - {"constant_values"}:
        return run_eagerly(np.pad, "numpy.pad", (array, pad_width, mode), kwargs)
    runtime.maybe_cut()
    node = as_node(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (node.ndim, 2))
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    value = kwargs.get("constant_values", 0)
    if np.ndim(value) != 0:
        return run_eagerly(np.pad, "numpy.pad", (array, pad_width, mode), kwargs)
    value_node = as_node(np.asarray(value).astype(np.dtype(node.dtype))
                         if not isinstance(value, LazyArray) else value, node.dtype)
    config = tuple((int(lo), int(hi), 0) for lo, hi in widths)
    return wrap(ops.pad(node, value_node, padding_config=config))


def _pad_by_index(array, pad_width, mode):
    runtime.maybe_cut()
    x = as_lazy(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            index = np.pad(np.arange(x.shape[axis]), (int(lo), int(hi)), mode=mode)
            x = take(x, index, axis=axis)
    return x if x is not array else copy(x)


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """NumPy's windows (a strided view there), as one gather per windowed axis: the window
    index i + j, its window dimension then moved to the end in the order of `axis`."""
    if writeable:  # a view the caller writes through: only NumPy's strides can be that
        return run_eagerly(np.lib.stride_tricks.sliding_window_view,
                           "numpy.sliding_window_view", (x, window_shape),
                           dict(axis=axis, subok=subok, writeable=writeable))
    runtime.maybe_cut()
    lazy = as_lazy(x)
    # NumPy's checks and its result's shape, from a view of one zero (no memory)
    want = np.lib.stride_tricks.sliding_window_view(
        np.broadcast_to(np.zeros((), lazy.dtype), lazy.shape), window_shape, axis=axis).shape
    windows = (tuple(window_shape) if np.iterable(window_shape) else (int(window_shape),))
    axes = tuple(range(lazy.ndim)) if axis is None else \
        tuple(normalize_axis_tuple(axis, lazy.ndim, allow_duplicate=True))
    if len(set(axes)) != len(axes):  # the same axis windowed twice: NumPy's own
        return run_eagerly(np.lib.stride_tricks.sliding_window_view,
                           "numpy.sliding_window_view", (x, window_shape), dict(axis=axis))
    out = lazy
    for ax, w in zip(axes, windows):
        n = out.shape[ax] - int(w) + 1
        index = np.arange(n)[:, None] + np.arange(int(w))[None, :]
        out = take(out, index, axis=ax)          # (.., n, w, ..): the window dim after ax
        out = moveaxis(out, ax + 1, -1)
    assert out.shape == want, (out.shape, want)
    return out


def diff(a, n=1, axis=-1, prepend=None, append=None):
    runtime.maybe_cut()
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    x = as_lazy(a)
    ax = axis_index(axis, x.ndim)
    pieces = []
    if prepend is not None:
        pieces.append(broadcast_to(prepend, x.shape[:ax] + (1,) + x.shape[ax + 1:])
                      if np.ndim(prepend) == 0 else prepend)
    pieces.append(x)
    if append is not None:
        pieces.append(broadcast_to(append, x.shape[:ax] + (1,) + x.shape[ax + 1:])
                      if np.ndim(append) == 0 else append)
    if len(pieces) > 1:
        x = concatenate(pieces, ax)
    for _ in range(n):
        m = x.shape[ax]
        hi = wrap(compose.slice_axis(x._node, ax, builtins.min(1, m), m))
        lo = wrap(compose.slice_axis(x._node, ax, 0, builtins.max(m - 1, 0)))
        x = apply(np.not_equal if x.dtype == np.bool_ else np.subtract, (hi, lo))
    return x


def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def astype(x, dtype, /, *, copy=True, device=None):
    if not isinstance(dtype, LazyArray) and not holdable(dtype):
        # datetime64 / strings: NumPy's cast of the values, a host array (counted)
        return run_eagerly(lambda a: np.asarray(a).astype(dtype), "numpy.ndarray.astype",
                           (x,), {})
    target = ir_dtype(dtype)
    if not copy and isinstance(x, LazyArray) and x.dtype == np.dtype(dtype):
        return x  # NumPy: copy=False with the same dtype is the array itself
    node = as_node(x)
    return wrap(node if node.dtype == target else ops.convert(node, dtype=target))


def copy(a, order="K", subok=False):
    return wrap(as_node(a))
