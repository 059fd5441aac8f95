"""Pooling on the reduce_window primitive. torch's meta kernel has already checked the
arguments and fixed the output shape; ceil_mode is the extra high padding that makes
reduce_window yield that shape. Spatial axes are the trailing ones (batch and channel
axes get a window of 1)."""
import itertools
import math

import numpy as np

from ....core import autodiff, ir, ops
from .table import Unsupported, aten, bcast, compute_dtype, is_float, lower, node_of


def _per_axis(value, n, default=None):
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        return default
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    return value * n if len(value) == 1 else value


def _window_padding(sizes, kernel, stride, padding, dilation, out_sizes):
    """(low, high) per spatial axis: torch's symmetric padding, plus what ceil_mode adds."""
    pads = []
    for size, k, s, p, d, o in zip(sizes, kernel, stride, padding, dilation, out_sizes):
        span = (k - 1) * d + 1
        pads.append((p, p + max(0, (o - 1) * s + span - (size + 2 * p))))
    return pads


def _pool(x, kind, nsp, kernel, stride, padding, dilation, out_shape):
    lead = x.ndim - nsp
    pads = _window_padding(x.shape[lead:], kernel, stride, padding, dilation, out_shape[lead:])
    return ops.reduce_window(x, kind=kind, window_dimensions=(1,) * lead + tuple(kernel),
                             window_strides=(1,) * lead + tuple(stride),
                             padding=((0, 0),) * lead + tuple(pads),
                             window_dilation=(1,) * lead + tuple(dilation))


def _avg_divisor(sizes, kernel, stride, padding, out_sizes, count_include_pad):
    """How many elements torch divides each window's sum by: a product of per-axis counts
    (the window clipped to the padded input, or to the input when pads are not counted)."""
    counts = []
    for size, k, s, p, o in zip(sizes, kernel, stride, padding, out_sizes):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, size + p)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, size)
        counts.append(end - start)
    return math.prod(np.ix_(*counts)) if counts else np.ones(())


def _avg_pool(nsp):
    def lowering(out, x, kernel_size, stride=(), padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        dtype = compute_dtype(out.dtype)
        if dtype not in ("float32", "float64"):
            raise Unsupported(f"avg_pool of {out.dtype}")  # integer division: CPU torch
        a = node_of(x, dtype)
        kernel = _per_axis(kernel_size, nsp)
        stride = _per_axis(stride, nsp, kernel)
        padding = _per_axis(padding, nsp)
        total = _pool(a, "sum", nsp, kernel, stride, padding, (1,) * nsp, tuple(out.shape))
        if divisor_override:
            divisor = ir.constant(divisor_override, dtype)
            return ops.div(total, bcast(divisor, total.shape))
        counts = _avg_divisor(a.shape[-nsp:], kernel, stride, padding, out.shape[-nsp:],
                              count_include_pad)
        return ops.div(total, bcast(ir.constant(counts, dtype), total.shape))
    return lowering


lower(aten.avg_pool2d.default)(_avg_pool(2))
lower(aten.avg_pool3d.default)(_avg_pool(3))


def _adaptive_avg_pool(nsp):
    def lowering(out, x, output_size=None):  # the size is read from out (backward: none)
        dtype = compute_dtype(out.dtype)
        a = node_of(x, dtype)
        sizes, out_sizes = a.shape[-nsp:], tuple(out.shape[-nsp:])
        if all(o and n % o == 0 for n, o in zip(sizes, out_sizes)):
            # equal windows tile the input: an ordinary pool of stride = kernel
            kernel = tuple(n // o for n, o in zip(sizes, out_sizes))
            total = _pool(a, "sum", nsp, kernel, kernel, (0,) * nsp, (1,) * nsp,
                          tuple(out.shape))
            return ops.div(total, bcast(ir.constant(math.prod(kernel), dtype), total.shape))
        # uneven windows [floor(i n / o), ceil((i + 1) n / o)): the box mean is separable,
        # one contraction per spatial axis with a 0/1 window-membership matrix
        lead = a.ndim - nsp
        for axis, (n, o) in enumerate(zip(sizes, out_sizes), start=lead):
            i = np.arange(o)[:, None]
            j = np.arange(n)[None, :]
            member = (j >= (i * n) // o) & (j < -((-(i + 1) * n) // o))
            weights = member / member.sum(1, keepdims=True)
            a = ops.dot_general(a, ir.constant(weights, dtype),
                                contracting_dimensions=((axis,), (1,)))
            # the contraction puts the new axis last: move it back into place
            perm = list(range(a.ndim - 1))
            perm.insert(axis, a.ndim - 1)
            a = ops.transpose(a, permutation=tuple(perm))
        return a
    return lowering


lower(aten._adaptive_avg_pool2d.default)(_adaptive_avg_pool(2))
lower(aten._adaptive_avg_pool3d.default)(_adaptive_avg_pool(3))


def _max_pool_with_indices(nsp):
    def lowering(out, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        values_meta = out[0]
        a = node_of(x)
        if not is_float(a):
            raise Unsupported(f"max_pool of {a.dtype}")
        kernel = _per_axis(kernel_size, nsp)
        stride = _per_axis(stride, nsp, kernel)
        padding, dilation = _per_axis(padding, nsp), _per_axis(dilation, nsp)
        out_shape = tuple(values_meta.shape)
        values = _pool(a, "max", nsp, kernel, stride, padding, dilation, out_shape)
        # indices: walk the window's taps in torch's order, taking a tap that beats the
        # running maximum or is NaN (torch's rule), over strided slices of the padded input
        lead = a.ndim - nsp
        sizes, outs = a.shape[lead:], out_shape[lead:]
        pads = _window_padding(sizes, kernel, stride, padding, dilation, outs)
        low = ir.constant(-np.inf, a.dtype)
        padded = ops.pad(a, low, padding_config=((0, 0, 0),) * lead
                         + tuple((lo, hi, 0) for lo, hi in pads))
        steps = []
        for tap in itertools.product(*map(range, kernel)):
            starts = [k * d for k, d in zip(tap, dilation)]
            coords = np.ix_(*[np.arange(o) * s + st - p
                              for o, s, st, p in zip(outs, stride, starts, padding)])
            inside = np.ones(outs, bool)
            flat = np.zeros(outs, np.int64)
            for c, n in zip(coords, sizes):
                inside = inside & (c >= 0) & (c < n)
                flat = flat * n + c
            steps.append((starts, inside, flat))
        first = np.zeros(outs, np.int64)  # torch starts from the first in-bounds position
        for _, inside, flat in reversed(steps):
            first = np.where(inside, flat, first)
        best, where = bcast(low, out_shape), bcast(ir.constant(first, "int64"), out_shape)
        for starts, inside, flat in steps:
            limits = tuple(st + (o - 1) * s + 1 if o else st
                           for st, o, s in zip(starts, outs, stride))
            taps = ops.slice_(padded, start_indices=(0,) * lead + tuple(starts),
                              limit_indices=a.shape[:lead] + limits,
                              strides=(1,) * lead + tuple(stride))
            take = ops.and_(bcast(ir.constant(inside, "bool"), out_shape),
                            ops.or_(ops.gt(taps, best), ops.ne(taps, taps)))
            best = ops.select(take, taps, best)
            where = ops.select(take, bcast(ir.constant(flat, "int64"), out_shape), where)
        return values, where
    return lowering


lower(aten.max_pool2d_with_indices.default)(_max_pool_with_indices(2))
lower(aten.max_pool3d_with_indices.default)(_max_pool_with_indices(3))


def _adaptive_taps(n, o):
    """Input positions read by each of o adaptive windows over n elements, padded to the
    longest window by repeating its last position (harmless for a max and a first argmax)."""
    start = (np.arange(o) * n) // o
    end = -((-(np.arange(o) + 1) * n) // o)
    longest = int((end - start).max()) if o else 1  # torch allows an empty output size
    return np.minimum(start[:, None] + np.arange(longest)[None, :], end[:, None] - 1)


def _adaptive_max_pool(nsp):
    def lowering(out, x, output_size):
        values_meta = out[0]
        a = node_of(x)
        lead = a.ndim - nsp
        sizes, outs = a.shape[lead:], tuple(values_meta.shape[lead:])
        taps = [_adaptive_taps(n, o) for n, o in zip(sizes, outs)]
        lengths = [t.shape[1] for t in taps]
        # windows differ in size, so no reduce_window: gather every window's taps at once,
        # index (o1, L1, ..., on, Ln, nsp) into the input with its spatial axes moved first
        grid = [s for pair in zip(outs, lengths) for s in pair]
        coords = []
        for d, t in enumerate(taps):
            view = [1] * (2 * nsp)
            view[2 * d:2 * d + 2] = t.shape
            coords.append(np.broadcast_to(t.reshape(view), grid))
        index = np.stack(coords, -1).astype(np.int64)
        moved = ops.transpose(a, permutation=tuple(range(lead, a.ndim)) + tuple(range(lead)))
        picked = ops.gather(moved, ir.constant(index, "int64"))
        picked = ops.transpose(picked, permutation=tuple(range(2 * nsp, 2 * nsp + lead))
                               + tuple(range(0, 2 * nsp, 2)) + tuple(range(1, 2 * nsp, 2)))
        count = math.prod(lengths)
        picked = ops.reshape(picked, new_sizes=a.shape[:lead] + outs + (count,))
        last = picked.ndim - 1
        values = ops.reduce_max(picked, axes=(last,))
        best = ops.argmax(picked, axis=last, index_dtype="int64")
        # each tap's flat position in the input's spatial plane, per output window
        strides = [math.prod(sizes[d + 1:]) for d in range(nsp)]
        order = tuple(range(0, 2 * nsp, 2)) + tuple(range(1, 2 * nsp, 2)) + (2 * nsp,)
        flat = np.transpose(index, order).reshape(outs + (count, nsp)) @ np.asarray(strides)
        chosen = ops.eq(ops.iota(dtype="int64", shape=picked.shape, dimension=last),
                        ops.broadcast_in_dim(best, shape=picked.shape,
                                             broadcast_dimensions=tuple(range(last))))
        table = bcast(ir.constant(flat.astype(np.int64), "int64"), picked.shape)
        zero = bcast(ir.constant(0, "int64"), picked.shape)
        return values, ops.reduce_sum(ops.select(chosen, table, zero), axes=(last,))
    return lowering


lower(aten.adaptive_max_pool2d.default)(_adaptive_max_pool(2))
lower(aten.adaptive_max_pool3d.default)(_adaptive_max_pool(3))


# ---------------------------------------------------------------- gradients

def _max_pool_backward(nsp):
    """A max pool's input gradient: each output's cotangent added at the input position its
    index names (indices are flat within one (batch, channel) plane)."""
    def lowering(out, grad_output, x, *args):
        indices = args[-1]
        dtype = compute_dtype(out.dtype)
        g = node_of(grad_output, dtype)
        idx = node_of(indices, "int64")
        lead = len(out.shape) - nsp
        planes, plane = math.prod(out.shape[:lead]), math.prod(out.shape[lead:])
        count = math.prod(g.shape[lead:])
        g = ops.reshape(g, new_sizes=(planes, count))
        base = ops.mul(ops.iota(dtype="int64", shape=(planes, count), dimension=0),
                       bcast(ir.constant(plane, "int64"), (planes, count)))
        flat = ops.add(base, ops.reshape(idx, new_sizes=(planes, count)))
        zeros = bcast(ir.constant(0, dtype), (planes * plane,))
        summed = ops.scatter(zeros, ops.reshape(flat, new_sizes=(planes, count, 1)), g,
                             mode="add")
        return ops.reshape(summed, new_sizes=tuple(out.shape))
    return lowering


lower(aten.max_pool2d_with_indices_backward.default)(_max_pool_backward(2))
lower(aten.max_pool3d_with_indices_backward.default)(_max_pool_backward(3))
lower(aten.adaptive_max_pool2d_backward.default)(_max_pool_backward(2))
lower(aten.adaptive_max_pool3d_backward.default)(_max_pool_backward(3))


def _linear_pool_backward(forward):
    """An average pool is linear in its input: its input gradient is the IR's own VJP of the
    forward lowering (a window sum of the spread cotangent, or the transposed contraction)."""
    def lowering(out, grad_output, x, *args):
        dtype = compute_dtype(out.dtype)
        a = node_of(x, dtype)
        y = forward(grad_output, a, *args)  # grad_output has the forward result's shape
        (dx,) = autodiff.vjp([y], [node_of(grad_output, y.dtype)], [a])
        return dx
    return lowering


lower(aten.avg_pool2d_backward.default)(_linear_pool_backward(_avg_pool(2)))
lower(aten.avg_pool3d_backward.default)(_linear_pool_backward(_avg_pool(3)))
lower(aten._adaptive_avg_pool2d_backward.default)(
    _linear_pool_backward(_adaptive_avg_pool(2)))
lower(aten._adaptive_avg_pool3d_backward.default)(
    _linear_pool_backward(_adaptive_avg_pool(3)))
