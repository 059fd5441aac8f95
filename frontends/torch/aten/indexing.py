"""Gathers and scatters: torch's dim-wise and advanced indexing mapped onto the IR's one
canonical form (indices (*B, k) address the first k axes of the operand)."""
import warnings

import torch

from ....core import ops
from .table import Unsupported, aten, bcast, const, dim_of, lower, node_of, scalar


def _wrap_negative(index, size):
    """torch counts negative indices from the end."""
    zero = const(0, index.dtype, index.shape)
    return ops.select(ops.lt(index, zero), ops.add(index, const(size, index.dtype, index.shape)),
                      index)


def _full_coordinates(index, axis, ndim):
    """(*index.shape, ndim) coordinates: iota on every axis except `axis`, which is `index`."""
    shape = index.shape + (1,)
    parts = []
    for d in range(ndim):
        if d == axis:
            parts.append(ops.reshape(index, new_sizes=shape))
        else:
            parts.append(ops.iota(dtype="int64", shape=shape, dimension=d))
    return ops.concatenate(*parts, dimension=ndim) if ndim > 1 else parts[0]


@lower(aten.index_select.default)
def _index_select(out, x, dim, index):
    a = node_of(x)
    if a.ndim == 0:
        return ops.reshape(a, new_sizes=tuple(out.shape))
    axis = dim_of(dim, a.ndim)
    flat = node_of(index, "int64")
    idx = _wrap_negative(ops.reshape(flat, new_sizes=(flat.size,)), a.shape[axis])
    perm = (axis, *[i for i in range(a.ndim) if i != axis])
    picked = ops.gather(ops.transpose(a, permutation=perm),
                        ops.reshape(idx, new_sizes=(idx.shape[0], 1)))
    inverse = tuple(perm.index(i) for i in range(a.ndim))
    return ops.transpose(picked, permutation=inverse)


@lower(aten.index_add.default)
def _index_add(out, x, dim, index, source, *, alpha=1):
    """Rows of source added into self's rows at index (repeats accumulate): one row scatter.
    A direct lowering: torch._decomp's went through index_put, which refused a 0-d index
    with a (1, ...) source -- the backward of index_select with a 0-d index, which
    nn.AdaptiveLogSoftmaxWithLoss makes (`mask.nonzero().squeeze()`)."""
    a = node_of(x)
    if a.dtype == "bool":
        raise Unsupported("index_add of a bool tensor")
    src = node_of(source, a.dtype)
    flat = node_of(index, "int64")
    if src.ndim != a.ndim:  # torch's Meta kernel lets a 0-d source through, its CPU one not
        raise RuntimeError(
            f"source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {list(a.shape)} source.shape = {list(src.shape)}")
    if a.ndim == 0:  # torch treats a scalar as one row
        row = _index_add(out, ops.reshape(a, new_sizes=(1,)), 0, flat,
                         ops.reshape(src, new_sizes=(1,)), alpha=alpha)
        return ops.reshape(row, new_sizes=())
    if flat.size == 0:
        return a
    if alpha is not None and not (alpha == 1 and not isinstance(alpha, bool)):
        src = ops.mul(src, scalar(alpha, a.dtype, src.shape))
    axis = dim_of(dim, a.ndim)
    idx = _wrap_negative(ops.reshape(flat, new_sizes=(flat.size,)), a.shape[axis])
    perm = (axis, *[i for i in range(a.ndim) if i != axis])
    summed = ops.scatter(ops.transpose(a, permutation=perm),
                         ops.reshape(idx, new_sizes=(flat.size, 1)),
                         ops.transpose(src, permutation=perm), mode="add")
    return ops.transpose(summed, permutation=tuple(perm.index(i) for i in range(a.ndim)))


@lower(aten.gather.default)
def _gather(out, x, dim, index, *, sparse_grad=False):
    a = node_of(x)
    idx = node_of(index, "int64")
    if a.ndim == 0:
        return ops.reshape(a, new_sizes=tuple(out.shape))
    axis = dim_of(dim, a.ndim)
    if idx.size == 0:
        return const(0, a.dtype, idx.shape)
    coords = _full_coordinates(_wrap_negative(idx, a.shape[axis]), axis, a.ndim)
    return ops.gather(a, coords)


def _scatter_nodes(out, x, dim, index, src, mode):
    a = node_of(x)
    idx = node_of(index, "int64")
    if idx.size == 0:
        return a
    if a.ndim == 0:  # one element: scatter into it as a 1-element row
        one = ops.reshape(a, new_sizes=(1,))
        row = _scatter_nodes(out, one, 0, ops.reshape(idx, new_sizes=(1,)),
                             src if isinstance(src, (int, float, bool)) else
                             ops.reshape(node_of(src, a.dtype), new_sizes=(1,)), mode)
        return ops.reshape(row, new_sizes=())
    axis = dim_of(dim, a.ndim)
    if isinstance(src, (int, float, bool)) or node_of(src).ndim == 0:
        updates = bcast(node_of(src, a.dtype), idx.shape)
    else:
        s = node_of(src, a.dtype)
        updates = ops.slice_(s, start_indices=(0,) * s.ndim, limit_indices=idx.shape)
    coords = _full_coordinates(_wrap_negative(idx, a.shape[axis]), axis, a.ndim)
    return ops.scatter(a, coords, updates, mode=mode)


@lower(aten.scatter.src, aten.scatter.value)
def _scatter(out, x, dim, index, src):
    return _scatter_nodes(out, x, dim, index, src, "set")


@lower(aten.scatter_add.default)
def _scatter_add(out, x, dim, index, src):
    return _scatter_nodes(out, x, dim, index, src, "add")


_REDUCE_MODES = {"sum": "add", "add": "add", "prod": "mul", "multiply": "mul",
                 "amax": "max", "amin": "min"}


@lower(aten.scatter.reduce, aten.scatter.value_reduce)
def _scatter_reduce_legacy(out, x, dim, index, src, *, reduce):
    return _scatter_nodes(out, x, dim, index, src, _REDUCE_MODES[reduce])


_IDENTITY = {"sum": 0, "prod": 1, "mean": 0, "amax": float("-inf"), "amin": float("inf")}


@lower(aten.scatter_reduce.two)
def _scatter_reduce(out, x, dim, index, src, reduce, *, include_self=True):
    a = node_of(x)
    if reduce not in _IDENTITY or (a.dtype not in ("float32", "float64") and
                                   (reduce == "mean" or not include_self)):
        raise Unsupported(f"scatter_reduce {reduce} include_self={include_self} on {a.dtype}")
    base = a
    if not include_self:
        # the scattered-to positions start from the reduction's identity instead of self
        base = _scatter_nodes(out, a, dim, index, _IDENTITY[reduce], "set")
    mode = "add" if reduce == "mean" else _REDUCE_MODES[reduce]
    total = _scatter_nodes(out, base, dim, index, src, mode)
    if reduce != "mean":
        return total
    # mean: divide by the number of contributions (+1 for self when included), at least 1
    ones = const(1 if include_self else 0, a.dtype, a.shape)
    count = _scatter_nodes(out, ones, dim, index, 1.0, "add")
    count = ops.max_(count, const(1, a.dtype, a.shape))
    return ops.div(total, count)


# ---------------------------------------------------------------- advanced indexing

def _advanced(a, indices):
    """(operand moved so the indexed axes lead, stacked coordinates (*B, k), axes, B, adjacent)."""
    indices = list(indices) + [None] * (a.ndim - len(indices))
    axes = [i for i, t in enumerate(indices) if t is not None]
    for i in axes:
        if indices[i].dtype in ("bool", "uint8"):
            raise Unsupported("boolean mask index")  # data-dependent; handled before us
    batch = ()
    for i in axes:
        batch = _broadcast_shapes(batch, indices[i].shape)
    coords = [ops.reshape(_wrap_negative(bcast(ops.convert(indices[i], dtype="int64")
                                               if indices[i].dtype != "int64" else indices[i],
                                               batch), a.shape[i]),
                          new_sizes=batch + (1,)) for i in axes]
    stacked = ops.concatenate(*coords, dimension=len(batch)) if len(coords) > 1 else coords[0]
    rest = [i for i in range(a.ndim) if i not in axes]
    moved = ops.transpose(a, permutation=(*axes, *rest)) if axes + rest != list(range(a.ndim)) \
        else a
    adjacent = axes == list(range(axes[0], axes[-1] + 1))
    return moved, stacked, axes, batch, adjacent


def _broadcast_shapes(s1, s2):
    n = max(len(s1), len(s2))
    s1, s2 = (1,) * (n - len(s1)) + tuple(s1), (1,) * (n - len(s2)) + tuple(s2)
    return tuple(max(a, b) if 1 in (a, b) else a for a, b in zip(s1, s2))


def _layout(axes, batch, adjacent, ndim):
    """Permutation from gather order (B..., rest...) to torch's order: B at the first indexed
    axis when the indexed axes are adjacent, else in front."""
    nb, rest = len(batch), ndim - len(axes)
    if not adjacent or axes[0] == 0:
        return None
    first = axes[0]
    return tuple(range(nb, nb + first)) + tuple(range(nb)) + tuple(range(nb + first, nb + rest))


@lower(aten.index.Tensor)
def _index(out, x, indices):
    a = node_of(x)
    if 0 in tuple(out.shape):
        return const(0, a.dtype, tuple(out.shape))  # nothing to gather (maybe from nothing)
    nodes = [None if t is None else node_of(t) for t in indices]
    moved, stacked, axes, batch, adjacent = _advanced(a, nodes)
    picked = ops.gather(moved, stacked)
    perm = _layout(axes, batch, adjacent, a.ndim)
    return ops.transpose(picked, permutation=perm) if perm else picked


@lower(aten.take.default)
def _take(out, x, index):
    # torch._decomp's take indexes with a Python-visible 0-d tensor (an item sync): gather
    # from the flat value instead.
    a = node_of(x)
    if 0 in tuple(out.shape):
        return const(0, a.dtype, tuple(out.shape))
    flat = ops.reshape(a, new_sizes=(a.size,))
    idx = _wrap_negative(node_of(index, "int64"), a.size)
    return ops.gather(flat, ops.reshape(idx, new_sizes=idx.shape + (1,)))


def _mask_slots(flat_mask):
    """For each True entry of a flat bool mask, its rank among the True entries (the source
    element it takes in masked_scatter / x[mask] = v): a prefix sum, no sync."""
    ones = ops.convert(flat_mask, dtype="int64")
    return ops.sub(ops.cumsum(ones, axis=0), const(1, "int64", ones.shape))


@lower(aten.masked_scatter.default)
def _masked_scatter(out, x, mask, source):
    shape = tuple(out.shape)
    a, m = bcast(node_of(x), shape), bcast(node_of(mask, "bool"), shape)
    src = node_of(source, a.dtype)
    flat_m = ops.reshape(m, new_sizes=(m.size,))
    if src.size < m.size:
        # torch raises when the mask has more True entries than source has elements: a
        # source at least the mask's size never needs that check, a smaller one costs a sync
        from .data_dependent import _count
        if m.size and _count(flat_m) > src.size:
            raise RuntimeError("Number of elements of source < number of ones in mask")
    if a.size == 0 or src.size == 0:
        return a
    slot = ops.clamp(const(0, "int64", flat_m.shape), _mask_slots(flat_m),
                     const(src.size - 1, "int64", flat_m.shape))
    picked = ops.gather(ops.reshape(src, new_sizes=(src.size,)),
                        ops.reshape(slot, new_sizes=(m.size, 1)))
    flat_a = ops.reshape(a, new_sizes=(a.size,))
    return ops.reshape(ops.select(flat_m, picked, flat_a), new_sizes=shape)


def _index_put_mask(a, position, mask, values, accumulate):
    """a[(:,)*position + (mask,)] = values (or +=): the mask picks len(mask.shape) axes at
    `position`; values broadcast against (..., count, ...). A values axis of size 1 (or
    absent) at the count's place needs no count; a full one takes rows by prefix sum after
    one counted sync that checks its length, as torch does."""
    lead, span = a.shape[:position], mask.shape
    rest = a.shape[position + mask.ndim:]
    v = node_of(values, a.dtype)
    picked_ndim = len(lead) + 1 + len(rest)
    if v.ndim > picked_ndim:
        raise Unsupported("index_put values of higher rank")
    v = ops.reshape(v, new_sizes=(1,) * (picked_ndim - v.ndim) + v.shape)
    spread_m = ops.broadcast_in_dim(mask, shape=a.shape, broadcast_dimensions=tuple(
        range(position, position + mask.ndim)))
    count_axis = len(lead)
    if v.shape[count_axis] == 1:
        squeezed = ops.reshape(v, new_sizes=v.shape[:count_axis] + v.shape[count_axis + 1:])
        kept = tuple(i for i in range(a.ndim) if not position <= i < position + mask.ndim)
        new = ops.broadcast_in_dim(bcast(squeezed, lead + rest), shape=a.shape,
                                   broadcast_dimensions=kept)
    else:
        from .data_dependent import _count
        flat = ops.reshape(mask, new_sizes=(mask.size,))
        count = _count(flat) if flat.size else 0
        if count != v.shape[count_axis]:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} "
                             f"cannot be broadcast to indexing result of shape "
                             f"{list(lead + (count,) + rest)}")
        full = bcast(v, lead + (count,) + rest)
        slot = ops.clamp(const(0, "int64", flat.shape), _mask_slots(flat),
                         const(max(count - 1, 0), "int64", flat.shape))
        moved = ops.transpose(full, permutation=(count_axis, *range(count_axis),
                                                 *range(count_axis + 1, full.ndim)))
        rows = ops.gather(moved, ops.reshape(slot, new_sizes=(flat.size, 1)))  # (S, *lead, *rest)
        rows = ops.reshape(rows, new_sizes=span + lead + rest)
        ns = len(span)
        new = ops.transpose(rows, permutation=(*range(ns, ns + len(lead)), *range(ns),
                                               *range(ns + len(lead), rows.ndim)))
    if accumulate:
        new = ops.add(a, new)
    return ops.select(spread_m, new, a)


@lower(aten.index_put.default, aten._unsafe_index_put.default)
def _index_put(out, x, indices, values, accumulate=False):
    a = node_of(x)
    nodes = [None if t is None else node_of(t) for t in indices]
    given = [i for i, t in enumerate(nodes) if t is not None]
    if len(given) == 1 and nodes[given[0]].dtype in ("bool", "uint8"):
        mask = nodes[given[0]]
        mask = mask if mask.dtype == "bool" else ops.ne(mask, const(0, mask.dtype, mask.shape))
        return _index_put_mask(a, given[0], mask, values, accumulate)
    moved, stacked, axes, batch, adjacent = _advanced(a, nodes)
    gathered_shape = batch + moved.shape[len(axes):]
    perm = _layout(axes, batch, adjacent, a.ndim)
    torch_shape = tuple(gathered_shape[p] for p in perm) if perm else gathered_shape
    v = bcast(node_of(values, a.dtype), torch_shape)
    if perm:
        v = ops.transpose(v, permutation=tuple(perm.index(i) for i in range(len(perm))))
    result = ops.scatter(moved, stacked, v, mode="add" if accumulate else "set")
    order = (*axes, *[i for i in range(a.ndim) if i not in axes])
    if list(order) == list(range(a.ndim)):
        return result
    return ops.transpose(result, permutation=tuple(order.index(i) for i in range(a.ndim)))


@lower(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def _masked_fill(out, x, mask, value):
    a = node_of(x)
    shape = tuple(out.shape)
    return ops.select(bcast(node_of(mask, "bool"), shape), bcast(node_of(value, a.dtype), shape),
                      bcast(a, shape))


@lower(aten.embedding.default)
def _embedding(out, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    w = node_of(weight)
    idx = node_of(indices, "int64")
    flat = ops.reshape(idx, new_sizes=(idx.size, 1))
    rows = ops.gather(w, flat)
    return ops.reshape(rows, new_sizes=tuple(out.shape))




_SPARSE_WARNED = []


def embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
    """nn.Embedding(sparse=True)'s gradient on lt.device, registered for the device's autograd
    key (device.py): a lazy value is a dense array, and the sparse COO gradient ATen builds
    aborted the process inside autograd (an exception there ends in std::terminate). The
    gradient is the dense one instead, with a warning: plain SGD and Adagrad compute the same
    update from it; SparseAdam refuses it with its own error."""
    if sparse:
        _warn_dense("nn.Embedding")
    return aten.embedding_dense_backward(grad, indices, num_weights, padding_idx,
                                         scale_grad_by_freq)


def embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices,
                           num_weights, scale_grad_by_freq, mode, sparse, per_sample_weights,
                           padding_idx=-1):
    """nn.EmbeddingBag(sparse=True)'s gradient: dense, as embedding_backward's above."""
    if sparse:
        _warn_dense("nn.EmbeddingBag")
    with torch._C._AutoDispatchBelowAutograd():  # the op itself, dense, below this kernel
        return aten._embedding_bag_backward(
            grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights,
            scale_grad_by_freq, mode, False, per_sample_weights, padding_idx)


def _warn_dense(module):
    if not _SPARSE_WARNED:
        _SPARSE_WARNED.append(True)
        warnings.warn(f"lazyx: {module}(sparse=True) gets a dense gradient on the lazyx "
                      f"device (lazy tensors are dense); pass sparse=False to silence this",
                      RuntimeWarning, stacklevel=3)


@lower(aten.embedding_renorm.default)
def _embedding_renorm(out, weight, indices, max_norm, norm_type):
    """The rows `indices` names whose norm exceeds max_norm, scaled to max_norm (torch's
    max_norm / (norm + 1e-7)); other rows unchanged."""
    w = node_of(weight)
    rows, width = w.shape
    idx = node_of(indices, "int64")
    named = ops.scatter(const(False, "bool", (rows,)),
                        ops.reshape(idx, new_sizes=(idx.size, 1)),
                        const(True, "bool", (idx.size,)), mode="set")
    mag = ops.abs_(w)
    if norm_type == 1:
        norm = ops.reduce_sum(mag, axes=(1,))
    elif norm_type == 2:
        norm = ops.sqrt(ops.reduce_sum(ops.mul(mag, mag), axes=(1,)))
    elif norm_type == float("inf"):
        norm = ops.reduce_max(mag, axes=(1,))
    else:
        powered = ops.reduce_sum(ops.pow_(mag, const(float(norm_type), w.dtype, w.shape)),
                                 axes=(1,))
        norm = ops.pow_(powered, const(1.0 / norm_type, w.dtype, (rows,)))
    limit = node_of(max_norm, w.dtype)
    limit = bcast(limit, (rows,))
    scale = ops.div(limit, ops.add(norm, const(1e-7, w.dtype, (rows,))))
    scale = ops.select(ops.and_(named, ops.gt(norm, limit)), scale, const(1, w.dtype, (rows,)))
    return ops.mul(w, ops.broadcast_in_dim(scale, shape=(rows, width), broadcast_dimensions=(0,)))
