"""Indexing: basic (ints, slices, None, ...) and advanced (integer and boolean arrays).

Integer indices and unit-step slices lower to ``dynamic_slice`` / ``dynamic_update_slice``
with their start as a *runtime parameter*: ``x[i]`` and ``X[i:i + batch]`` for a new ``i``
reuse the compiled program. Integer indices known at trace time are bounds-checked at the
call (IndexError, as NumPy), and so are lazy index arrays whose values already exist (uploaded
from the host: core/host_values.py); computed index arrays cannot be checked there and are
clamped (gather) or dropped (scatter) instead. Boolean masks whose positions decide the output shape sync
(cause "data_dependent"); ``a[mask] = scalar`` needs no sync (it lowers to a select).
"""
import builtins
import operator

import numpy as np

from ...core import dtypes as dt
from ...core import compose, host_values, ir, ops, runtime
from ...core.symbolic import index_bound, unit_slice, unit_step
from . import _views
from ._base import LazyArray, wrap
from ._entry import AT, REDUCEAT, register, traced
from ._fallback import rewrap
from ._promote import (as_lazy, as_node, assign, axes_tuple, axis_index, broadcast_node,
                       broadcast_shapes, ir_dtype, shape_of, shape_text)
from ._ufuncs import fill

_INDEX_DTYPE = "int32"  # starts of dynamic slices: int32 keeps float32 programs 32-bit


def _is_int_scalar(item):
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def _too_many(ndim, used):
    return IndexError(f"too many indices for array: array is {ndim}-dimensional, but {used} "
                      f"were indexed")


def _out_of_bounds(index, axis, size):
    return IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")


class _Key:
    """A normalized index: one entry per operand axis plus None markers."""

    def __init__(self, node, key):
        if not isinstance(key, tuple):
            key = (key,)
        items = []
        for item in key:
            # (NumPy makes an integer array of any sequence item: `a[range(n), y]`, and a
            # tuple inside the index tuple, `X[:, (0, 2)]`, `X[:, ()]`)
            if isinstance(item, (list, tuple, range)) \
                    or (isinstance(item, np.ndarray) and item.ndim > 0) \
                    or (isinstance(item, np.ndarray) and item.dtype == np.bool_):
                item = np.asarray(item)
                if item.dtype.kind not in "biu" and item.size:
                    raise IndexError("arrays used as indices must be of integer (or boolean) "
                                     "type")
                if item.size == 0 and item.dtype.kind == "f":
                    item = item.astype(np.int64)
            elif isinstance(item, np.ndarray):  # 0-d integer array: an integer
                item = item.item() if item.dtype.kind in "iu" else item
            elif isinstance(item, LazyArray) and item.dtype.kind not in "biu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            elif not (item is None or item is Ellipsis or isinstance(item, slice)
                      or _is_int_scalar(item) or isinstance(item, LazyArray)):
                if hasattr(item, "__index__") and not isinstance(item, (bool, np.bool_)):
                    item = operator.index(item)
                else:
                    raise IndexError("only integers, slices (`:`), ellipsis (`...`), "
                                     "numpy.newaxis (`None`) and integer or boolean arrays "
                                     "are valid indices")
            items.append(item)
        # Boolean arrays stand for the integer arrays of their True positions.
        expanded = []
        for item in items:
            if isinstance(item, (np.ndarray, LazyArray)) and item.dtype == np.bool_:
                expanded.append(("bool", item))
            else:
                expanded.append(item)
        used = builtins.sum(item[1].ndim if isinstance(item, tuple) else 1
                            for item in expanded if item is not None and item is not Ellipsis)
        if builtins.sum(item is Ellipsis for item in expanded) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if used > node.ndim:
            raise _too_many(node.ndim, used)
        out = []
        for item in expanded:
            if item is Ellipsis:
                out.extend([slice(None)] * (node.ndim - used))
            else:
                out.append(item)
        if not builtins.any(item is Ellipsis for item in expanded):
            out.extend([slice(None)] * (node.ndim - used))
        # Replace boolean arrays by integer arrays (one per masked axis).
        self.items, axis = [], 0
        for item in out:
            if isinstance(item, tuple):
                mask = item[1]
                expect = node.shape[axis:axis + mask.ndim]
                for k, (m, d) in enumerate(zip(mask.shape, expect)):
                    if m != d:
                        raise IndexError(f"boolean index did not match indexed array along "
                                         f"axis {axis + k}; size of axis is {d} but size of "
                                         f"corresponding boolean axis is {m}")
                host = mask._host("data_dependent") if isinstance(mask, LazyArray) else mask
                self.items.extend(np.nonzero(host) if host.ndim else
                                  [np.zeros(int(host), np.int64)])
                axis += mask.ndim
            else:
                self.items.append(item)
                axis += item is not None
        self.has_arrays = builtins.any(isinstance(i, (np.ndarray, LazyArray))
                                       for i in self.items)


def _checked_index(item, axis, n):
    """An integer index into an axis of size n, as a non-negative position (IndexError if out)."""
    i = index_bound(item)
    if not -n <= i < n:
        raise _out_of_bounds(int(i), axis, n)
    return i + n if i < 0 else i


def _basic(node, items):
    """Apply ints and slices; arrays/None keep their axis whole. Returns (node, plan).

    plan: per remaining axis of the returned node, 'int' (size-1, to drop) or 'keep'.
    """
    starts, sizes, steps, plan = [], [], [], []
    axis = 0
    for item in items:
        if item is None:
            continue
        n = node.shape[axis]
        if _is_int_scalar(item):
            starts.append(_checked_index(item, axis, n))
            sizes.append(1)
            steps.append(1)
            plan.append("int")
        elif isinstance(item, slice) and unit_step(item):
            start, length = unit_slice(item, n)
            starts.append(start)
            sizes.append(length)
            steps.append(1)
            plan.append("keep")
        elif isinstance(item, slice):
            start, stop, step = item.indices(n)
            length = builtins.max(0, (stop - start + (step - (1 if step > 0 else -1))) // step)
            starts.append(start)
            sizes.append(length)
            steps.append(step)
            plan.append("keep")
        else:
            starts.append(0)
            sizes.append(n)
            steps.append(1)
            plan.append("keep")
        axis += 1
    if all(st == 1 for st in steps):
        if tuple(sizes) != node.shape:
            params = [ir.param(s, _INDEX_DTYPE) for s in starts]
            node = ops.dynamic_slice(node, *params, slice_sizes=tuple(sizes))
        return node, plan
    # strided: the starts become static attributes, so their values are part of the guard
    starts = [operator.index(st) for st in starts]
    flipped = tuple(i for i, st in enumerate(steps) if st < 0)
    if not flipped:
        return compose.strided_window(node, starts, sizes, steps), plan
    node = ops.rev(node, dimensions=flipped)
    lo, hi, strides = [], [], []
    for i, (s, n, st) in enumerate(zip(starts, sizes, steps)):
        d = node.shape[i]
        if st < 0:
            s = d - 1 - s  # position in the reversed axis
            st = -st
        if n == 0:
            s = 0
        lo.append(s)
        hi.append(s + (n - 1) * st + 1 if n else s)
        strides.append(st)
    node = ops.slice_(node, start_indices=tuple(lo), limit_indices=tuple(hi),
                      strides=tuple(strides))
    return node, plan


def _check_host(host, axis, size):
    bad = (host < -size) | (host >= size)
    if bad.any():
        raise _out_of_bounds(int(host[bad].flat[0]), axis, size)


def _index_node(item, size, axis):
    """An integer index (host or lazy) as an int64 node with negatives wrapped."""
    if isinstance(item, LazyArray):
        known = host_values.known(item._node)  # an uploaded index array: check it as NumPy
        if known is not None:
            _check_host(np.asarray(known, dtype=np.int64), axis, size)
        idx = as_node(item, "int64")
        return ops.select(ops.lt(idx, fill(0, "int64", idx.shape)),
                          ops.add(idx, fill(size, "int64", idx.shape)), idx)
    host = np.asarray(item, dtype=np.int64)
    _check_host(host, axis, size)
    host = np.where(host < 0, host + size, host)
    return runtime.from_host(host, "int64") if host.ndim else ir.param(host, "int64")


def getitem_node(node, key):
    runtime.maybe_cut()
    key = key if isinstance(key, _Key) else _Key(node, key)
    items = key.items
    if not key.has_arrays:
        node, plan = _basic(node, items)
        shape, it = [], iter(zip(plan, node.shape))
        for item in items:
            if item is None:
                shape.append(1)
                continue
            kind, d = next(it)
            if kind == "keep":
                shape.append(d)
        shape = tuple(shape)
        return node if shape == node.shape else ops.reshape(node, new_sizes=shape)
    if builtins.any(item is None for item in items):  # a new axis is a size-1 axis indexed by a full slice
        shape, axis = [], 0
        for item in items:
            if item is None:
                shape.append(1)
            else:
                shape.append(node.shape[axis])
                axis += 1
        node = ops.reshape(node, new_sizes=tuple(shape))
        items = [slice(None) if item is None else item for item in items]
    # Integers join the advanced indices when arrays are present (NumPy's rule).
    advanced = [i for i, item in enumerate(items)
                if isinstance(item, (np.ndarray, LazyArray)) or _is_int_scalar(item)]
    basic_items = [slice(None) if i in advanced else item for i, item in enumerate(items)]
    node, _ = _basic(node, basic_items)
    index_nodes = [_index_node(items[a], node.shape[a], a) for a in advanced]
    try:
        batch = broadcast_shapes(*[n.shape for n in index_nodes])
    except ValueError:
        listed = " ".join("(" + ",".join(str(d) for d in n.shape) +
                          ("," if n.ndim == 1 else "") + ")" for n in index_nodes)
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {listed} ") from None
    rest = [a for a in range(node.ndim) if a not in advanced]
    perm = tuple(advanced) + tuple(rest)
    if perm != tuple(range(node.ndim)):
        node = ops.transpose(node, permutation=perm)
    stacked = ops.concatenate(*[ops.reshape(broadcast_node(n, batch), new_sizes=batch + (1,))
                                for n in index_nodes], dimension=len(batch)) \
        if len(index_nodes) > 1 else ops.reshape(broadcast_node(index_nodes[0], batch),
                                                 new_sizes=batch + (1,))
    out = ops.gather(node, stacked)
    contiguous = advanced == list(range(advanced[0], advanced[0] + len(advanced)))
    if contiguous and advanced[0] > 0:
        nb, first = len(batch), advanced[0]
        order = tuple(range(nb, nb + first)) + tuple(range(nb)) + \
            tuple(range(nb + first, out.ndim))
        out = ops.transpose(out, permutation=order)
    return out


def _zero_d_mask(key):
    """True/False for a lone 0-d boolean index (NumPy: a new axis of length 1 or 0), else
    None. A lazy one is read on the host: it decides the result's shape."""
    if isinstance(key, (bool, np.bool_)):
        return bool(key)
    if isinstance(key, (LazyArray, np.ndarray)) and key.dtype == np.bool_ and key.ndim == 0:
        return bool(key._host("data_dependent") if isinstance(key, LazyArray) else key)
    return None


def getitem(x, key):
    flag = _zero_d_mask(key)
    if flag is not None:
        node = ops.reshape(x._node, new_sizes=(1,) + x.shape)
        if not flag:
            node = ops.slice_(node, start_indices=(0,) * node.ndim,
                              limit_indices=(0,) + x.shape)
        return wrap(node)
    out = wrap(getitem_node(x._node, key))
    if _is_view_key(key, x.ndim):  # NumPy's view: written through (_views.py)
        _views.link(x, out, lambda p: getitem_node(p, key),
                    lambda p, v: setitem_node(p, key, wrap(v)), lambda s: s[key])
    return out


def _is_view_key(key, ndim):
    """Whether NumPy's x[key] is a view: a basic index (integers, slices, None, Ellipsis)
    that is not one integer per axis (that gives a NumPy scalar, which owns its value)."""
    t = type(key)
    if t is int:
        return ndim > 1
    if t is slice:
        return _static_slice(key)
    items = key if t is tuple else (key,)
    ints, other = 0, False
    for item in items:
        if item is None or item is Ellipsis:
            other = True
        elif type(item) is slice:
            if not _static_slice(item):
                return False
            other = True
        elif _is_int_scalar(item):
            ints += 1
        else:
            return False  # an array or a list: advanced indexing copies
    return other or ints < ndim


def _static_slice(s):
    for b in (s.start, s.stop, s.step):
        if b is not None and type(b) is not int and not _is_int_scalar(b):
            return False  # (a lazy bound: a new value)
    return True


# ---------------------------------------------------------------- assignment

def _scalar_like(value):
    return np.ndim(value) == 0 if not isinstance(value, LazyArray) else value.ndim == 0


def setitem(x, key, value):
    runtime.maybe_cut()
    _views.check_writeable(x)
    node = setitem_node(x._node, key, value)
    if node is not None:
        _views.write(x, node)


def setitem_node(node, key, value):
    """`node` with node[key] = value, or None when nothing is written (x[False] = v)."""
    flag = _zero_d_mask(key)
    if flag is not None:  # x[True] = v writes everything, x[False] = v nothing
        return setitem_node(node, Ellipsis, value) if flag else None
    if isinstance(value, LazyArray) and value.size == 1 and value.ndim:
        value = wrap(ops.reshape(value._node, new_sizes=()))
    # a[mask] = scalar: a select, no sync.
    if isinstance(key, (LazyArray, np.ndarray)) and key.dtype == np.bool_ and \
            key.shape == node.shape[:key.ndim] and key.ndim and _scalar_like(value):
        mask = as_node(key, dt.BOOL)
        if key.ndim < node.ndim:
            mask = ops.broadcast_in_dim(mask, shape=node.shape,
                                        broadcast_dimensions=tuple(range(key.ndim)))
        return ops.select(mask, _value_node(value, node.dtype, node.shape), node)
    parsed = _Key(node, key)
    if not parsed.has_arrays and builtins.all(
            _is_int_scalar(i) or i is None or (isinstance(i, slice) and
                                               unit_step(i))
            for i in parsed.items):
        return _update_window(node, parsed.items, value)
    return _scatter_into(node, parsed, value, "set")


def _scatter_into(node, parsed, value, mode, negate=False):
    """`node` with `value` (negated if asked) combined by `mode` into the elements the parsed
    key selects: their flat positions are the same key applied to an iota, then one scatter
    over the flattened array."""
    positions = ops.reshape(ops.iota(dtype="int64", shape=(node.size,), dimension=0),
                            new_sizes=node.shape)
    selected = getitem_node(positions, parsed)
    update = _value_node(value, node.dtype, selected.shape)
    if negate:
        update = ops.neg(update)
    flat = ops.reshape(node, new_sizes=(node.size,))
    indices = ops.reshape(selected, new_sizes=(selected.size, 1))
    out = ops.scatter(flat, indices, ops.reshape(update, new_sizes=(selected.size,)), mode=mode)
    return ops.reshape(out, new_sizes=node.shape)


# np.<ufunc>.at(a, indices, b): unbuffered, so an index given twice combines twice -- what
# a scatter with a combining mode does. subtract adds -b (exact: negation only flips a sign).
_AT_MODES = {np.add: "add", np.subtract: "add", np.multiply: "mul", np.maximum: "max",
             np.minimum: "min"}


def ufunc_at(ufunc, x, key, value):
    """np.<ufunc>.at on a lazy `x` as one scatter; False (NumPy runs it) when `x` is not lazy
    or `value`'s dtype would make NumPy's loop another dtype than x's (it computes in that
    dtype and casts back unsafely at every write). A value of a dtype that x's takes in
    (float32 or int64 into float64: numpy-ml's col2im) is NumPy's loop in x's dtype, and so
    the scatter's after casting it."""
    if type(x) is not LazyArray or x.dtype.kind not in "iuf":
        return False
    if isinstance(value, (LazyArray, np.ndarray, np.generic)):
        if value.dtype != x.dtype and np.result_type(x.dtype, value.dtype) != x.dtype:
            return False
    elif not (type(value) is int and _fits(value, x.dtype) or
              type(value) is float and x.dtype.kind == "f"):
        return False  # (a Python number is weak, NEP 50: it takes x's dtype if it fits)
    runtime.maybe_cut()
    node = x._node
    _views.write(x, _scatter_into(node, _Key(node, key), value, _AT_MODES[ufunc],
                                  negate=ufunc is np.subtract), "output array is read-only")
    return True


def _fits(value, dtype):
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    return info is None or info.min <= value <= info.max


for _ufunc in _AT_MODES:
    register(AT, _ufunc, ufunc_at)


def _value_node(value, dtype, shape):
    v = as_node(value, dtype) if not isinstance(value, LazyArray) else as_node(value, dtype)
    try:
        return broadcast_node(v, shape)
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {shape_text(v.shape)} "
                         f"into shape {shape_text(shape)}") from None


def _update_window(node, items, value):
    starts, sizes, view_shape, axis = [], [], [], 0
    for item in items:
        if item is None:
            view_shape.append(1)
            continue
        n = node.shape[axis]
        if _is_int_scalar(item):
            starts.append(_checked_index(item, axis, n))
            sizes.append(1)
        else:
            start, length = unit_slice(item, n)
            starts.append(start)
            sizes.append(length)
            view_shape.append(length)
        axis += 1
    update = _value_node(value, node.dtype, tuple(view_shape))
    update = ops.reshape(update, new_sizes=tuple(sizes))
    if tuple(sizes) == node.shape:
        return update
    params = [ir.param(s, _INDEX_DTYPE) for s in starts]
    return ops.dynamic_update_slice(node, update, *params)


# ---------------------------------------------------------------- functions

def take(a, indices, axis=None, out=None, mode="raise"):
    x = as_lazy(a)
    if axis is None:
        x, axis = wrap(compose.flatten(x._node)), 0
    axis = axis_index(axis, x.ndim)
    if mode != "raise" and not isinstance(indices, LazyArray):
        host = np.asarray(indices)
        n = x.shape[axis]
        indices = np.clip(host, 0, n - 1) if mode == "clip" else np.mod(host, n)
    if not isinstance(indices, LazyArray):
        indices = np.asarray(indices)
        if indices.ndim == 0:
            indices = int(indices)
    result = getitem(x, (slice(None),) * axis + (indices,))
    if out is not None:
        return assign(out, result)
    return result


def take_along_axis(arr, indices, axis=-1):
    x = as_lazy(arr)
    if axis is None:
        x, axis = wrap(compose.flatten(x._node)), 0
    axis = axis_index(axis, x.ndim)
    idx_shape = tuple(shape_of(indices))
    if len(idx_shape) != x.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    shape = tuple(i if k == axis else broadcast_shapes((d,), (i,))[0]
                  for k, (d, i) in enumerate(zip(x.shape, idx_shape)))
    idx = broadcast_node(_index_node(indices, x.shape[axis], axis), shape)
    comps = []
    for k in range(x.ndim):
        comp = idx if k == axis else ops.iota(dtype="int64", shape=shape, dimension=k)
        comps.append(ops.reshape(comp, new_sizes=shape + (1,)))
    node = x._node
    src_shape = tuple(d if k == axis else s for k, (d, s) in enumerate(zip(node.shape, shape)))
    node = broadcast_node(node, src_shape)
    return wrap(ops.gather(node, ops.concatenate(*comps, dimension=len(shape))))


def _host_dd(a):
    return a._host("data_dependent") if isinstance(a, LazyArray) else np.asarray(a)


def _to_device(result):
    return rewrap(result)


def nonzero(a):
    return _to_device(np.nonzero(_host_dd(a)))


def argwhere(a):
    return _to_device(np.argwhere(_host_dd(a)))


def flatnonzero(a):
    return _to_device(np.flatnonzero(_host_dd(a)))


def unique(ar, *args, **kwargs):
    return _to_device(np.unique(_host_dd(ar), *args, **kwargs))


def unique_values(x, /):
    # sorted, as unique_counts/inverse/all are (NumPy 2.4's own is hash-ordered), so that the
    # namespace's four agree (scikit-learn's array-API path pairs them)
    return _to_device(np.unique(_host_dd(x)))


def unique_counts(x, /):
    return _to_device(np.unique_counts(_host_dd(x)))


def unique_inverse(x, /):
    return _to_device(np.unique_inverse(_host_dd(x)))


def unique_all(x, /):
    return _to_device(np.unique_all(_host_dd(x)))


def compress(condition, a, axis=None, out=None):
    positions = np.nonzero(np.asarray(_host_dd(condition)).ravel())[0]
    return take(a, positions, axis=axis, out=out)


def extract(condition, arr):
    flat = as_node(arr)
    flat = wrap(ops.reshape(flat, new_sizes=(flat.size,)))
    return take(flat, np.nonzero(np.ravel(_host_dd(condition)))[0])


@traced("a")
def count_nonzero(a, axis=None, *, keepdims=False):
    node = a
    axes = axes_tuple(axis, node.ndim)
    total = ops.reduce_sum(ops.convert(ops.ne(node, fill(0, node.dtype, node.shape)),
                                       dtype="int64"), axes=axes)
    if keepdims:
        total = compose.keepdims(total, node.shape, axes)
    return total


_REDUCEAT_MODES = {np.add: "add", np.multiply: "mul", np.maximum: "max", np.minimum: "min"}


def ufunc_reduceat(ufunc, array, indices, axis=0, dtype=None):
    """np.<ufunc>.reduceat of a lazy `array` at host `indices`: one gather of the elements
    each output reduces (its slice `indices[i]:indices[i+1]`, or element `indices[i]` alone
    when that slice is empty, as NumPy does), then one scatter that combines them into the
    outputs. None (NumPy runs it) for lazy indices, a non-numeric array, other ufuncs.
    NumPy's own call on a probe of the axis' length raises its errors (an index out of
    bounds) and gives the result's dtype."""
    if type(array) is not LazyArray or array.dtype.kind not in "iuf" or \
            ufunc not in _REDUCEAT_MODES or isinstance(indices, LazyArray):
        return None
    ax = axis_index(axis, array.ndim)
    n = array.shape[ax]
    probe = ufunc.reduceat(np.zeros(n, array.dtype), indices, dtype=dtype)
    starts = np.asarray(indices).astype(np.intp).reshape(-1)
    runtime.maybe_cut()
    target = ir_dtype(probe.dtype)
    node = array._node
    perm = (ax,) + tuple(k for k in range(array.ndim) if k != ax)
    x = ops.transpose(node, permutation=perm) if ax else node
    x = ops.convert(x, dtype=target) if x.dtype != target else x
    ends = np.append(starts[1:], n)
    lengths = np.where(starts < ends, ends - starts, 1)
    outputs = np.repeat(np.arange(len(starts)), lengths)
    positions = np.concatenate([np.arange(s, s + k) for s, k in zip(starts, lengths)]) \
        if len(starts) else np.zeros(0, np.intp)
    picked = take(wrap(x), positions, axis=0)
    rest = x.shape[1:]
    mode = _REDUCEAT_MODES[ufunc]
    start = {"add": 0, "mul": 1}.get(mode)
    if start is None:  # (every output combines at least one element: any start is replaced)
        kind = np.dtype(probe.dtype)
        start = (-np.inf if mode == "max" else np.inf) if kind.kind == "f" else \
            (np.iinfo(kind).min if mode == "max" else np.iinfo(kind).max)
    init = broadcast_node(as_node(np.asarray(start, probe.dtype), target),
                          (len(starts),) + rest)
    out = _scatter_into(init, _Key(init, outputs), picked, mode)
    if ax:
        inverse = tuple(int(k) for k in np.argsort(perm))
        out = ops.transpose(out, permutation=inverse)
    return wrap(out)


for _ufunc in _REDUCEAT_MODES:
    register(REDUCEAT, _ufunc, ufunc_reduceat)
