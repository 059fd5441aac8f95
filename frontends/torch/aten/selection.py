"""Ops that pick elements by computed positions: as_strided (a gather over the flat storage),
put, searchsorted, kthvalue / median / nanmedian (a sort, then one index per row), histc.

A lazy tensor's storage is its contiguous flattening (values are immutable; torch's
functionalization hands us contiguous bases), so strided views are gathers over it.
"""
import numpy as np
import torch

from ....core import compose, ir, ops
from .table import Unsupported, aten, bcast, compute_dtype, const, dim_of, is_float, lower, node_of

prims = torch.ops.prims


def _strided_positions(size, stride, offset):
    """(*size) int64 flat storage positions offset + sum_i iota_i * stride_i."""
    size = tuple(size)
    pos = const(offset, "int64", size)
    for axis, step in enumerate(stride):
        if size[axis] > 1 and step:
            pos = ops.add(pos, ops.mul(ops.iota(dtype="int64", shape=size, dimension=axis),
                                       const(step, "int64", size)))
    return pos


_flat = compose.flatten


@lower(aten.as_strided.default, aten.as_strided_copy.default)
def _as_strided(out, x, size, stride, storage_offset=None):
    a = node_of(x)
    size = tuple(int(s) for s in size)
    if a.size == 0 or 0 in size:
        return const(0, a.dtype, size)
    pos = _strided_positions(size, stride, storage_offset or 0)
    return ops.gather(_flat(a), ops.reshape(pos, new_sizes=size + (1,)))


@lower(aten.as_strided_scatter.default, prims.as_strided_scatter.default)
def _as_strided_scatter(out, x, src, size, stride, storage_offset=None):
    a = node_of(x)
    size = tuple(int(s) for s in size)
    if a.size == 0 or 0 in size:
        return a
    pos = _strided_positions(size, stride, storage_offset or 0)
    flat = ops.scatter(_flat(a), ops.reshape(pos, new_sizes=size + (1,)),
                       bcast(node_of(src, a.dtype), size), mode="set")
    return ops.reshape(flat, new_sizes=a.shape)


@lower(aten.put.default)
def _put(out, x, index, source, accumulate=False):
    a = node_of(x)
    idx = _flat(node_of(index, "int64"))
    if idx.size == 0:
        return a
    n = a.size
    idx = ops.select(ops.lt(idx, const(0, "int64", idx.shape)),
                     ops.add(idx, const(n, "int64", idx.shape)), idx)
    values = _flat(node_of(source, a.dtype))
    flat = ops.scatter(_flat(a), ops.reshape(idx, new_sizes=(idx.size, 1)), values,
                       mode="add" if accumulate else "set")
    return ops.reshape(flat, new_sizes=a.shape)


# ---------------------------------------------------------------- searchsorted

def _searchsorted_nodes(out, sorted_seq, values, right, side, sorter):
    seq = node_of(sorted_seq)
    v = node_of(values)
    if not (is_float(seq) or is_float(v)):
        dtype = "int64"
    else:
        dtype = "float64" if "float64" in (seq.dtype, v.dtype) else "float32"
    seq, v = node_of(seq, dtype), node_of(v, dtype)
    if sorter is not None:
        order = node_of(sorter, "int64")
        if seq.ndim == 1:
            seq = ops.gather(seq, ops.reshape(order, new_sizes=order.shape + (1,)))
        else:
            from .indexing import _full_coordinates
            seq = ops.gather(seq, _full_coordinates(order, seq.ndim - 1, seq.ndim))
    use_right = right or side == "right"
    n = seq.shape[-1]
    # count of sequence entries below (left) or at-or-below (right) each value
    if seq.ndim == 1:
        lead = v.shape
        s = ops.broadcast_in_dim(seq, shape=lead + (n,), broadcast_dimensions=(len(lead),))
    else:
        lead = v.shape
        s = ops.broadcast_in_dim(seq, shape=lead[:-1] + (lead[-1], n),
                                 broadcast_dimensions=tuple(range(len(lead) - 1)) + (len(lead),))
    vv = ops.broadcast_in_dim(v, shape=lead + (n,), broadcast_dimensions=tuple(range(len(lead))))
    below = ops.le(s, vv) if use_right else ops.lt(s, vv)
    if is_float(s):  # NaN sorts last: it is never below a value; every number is below NaN
        below = ops.or_(below, ops.and_(ops.ne(vv, vv), ops.eq(s, s)))
    count = ops.reduce_sum(ops.convert(below, dtype="int64"), axes=(len(lead),))
    return count


@lower(aten.searchsorted.Tensor)
def _searchsorted(out, sorted_seq, values, *, out_int32=False, right=False, side=None,
                  sorter=None):
    return _searchsorted_nodes(out, sorted_seq, values, right, side, sorter)


@lower(aten.searchsorted.Scalar)
def _searchsorted_scalar(out, sorted_seq, value, *, out_int32=False, right=False, side=None,
                         sorter=None):
    return _searchsorted_nodes(out, sorted_seq, torch.tensor(value), right, side, sorter)


@lower(aten.bucketize.Tensor)
def _bucketize(out, values, boundaries, *, out_int32=False, right=False):
    # torch._decomp's bucketize is a binary search that reads the boundaries' length back
    return _searchsorted_nodes(out, boundaries, values, right, None, None)


@lower(aten.bucketize.Scalar)
def _bucketize_scalar(out, value, boundaries, *, out_int32=False, right=False):
    return _searchsorted_nodes(out, boundaries, torch.tensor(value), right, None, None)


# ---------------------------------------------------------------- order statistics

def _pick_along(node, axis, index):
    """node[..., index, ...] along axis, index a node of the other axes' shape."""
    moved = ops.transpose(node, permutation=tuple(i for i in range(node.ndim) if i != axis)
                          + (axis,))
    lead = moved.shape[:-1]
    coords = []
    for d in range(len(lead)):
        coords.append(ops.iota(dtype="int64", shape=lead + (1,), dimension=d))
    coords.append(ops.reshape(index, new_sizes=lead + (1,)))
    stacked = ops.concatenate(*coords, dimension=len(lead)) if len(coords) > 1 else coords[0]
    return ops.gather(moved, stacked)


def _kth(a, axis, k_node, keepdim, out_shapes):
    values, indices = ops.sort_with_indices(a, axis=axis, index_dtype="int64")
    v = _pick_along(values, axis, k_node)
    i = _pick_along(indices, axis, k_node)
    return (ops.reshape(v, new_sizes=out_shapes[0]), ops.reshape(i, new_sizes=out_shapes[1]))


def _rows(a, axis):
    return tuple(d for i, d in enumerate(a.shape) if i != axis)


@lower(aten.kthvalue.default)
def _kthvalue(out, x, k, dim=-1, keepdim=False):
    a = node_of(x)
    if a.ndim == 0:
        return a, const(0, "int64", ())
    axis = dim_of(dim, a.ndim)
    k_node = const(k - 1, "int64", _rows(a, axis))
    return _kth(a, axis, k_node, keepdim, (tuple(out[0].shape), tuple(out[1].shape)))


def _median_index(a, axis, ignore_nan):
    rows = _rows(a, axis)
    n = a.shape[axis]
    if not ignore_nan or not is_float(a):
        if is_float(a):  # a row with NaN has median NaN: pick the first NaN (sorted last)
            has_nan = ops.reduce_or(ops.ne(a, a), axes=(axis,))
            nan_at = ops.sub(const(n, "int64", rows),
                             ops.reduce_sum(ops.convert(ops.ne(a, a), dtype="int64"),
                                            axes=(axis,)))
            return ops.select(has_nan, nan_at, const((n - 1) // 2, "int64", rows))
        return const((n - 1) // 2, "int64", rows)
    valid = ops.reduce_sum(ops.convert(ops.eq(a, a), dtype="int64"), axes=(axis,))
    half = ops.div(ops.sub(valid, const(1, "int64", rows)), const(2, "int64", rows))
    return ops.max_(half, const(0, "int64", rows))


def _median_dim(ignore_nan):
    def lowering(out, x, dim=0, keepdim=False):
        a = node_of(x)
        if a.ndim == 0:
            return a, const(0, "int64", ())
        if a.size == 0:
            raise Unsupported("median of an empty tensor")
        axis = dim_of(dim, a.ndim)
        return _kth(a, axis, _median_index(a, axis, ignore_nan), keepdim,
                    (tuple(out[0].shape), tuple(out[1].shape)))
    return lowering


lower(aten.median.dim)(_median_dim(False))
lower(aten.nanmedian.dim)(_median_dim(True))


def _median_all(ignore_nan):
    def lowering(out, x):
        a = node_of(x)
        if a.size == 0:
            raise Unsupported("median of an empty tensor")
        flat = _flat(a)
        v, _ = _kth(flat, 0, _median_index(flat, 0, ignore_nan), False, ((), ()))
        return v
    return lowering


lower(aten.median.default)(_median_all(False))
lower(aten.nanmedian.default)(_median_all(True))


@lower(aten.histc.default)
def _histc(out, x, bins=100, min=0, max=0):
    counts_dtype = compute_dtype(out.dtype)
    if counts_dtype == "bool":
        raise Unsupported("histc of bools")  # CPU torch's error, as CUDA refuses them too
    a = node_of(x, counts_dtype)
    integer = not is_float(a)
    if integer:
        # CUDA's kernel (CPU torch refuses integers; HF's MoE passes int32 off cpu/mps): the
        # range is truncated to the input's type and bins are exact int64 arithmetic,
        # (x - lo) * bins // (hi - lo), which is also what floats give on the same integers
        a = ops.convert(a, dtype="int64")
        min, max = int(min), int(max)
    flat = _flat(a)
    dtype = a.dtype
    lo, hi = const(min, dtype, ()), const(max, dtype, ())
    if min == max and flat.size:  # torch uses the data's range then
        lo, hi = ops.reduce_min(flat, axes=(0,)), ops.reduce_max(flat, axes=(0,))
    same = ops.eq(lo, hi)
    lo = ops.select(same, ops.sub(lo, const(1, dtype, ())), lo)
    hi = ops.select(same, ops.add(hi, const(1, dtype, ())), hi)
    n = flat.size
    lo_b, hi_b = bcast(lo, (n,)), bcast(hi, (n,))
    position = ops.div(ops.mul(ops.sub(flat, lo_b), const(bins, dtype, (n,))),
                       ops.sub(hi_b, lo_b))  # integers: truncates, i.e. floors (x >= lo)
    index = position if integer else ops.convert(ops.floor(position), dtype="int64")
    index = ops.select(ops.eq(flat, hi_b), const(bins - 1, "int64", (n,)), index)
    inside = ops.and_(ops.ge(flat, lo_b), ops.le(flat, hi_b))
    index = ops.select(inside, index, const(bins, "int64", (n,)))  # dropped by scatter
    counts = ops.scatter(const(0, counts_dtype, (bins,)), ops.reshape(index, new_sizes=(n, 1)),
                         const(1, counts_dtype, (n,)), mode="add")
    return counts


@lower(aten._cdist_forward.default)
def _cdist(out, x1, x2, p, compute_mode=None):
    return _distances(node_of(x1), node_of(x2), p, tuple(out.shape[:-2]))


def _row_differences(a, b, batch):
    """(*batch, r1, r2, m) a_i - b_j for every pair of rows of a and of b."""
    if not is_float(a) or a.dtype != b.dtype:
        raise Unsupported("cdist dtypes")
    a = bcast(a, batch + a.shape[-2:])
    b = bcast(b, batch + b.shape[-2:])
    nb = len(batch)
    full = batch + (a.shape[-2], b.shape[-2], a.shape[-1])
    keep = tuple(range(nb))
    left = ops.broadcast_in_dim(a, shape=full, broadcast_dimensions=keep + (nb, nb + 2))
    right = ops.broadcast_in_dim(b, shape=full, broadcast_dimensions=keep + (nb + 1, nb + 2))
    return ops.sub(left, right)


def _distances(a, b, p, batch):
    """(*batch, r1, r2) p-norm distances between the rows of a and of b."""
    diff = ops.abs_(_row_differences(a, b, batch))
    full, last = diff.shape, (diff.ndim - 1,)
    if full[-1] == 0:
        return const(0, a.dtype, full[:-1])
    if p == 0:
        return ops.reduce_sum(ops.convert(ops.ne(diff, const(0, a.dtype, full)), dtype=a.dtype),
                              axes=last)
    if p == float("inf"):
        return ops.reduce_max(diff, axes=last)
    if p == 1:
        return ops.reduce_sum(diff, axes=last)
    if p == 2:
        return ops.sqrt(ops.reduce_sum(ops.mul(diff, diff), axes=last))
    powered = ops.reduce_sum(ops.pow_(diff, const(float(p), a.dtype, full)), axes=last)
    return ops.pow_(powered, const(1.0 / p, a.dtype, powered.shape))


def _distance_gradient(diff, grad, dist, p):
    """d/d(a_i) of sum_j grad_ij * dist_ij, where diff = a_i - b_j: (*batch, r1, m). The
    per-pair terms are those of torch's CPU kernels (Distance's *dist_calc::backward),
    0 where a distance is 0 (no NaN, as torch)."""
    full, dtype = diff.shape, diff.dtype
    along = tuple(range(diff.ndim - 1))
    g = ops.broadcast_in_dim(grad, shape=full, broadcast_dimensions=along)
    d = ops.broadcast_in_dim(dist, shape=full, broadcast_dimensions=along)
    zero, one = const(0, dtype, full), const(1, dtype, full)
    size = ops.abs_(diff)
    if p == 1:
        term = ops.mul(g, ops.sign(diff))
    elif p == float("inf"):  # only the coordinates at the max count: |diff| == dist
        off_max = ops.min_(one, ops.ceil(ops.abs_(ops.sub(size, d))))
        term = ops.mul(ops.mul(g, ops.sign(diff)), ops.sub(one, off_max))
    else:
        if p == 2:
            term = ops.div(ops.mul(g, diff), d)
        else:
            # p < 2: sign(diff) |diff|^(p-1), else diff |diff|^(p-2): equal, but torch's split
            towards = ops.mul(ops.sign(diff), _power(size, p - 1)) if p < 2 else \
                ops.mul(diff, _power(size, p - 2))
            term = ops.div(ops.mul(towards, g), _power(d, p - 1))
            if p < 1:  # |0|^(p-1) is inf there: torch zeroes it
                term = ops.select(ops.eq(diff, zero), zero, term)
        term = ops.select(ops.eq(d, zero), zero, term)
    return ops.reduce_sum(term, axes=(diff.ndim - 2,))


def _power(x, exponent):
    return ops.pow_(x, const(float(exponent), x.dtype, x.shape))


@lower(aten._cdist_backward.default)
def _cdist_backward(out, grad, x1, x2, p, cdist):
    """The gradient wrt x1 (x1 broadcast to the batch: autograd sums it back); torch calls it
    again with the operands swapped (and grad, cdist transposed) for x2's."""
    a, b = node_of(x1), node_of(x2)
    batch = tuple(out.shape[:-2])
    if p == 0 or 0 in out.shape or b.shape[-2] == 0:
        return const(0, compute_dtype(out.dtype), tuple(out.shape))
    diff = _row_differences(a, b, batch)
    return _distance_gradient(diff, node_of(grad, a.dtype), node_of(cdist, a.dtype), p)


def _upper_pairs(n):
    """Flat positions (row-major in an (n, n) matrix) of pdist's pairs, in its order."""
    rows, cols = np.triu_indices(n, k=1)
    return rows * n + cols


@lower(aten._pdist_forward.default)
def _pdist(out, x, p=2):
    """The distances of x's rows to each other: the strict upper triangle of cdist(x, x),
    row-major, as torch orders them."""
    a = node_of(x)
    n = a.shape[0]
    if out.shape[0] == 0:
        return const(0, a.dtype, (0,))
    flat = _flat(_distances(a, a, p, ()))
    return ops.gather(flat, ir.constant(_upper_pairs(n).reshape(-1, 1), "int64"))


def _symmetric(condensed, n):
    """(n, n) from pdist's condensed pairs: [i, j] and [j, i] both hold pair (i, j)'s value,
    the diagonal 0 (a zero grad and distance there: no term)."""
    count = condensed.shape[0]
    slot = np.full(n * n, count, dtype=np.int64)
    slot[_upper_pairs(n)] = np.arange(count)
    slot = np.minimum(slot.reshape(n, n), slot.reshape(n, n).T)
    padded = ops.concatenate(condensed, const(0, condensed.dtype, (1,)), dimension=0)
    return ops.gather(padded, ir.constant(slot.reshape(n, n, 1), "int64"))


@lower(aten._pdist_backward.default)
def _pdist_backward(out, grad, x, p, pdist):
    """cdist(x, x)'s gradient with the pairs' grads and distances mirrored: each pair's
    term is odd in the difference, so row j gets -term(x_i - x_j) = term(x_j - x_i)."""
    a = node_of(x)
    n = a.shape[0]
    if p == 0 or n < 2 or a.shape[1] == 0:
        return const(0, compute_dtype(out.dtype), tuple(out.shape))
    diff = _row_differences(a, a, ())
    return _distance_gradient(diff, _symmetric(node_of(grad, a.dtype), n),
                              _symmetric(node_of(pdist, a.dtype), n), p)


# ---------------------------------------------------------------- running extremes, mode

def _running_extreme(scan):
    def lowering(out, x, dim):
        a = node_of(x)
        if a.ndim == 0:
            return a, const(0, "int64", ())
        axis = dim_of(dim, a.ndim)
        values = scan(a, axis=axis)
        # torch's rule: the index moves to each new extreme, to a later equal one, and to
        # every NaN (which then sticks): the last position where x equals the running value
        at = ops.eq(a, values)
        if is_float(a):
            at = ops.or_(at, ops.ne(a, a))
        pos = ops.iota(dtype="int64", shape=a.shape, dimension=axis)
        marked = ops.select(at, pos, const(-1, "int64", a.shape))
        return values, ops.cummax(marked, axis=axis)
    return lowering


lower(aten.cummax.default)(_running_extreme(ops.cummax))
lower(aten.cummin.default)(_running_extreme(ops.cummin))


@lower(aten.mode.default)
def _mode(out, x, dim=-1, keepdim=False):
    """The most frequent value (the smallest among equally frequent ones) and the last index
    holding it, by counting equal pairs along the axis: (n x n) per row."""
    a = node_of(x)
    if a.ndim == 0:
        return a, const(0, "int64", ())
    if a.dtype == "bool" or a.size == 0:
        raise Unsupported("mode of bools or of an empty tensor")
    axis = dim_of(dim, a.ndim)
    moved = ops.transpose(a, permutation=(*[i for i in range(a.ndim) if i != axis], axis))
    rows, n = moved.shape[:-1], moved.shape[-1]
    pair = rows + (n, n)
    keep = tuple(range(len(rows)))
    left = ops.broadcast_in_dim(moved, shape=pair, broadcast_dimensions=keep + (len(rows),))
    right = ops.broadcast_in_dim(moved, shape=pair, broadcast_dimensions=keep + (len(rows) + 1,))
    count = ops.reduce_sum(ops.convert(ops.eq(left, right), dtype="int64"), axes=(len(rows) + 1,))
    most = bcast(ops.reshape(ops.reduce_max(count, axes=(len(rows),)), new_sizes=rows + (1,)),
                 rows + (n,))
    if is_float(a):
        high = float("inf")
    else:
        from ....core import dtypes as dt
        high = int(np.iinfo(dt.to_numpy(a.dtype)).max)
    frequent = ops.select(ops.eq(count, most), moved, const(high, a.dtype, moved.shape))
    value = ops.reduce_min(frequent, axes=(len(rows),))
    spread = bcast(ops.reshape(value, new_sizes=rows + (1,)), rows + (n,))
    pos = ops.iota(dtype="int64", shape=rows + (n,), dimension=len(rows))
    index = ops.reduce_max(ops.select(ops.eq(moved, spread), pos,
                                      const(-1, "int64", pos.shape)), axes=(len(rows),))
    return (ops.reshape(value, new_sizes=tuple(out[0].shape)),
            ops.reshape(index, new_sizes=tuple(out[1].shape)))
