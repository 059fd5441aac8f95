"""NumPy's routines that cut arrays apart and assemble them -- delete, insert,
hsplit/vsplit/dsplit, rollaxis, block, resize, diagflat, ediff1d -- lowered onto lazy slicing,
gathers and concatenation. NumPy's own versions are Python that starts with `asarray(a)`, a
host read of a lazy operand. Index arguments are host values (a lazy index would decide a
shape): NumPy itself resolves them, on host index arrays, so its rules and errors are the ones
that apply."""
import numpy as np

from ._base import LazyArray
from ._fallback import run_eagerly
from ._promote import as_lazy


def delete(arr, obj, axis=None):
    a = as_lazy(arr)
    if isinstance(obj, LazyArray):
        return run_eagerly(np.delete, "numpy.delete", (arr, obj), dict(axis=axis))
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis = np.lib.array_utils.normalize_axis_index(axis, a.ndim)
    # NumPy's own delete on the positions along the axis (laid out along that axis, so its
    # messages name it): its index rules and errors
    n = a.shape[axis]
    positions = np.arange(n).reshape([n if i == axis else 1 for i in range(a.ndim)])
    kept = np.delete(positions, obj, axis=axis).reshape(-1)
    return np.take(a, kept, axis=axis)


def insert(arr, obj, values, axis=None):
    a = as_lazy(arr)
    if isinstance(obj, LazyArray):
        return run_eagerly(np.insert, "numpy.insert", (arr, obj, values), dict(axis=axis))
    # NumPy converts the values to the array's dtype first (its casting and errors)
    v = values.astype(a.dtype) if isinstance(values, LazyArray) else \
        as_lazy(np.array(values, dtype=a.dtype))
    # NumPy's own insert of positions decides every rule (obj forms, broadcasting, axis=None,
    # errors): where each result element comes from, the array (>= 0) or the values
    from_array = np.insert(np.arange(a.size).reshape(a.shape), obj, np.full(v.shape, -1),
                           axis=axis)
    from_values = np.insert(np.full(a.shape, -1), obj, np.arange(v.size).reshape(v.shape),
                            axis=axis)
    if not (from_array < 0).any():
        return np.take(a.reshape(-1), from_array)
    if (from_array < 0).all():
        return np.take(v.reshape(-1), from_values)
    return np.where(from_array >= 0, np.take(a.reshape(-1), np.maximum(from_array, 0)),
                    np.take(v.reshape(-1), np.maximum(from_values, 0)))


def _split_along(name, min_ndim, axis_of):
    def fn(ary, indices_or_sections):
        a = as_lazy(ary)
        if a.ndim < min_ndim:
            raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
        return np.split(a, indices_or_sections, axis_of(a.ndim))
    fn.__name__ = name
    return fn


hsplit = _split_along("hsplit", 1, lambda ndim: 1 if ndim > 1 else 0)
vsplit = _split_along("vsplit", 2, lambda ndim: 0)
dsplit = _split_along("dsplit", 3, lambda ndim: 2)


def rollaxis(a, axis, start=0):
    x = as_lazy(a)
    n = x.ndim
    axis = np.lib.array_utils.normalize_axis_index(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(
            f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return x[...]
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return np.transpose(x, axes)


def _block_structure(arrays, depth=0):
    """(list depth, largest leaf ndim) of np.block's argument, or None where NumPy refuses
    it (a tuple, an empty list, leaves at different depths): NumPy's own raises then."""
    if type(arrays) is tuple:
        return None
    if type(arrays) is not list:
        return depth, np.ndim(arrays)
    if not arrays:
        return None
    parts = [_block_structure(item, depth + 1) for item in arrays]
    if any(p is None for p in parts) or len({d for d, _ in parts}) != 1:
        return None
    return parts[0][0], max(n for _, n in parts)


def block(arrays):
    structure = _block_structure(arrays)
    if structure is None:
        return run_eagerly(np.block, "numpy.block", (arrays,), {})
    depth, ndim = structure
    ndim = max(depth, ndim)

    def assemble(item, level):
        if type(item) is list:  # the innermost lists join along the last axis
            return np.concatenate([assemble(i, level + 1) for i in item], axis=level - depth)
        x = as_lazy(item)
        return x.reshape((1,) * (ndim - x.ndim) + tuple(x.shape))
    return assemble(arrays, 0)


def resize(a, new_shape):
    x = as_lazy(a).reshape(-1)
    shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    if any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size = int(np.prod(shape, dtype=np.int64))
    if x.shape[0] == 0 or size == 0:
        return as_lazy(np.zeros(shape, x.dtype))
    repeats = -(-size // x.shape[0])
    return np.concatenate((x,) * repeats)[:size].reshape(shape)


def diagflat(v, k=0):
    return np.diag(as_lazy(v).reshape(-1), k)


def ediff1d(ary, to_end=None, to_begin=None):
    x = as_lazy(ary).reshape(-1)
    diff = x[1:] - x[:-1]
    if to_begin is None and to_end is None:
        return diff
    begin = [] if to_begin is None else [_edge("to_begin", to_begin, x.dtype)]
    end = [] if to_end is None else [_edge("to_end", to_end, x.dtype)]
    return np.concatenate(begin + [diff.astype(x.dtype)] + end)


def _edge(name, values, dtype):
    """ediff1d's to_begin / to_end, checked as NumPy checks them, flat, in ary's dtype."""
    if not np.can_cast(values if isinstance(values, LazyArray) else np.asanyarray(values),
                       dtype, casting="same_kind"):
        raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the "
                        f"`same_kind` rule.")
    return as_lazy(values).reshape(-1).astype(dtype)


FUNCTIONS = {np.delete: delete, np.insert: insert, np.hsplit: hsplit, np.vsplit: vsplit,
             np.dsplit: dsplit, np.rollaxis: rollaxis, np.block: block, np.resize: resize,
             np.diagflat: diagflat, np.ediff1d: ediff1d}
