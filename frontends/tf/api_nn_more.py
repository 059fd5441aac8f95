"""tf.nn's rarer window ops, lowered to IR: the depthwise convolution's two gradients and the
atrous transposed convolution (each the IR's gradient of the forward convolution, as TF
defines them), grayscale morphology (dilation2d, erosion2d) and max pooling with its argmax."""
import numpy as np
import tensorflow as tf
from tensorflow.python.ops import gen_nn_ops as _gen_nn_ops  # max_pool_with_argmax's tuple

from ...core import dtypes as dt
from ...core import autodiff, ir, ops
from .api_nn import (_channels_last, _conv_transpose, _depthwise_nodes, _padding_of, _spatial,
                     _to_channels_first, _to_channels_last)
from .lowering import Reject, operand_nodes, static_ints
from .registry import lower
from .tensor import ir_dtype, wrap


def _zeros(shape, dtype):
    return ops.broadcast_in_dim(ir.constant(0, dtype), shape=tuple(shape),
                                broadcast_dimensions=())


def _depthwise_gradient(x, w, g, strides, padding, data_format, dilations, wrt):
    """The gradient of tf.nn.depthwise_conv2d(x, w) for the output gradient g, with respect
    to x or w (whichever is the zeros the caller made in its place)."""
    last = _channels_last(data_format)
    if _spatial(dilations, 2, last) != [1, 1]:
        raise Reject()  # TF's CPU kernels compute these undilated: TF answers
    xs, gs = _to_channels_first(x, last), _to_channels_first(g, last)
    y = _depthwise_nodes(xs, w, _spatial(strides, 2, last), padding,
                         _spatial(dilations, 2, last), last)
    if y.shape != gs.shape:
        raise Reject()  # TF's own shape error, eagerly
    (grad,) = autodiff.vjp([y], [gs], [xs if wrt == "input" else w])
    return _to_channels_last(grad, last) if wrt == "input" else grad


def _depthwise_backprop(wrt, given, sizes, out_backprop, strides, padding, data_format,
                        dilations):
    """TF's two backprop ops: `given` is the operand TF passes (the filter for the input's
    gradient, the input for the filter's), `sizes` the shape of the other."""
    known, g = operand_nodes(given, out_backprop)
    sizes = static_ints(sizes)
    if len(sizes) != 4 or known.ndim != 4 or g.ndim != 4 or not dt.is_float(g.dtype):
        raise Reject()
    zeros = _zeros(sizes, g.dtype)
    x, w = (zeros, known) if wrt == "input" else (known, zeros)
    return wrap(_depthwise_gradient(x, w, g, strides, padding, data_format, dilations, wrt),
                given, out_backprop)


@lower(tf.nn.depthwise_conv2d_backprop_input, "filter", "out_backprop")
def depthwise_conv2d_backprop_input(input_sizes, filter, out_backprop, strides,  # noqa: A002
                                    padding, data_format="NHWC", dilations=None):
    return _depthwise_backprop("input", filter, input_sizes, out_backprop, strides, padding,
                               data_format, dilations)


@lower(tf.nn.depthwise_conv2d_backprop_filter, "input", "out_backprop")
def depthwise_conv2d_backprop_filter(input, filter_sizes, out_backprop, strides,  # noqa: A002
                                     padding, data_format="NHWC", dilations=None):
    return _depthwise_backprop("filter", input, filter_sizes, out_backprop, strides, padding,
                               data_format, dilations)


@lower(tf.nn.atrous_conv2d_transpose, "value", "filters")
def atrous_conv2d_transpose(value, filters, output_shape, rate, padding):
    """The gradient of atrous_conv2d, a convolution dilated by `rate`: conv2d_transpose with
    that dilation (TF builds it from space_to_batch; the numbers are the same)."""
    if not isinstance(rate, (int, np.integer)) or rate < 1 or padding not in ("SAME", "VALID"):
        raise Reject()  # TF's ValueErrors, eagerly
    return _conv_transpose(value, filters, output_shape, 1, padding, "NHWC", int(rate))


# ---------------------------------------------------------------- windows read tap by tap

def _taps(x, window, strides, padding, dilations, fill):
    """For each tap (i, j) of a 2-D window over NHWC `x`: the (N, OH, OW, C) values it reads,
    `fill` where it falls outside the input (TF's kernels skip those taps), the flat
    (row * width + column) input position it reads, and where it is inside the input."""
    pads = _padding_of(padding, x.shape[1:3], window, strides, dilations)
    (top, bottom), (left, right) = pads
    padded = ops.pad(x, ir.constant(fill, x.dtype),
                     padding_config=((0, 0, 0), (top, bottom, 0), (left, right, 0), (0, 0, 0)))
    n, h, w, c = x.shape
    out_h = (h + top + bottom - (window[0] - 1) * dilations[0] - 1) // strides[0] + 1
    out_w = (w + left + right - (window[1] - 1) * dilations[1] - 1) // strides[1] + 1
    if out_h <= 0 or out_w <= 0:
        raise Reject()  # TF's own error for a window larger than the input
    rows = np.arange(out_h) * strides[0] - top
    cols = np.arange(out_w) * strides[1] - left
    for i in range(window[0]):
        for j in range(window[1]):
            r0, c0 = i * dilations[0], j * dilations[1]
            tap = ops.slice_(padded, start_indices=(0, r0, c0, 0),
                             limit_indices=(n, r0 + (out_h - 1) * strides[0] + 1,
                                            c0 + (out_w - 1) * strides[1] + 1, c),
                             strides=(1, strides[0], strides[1], 1))
            at_rows, at_cols = rows + r0, cols + c0
            where = at_rows[:, None] * w + at_cols[None, :]
            inside = ((at_rows >= 0) & (at_rows < h))[:, None] & \
                ((at_cols >= 0) & (at_cols < w))[None, :]
            yield (i, j), tap, where, inside


def _dilation(x, f, strides, rates, padding):
    """max over the window's taps of x + f[tap]: TF's Dilation2D."""
    out = None
    for (i, j), tap, _, _ in _taps(x, f.shape[:2], strides, padding, rates, -np.inf):
        k = ops.slice_(f, start_indices=(i, j, 0), limit_indices=(i + 1, j + 1, f.shape[2]))
        k = ops.broadcast_in_dim(ops.reshape(k, new_sizes=(f.shape[2],)), shape=tap.shape,
                                 broadcast_dimensions=(3,))
        value = ops.add(tap, k)
        out = value if out is None else ops.max_(out, value)
    return out


def _morphology_arguments(input, filters, strides, padding, data_format, dilations):
    x, f = operand_nodes(input, filters)
    if data_format not in (None, "NHWC") or x.ndim != 4 or f.ndim != 3 or \
            f.shape[2] != x.shape[3] or not dt.is_float(x.dtype) or \
            padding not in ("SAME", "VALID"):
        raise Reject()
    strides, rates = _spatial(strides, 2), _spatial(dilations, 2)
    return x, f, strides, rates


@lower(tf.nn.dilation2d, "input", "filters")
def dilation2d(input, filters, strides, padding, data_format="NHWC",  # noqa: A002
               dilations=None):
    x, f, strides, rates = _morphology_arguments(input, filters, strides, padding, data_format,
                                                 dilations)
    return wrap(_dilation(x, f, strides, rates, padding), input, filters)


@lower(tf.nn.erosion2d, "value", "filters")
def erosion2d(value, filters, strides, padding, data_format, dilations):
    """TF's own definition: -dilation2d(-value, the filters reversed in both axes)."""
    x, f, strides, rates = _morphology_arguments(value, filters, strides, padding,
                                                 data_format, dilations)
    f = ops.rev(f, dimensions=(0, 1))
    return wrap(ops.neg(_dilation(ops.neg(x), f, strides, rates, padding)), value, filters)


@lower(tf.nn.max_pool_with_argmax, "input")
def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC",  # noqa: A002
                         output_dtype=tf.int64, include_batch_in_index=False):
    """TF's CPU kernel: each window starts from its first tap inside the input (a NaN
    there stays), a later tap replaces it only when larger; the argmax is the flat NHWC
    position (((b *) H + row) * W + column) * C + channel."""
    (x,) = operand_nodes(input)
    if data_format != "NHWC" or x.ndim != 4 or not dt.is_float(x.dtype) or \
            padding not in ("SAME", "VALID"):
        raise Reject()
    window, strides = _spatial(ksize, 2), _spatial(strides, 2)
    index_dtype = ir_dtype(output_dtype)
    n, h, w, c = x.shape
    lowest = ir.constant(np.finfo(dt.to_numpy(x.dtype)).min, x.dtype)
    best = ops.broadcast_in_dim(lowest, shape=(n, *_out_hw(x, window, strides, padding), c),
                                broadcast_dimensions=())
    arg = None
    def full(value):
        return ops.broadcast_in_dim(ir.constant(value, index_dtype), shape=best.shape,
                                    broadcast_dimensions=())
    channel = ops.iota(dtype=index_dtype, shape=best.shape, dimension=3)
    batch = ops.mul(ops.iota(dtype=index_dtype, shape=best.shape, dimension=0), full(h * w))
    seen = None  # (out_h, out_w): whether a window had a tap inside the input yet
    for _, tap, where, inside in _taps(x, window, strides, padding, (1, 1), -np.inf):
        flat = ops.broadcast_in_dim(ir.constant(where, index_dtype), shape=best.shape,
                                    broadcast_dimensions=(1, 2))
        if include_batch_in_index:
            flat = ops.add(flat, batch)
        flat = ops.add(ops.mul(flat, full(c)), channel)
        first = inside if seen is None else inside & ~seen
        seen = inside if seen is None else seen | inside
        wins = ops.or_(_mask(first, best.shape), ops.and_(_mask(inside, best.shape),
                                                          ops.gt(tap, best)))
        best = ops.select(wins, tap, best)
        arg = flat if arg is None else ops.select(wins, flat, arg)
    return _gen_nn_ops._MaxPoolWithArgmaxOutput(wrap(best, input), wrap(arg))


def _mask(static, shape):
    return ops.broadcast_in_dim(ir.constant(static, dt.BOOL), shape=shape,
                                broadcast_dimensions=(1, 2))


def _out_hw(x, window, strides, padding):
    pads = _padding_of(padding, x.shape[1:3], window, strides, (1, 1))
    return tuple((x.shape[1 + a] + lo + hi - window[a]) // strides[a] + 1
                 for a, (lo, hi) in enumerate(pads))
