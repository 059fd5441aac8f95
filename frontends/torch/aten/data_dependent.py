"""Ops whose result's shape or Python value depends on the data: nonzero, masked_select,
bincount, unique, equal, allclose, linalg's error checks. Each syncs once -- a counted sync
with cause "data_dependent", not a fallback -- for the one number it needs (a count, a flag),
then builds the rest on the device where it can (nonzero, masked_select, bincount);
unique-style ops whose whole output is data-shaped run on CPU torch after the sync.

These bypass the meta kernel (it cannot know the shape), so they live in tensor.SPECIAL.
"""
import torch

from ....core import ops, runtime
from .. import dtypes
from ..tensor import SPECIAL, LazyTensor, eager, from_node
from .table import bcast, const, lower, node_of

aten = torch.ops.aten
CAUSE = "data_dependent"


def _host_int(node):
    handle = runtime.LazyHandle(node)
    return int(runtime.to_host(handle, cause=CAUSE))


def _true_positions(mask, count):
    """Flat positions of the first `count` True entries of a flat bool node, in order."""
    order = ops.argsort(ops.convert(ops.not_(mask), dtype="int32"), axis=0, index_dtype="int64")
    return ops.slice_(order, start_indices=(0,), limit_indices=(count,))


def _unravel(flat, shape):
    """(n,) flat positions -> (n, len(shape)) coordinates (row-major)."""
    columns, stride = [], 1
    for size in reversed(shape):
        coord = ops.rem(ops.div(flat, const(stride, "int64", flat.shape)),
                        const(size, "int64", flat.shape))
        columns.append(ops.reshape(coord, new_sizes=flat.shape + (1,)))
        stride *= size
    columns.reverse()
    return ops.concatenate(*columns, dimension=1) if len(columns) > 1 else columns[0]


def _flat_mask(x):
    a = node_of(x)
    mask = a if a.dtype == "bool" else ops.ne(a, const(0, a.dtype, a.shape))
    return ops.reshape(mask, new_sizes=(mask.size,))


def _count(mask):
    return _host_int(ops.reduce_sum(ops.convert(mask, dtype="int64"), axes=(0,)))


def _nonzero(x):
    a = node_of(x)
    mask = _flat_mask(x)
    n = _count(mask) if mask.size else 0
    if n == 0:
        return from_node(const(0, "int64", (0, a.ndim)), torch.int64)
    positions = _true_positions(mask, n)
    if a.ndim == 0:
        return from_node(const(0, "int64", (n, 0)), torch.int64)
    return from_node(_unravel(positions, a.shape), torch.int64)


def _nonzero_static(x, *, size, fill_value=-1):
    a = node_of(x)
    if a.ndim == 0 or a.size == 0 or size == 0:
        return eager(aten.nonzero_static.default, (x,), {"size": size, "fill_value": fill_value},
                     cause=CAUSE)
    mask = _flat_mask(x)
    count = ops.reduce_sum(ops.convert(mask, dtype="int64"), axes=(0,))
    take = min(size, mask.size)
    positions = _true_positions(mask, take)
    coords = _unravel(positions, a.shape)
    # rows past the number of nonzeros are fill_value (no sync: the shape is `size`)
    row = ops.iota(dtype="int64", shape=(take, a.ndim), dimension=0)
    valid = ops.lt(row, bcast(count, (take, a.ndim)))
    coords = ops.select(valid, coords, const(fill_value, "int64", coords.shape))
    if take < size:
        coords = ops.pad(coords, const(fill_value, "int64", ()),
                         padding_config=((0, size - take, 0), (0, 0, 0)))
    return from_node(coords, torch.int64)


def _masked_select(x, mask):
    a, m = node_of(x), node_of(mask, "bool")
    shape = torch.broadcast_shapes(tuple(a.shape), tuple(m.shape))
    a, m = bcast(a, shape), bcast(m, shape)
    flat_a = ops.reshape(a, new_sizes=(a.size,))
    flat_m = ops.reshape(m, new_sizes=(m.size,))
    n = _count(flat_m) if flat_m.size else 0
    if n == 0:
        return from_node(const(0, a.dtype, (0,)), x.dtype)
    positions = _true_positions(flat_m, n)
    picked = ops.gather(flat_a, ops.reshape(positions, new_sizes=(n, 1)))
    return from_node(picked, x.dtype)


def _checked_masked_select(x, mask):
    """masked_select's own argument checks, at the call and before any sync."""
    if mask.dtype != torch.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    torch.broadcast_shapes(tuple(x.shape), tuple(mask.shape))  # torch's own RuntimeError
    return _masked_select(x, mask)


def _equal(a, b):
    if tuple(a.shape) != tuple(b.shape):
        return False
    if not isinstance(a, LazyTensor) or not isinstance(b, LazyTensor):
        return eager(aten.equal.default, (a, b), {}, cause=CAUSE)
    dtype = dtypes.to_ir(torch.promote_types(a.dtype, b.dtype))
    x, y = node_of(a, dtype), node_of(b, dtype)
    if x.size == 0:
        return True
    same = ops.reduce_and(ops.eq(x, y), axes=tuple(range(x.ndim))) if x.ndim else ops.eq(x, y)
    return bool(_host_int(ops.convert(same, dtype="int64")))


def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    close = torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    node = node_of(close)
    if node.size == 0:
        return True
    every = ops.reduce_and(node, axes=tuple(range(node.ndim))) if node.ndim else node
    return bool(_host_int(ops.convert(every, dtype="int64")))


@torch.compiler.disable  # Dynamo would trace into the read; run it as a graph break
def one_hot(x, num_classes=-1):
    """F.one_hot without num_classes: the class count is the data's (its max + 1). ATen's
    composite kernel reads it with .item() above our dispatcher, where the read would look
    like the user's own `.item()`; registered for the device's autograd key (device.py),
    this reads it as a counted data-dependent sync instead. Below autograd the op reaches the
    dispatcher whole (the lowering below), or a tracer's fake tensors under torch.compile."""
    if num_classes == -1 and x.dtype == torch.int64 and x.numel():
        try:
            node = x.__lazyx_handle__.node
        except AttributeError:  # a fake tensor (torch.compile tracing): no value to read
            node = None
        if node is not None:
            num_classes = _host_int(ops.reduce_max(node, axes=tuple(range(x.dim())))) + 1
    with torch._C._AutoDispatchBelowAutograd():
        return aten.one_hot.default(x, num_classes)


@lower(aten.one_hot.default)
def _one_hot(out, x, num_classes=-1):
    """Class k of each position: x == k against an iota along the new last axis (torch's
    range errors for known values come from bounds.py, before this)."""
    a = node_of(x)
    classes = ops.iota(dtype="int64", shape=out.shape, dimension=len(out.shape) - 1)
    spread = ops.broadcast_in_dim(a, shape=out.shape, broadcast_dimensions=tuple(range(a.ndim)))
    return ops.convert(ops.eq(spread, classes), dtype="int64")


_BINCOUNT_INPUT = "bincount only supports 1-d non-negative integral inputs."


def _bincount(x, weights=None, minlength=0):
    """The length is max(x) + 1 (at least minlength): one counted sync reads it, together
    with the negative-value check; the counts are then a lazy scatter-add. Checks and result
    dtypes in the order and of the kinds CPU torch's kernel has."""
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        aten.bincount.default(torch.empty(0, dtype=x.dtype))  # torch's NotImplementedError
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    a = node_of(x, "int64")
    if a.ndim == 1 and a.size == 0:  # int64 even with weights, as torch
        return from_node(const(0, "int64", (minlength,)), torch.int64)
    if a.ndim != 1:
        raise RuntimeError(_BINCOUNT_INPUT)
    negative = ops.reduce_min(a, axes=(0,))
    top = _host_int(ops.select(ops.lt(negative, const(0, "int64", ())), const(-1, "int64", ()),
                               ops.reduce_max(a, axes=(0,))))
    if top < 0:
        raise RuntimeError(_BINCOUNT_INPUT)
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != a.size):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    # float32 weights sum in float32; any other weights (halves, ints, bools) in double
    dtype = torch.int64 if weights is None else \
        torch.float32 if weights.dtype == torch.float32 else torch.float64
    ir_dtype = dtypes.to_ir(dtype)
    updates = const(1, ir_dtype, a.shape) if weights is None else node_of(weights, ir_dtype)
    counts = ops.scatter(const(0, ir_dtype, (max(top + 1, minlength),)),
                         ops.reshape(a, new_sizes=(a.size, 1)), updates, mode="add")
    return from_node(counts, dtype)


def _run_on_cpu_after_sync(func):
    """The whole output is data-shaped (unique values, counts): sync, then CPU torch."""
    def run(*args, **kwargs):
        return eager(func, args, kwargs, cause=CAUSE)
    return run


def _check_errors(info, api_name, *, is_matrix):
    """torch raises for a singular / non-PD input: that needs `info`'s value, hence a sync."""
    cpu = torch.from_numpy(runtime.to_host(info._lazyx_handle, cause=CAUSE).copy()) \
        if isinstance(info, LazyTensor) else info
    return aten._linalg_check_errors.default(cpu, api_name, is_matrix=is_matrix)


def _repeat_interleave_counts(repeats, output_size=None):
    """repeat_interleave(repeats): index i repeated repeats[i] times. The length is the sum
    of repeats: given as output_size, no sync; else one counted sync to read it. Each output
    position's index is the number of cumulative counts at or below it."""
    r = node_of(repeats, "int64")
    if r.ndim != 1:
        return eager(aten.repeat_interleave.Tensor, (repeats,), {"output_size": output_size},
                     cause=CAUSE)
    if output_size is None:
        if r.size == 0:
            return from_node(const(0, "int64", (0,)), repeats.dtype)
        if _host_int(ops.reduce_or(ops.lt(r, const(0, "int64", r.shape)), axes=(0,))):
            raise RuntimeError("repeats can not be negative")
        output_size = _host_int(ops.reduce_sum(r, axes=(0,)))
    if output_size == 0 or r.size == 0:
        return from_node(const(0, "int64", (output_size,)), repeats.dtype)
    ends = ops.cumsum(r, axis=0)
    shape = (output_size, r.size)
    pos = ops.iota(dtype="int64", shape=shape, dimension=0)
    passed = ops.le(ops.broadcast_in_dim(ends, shape=shape, broadcast_dimensions=(1,)), pos)
    index = ops.reduce_sum(ops.convert(passed, dtype="int64"), axes=(1,))
    index = ops.min_(index, const(r.size - 1, "int64", (output_size,)))
    return from_node(ops.convert(index, dtype=dtypes.to_ir(repeats.dtype)), repeats.dtype)


SPECIAL.update({
    aten.bincount.default: _bincount,
    aten.repeat_interleave.Tensor: _repeat_interleave_counts,
    aten.nonzero.default: _nonzero,
    aten.nonzero_static.default: _nonzero_static,
    aten.masked_select.default: _checked_masked_select,
    aten.equal.default: _equal,
    aten.allclose.default: _allclose,
    aten._linalg_check_errors.default: _check_errors,
})
for _op in (aten._unique2.default, aten.unique_consecutive.default, aten.unique_dim.default,
            aten._unique.default, aten.unique_dim_consecutive.default):
    SPECIAL[_op] = _run_on_cpu_after_sync(_op)
