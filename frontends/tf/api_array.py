"""Shapes, layout, indexing and conversion: reshape, transpose, concat, stack, split, gather,
where, slicing, tf.shape (answered from the IR's static shape, without running anything)."""
import operator

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import array_ops

from ...core import dtypes as dt
from ...core import compose, host_values, ir, ops
from ...core.symbolic import index_bound, unit_slice, unit_step
from .lowering import (Reject, axes_of, broadcast_all, broadcast_shapes, broadcast_to,
                       operand_nodes, static_ints)
from . import indexed_slices, variables
from .registry import lower, lower_undispatched, raise_for_values
from .tensor import LazyTensor, framework_request, ir_dtype, to_tf, wrap


@lower(tf.convert_to_tensor, "value")
def convert_to_tensor(value, dtype=None, dtype_hint=None):
    if not isinstance(value, LazyTensor):
        raise Reject()
    if dtype is not None and tf.as_dtype(dtype) != value.dtype:
        raise Reject()
    if framework_request() is not None:
        # TF's or Keras' own code normalizing its input (Keras' losses call it on the
        # prediction before their TF ops): a lazy tensor already is a tensor, and the ops
        # that follow dispatch to lazyx. Materializing here was a silent eager turn.
        return value
    return to_tf(value, cause="convert")  # the user's own call: an observation


@lower(tf.shape, "input")
def shape(input, out_type=None):  # noqa: A002 - TF's name
    return tf.constant(input.node.shape if isinstance(input, LazyTensor) else input.shape,
                       dtype=out_type or tf.int32)


@lower(array_ops.shape, "input")
def shape_v1(input, out_type=None):  # noqa: A002
    """tf.compat.v1.shape, which TF's own code calls (tf.image.image_gradients, sobel_edges,
    tf.nn.sampled_softmax_loss): a fallback made it a lazy int tensor, which no reshape
    could take as its shape."""
    return shape(input, out_type)


@lower(tf.shape_n, lists=("input",))
def shape_n(input, out_type=tf.int32):  # noqa: A002
    """tf.image.psnr / ssim's shape checks: a fallback, a sync of each image."""
    return [shape(v, out_type) for v in input]


@lower(tf.size, "input")
def size(input, out_type=None):  # noqa: A002
    return tf.constant(int(np.prod(input.shape)), dtype=out_type or tf.int32)


@lower(array_ops.size, "input")
def size_v1(input, out_type=None):  # noqa: A002 - tf.compat.v1.size (array_ops.size)
    return size(input, out_type)


@lower(tf.rank, "input")
def rank(input):  # noqa: A002
    return tf.constant(len(input.shape), dtype=tf.int32)


@lower(tf.identity, "input")
def identity(input):  # noqa: A002
    return input


@lower(tf.ensure_shape, "x")
def ensure_shape(x, shape):
    # a lazy value's shape is static: checked now, at the call (TF's own error otherwise);
    # the value is x's (tf.data pipelines and Keras' preprocessing layers call it)
    try:
        compatible = tf.TensorShape(shape).is_compatible_with(x.shape)
    except (TypeError, ValueError) as err:
        raise Reject() from err
    if not compatible:
        raise Reject()
    return x


@lower(tf.stop_gradient, "input")
def stop_gradient(input):  # noqa: A002
    (x,) = operand_nodes(input)
    # a node of its own (the value is x's): the tapes differentiate the IR, which would
    # otherwise reach x through this use as through any other
    return wrap(ops.stop_gradient(x))  # (and no tape sources: no tape watches it)


@lower(tf.reshape, "tensor")
def reshape(tensor, shape):
    (x,) = operand_nodes(tensor)
    sizes = static_ints(shape)
    sizes = [sizes] if isinstance(sizes, int) else sizes
    if sizes.count(-1) > 1:
        raise Reject()
    if -1 in sizes:
        known = int(np.prod([s for s in sizes if s != -1]))
        if known == 0 or x.size % known:
            raise Reject()
        sizes[sizes.index(-1)] = x.size // known
    return wrap(ops.reshape(x, new_sizes=sizes), tensor)


@lower(tf.transpose, "a")
def transpose(a, perm=None, conjugate=False):
    (x,) = operand_nodes(a)
    perm = list(range(x.ndim))[::-1] if perm is None else static_ints(perm)
    perm = [p % x.ndim if -x.ndim <= p < 0 else p for p in perm]
    out = ops.transpose(x, permutation=perm)
    return wrap(ops.conj(out) if conjugate and dt.is_complex(x.dtype) else out, a)


@lower(tf.expand_dims, "input")
def expand_dims(input, axis):  # noqa: A002
    (x,) = operand_nodes(input)
    axis = static_ints(axis)
    if isinstance(axis, list) and len(axis) == 1:  # (TF takes any one-element axis: [-1])
        axis = axis[0]
    if not isinstance(axis, int) or not -x.ndim - 1 <= axis <= x.ndim:
        raise Reject()
    axis %= x.ndim + 1
    return wrap(ops.reshape(x, new_sizes=x.shape[:axis] + (1,) + x.shape[axis:]), input)


@lower(tf.squeeze, "input")
def squeeze(input, axis=None):  # noqa: A002
    (x,) = operand_nodes(input)
    if axis is None or axis == []:
        drop = [i for i, d in enumerate(x.shape) if d == 1]
    else:
        drop = axes_of(axis, x.ndim, allow_none=False)
        if any(x.shape[i] != 1 for i in drop):
            raise Reject()
    return wrap(ops.reshape(x, new_sizes=[d for i, d in enumerate(x.shape) if i not in drop]),
                input)


@lower(tf.compat.v1.squeeze, "input")
def squeeze_v1(input, axis=None, squeeze_dims=None):  # noqa: A002
    """The v1 spelling, which TF's own Python calls (tf.linalg.matvec squeezes with it)."""
    if axis is not None and squeeze_dims is not None:
        raise Reject()  # TF's error for both
    return squeeze(input, axis if squeeze_dims is None else squeeze_dims)


@lower(tf.concat, lists=("values",))
def concat(values, axis):
    nodes = operand_nodes(*values)
    (a,) = axes_of(static_ints(axis), nodes[0].ndim, allow_none=False)
    if nodes[0].ndim == 0:
        raise Reject()
    return wrap(ops.concatenate(*nodes, dimension=a), *values)


@lower(tf.stack, lists=("values",))
def stack(values, axis=0):
    nodes = operand_nodes(*values)
    rank_out = nodes[0].ndim + 1
    if not -rank_out <= axis < rank_out or any(n.shape != nodes[0].shape for n in nodes):
        raise Reject()
    return wrap(compose.stack(nodes, axis % rank_out), *values)


@lower(tf.unstack, "value")
def unstack(value, num=None, axis=0):
    (x,) = operand_nodes(value)
    (a,) = axes_of(axis, x.ndim, allow_none=False)
    if x.ndim == 0 or (num is not None and num != x.shape[a]):
        raise Reject()
    rest = x.shape[:a] + x.shape[a + 1:]
    return [wrap(ops.reshape(compose.slice_axis(x, a, i, i + 1), new_sizes=rest), value)
            for i in range(x.shape[a])]


@lower(tf.split, "value")
def split(value, num_or_size_splits, axis=0, num=None):
    (x,) = operand_nodes(value)
    (a,) = axes_of(static_ints(axis), x.ndim, allow_none=False)
    sizes = static_ints(num_or_size_splits)
    if isinstance(sizes, int):
        if sizes <= 0 or x.shape[a] % sizes:
            raise Reject()
        sizes = [x.shape[a] // sizes] * sizes
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = x.shape[a] - (sum(sizes) + 1)
    if sum(sizes) != x.shape[a] or any(s < 0 for s in sizes):
        raise Reject()
    out, start = [], 0
    for s in sizes:
        out.append(wrap(compose.slice_axis(x, a, start, start + s), value))
        start += s
    return out


@lower(tf.tile, "input")
def tile(input, multiples):  # noqa: A002
    (x,) = operand_nodes(input)
    reps = static_ints(multiples)
    if len(reps) != x.ndim or any(r < 0 for r in reps):
        raise Reject()
    shape = []
    for d, r in zip(x.shape, reps):
        shape += [r, d]
    dims = tuple(range(1, 2 * x.ndim, 2))
    big = ops.broadcast_in_dim(x, shape=shape, broadcast_dimensions=dims)
    return wrap(ops.reshape(big, new_sizes=[d * r for d, r in zip(x.shape, reps)]), input)


@lower(tf.broadcast_to, "input")
def broadcast_to_api(input, shape):  # noqa: A002
    (x,) = operand_nodes(input)
    target = tuple(static_ints(shape))
    if tuple(np.broadcast_shapes(x.shape, target)) != target:
        raise Reject()
    return wrap(broadcast_to(x, target), input)


@lower(tf.zeros_like, "input")
def zeros_like(input, dtype=None, layout=None):  # noqa: A002
    (x,) = operand_nodes(input)
    return wrap(compose.const(0, ir_dtype(dtype or input.dtype), x.shape))


@lower(tf.ones_like, "input")
def ones_like(input, dtype=None, layout=None):  # noqa: A002
    (x,) = operand_nodes(input)
    return wrap(compose.const(1, ir_dtype(dtype or input.dtype), x.shape))


# tf.compat.v1's (TF's own code calls them: tf.nn.sampled_softmax_loss); `optimize` only
# picks how a graph builds the same values
@lower(array_ops.zeros_like, "tensor")
def zeros_like_v1(tensor, dtype=None, optimize=True):
    return zeros_like(tensor, dtype)


@lower(array_ops.ones_like, "tensor")
def ones_like_v1(tensor, dtype=None, optimize=True):
    return ones_like(tensor, dtype)


@lower(tf.reverse, "tensor")
def reverse(tensor, axis):
    (x,) = operand_nodes(tensor)
    return wrap(ops.rev(x, dimensions=axes_of(static_ints(axis), x.ndim, allow_none=False)),
                tensor)


@lower(tf.pad, "tensor")
def pad(tensor, paddings, mode="CONSTANT", constant_values=0):
    (x,) = operand_nodes(tensor)
    pads = np.asarray(static_ints(paddings)).reshape(-1, 2) if x.ndim else np.zeros((0, 2))
    mode = mode.upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC") or pads.shape[0] != x.ndim or \
            (pads < 0).any():
        raise Reject()
    if mode != "CONSTANT":
        return wrap(_mirror_pad(x, pads, mode == "REFLECT"), tensor)
    (value,) = operand_nodes(constant_values) if isinstance(constant_values, LazyTensor) \
        else [ir.param(constant_values, x.dtype)]
    config = [(int(lo), int(hi), 0) for lo, hi in pads]
    return wrap(ops.pad(x, value, padding_config=config), tensor)


def _mirror_pad(x, pads, reflect):
    skip = 1 if reflect else 0
    for axis, (lo, hi) in enumerate(pads.tolist()):
        if lo + skip > x.shape[axis] or hi + skip > x.shape[axis]:
            raise Reject()  # TF's own error: the padding is wider than the axis allows
    return compose.edge_pad(x, pads.tolist(), "reflect" if reflect else "symmetric")


@lower(array_ops.pad, "tensor")
def pad_v1(tensor, paddings, mode="CONSTANT", constant_values=0):
    """tf.compat.v1.pad, which TF's own code calls (tf.image.sobel_edges)."""
    return pad(tensor, paddings, mode, constant_values)


# ---------------------------------------------------------------- gather, where, one_hot

def _index_node(indices):
    (idx,) = operand_nodes(indices)
    if not dt.is_int(idx.dtype):
        raise Reject()
    return idx


@lower(tf.gather, "params", "indices")
def gather(params, indices, validate_indices=None, axis=None, batch_dims=0):
    (x,) = operand_nodes(params)
    idx = _index_node(indices)
    (a,) = axes_of(static_ints(axis) if axis is not None else batch_dims, x.ndim,
                   allow_none=False)
    if x.ndim == 0 or not isinstance(batch_dims, int):
        raise Reject()
    known = host_values.known(idx)
    if known is not None and host_values.out_of_range(known, 0, x.shape[a]):
        # TF (on CPU) refuses indices outside [0, n): so do we, where they are known
        raise_for_values(tf.gather, dict(params=params, indices=indices, axis=axis,
                                         batch_dims=batch_dims), {"indices": known})
    if batch_dims and batch_dims == a == x.ndim - 1 == idx.ndim - 1:
        # per-row gather along the last axis: take_along_axis (NumPy's and torch.gather's)
        return wrap(compose.take_along_axis(x, idx, a), params)
    if batch_dims != 0:
        return wrap(_batched_gather(x, idx, a, batch_dims), params)
    # Negative indices wrap as in NumPy and torch (TF would raise on CPU and give 0 on GPU;
    # a lazy index can do neither, and this keeps the three frontends' graphs equal).
    idx = compose.wrap_index(idx, x.shape[a])
    # Move the gathered axis first, gather rows, then move the index axes into its place.
    perm = [a] + [i for i in range(x.ndim) if i != a]
    moved = ops.transpose(x, permutation=perm) if a else x
    rows = ops.gather(moved, ops.reshape(idx, new_sizes=idx.shape + (1,)))
    if not a:  # TF differentiates this gather to IndexedSlices (ltf.GradientTape does too)
        indexed_slices.mark_row_gather(rows)
    k = idx.ndim
    order = list(range(k, k + a)) + list(range(k)) + list(range(k + a, rows.ndim))
    out = ops.transpose(rows, permutation=order) if a else rows
    return wrap(out, params)


def _batched_gather(x, idx, a, b):
    """tf.gather with batch_dims b: out[B, M, J, T] = x[B, M, idx[B, J], T] for params
    (B, M, n, T) (n at axis a) and indices (B, J): one gather whose coordinates are the batch
    positions (iotas) beside the wrapped index."""
    b = b + idx.ndim if b < 0 else b
    if not 0 <= b <= a or b > idx.ndim or x.shape[:b] != idx.shape[:b]:
        raise Reject()
    moved = ops.transpose(x, permutation=[*range(b), a, *range(b, a), *range(a + 1, x.ndim)])
    coords = [ops.iota(dtype=idx.dtype, shape=idx.shape, dimension=d) for d in range(b)]
    coords.append(compose.wrap_index(idx, x.shape[a]))
    coords = ops.concatenate(*[ops.reshape(c, new_sizes=idx.shape + (1,)) for c in coords],
                             dimension=idx.ndim)
    rows = ops.gather(moved, coords)  # (B, J, M, T)
    k, m = idx.ndim - b, a - b
    order = [*range(b), *range(b + k, b + k + m), *range(b, b + k), *range(b + k + m, rows.ndim)]
    return ops.transpose(rows, permutation=order)


@lower(tf.sequence_mask, "lengths")
def sequence_mask(lengths, maxlen=None, dtype=tf.bool):
    (n,) = operand_nodes(lengths)
    if maxlen is None or not dt.is_int(n.dtype):
        raise Reject()  # without maxlen the mask's width is max(lengths): a value
    width = static_ints(maxlen)
    if not isinstance(width, int) or width < 0:
        raise Reject()
    shape = n.shape + (width,)
    positions = ops.iota(dtype=n.dtype, shape=shape, dimension=n.ndim)
    mask = ops.lt(positions, ops.broadcast_in_dim(n, shape=shape,
                                                  broadcast_dimensions=tuple(range(n.ndim))))
    target = ir_dtype(tf.as_dtype(dtype))
    return wrap(mask if target == dt.BOOL else ops.convert(mask, dtype=target), lengths)


@lower(tf.where, "condition", "x", "y")
def where(condition, x=None, y=None):
    if x is None and y is None:
        raise Reject()  # data-dependent shape: the registry runs it eagerly
    (cond,) = operand_nodes(condition)
    if cond.dtype != dt.BOOL:
        raise Reject()
    a, b = operand_nodes(x, y)
    cond, a, b = broadcast_all(cond, a, b)
    return wrap(ops.select(cond, a, b), x, y)


@lower(tf.one_hot, "indices")
def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None):
    idx = _index_node(indices)
    depth = static_ints(depth)
    out_dtype = ir_dtype(dtype) if dtype is not None else "float32"
    axis = idx.ndim if axis in (None, -1) else axis
    shape = list(idx.shape)
    shape.insert(axis, depth)
    classes = ops.iota(dtype=idx.dtype, shape=shape, dimension=axis)
    spread = ops.broadcast_in_dim(idx, shape=shape, broadcast_dimensions=tuple(
        i for i in range(len(shape)) if i != axis))
    hit = ops.eq(classes, spread)
    on = compose.const(1, out_dtype, shape) if on_value is None else \
        broadcast_to(ir.param(on_value, out_dtype), shape)
    off = compose.const(0, out_dtype, shape) if off_value is None else \
        broadcast_to(ir.param(off_value, out_dtype), shape)
    return wrap(ops.select(hit, on, off))


# ---------------------------------------------------------------- slicing: tensor[...]

@lower(tf.__operators__.getitem, "tensor")
def getitem(tensor, slice_spec, var=None):
    """tensor[slice_spec]; `var`: the subscript of a variable holding a lazy value (`v[0, :]`),
    whose result gets TF's `assign` of that slice."""
    out = _subscript(tensor, slice_spec)
    if var is not None:
        variables.assignable_slice(out, var, slice_spec)
    return out


def _subscript(tensor, slice_spec):
    (x,) = operand_nodes(tensor)
    spec = slice_spec if isinstance(slice_spec, tuple) else (slice_spec,)
    spec = tuple(_scalar_index(s) for s in spec)
    if any(isinstance(s, (LazyTensor, tf.Tensor, list, np.ndarray)) for s in spec):
        raise Reject()  # tensor indices (masks, gathers): run eagerly
    spec = _expand_ellipsis(spec, x.ndim)
    starts, limits, strides, flips, final, axis = [], [], [], [], [], 0
    dynamic = {}  # axis -> its run-time index (a node): x[i] with i a lazy 0-d integer
    for s in spec:
        if s is None:
            final.append(1)
            continue
        if axis >= x.ndim:
            raise Reject()
        d = x.shape[axis]
        if isinstance(s, slice) and unit_step(s):
            # (its start may be a number of a lazyx.compile'd call: kept symbolic, it is the
            # window's run-time start below, and a new value replays: core/symbolic.py)
            lo, n = unit_slice(s, d)
            starts.append(lo), limits.append(lo + n), strides.append(1), flips.append(False)
            final.append(n)
        elif isinstance(s, slice):
            lo, hi, step = s.indices(d)
            if step > 0:
                n = max(0, -(-(hi - lo) // step))
                starts.append(lo), limits.append(lo + (n - 1) * step + 1 if n else lo)
                strides.append(step), flips.append(False)
            else:
                n = max(0, -(-(lo - hi) // -step))
                first = lo - (n - 1) * -step if n else 0  # walk the same elements upward
                starts.append(first), limits.append(lo + 1 if n else 0)
                strides.append(-step), flips.append(True)
            final.append(n)
        elif isinstance(s, ir.Node):
            # TF's negative index counts from the end; one out of range is TF's error where
            # its value is known now, else XLA clamps it (docs/tf.md)
            known = host_values.known(s)
            if known is not None and not -d <= int(known) < d:
                raise Reject()  # (TF's own error, from running TF's op)
            i = s if s.dtype == "int32" else ops.convert(s, dtype="int32")
            dynamic[axis] = ops.select(ops.lt(i, ir.constant(0, "int32")),
                                       ops.add(i, ir.constant(d, "int32")), i)
            starts.append(0), limits.append(1), strides.append(1), flips.append(False)
        else:
            i = index_bound(s)
            if not -d <= i < d:
                raise Reject()
            i = i + d if i < 0 else i
            starts.append(i), limits.append(i + 1), strides.append(1), flips.append(False)
        axis += 1
    for d in x.shape[axis:]:
        starts.append(0), limits.append(d), strides.append(1), flips.append(False)
        final.append(d)
    steady = not any(flips) and all(step == 1 for step in strides)
    if dynamic and not steady:
        raise Reject()  # (a run-time index beside a strided or reversed slice: run eagerly)
    if not steady:  # the starts become static attributes: their values are the guard
        starts, limits = [operator.index(v) for v in starts], [operator.index(v) for v in limits]
    sizes = tuple(int(lim - start) for start, lim in zip(starts, limits))
    if (sizes != tuple(x.shape) or dynamic) and steady:
        # a window with a run-time start (int32, as NumPy's frontend records x[i:i + b]): a
        # loop over `X[i:i + b]` or `X[i]` runs one program for every i, not one per start
        # -- from 0 too, so that an index 0 does not make a loop's pieces differ
        out = ops.dynamic_slice(x, *[dynamic.get(k) or ir.param(start, "int32")
                                     for k, start in enumerate(starts)], slice_sizes=sizes)
    elif not any(flips):
        counts = [max(0, -(-(lim - start) // step))
                  for start, lim, step in zip(starts, limits, strides)]
        out = compose.strided_window(x, starts, counts, strides)
    else:
        out = ops.slice_(x, start_indices=starts, limit_indices=limits, strides=strides)
    if any(flips):
        out = ops.rev(out, dimensions=[i for i, f in enumerate(flips) if f])
    return wrap(ops.reshape(out, new_sizes=final), tensor)


def _scalar_index(s):
    """A 0-d integer tensor in a subscript: an eager one's int, a lazy one's node (a run-time
    index); anything else as it is."""
    if not isinstance(s, (LazyTensor, tf.Tensor)) or s.shape.rank != 0 or \
            not s.dtype.is_integer:
        return s
    # (a lazy one stays a node even where its buffer is known: under lazyx.compile an
    # argument's value of the traced call would be baked into every replay)
    if isinstance(s, LazyTensor):
        return s.node
    try:
        return int(s.numpy())
    except (AttributeError, TypeError, ValueError):  # a graph's symbolic tensor: TF's own call
        return s


@lower(tf.strided_slice, "input_")
def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None):
    """tf.strided_slice as the subscript it encodes (TF builds `x[1:, ..., None, 0]` into one
    the same way): per position, the ellipsis, a new axis, an index (shrink: begin's value), or
    a slice whose masked ends are open. Known bounds only; TF's own errors (a zero stride, an
    index out of range, two ellipses) come from running TF's op. `var`: the slice of a
    variable holding a lazy value (`v[0, :]`), which gets TF's `assign` of that slice."""
    spec = strided_spec(begin, end, strides, begin_mask, end_mask, ellipsis_mask,
                        new_axis_mask, shrink_axis_mask)
    out = _subscript(input_, spec)
    if var is not None:
        variables.assignable_slice(out, var, spec)
    return out


def strided_spec(begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                 new_axis_mask=0, shrink_axis_mask=0):
    """The subscript (a tuple) tf.strided_slice's arguments encode, or Reject."""
    begin, end = static_ints(begin), static_ints(end)
    strides = [1] * len(begin) if strides is None else static_ints(strides)
    # (an empty list is a float tensor to TF, which it refuses; TF refuses a shrunk axis with
    # a negative stride)
    if not (isinstance(begin, list) and isinstance(end, list) and isinstance(strides, list)) or \
            not 0 < len(begin) == len(end) == len(strides) or 0 in strides or \
            any(shrink_axis_mask >> i & 1 and step < 0 and not (ellipsis_mask | new_axis_mask)
                >> i & 1 for i, step in enumerate(strides)):
        raise Reject()
    spec = []
    for i, (b, e, step) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if ellipsis_mask & bit:
            spec.append(Ellipsis)
        elif new_axis_mask & bit:
            spec.append(None)
        elif shrink_axis_mask & bit:
            spec.append(b)
        else:
            spec.append(slice(None if begin_mask & bit else b, None if end_mask & bit else e,
                              step))
    return tuple(spec)


def _expand_ellipsis(spec, ndim):
    if sum(s is Ellipsis for s in spec) > 1:
        raise Reject()
    if Ellipsis not in spec:
        return spec
    i = spec.index(Ellipsis)
    used = sum(1 for s in spec if s is not None and s is not Ellipsis)
    return spec[:i] + (slice(None),) * max(ndim - used, 0) + spec[i + 1:]


@lower(tf.linspace, "start", "stop")
def linspace(start, stop, num, axis=0):
    """tf.linspace of lazy endpoints (a known count), in TF's own steps (math_ops.linspace_nd)
    so the values are its bits: delta = (stop - start) / max(num - 1, 1), the inner points
    start + delta * k for k = 1 .. num - 2, the endpoints themselves at both ends, all along
    `axis` of the broadcast endpoints. Integer endpoints, a lazy or negative count and a
    Python-number start (TF converts the stop to its dtype) are left to TF's own function."""
    num = static_ints(num)
    if not isinstance(start, (LazyTensor, tf.Tensor)) or not isinstance(num, int) or num < 0:
        raise Reject()
    a, b = operand_nodes(start, stop)
    if not dt.is_float(a.dtype):
        raise Reject()
    shape = broadcast_shapes(a.shape, b.shape)
    rank = len(shape) + 1
    if not -rank <= axis < rank:
        raise Reject()
    axis %= rank
    expanded = shape[:axis] + (1,) + shape[axis:]
    kept = tuple(d for d in range(rank) if d != axis)
    first, last = (ops.broadcast_in_dim(n, shape=expanded, broadcast_dimensions=kept[
        len(shape) - n.ndim:]) for n in (a, b))
    inner = max(num - 2, 0)
    # (the step count a run-time scalar, as TF divides by a tensor: no reciprocal folded in)
    delta = ops.div(ops.sub(last, first), compose.scalar(max(num - 1, 1), a.dtype, expanded))
    wide = shape[:axis] + (inner,) + shape[axis:]
    ks = ops.convert(ops.iota(dtype="int64", shape=wide, dimension=axis), dtype=a.dtype)
    ks = ops.add(ks, compose.const(1, a.dtype, wide))
    every = tuple(range(rank))
    points = ops.add(ops.broadcast_in_dim(first, shape=wide, broadcast_dimensions=every),
                     ops.mul(ops.broadcast_in_dim(delta, shape=wide, broadcast_dimensions=every),
                             ks))
    joined = ops.concatenate(first, points, last, dimension=axis)
    limits = list(joined.shape)
    limits[axis] = num
    return wrap(ops.slice_(joined, start_indices=[0] * rank, limit_indices=limits), start, stop)


@lower_undispatched(tf, "meshgrid")
def meshgrid(*args, **kwargs):
    """tf.meshgrid (replaced in its namespace: TF's own body would run first, its tf.stack and
    size falling back on the lazy inputs): each input flattened and broadcast along its own
    output axis, the first two axes swapped for indexing='xy' (TF's default), as TF's
    reshape-and-multiply formulation gives."""
    indexing = kwargs.pop("indexing", "xy")
    if kwargs or indexing not in ("xy", "ij") or not args:
        raise Reject()  # TF's own error (an unknown argument or indexing) or its empty list
    nodes = operand_nodes(*args)  # one dtype, as TF's product of them requires
    flat = [ops.reshape(n, new_sizes=(n.size,)) if n.ndim != 1 else n for n in nodes]
    axes = list(range(len(flat)))
    if indexing == "xy" and len(flat) > 1:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(flat)
    for n, axis in zip(flat, axes):
        shape[axis] = n.shape[0]
    return [wrap(ops.broadcast_in_dim(n, shape=tuple(shape), broadcast_dimensions=(axis,)), x)
            for n, axis, x in zip(flat, axes, args)]


@lower(tf.fill, "dims", "value")
def fill(dims, value, layout=None):
    """A lazy scalar broadcast to known dims (lazy dims would need their values: TF runs it,
    a counted fallback, as for any shape read from a lazy value)."""
    shape = static_ints(dims)
    if layout is not None or isinstance(shape, int) or any(d < 0 for d in shape):
        raise Reject()  # (a DTensor layout, a scalar or negative dims: TF's own call)
    (node,) = operand_nodes(value)
    if node.ndim:
        raise Reject()  # TF's error: value must be a scalar
    return wrap(ops.broadcast_in_dim(node, shape=tuple(shape), broadcast_dimensions=()), value)
