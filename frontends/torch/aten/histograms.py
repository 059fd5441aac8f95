"""histogram / histogramdd: bin edges (torch's linspace between the range or the data's
min and max), each sample's bin by counting the edges at or below it, then a scatter-add of
the weights. Samples outside the edges are dropped, one on the last edge counts in the last
bin, as torch does."""
import types

import numpy as np
import torch

from ....core import compose, ops
from .shapes import _linspace
from .table import aten, bcast, compute_dtype, const, lower, node_of


def _outer_edges(column, lo_hi, dtype):
    """(lo, hi) nodes for one dimension: the given range or the data's min / max; an empty
    column gives (0, 1) and equal ends are widened by 0.5 each way."""
    if lo_hi is not None:
        lo, hi = (const(float(v), dtype, ()) for v in lo_hi)
    elif column.shape[0] == 0:
        lo, hi = const(0.0, dtype, ()), const(1.0, dtype, ())
    else:
        lo, hi = ops.reduce_min(column, axes=(0,)), ops.reduce_max(column, axes=(0,))
    same = ops.eq(lo, hi)
    half = const(0.5, dtype, ())
    return ops.select(same, ops.sub(lo, half), lo), ops.select(same, ops.add(hi, half), hi)


def _column(samples, d):
    """Dimension d of (N, D) samples, as (N,)."""
    return ops.reshape(compose.slice_axis(samples, 1, d, d + 1), new_sizes=samples.shape[:1])


def _edges_from_counts(samples, bins, ranges, dtype):
    edges = []
    for d, count in enumerate(bins):
        column = _column(samples, d)
        lo_hi = None if ranges is None else (ranges[2 * d], ranges[2 * d + 1])
        lo, hi = _outer_edges(column, lo_hi, dtype)
        like = types.SimpleNamespace(dtype=torch.float64 if dtype == "float64" else
                                     torch.float32)
        edges.append(ops.convert(_linspace(like, lo, hi, count + 1), dtype=dtype))
    return edges


def _counts(samples, edges, weight, density, dtype):
    """The (bins_0, ..., bins_{D-1}) histogram of (N, D) samples over per-dimension edges."""
    n = samples.shape[0]
    shape = tuple(e.shape[0] - 1 for e in edges)
    flat = const(0, "int64", (n,))
    inside = const(True, "bool", (n,))
    for d, e in enumerate(edges):
        k = e.shape[0]
        x = _column(samples, d)
        grid = ops.broadcast_in_dim(e, shape=(n, k), broadcast_dimensions=(1,))
        at_or_below = ops.le(grid, ops.broadcast_in_dim(x, shape=(n, k),
                                                        broadcast_dimensions=(0,)))
        pos = ops.sub(ops.reduce_sum(ops.convert(at_or_below, dtype="int64"), axes=(1,)),
                      const(1, "int64", (n,)))
        pos = ops.min_(pos, const(k - 2, "int64", (n,)))  # the last edge closes the last bin
        first = ops.slice_(e, start_indices=(0,), limit_indices=(1,))
        last = ops.slice_(e, start_indices=(k - 1,), limit_indices=(k,))
        inside = ops.and_(inside, ops.and_(ops.ge(x, bcast(first, (n,))),
                                           ops.le(x, bcast(last, (n,)))))
        stride = int(np.prod(shape[d + 1:], dtype=np.int64))
        flat = ops.add(flat, ops.mul(pos, const(stride, "int64", (n,))))
    total = int(np.prod(shape, dtype=np.int64))
    # samples outside the edges scatter to an out-of-range slot, which scatter drops
    flat = ops.select(inside, flat, const(total, "int64", (n,)))
    w = const(1, dtype, (n,)) if weight is None else ops.reshape(node_of(weight, dtype),
                                                                 new_sizes=(n,))
    hist = ops.scatter(const(0, dtype, (total,)), ops.reshape(flat, new_sizes=(n, 1)), w,
                       mode="add") if n else const(0, dtype, (total,))
    hist = ops.reshape(hist, new_sizes=shape)
    if density:
        volume = const(1, dtype, shape)
        for d, e in enumerate(edges):
            k = e.shape[0]
            width = ops.sub(ops.slice_(e, start_indices=(1,), limit_indices=(k,)),
                            ops.slice_(e, start_indices=(0,), limit_indices=(k - 1,)))
            volume = ops.mul(volume, ops.broadcast_in_dim(width, shape=shape,
                                                          broadcast_dimensions=(d,)))
        whole = ops.reduce_sum(hist, axes=tuple(range(len(shape))))
        hist = ops.div(hist, ops.mul(bcast(whole, shape), volume))
    return hist


def _samples(x, dims, dtype):
    a = node_of(x, dtype)
    return ops.reshape(a, new_sizes=(a.size // dims if dims else 0, dims))


@lower(aten.histogram.bin_ct)
def _histogram_counts(out, x, bins=100, *, range=None, weight=None, density=False):
    dtype = compute_dtype(out[0].dtype)
    samples = _samples(x, 1, dtype)
    edges = _edges_from_counts(samples, [bins], range, dtype)
    return _counts(samples, edges, weight, density, dtype), edges[0]


@lower(aten.histogram.bins_tensor)
def _histogram_edges(out, x, bins, *, weight=None, density=False):
    dtype = compute_dtype(out[0].dtype)
    edges = [node_of(bins, dtype)]
    return _counts(_samples(x, 1, dtype), edges, weight, density, dtype), edges[0]


@lower(aten._histogramdd_bin_edges.default)
def _histogramdd_bin_edges(out, x, bins, *, range=None, weight=None, density=False):
    dtype = compute_dtype(out[0].dtype)
    return tuple(_edges_from_counts(_samples(x, len(bins), dtype), bins, range, dtype))


@lower(aten._histogramdd_from_bin_cts.default)
def _histogramdd_counts(out, x, bins, *, range=None, weight=None, density=False):
    dtype = compute_dtype(out.dtype)
    samples = _samples(x, len(bins), dtype)
    edges = _edges_from_counts(samples, bins, range, dtype)
    return _counts(samples, edges, weight, density, dtype)


@lower(aten._histogramdd_from_bin_tensors.default)
def _histogramdd_edges(out, x, bins, *, weight=None, density=False):
    dtype = compute_dtype(out.dtype)
    edges = [node_of(b, dtype) for b in bins]
    return _counts(_samples(x, len(bins), dtype), edges, weight, density, dtype)


def _without_meta(lowering, edge_count):
    """histogram has no meta kernel; its shapes are known from the arguments, so build them
    here and lower directly. (The dispatcher's route for an op without a meta kernel, CPU
    torch on zeros, would refuse what this one takes: a CPU tensor of bin edges.)"""
    def run(x, bins=100, **kwargs):
        from ..tensor import from_node
        if not x.dtype.is_floating_point:
            names = {torch.int64: "Long", torch.int32: "Int", torch.int16: "Short",
                     torch.int8: "Char", torch.uint8: "Byte", torch.bool: "Bool"}
            raise NotImplementedError(f'"histogramdd" not implemented for '
                                      f"'{names.get(x.dtype, x.dtype)}'")
        count = edge_count(bins)
        meta = (torch.empty((count - 1,), dtype=x.dtype, device="meta"),
                torch.empty((count,), dtype=x.dtype, device="meta"))
        hist, edges = lowering(meta, x, bins, **kwargs)
        return (from_node(ops.convert(hist, dtype=node_of(x).dtype), x.dtype),
                from_node(ops.convert(edges, dtype=node_of(x).dtype), x.dtype))
    return run


def _register_without_meta():
    from ..tensor import SPECIAL
    SPECIAL[aten.histogram.bin_ct] = _without_meta(_histogram_counts, lambda bins: bins + 1)
    SPECIAL[aten.histogram.bins_tensor] = _without_meta(_histogram_edges,
                                                        lambda bins: bins.shape[0])


_register_without_meta()
