"""Views (functionalization hands us their *_copy forms; torch._decomp calls the plain ones),
joins, padding, and the functional scatters that functionalization writes views back with."""
import torch

from ....core import compose, ir, ops
from .. import dtypes
from ..tensor import FAST_ROUTES
from ..windows import start_param
from .table import (Unsupported, aten, bcast, const, dim_of, host_data, ir_dtype, lower,
                    node_of, scalar)
from .table import fill_value as checked_fill


def _both(name, overload="default"):
    """The view op and its *_copy twin (functionalization emits the latter)."""
    found = []
    for n in (name, name + "_copy"):
        packet = getattr(aten, n, None)
        if packet is not None and hasattr(packet, overload):
            found.append(getattr(packet, overload))
    return found


def _reshape_to_out(out, x, *args, **kwargs):
    a = node_of(x)
    shape = tuple(out.shape)
    return a if a.shape == shape else ops.reshape(a, new_sizes=shape)


lower(*_both("view"), *_both("_unsafe_view"), *_both("alias"), *_both("detach"),
      *_both("squeeze"), *_both("squeeze", "dim"), *_both("squeeze", "dims"),
      *_both("unsqueeze"), *_both("_reshape_alias"),
      aten.clone.default, aten.lift_fresh_copy.default, aten.reshape.default,
      aten.contiguous.default)(_reshape_to_out)


def _same_node(a):
    return a


# one-operand calls whose result is the operand's node (_native_dispatch.c): a training step
# detaches every gradient it accumulates
for _op in (*_both("alias"), *_both("detach"), aten.clone.default, aten.lift_fresh_copy.default):
    FAST_ROUTES[_op] = (1, _same_node, _reshape_to_out)


@lower(*_both("view", "dtype"))
def _view_dtype(out, x, dtype):
    a = node_of(x)
    if a.dtype == ir_dtype(dtype):
        return a
    if tuple(out.shape) != a.shape:
        raise Unsupported("view(dtype) of a different width")
    return ops.bitcast_convert(a, dtype=ir_dtype(dtype))


@lower(*_both("expand"))
def _expand(out, x, size, *, implicit=False):
    return bcast(node_of(x), out.shape)


@lower(*_both("transpose", "int"))
def _transpose(out, x, dim0, dim1):
    a = node_of(x)
    if a.ndim < 2:
        return a
    perm = list(range(a.ndim))
    d0, d1 = dim_of(dim0, a.ndim), dim_of(dim1, a.ndim)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ops.transpose(a, permutation=tuple(perm))


def _transposed(a):
    """t() of a node; None past 2-d, where torch raises (its meta kernel does, before a
    lowering runs; the C dispatcher then hands the call to the general path, which does)."""
    if a.ndim > 2:
        return None
    return ops.transpose(a, permutation=(1, 0)) if a.ndim == 2 else a


@lower(*_both("t"))
def _t(out, x):
    node = _transposed(node_of(x))
    if node is None:  # (torch's meta kernel refuses this first; eager torch raises it too)
        raise Unsupported("t() of more than 2 dimensions")
    return node


for _op in _both("t"):  # every Linear layer's weight, forward and backward
    FAST_ROUTES[_op] = (1, _transposed, _t)


@lower(aten.numpy_T.default, *_both("permute"))
def _permute_all(out, x, dims=None):
    a = node_of(x)
    if a.ndim == 0:
        return a
    perm = tuple(dim_of(d, a.ndim) for d in dims) if dims is not None \
        else tuple(reversed(range(a.ndim)))
    return ops.transpose(a, permutation=perm)


def _slice_bounds(size, start, end, step):
    """torch's clamping of slice bounds (negative wraps once, then clamps into range)."""
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end, step


def _window(a, axis, start, stop, step):
    """a[start:stop:step] along axis. A unit-step window short of the whole axis is a
    dynamic_slice whose starts are run-time parameters (int32, as NumPy's frontend records
    x[i:i + b]): a loop over `X[i:i + b]` or `X[i]` runs one program for every i instead of
    compiling one per start -- from 0 too: `x[0]` static made the pieces a loop with no
    barrier is cut into differ wherever an index 0 fell (d2l's element-wise
    `A[i, j] = torch.dot(B[i, :], C[:, j])`: a compile per piece, 465 s for a 64x64 A)."""
    if step != 1 or stop <= start or stop - start == a.shape[axis]:
        return compose.slice_axis(a, axis, start, stop, step)
    sizes = tuple(stop - start if k == axis else d for k, d in enumerate(a.shape))
    return ops.dynamic_slice(a, *_starts(a, axis, start, stop - start), slice_sizes=sizes)


_START = "int32"  # (a start within a dimension: int32 keeps float32 programs 32-bit)


def _starts(a, axis, start, length):
    """The run-time starts of a unit-step window of `a` along `axis`: 0 on the other axes;
    the axis's one linked to a lazyx.compile'd step's int when a window at it made this one
    (windows.py: its backward and its write-back share the forward's start)."""
    return [start_param(a.shape, axis, start, length) if k == axis else ir.param(0, _START)
            for k in range(a.ndim)]


@lower(*_both("slice", "Tensor"))
def _slice_tensor(out, x, dim=0, start=None, end=None, step=1):
    a = node_of(x)
    axis = dim_of(dim, a.ndim)
    return _window(a, axis, *_slice_bounds(a.shape[axis], start, end, step))


@lower(*_both("select", "int"))
def _select(out, x, dim, index):
    a = node_of(x)
    axis = dim_of(dim, a.ndim)
    index = index + a.shape[axis] if index < 0 else index
    return ops.reshape(_window(a, axis, index, index + 1, 1), new_sizes=tuple(out.shape))


@lower(*_both("narrow"))
def _narrow(out, x, dim, start, length):
    a = node_of(x)
    axis = dim_of(dim, a.ndim)
    start = start + a.shape[axis] if start < 0 else start
    return compose.slice_axis(a, axis, start, start + length, 1)


def _split(out, x, sizes, dim=0):
    a = node_of(x)
    axis = dim_of(dim, a.ndim)
    pieces, start = [], 0
    for piece in out:
        n = piece.shape[axis]
        pieces.append(compose.slice_axis(a, axis, start, start + n, 1))
        start += n
    return tuple(pieces)


lower(*_both("split", "Tensor"), *_both("split_with_sizes"))(_split)


@lower(*_both("unbind", "int"))
def _unbind(out, x, dim=0):
    a = node_of(x)
    axis = dim_of(dim, a.ndim)
    return tuple(ops.reshape(compose.slice_axis(a, axis, i, i + 1, 1), new_sizes=tuple(o.shape))
                 for i, o in enumerate(out))


def _diagonal_coordinates(a, offset, dim1, dim2, n):
    """(a with dim1, dim2 moved to the front, the permutation, the (n, 2) coordinates of the
    offset diagonal in the moved operand)."""
    d1, d2 = dim_of(dim1, a.ndim), dim_of(dim2, a.ndim)
    perm = (d1, d2, *[i for i in range(a.ndim) if i not in (d1, d2)])
    rows = ops.iota(dtype="int64", shape=(n, 1), dimension=0)
    lo, hi = max(-offset, 0), max(offset, 0)
    index = ops.concatenate(ops.add(rows, const(lo, "int64", (n, 1))),
                            ops.add(rows, const(hi, "int64", (n, 1))), dimension=1)
    return ops.transpose(a, permutation=perm), perm, index


@lower(*_both("diagonal"))
def _diagonal(out, x, offset=0, dim1=0, dim2=1):
    a = node_of(x)
    n = out.shape[-1]
    if n == 0:
        return const(0, a.dtype, tuple(out.shape))
    moved, _, index = _diagonal_coordinates(a, offset, dim1, dim2, n)
    picked = ops.gather(moved, index)  # (n, *rest)
    return ops.transpose(picked, permutation=(*range(1, picked.ndim), 0))


@lower(aten.diagonal_scatter.default)
def _diagonal_scatter(out, x, src, offset=0, dim1=0, dim2=1):
    # torch._decomp writes through a diagonal view with copy_, which a lazy value (no shared
    # storage) cannot alias: scatter the diagonal's coordinates instead.
    a = node_of(x)
    s = node_of(src, a.dtype)
    n = s.shape[-1]
    if n == 0:
        return a
    moved, perm, index = _diagonal_coordinates(a, offset, dim1, dim2, n)
    updates = ops.transpose(s, permutation=(s.ndim - 1, *range(s.ndim - 1)))  # (n, *rest)
    placed = ops.scatter(moved, index, updates, mode="set")
    return ops.transpose(placed, permutation=tuple(perm.index(i) for i in range(a.ndim)))


@lower(aten.cat.default)
def _cat(out, tensors, dim=0):
    dtype = ir_dtype(out.dtype)
    nodes = [node_of(t, dtype) for t in tensors]
    # torch skips legacy empty 1-d inputs whatever the other inputs' rank
    nodes = [n for n in nodes if not (n.shape == (0,) and len(out.shape) != 1)]
    if not nodes:
        return const(0, dtype, tuple(out.shape))
    axis = dim_of(dim, nodes[0].ndim)
    return ops.concatenate(*nodes, dimension=axis) if len(nodes) > 1 else nodes[0]


@lower(aten.stack.default)
def _stack(out, tensors, dim=0):
    dtype = ir_dtype(out.dtype)
    nodes = [node_of(t, dtype) for t in tensors]
    return compose.stack(nodes, dim_of(dim, nodes[0].ndim + 1))


@lower(aten.roll.default)
def _roll(out, x, shifts, dims=()):
    """Two slices and a concatenation per axis, as NumPy's and TF's roll (torch's own
    decomposition is a 16-op gather: another graph, and a slower one)."""
    a = node_of(x)
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not dims:  # roll the flattened tensor
        if len(shifts) != 1:
            raise Unsupported("roll: several shifts and no dims")  # (torch's error)
        flat = ops.reshape(a, new_sizes=(a.size,))
        return ops.reshape(compose.roll(flat, {0: shifts[0]}), new_sizes=a.shape)
    if len(shifts) != len(dims):
        raise Unsupported("roll: shifts and dims differ in length")  # (torch's error)
    total = {}
    for shift, dim in zip(shifts, dims):
        axis = dim_of(dim, a.ndim)
        total[axis] = total.get(axis, 0) + shift
    return compose.roll(a, total)


@lower(aten.flip.default)
def _flip(out, x, dims):
    a = node_of(x)
    if a.ndim == 0:
        return a
    return ops.rev(a, dimensions=tuple({dim_of(d, a.ndim) for d in dims}))


@lower(aten.constant_pad_nd.default)
def _pad(out, x, pad, value=0):
    a = node_of(x)
    config = [(0, 0, 0)] * a.ndim
    for i in range(len(pad) // 2):
        axis = a.ndim - 1 - i
        config[axis] = (pad[2 * i], pad[2 * i + 1], 0)
    return ops.pad(a, node_of(value, a.dtype), padding_config=tuple(config))


def _slice_scatter_nodes(a, src, axis, start, end, step):
    """a with src written at a[start:end:step] along axis: src padded into place, then a
    mask (an iota test) picks it."""
    n = src.shape[axis]
    if n == 0:
        return a
    if step == 1 and n < a.shape[axis]:  # (a run-time start, as _window's: one program per i)
        return ops.dynamic_update_slice(a, src, *_starts(a, axis, start, n))
    size = a.shape[axis]
    high = size - (start + (n - 1) * step + 1)
    config = [(0, 0, 0)] * a.ndim
    config[axis] = (start, high, step - 1)
    placed = ops.pad(src, const(0, a.dtype, ()), padding_config=tuple(config))
    pos = ops.iota(dtype="int64", shape=a.shape, dimension=axis)
    in_range = ops.and_(ops.ge(pos, const(start, "int64", a.shape)),
                        ops.lt(pos, const(start + (n - 1) * step + 1, "int64", a.shape)))
    on_step = ops.eq(ops.rem(ops.sub(pos, const(start, "int64", a.shape)),
                             const(step, "int64", a.shape)), const(0, "int64", a.shape))
    return ops.select(ops.and_(in_range, on_step), placed, a)


@lower(aten.slice_scatter.default)
def _slice_scatter(out, x, src, dim=0, start=None, end=None, step=1):
    a = node_of(x)
    axis = dim_of(dim, a.ndim)
    start, end, step = _slice_bounds(a.shape[axis], start, end, step)
    return _slice_scatter_nodes(a, node_of(src, a.dtype), axis, start, end, step)


@lower(aten.select_scatter.default)
def _select_scatter(out, x, src, dim, index):
    a = node_of(x)
    axis = dim_of(dim, a.ndim)
    index = index + a.shape[axis] if index < 0 else index
    shape = list(a.shape)
    shape[axis] = 1
    s = ops.reshape(node_of(src, a.dtype), new_sizes=tuple(shape))
    return _slice_scatter_nodes(a, s, axis, index, index + 1, 1)


# ---------------------------------------------------------------- fills and copies

@lower(aten.copy.default)
def _copy(out, x, src, non_blocking=False):
    a = node_of(x)
    if type(src) is torch.Tensor and src.device.type == "cpu" and dtypes.supported(src.dtype):
        # a CPU tensor moved to the device is device data, a 0-d one too (`torch.tensor(2.6)
        # .to(device)`, a module's 0-d parameter or buffer: CLIP's logit_scale, BatchNorm's
        # num_batches_tracked): as node_of's run-time scalar it became data only after the
        # first step wrote it, and the second step compiled again
        src = host_data(src)
    return bcast(node_of(src, a.dtype), a.shape)


@lower(aten.fill.Scalar, aten.fill.Tensor)
def _fill(out, x, value):
    dtype = ir_dtype(out.dtype)
    return bcast(node_of(checked_fill(value, dtype), dtype), out.shape)


@lower(aten.zero.default)
def _zero(out, x):
    return const(0, ir_dtype(out.dtype), tuple(out.shape))


def _filled_like(value):
    def lowering(out, *args, **kwargs):
        return const(value, ir_dtype(out.dtype), tuple(out.shape))
    return lowering


lower(aten.zeros_like.default, aten.empty_like.default, aten.new_zeros.default,
      aten.new_empty.default, aten.new_empty_strided.default, aten.zeros.default,
      aten.empty.memory_format, aten._efficientzerotensor.default,
      # forward AD's zero tangent for a plain tensor a dual is written into (y[i] = dual)
      aten._new_zeros_with_same_feature_meta.default)(_filled_like(0))
lower(aten.ones_like.default, aten.new_ones.default, aten.ones.default)(_filled_like(1))


@lower(aten.full_like.default)
def _full_like(out, x, fill_value, **kwargs):
    dtype = ir_dtype(out.dtype)
    return scalar(checked_fill(fill_value, dtype), dtype, tuple(out.shape))


@lower(aten.new_full.default)
def _new_full(out, x, size, fill_value, **kwargs):
    dtype = ir_dtype(out.dtype)
    return scalar(checked_fill(fill_value, dtype), dtype, tuple(out.shape))


@lower(aten.full.default)
def _full(out, size, fill_value, **kwargs):
    dtype = ir_dtype(out.dtype)
    return scalar(checked_fill(fill_value, dtype), dtype, tuple(out.shape))


@lower(aten.scalar_tensor.default)
def _scalar_tensor(out, value, **kwargs):
    return node_of(value, ir_dtype(out.dtype))


@lower(aten.arange.start_step)
def _arange(out, start, end=None, step=1, **kwargs):
    n = out.shape[0]
    dtype = ir_dtype(out.dtype)
    wide = "float64" if dtype.startswith("float") else "int64"
    counts = ops.iota(dtype=wide, shape=(n,), dimension=0)
    return ops.add(scalar(start, wide, (n,)), ops.mul(counts, scalar(step, wide, (n,))))


@lower(aten.arange.default)
def _arange_end(out, end, **kwargs):
    return _arange(out, 0, end, 1)


@lower(aten.arange.start)
def _arange_start(out, start, end, **kwargs):
    return _arange(out, start, end, 1)




@lower(aten.linspace.default)
def _linspace(out, start, end, steps, **kwargs):
    dtype = ir_dtype(out.dtype)
    wide = "float64" if dtype == "float64" else "float32"
    if steps <= 1:
        return scalar(start, wide, (steps,))
    shape = (steps,)
    i = ops.iota(dtype=wide, shape=shape, dimension=0)
    lo, hi = scalar(start, wide, shape), scalar(end, wide, shape)
    step = ops.div(ops.sub(hi, lo), const(steps - 1, wide, shape))
    # torch fills the first half from start and the second half back from end
    from_start = ops.add(lo, ops.mul(i, step))
    from_end = ops.sub(hi, ops.mul(ops.sub(const(steps - 1, wide, shape), i), step))
    first_half = ops.lt(i, const(steps // 2, wide, shape))
    return ops.select(first_half, from_start, from_end)


@lower(aten.linspace.Tensor_Tensor, aten.linspace.Tensor_Scalar, aten.linspace.Scalar_Tensor)
def _linspace_tensor_bounds(out, start, end, steps, *, dtype=None, layout=None, device=None,
                            pin_memory=None):
    if device is None or torch.device(device).type != "lazyx":
        # torch reads 0-d tensor bounds with .item() and builds on the requested device (CPU
        # by default): the output leaves the lazy device, so that is a counted item sync.
        start, end = (v.item() if isinstance(v, torch.Tensor) else v for v in (start, end))
        return torch.linspace(start, end, steps, dtype=dtype, layout=layout, device=device,
                              pin_memory=pin_memory)
    return _linspace(out, start, end, steps)


@lower(aten.resize.default)
def _resize(out, x, size, *, memory_format=None):
    """resize_ (functionalized): the first numel elements of the flat value; growing adds
    elements torch leaves uninitialized (zeros here)."""
    a = node_of(x)
    shape = tuple(out.shape)
    n = 1
    for d in shape:
        n *= d
    flat = ops.reshape(a, new_sizes=(a.size,))
    if n <= a.size:
        flat = ops.slice_(flat, start_indices=(0,), limit_indices=(n,))
    else:
        flat = ops.pad(flat, const(0, a.dtype, ()), padding_config=((0, n - a.size, 0),))
    return ops.reshape(flat, new_sizes=shape)


@lower(aten.eye.default, aten.eye.m)
def _eye(out, n, m=None, **kwargs):
    shape = tuple(out.shape)
    rows = ops.iota(dtype="int64", shape=shape, dimension=0)
    cols = ops.iota(dtype="int64", shape=shape, dimension=1)
    return ops.convert(ops.eq(rows, cols), dtype=ir_dtype(out.dtype))
