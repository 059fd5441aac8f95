"""Reductions over groups of rows: index_reduce (rows scattered into self's rows by an index),
segment_reduce (consecutive runs given by lengths or offsets) and embedding_bag (bags of
embedding rows). Segments and bags use a membership mask (segment x position) and an ordinary
reduction over it: no scatter, so no unspecified order among equal targets."""
import numpy as np

from ....core import autodiff, compose, ops
from ....core import dtypes as dt
from .indexing import _scatter_nodes
from .table import Unsupported, aten, bcast, compute_dtype, const, dim_of, lower, node_of


def _identity(reduce, dtype):
    """The value a reduction starts from (what an empty group gives before torch's fixups)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    high = reduce in ("amin", "min")
    if dt.is_float(dtype):
        return float("inf") if high else float("-inf")
    if dtype == "bool":
        return high
    info = np.iinfo(dt.to_numpy(dtype))
    return int(info.max) if high else int(info.min)


# ---------------------------------------------------------------- index_reduce

_SCATTER_MODE = {"prod": "mul", "mean": "add", "amax": "max", "amin": "min"}


@lower(aten.index_reduce.default)
def _index_reduce(out, x, dim, index, source, reduce, *, include_self=True):
    a = node_of(x)
    if a.ndim == 0:  # torch treats a 0-d self as one row
        one = _index_reduce(out, ops.reshape(a, new_sizes=(1,)), 0,
                            ops.reshape(node_of(index), new_sizes=(1,)),
                            ops.reshape(node_of(source, a.dtype), new_sizes=(1,)), reduce,
                            include_self=include_self)
        return ops.reshape(one, new_sizes=())
    axis = dim_of(dim, a.ndim)
    src = node_of(source, a.dtype)
    if src.ndim == 0:
        src = ops.reshape(src, new_sizes=(1,))
    idx = node_of(index, "int64")
    idx = ops.reshape(idx, new_sizes=(idx.size,))
    # index_reduce's index picks a whole row per source row: spread it over source's shape,
    # the form scatter_reduce (and _scatter_nodes) takes
    spread = ops.broadcast_in_dim(idx, shape=src.shape, broadcast_dimensions=(axis,))
    base = a
    if not include_self:
        base = _scatter_nodes(out, a, axis, spread, _identity(reduce, a.dtype), "set")
    total = _scatter_nodes(out, base, axis, spread, src, _SCATTER_MODE[reduce])
    if reduce != "mean":
        return total
    count = _scatter_nodes(out, const(1 if include_self else 0, a.dtype, a.shape), axis,
                           spread, const(1, a.dtype, src.shape), "add")
    count = ops.max_(count, const(1, a.dtype, a.shape))
    return ops.div(total, count) if dt.is_float(a.dtype) else compose.floor_divide(total, count)


# ---------------------------------------------------------------- segment_reduce

def _grouped(data, starts, ends, reduce, dtype):
    """Reduce data (lead + (L,) + trail) over [starts, ends) per segment (starts/ends:
    lead + (S,)) -> lead + (S,) + trail, empty segments giving the reduction's identity."""
    nl = starts.ndim - 1
    lead, segments, length = data.shape[:nl], starts.shape[-1], data.shape[nl]
    trail = data.shape[nl + 1:]
    shape = lead + (segments, length) + trail
    pos = ops.iota(dtype="int64", shape=shape, dimension=nl + 1)
    bounds = tuple(range(nl + 1))
    lo = ops.broadcast_in_dim(starts, shape=shape, broadcast_dimensions=bounds)
    hi = ops.broadcast_in_dim(ends, shape=shape, broadcast_dimensions=bounds)
    inside = ops.and_(ops.ge(pos, lo), ops.lt(pos, hi))
    spread = ops.broadcast_in_dim(data, shape=shape, broadcast_dimensions=tuple(
        i for i in range(len(shape)) if i != nl))
    picked = ops.select(inside, spread, const(_identity(reduce, dtype), dtype, shape))
    reducer = {"sum": ops.reduce_sum, "mean": ops.reduce_sum, "prod": ops.reduce_prod,
               "max": ops.reduce_max, "min": ops.reduce_min}[reduce]
    return reducer(picked, axes=(nl + 1,))


def _check_lengths(lengths, size, unsafe):
    """torch refuses negative lengths or ones that do not add up to the axis (unless unsafe);
    the values live on the device, so checking them is one counted data_dependent sync."""
    if unsafe:
        return
    from .data_dependent import _host_int
    bad = ops.or_(ops.reduce_or(ops.lt(lengths, const(0, "int64", lengths.shape)),
                                axes=tuple(range(lengths.ndim))),
                  ops.reduce_or(ops.ne(ops.reduce_sum(lengths, axes=(lengths.ndim - 1,)),
                                       const(size, "int64", lengths.shape[:-1])),
                                axes=tuple(range(lengths.ndim - 1))) if lengths.ndim > 1 else
                  ops.ne(ops.reduce_sum(lengths, axes=(0,)), const(size, "int64", ())))
    if _host_int(ops.convert(bad, dtype="int64")):
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum "
                           "to data.size(lengths.dim()-1) when !unsafe.")


@lower(aten.segment_reduce.default)
def _segment_reduce(out, data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                    unsafe=False, initial=None):
    if indices is not None or reduce not in ("sum", "mean", "prod", "max", "min"):
        raise Unsupported(f"segment_reduce {reduce} with indices")
    d = node_of(data, compute_dtype(out.dtype))
    if offsets is not None:
        o = node_of(offsets, "int64")
        s = o.shape[-1] - 1
        starts = ops.slice_(o, start_indices=(0,) * o.ndim, limit_indices=o.shape[:-1] + (s,))
        ends = ops.slice_(o, start_indices=(0,) * (o.ndim - 1) + (1,), limit_indices=o.shape)
        counts = ops.sub(ends, starts)
    else:
        counts = node_of(lengths, "int64")
        ends = ops.cumsum(counts, axis=counts.ndim - 1)
        starts = ops.sub(ends, counts)
    _check_lengths(counts, d.shape[counts.ndim - 1], unsafe)
    total = _grouped(d, starts, ends, reduce, d.dtype)
    shape = total.shape
    if initial is not None:
        init = bcast(node_of(initial, d.dtype), shape)
        combine = {"sum": ops.add, "mean": ops.add, "prod": ops.mul, "max": ops.max_,
                   "min": ops.min_}[reduce]
        total = combine(total, init)
    if reduce != "mean":
        return total
    # mean: the total over the segment's length; an empty one keeps initial, else is NaN
    n = ops.broadcast_in_dim(ops.convert(counts, dtype=d.dtype), shape=shape,
                             broadcast_dimensions=tuple(range(counts.ndim)))
    empty = ops.eq(n, const(0, d.dtype, shape))
    mean = ops.div(total, ops.select(empty, const(1, d.dtype, shape), n))
    fill = total if initial is not None else const(float("nan"), d.dtype, shape)
    return ops.select(empty, fill, mean)


# ---------------------------------------------------------------- embedding_bag

def _bag_membership(idx, offsets, include_last_offset, padding_idx):
    """(B, N) bool: index i belongs to bag b (offsets[b] <= i < next offset, not padding)."""
    n = idx.shape[0]
    o = node_of(offsets, "int64")
    bags = o.shape[0] - 1 if include_last_offset else o.shape[0]
    starts = ops.slice_(o, start_indices=(0,), limit_indices=(bags,))
    if include_last_offset:
        ends = ops.slice_(o, start_indices=(1,), limit_indices=(bags + 1,))
    else:
        ends = ops.concatenate(ops.slice_(o, start_indices=(1,), limit_indices=(bags,)),
                               const(n, "int64", (1,)), dimension=0)
    shape = (bags, n)
    pos = ops.iota(dtype="int64", shape=shape, dimension=1)
    member = ops.and_(ops.ge(pos, ops.broadcast_in_dim(starts, shape=shape,
                                                       broadcast_dimensions=(0,))),
                      ops.lt(pos, ops.broadcast_in_dim(ends, shape=shape,
                                                       broadcast_dimensions=(0,))))
    if padding_idx is not None and padding_idx >= 0:
        kept = ops.ne(idx, const(padding_idx, "int64", (n,)))
        member = ops.and_(member, ops.broadcast_in_dim(kept, shape=shape,
                                                       broadcast_dimensions=(1,)))
    return member, starts


def _embedding_bag_nodes(weight, indices, offsets, mode, per_sample_weights,
                         include_last_offset, padding_idx):
    """(output, offset2bag, bag_size, max_indices) as CPU torch computes them; the last three
    are what the backward reads, hence CPU's shapes, not the meta kernel's."""
    w = node_of(weight)
    idx = node_of(indices, "int64")
    n, width = idx.shape[0], w.shape[1]
    member, starts = _bag_membership(idx, offsets, include_last_offset, padding_idx)
    bags = member.shape[0]
    rows = ops.gather(w, ops.reshape(idx, new_sizes=(n, 1))) if n else const(0, w.dtype,
                                                                                (0, width))
    if per_sample_weights is not None:
        rows = ops.mul(rows, bcast(ops.reshape(node_of(per_sample_weights, w.dtype),
                                               new_sizes=(n, 1)), (n, width)))
    count = ops.reduce_sum(ops.convert(member, dtype="int64"), axes=(1,))
    max_indices = None
    if mode in (0, 1):
        out = ops.dot_general(ops.convert(member, dtype=w.dtype), rows,
                              contracting_dimensions=((1,), (0,)))
        if mode == 1:
            divisor = ops.max_(ops.convert(count, dtype=w.dtype), const(1, w.dtype, (bags,)))
            out = ops.div(out, bcast(ops.reshape(divisor, new_sizes=(bags, 1)),
                                     (bags, width)))
    else:
        shape = (bags, n, width)
        spread = ops.broadcast_in_dim(member, shape=shape, broadcast_dimensions=(0, 1))
        candidates = ops.select(spread, ops.broadcast_in_dim(rows, shape=shape,
                                                             broadcast_dimensions=(1, 2)),
                                const(float("-inf"), w.dtype, shape))
        empty = bcast(ops.reshape(ops.eq(count, const(0, "int64", (bags,))),
                                  new_sizes=(bags, 1)), (bags, width))
        out = ops.select(empty, const(0, w.dtype, (bags, width)),
                         ops.reduce_max(candidates, axes=(1,)))
        # CPU keeps the first maximum of a bag: argmax's lowest position, then its row
        where = ops.argmax(candidates, axis=1) if n else const(0, "int64", (bags, width))
        picked = ops.gather(idx, ops.reshape(where, new_sizes=(bags, width, 1))) if n else where
        max_indices = ops.select(empty, const(0, "int64", (bags, width)), picked)
    # offset2bag: each index's bag (the last bag starting at or before it)
    i = ops.iota(dtype="int64", shape=(n, bags), dimension=0)
    later = ops.le(ops.broadcast_in_dim(starts, shape=(n, bags), broadcast_dimensions=(1,)), i)
    offset2bag = ops.sub(ops.reduce_sum(ops.convert(later, dtype="int64"), axes=(1,)),
                         const(1, "int64", (n,)))
    offset2bag = ops.max_(offset2bag, const(0, "int64", (n,)))
    return out, offset2bag, count, max_indices


def _embedding_bag_lowering(forward_only):
    def lowering(out, weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                 sparse=False, per_sample_weights=None, include_last_offset=False,
                 padding_idx=-1):
        from ..tensor import from_node
        if node_of(indices).ndim != 1 or not 0 <= mode <= 2:
            raise Unsupported("embedding_bag with 2-d indices")
        result, offset2bag, count, max_indices = _embedding_bag_nodes(
            weight, indices, offsets, mode, per_sample_weights, include_last_offset,
            padding_idx)
        bags = result.shape[0]
        if mode == 0:
            # CPU's sum fast path (no padding index) keeps no offset2bag and no bag sizes
            n_sizes = node_of(offsets).shape[0] if forward_only else bags
            if padding_idx is None or padding_idx < 0:
                offset2bag = const(0, "int64", (0,))
            count = const(0, "int64", (n_sizes,))
            max_indices = count
        elif mode == 1:
            max_indices = count
        return (from_node(ops.convert(result, dtype=node_of(weight).dtype), out[0].dtype),
                *(from_node(x, out[1].dtype) for x in (offset2bag, count, max_indices)))
    return lowering


lower(aten._embedding_bag_forward_only.default)(_embedding_bag_lowering(True))
lower(aten._embedding_bag.default)(_embedding_bag_lowering(False))


@lower(aten._embedding_bag_backward.default)
def _embedding_bag_backward(out, grad, indices, offsets, offset2bag, bag_size, maximum_indices,
                            num_weights, scale_grad_by_freq, mode, sparse,
                            per_sample_weights=None, padding_idx=-1):
    """The weight's gradient. A sum or mean bag is linear in the weight: the IR's VJP of the
    forward lowering above, at a zero weight. A max bag's gradient goes to the row each
    output element came from; an empty bag's (its index is 0) goes nowhere, as in CPU
    torch's kernel. (scale_grad_by_freq and 2-d indices run CPU torch's kernel.)"""
    if scale_grad_by_freq or node_of(indices).ndim != 1:
        raise Unsupported("embedding_bag backward: scale_grad_by_freq or 2-d indices")
    g = node_of(grad)
    bags, width = g.shape
    if mode == 2:
        filled = bcast(ops.reshape(ops.gt(node_of(bag_size, "int64"), const(0, "int64", (bags,))),
                                   new_sizes=(bags, 1)), (bags, width))
        g = ops.select(filled, g, const(0, g.dtype, (bags, width)))
        return _scatter_nodes(None, const(0, g.dtype, (num_weights, width)), 0,
                              maximum_indices, g, "add")
    # the backward is not told include_last_offset: offsets then has one entry more than bags
    include_last_offset = node_of(offsets).shape[0] == bags + 1
    return autodiff.linear_transpose(
        lambda weight: _embedding_bag_nodes(weight, indices, offsets, mode, per_sample_weights,
                                            include_last_offset, padding_idx)[0],
        (num_weights, width), g.dtype, g)
