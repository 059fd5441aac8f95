"""tf.nn (activations, softmax, moments, convolution, pooling, normalization), lowered to IR.
(Stateless randomness, dropout included: api_random.py.)"""
import math

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import gen_nn_ops as _gen_nn_ops  # the Conv2D op (raw_conv2d)
from tensorflow.python.ops import embedding_ops as _embedding_ops  # TF 1 APIs TF's own
from tensorflow.python.ops import nn_impl as _nn_impl  # code calls (sobel_edges, sampled softmax)
from tensorflow.python.ops import nn_ops as _tf_nn_ops  # tf.nn.pool's argument helper

from ...core import dtypes as dt
from ...core import autodiff, compose, ir, ops
from .lowering import (Reject, as_tensor, axes_of, broadcast_all, broadcast_to, const,
                       gradient_keeps_input, operand_nodes, static_ints)
from .registry import lower, lower_varargs
from .tensor import wrap


def _float_input(value):
    (x,) = operand_nodes(value)
    if not dt.is_float(x.dtype):
        raise Reject()
    return x


def _activation(api, fn, param_names=()):
    x_name = list(__import__("inspect").signature(api).parameters)[0]

    def lowering(**a):
        x = _float_input(a[x_name])
        return wrap(fn(x, *[a[p] for p in param_names]), a[x_name])

    def direct(x):  # tf.nn.relu(x): the public name's wrapper calls it (registry.DIRECT)
        return wrap(fn(_float_input(x)), x)
    lowering.__name__ = api.__name__
    lower(api, x_name, direct=None if param_names else direct)(lowering)


def _relu(x):
    # the same graph as NumPy's np.maximum(x, 0.0) and torch.relu; TF's ReluGrad keeps x
    # connected to a second-order gradient (lowering.GRAD_KEEPS_INPUT)
    return gradient_keeps_input(compose.relu(x), x)


def _elu(x):
    return ops.select(ops.gt(x, const(0, x)), x, ops.expm1(x))


def _selu(x):
    # (x >= 0 takes the linear branch: equal values at 0, and TF's gradient there, `scale`)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return ops.mul(const(scale, x), ops.select(ops.ge(x, const(0, x)), x,
                                               ops.mul(const(alpha, x), ops.expm1(x))))


def _leaky_relu(x, alpha):
    slope = broadcast_to(ir.param(alpha, x.dtype), x.shape)
    return gradient_keeps_input(ops.select(ops.gt(x, const(0, x)), x, ops.mul(slope, x)), x)


def _gelu(x, approximate):
    half = const(0.5, x)
    if approximate:
        inner = ops.mul(const(math.sqrt(2 / math.pi), x),
                        ops.add(x, ops.mul(const(0.044715, x), ops.mul(x, ops.mul(x, x)))))
        return ops.mul(ops.mul(half, x), ops.add(const(1, x), ops.tanh(inner)))
    return ops.mul(ops.mul(half, x), ops.add(const(1, x), ops.erf(
        ops.mul(x, const(1 / math.sqrt(2), x)))))


_activation(tf.nn.relu, _relu)
_activation(tf.nn.relu6, lambda x: gradient_keeps_input(ops.min_(_relu(x), const(6, x)), x))
_activation(tf.nn.elu, _elu)
_activation(tf.nn.selu, _selu)
_activation(tf.nn.leaky_relu, _leaky_relu, ("alpha",))
_activation(tf.nn.gelu, _gelu, ("approximate",))
_activation(tf.nn.silu, lambda x, beta: ops.mul(x, ops.logistic(
    ops.mul(broadcast_to(ir.param(beta, x.dtype), x.shape), x))), ("beta",))
_activation(tf.nn.softsign, lambda x: ops.div(x, ops.add(const(1, x), ops.abs_(x))))


def _along(node, axes):
    kept = tuple(i for i in range(node.ndim) if i not in axes)
    return lambda reduced: ops.broadcast_in_dim(reduced, shape=node.shape,
                                                broadcast_dimensions=kept)


def _log_softmax_node(x, axis):
    return compose.log_softmax(x, axis)  # shared with torch and hand-written NumPy


def _softmax_node(x, axis):
    return compose.softmax(x, axis)


@lower(tf.nn.softmax, "logits")
def softmax(logits, axis=None):
    x = _float_input(logits)
    (a,) = axes_of(-1 if axis is None else axis, x.ndim, allow_none=False)
    return wrap(_softmax_node(x, a), logits)


@lower(tf.nn.log_softmax, "logits")
def log_softmax(logits, axis=None):
    x = _float_input(logits)
    (a,) = axes_of(-1 if axis is None else axis, x.ndim, allow_none=False)
    return wrap(_log_softmax_node(x, a), logits)


@lower(tf.nn.moments, "x")
def moments(x, axes, shift=None, keepdims=False):
    node = _float_input(x)
    axes = axes_of(static_ints(axes), node.ndim, allow_none=False)
    count = const(math.prod(node.shape[a] for a in axes), ops.reduce_sum(node, axes=axes))
    mean = ops.div(ops.reduce_sum(node, axes=axes), count)
    centered = ops.sub(node, _along(node, axes)(mean))
    var = ops.div(ops.reduce_sum(ops.mul(centered, centered), axes=axes), count)
    if keepdims:
        mean, var = (compose.keepdims(v, node.shape, axes) for v in (mean, var))
    return wrap(mean, x), wrap(var, x)


def _axis_list(axes, rank):
    """A moments function's axes as a list of ints within `rank`, or Reject (TF's error)."""
    axes = static_ints(axes)
    axes = axes if isinstance(axes, list) else [axes]
    if any(not -rank <= a < rank for a in axes):
        raise Reject()
    return axes


@lower(tf.nn.weighted_moments, "x", "frequency_weights")
def weighted_moments(x, axes, frequency_weights, keepdims=False):
    """TF's two-pass formula (nn_impl.weighted_moments) written with TF calls on lazy tensors,
    which dispatch back to lazyx: float16 computed in float32, the weights cast to x's dtype,
    div_no_nan by the summed (broadcast) weights."""
    x, weights = as_tensor(x), as_tensor(frequency_weights)
    if x.dtype not in (tf.float16, tf.bfloat16, tf.float32, tf.float64):
        raise Reject()
    axes = _axis_list(axes, x.shape.rank)
    narrow = x.dtype == tf.float16
    if narrow:
        x = tf.cast(x, tf.float32)
    if weights.dtype != x.dtype:
        weights = tf.cast(weights, x.dtype)
    total = tf.reduce_sum(weights * x, axes, keepdims=True)
    sum_of_weights = tf.reduce_sum(weights + tf.zeros_like(x), axes, keepdims=True)
    mean = tf.math.divide_no_nan(total, sum_of_weights)
    distsq = tf.reduce_sum(weights * tf.math.squared_difference(x, mean), axes, keepdims=True)
    variance = tf.math.divide_no_nan(distsq, sum_of_weights)
    if not keepdims:
        mean, variance = tf.squeeze(mean, axis=axes), tf.squeeze(variance, axis=axes)
    if narrow:
        mean, variance = tf.cast(mean, tf.float16), tf.cast(variance, tf.float16)
    return mean, variance


@lower(tf.nn.sufficient_statistics, "x")
def sufficient_statistics(x, axes, shift=None, keepdims=False):
    """(count, the (shifted) sum, the (shifted) sum of squares, the shift), as TF's
    nn_impl.sufficient_statistics: the count a constant of x's dtype from the static shape."""
    x = as_tensor(x)
    axes = list(set(_axis_list(axes, x.shape.rank)))
    counts = tf.constant(math.prod(x.shape[a] for a in axes), dtype=x.dtype)
    if shift is not None:
        shift = as_tensor(shift)
        m_ss, v_ss = tf.subtract(x, shift), tf.math.squared_difference(x, shift)
    else:
        m_ss, v_ss = x, tf.square(x)
    return (counts, tf.reduce_sum(m_ss, axes, keepdims=keepdims),
            tf.reduce_sum(v_ss, axes, keepdims=keepdims), shift)


@lower(tf.nn.bias_add, "value", "bias")
def bias_add(value, bias, data_format=None):
    x, b = operand_nodes(value, bias)
    channel = 1 if data_format and data_format.startswith("NC") else x.ndim - 1
    if b.ndim != 1 or x.ndim < 2 or x.shape[channel] != b.shape[0]:
        raise Reject()
    b = ops.broadcast_in_dim(b, shape=x.shape, broadcast_dimensions=(channel,))
    return wrap(ops.add(x, b), value, bias)


@lower(tf.nn.batch_normalization, "x", "mean", "variance", "offset", "scale")
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon):
    """TF's own formula (nn_impl.batch_normalization): inv = rsqrt(variance + eps) * scale and
    shift = offset - mean * inv at the statistics' shape, then x * inv + shift. Broadcasting
    the statistics to x first (as lazyx did until 2026-11-30) took an rsqrt per element of x
    instead of per channel, and its gradient reduced full-size products back to the channels:
    a Keras CNN's program 7-9 % slower, measured."""
    nodes = operand_nodes(*[v for v in (x, mean, variance, offset, scale) if v is not None])
    xn, m, v = nodes[:3]
    rest = iter(nodes[3:])
    off = next(rest) if offset is not None else None
    inv = ops.add(*broadcast_all(v, ir.param(variance_epsilon, v.dtype)))
    inv = ops.rsqrt(inv)
    if scale is not None:
        inv = ops.mul(*broadcast_all(inv, next(rest)))
    shift = ops.mul(*broadcast_all(m, inv))
    shift = ops.sub(*broadcast_all(off, shift)) if off is not None else ops.neg(shift)
    if inv.dtype != xn.dtype:  # (TF casts both to x's dtype: float16 activations)
        inv, shift = ops.convert(inv, dtype=xn.dtype), ops.convert(shift, dtype=xn.dtype)
    out = ops.add(*broadcast_all(ops.mul(*broadcast_all(xn, inv)), shift))
    return wrap(out, x, mean, variance, offset, scale)


@lower(tf.nn.l2_normalize, "x")
def l2_normalize(x, axis=None, epsilon=1e-12, dim=None):
    node = _float_input(x)
    axes = axes_of(axis, node.ndim)
    sq = ops.reduce_sum(ops.mul(node, node), axes=axes)
    inv = ops.rsqrt(ops.max_(sq, broadcast_to(ir.param(epsilon, sq.dtype), sq.shape)))
    return wrap(ops.mul(node, _along(node, axes)(inv)), x)


# ---------------------------------------------------------------- convolution and pooling

def _channels_last(data_format):
    return data_format is None or not data_format.startswith("NC")


def _spatial(value, n, last=True, name_default=1):
    """Strides, dilations or a window per spatial axis: one int for all, one per spatial axis,
    or one per axis of the input's layout (channels last: N, *spatial, C; else N, C, *spatial)."""
    value = static_ints(value) if value is not None else name_default
    if isinstance(value, int):
        return [value] * n
    if len(value) == n + 2:
        return list(value[1:-1] if last else value[2:])
    if len(value) != n:
        raise Reject()
    return list(value)


def _same_padding(size, k, stride, dilation):
    eff = (k - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


def _padding_of(padding, sizes, window, strides, dilations, last=None):
    """(low, high) per spatial axis. `last`: whether the API takes explicit padding (a pair
    per axis of the input's layout, none on batch or channels: tf.nn.conv2d), and that
    layout is channels last."""
    if last is not None and not isinstance(padding, str):
        return _explicit_padding(padding, len(sizes), last)
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise Reject()  # TF's own error
    if padding.upper() == "VALID":
        return [(0, 0)] * len(sizes)
    return [_same_padding(n, k, s, d) for n, k, s, d in zip(sizes, window, strides, dilations)]


def _explicit_padding(padding, n, last):
    pads = static_ints(padding)
    if np.shape(padding) != (n + 2, 2) or any(p < 0 for p in pads):
        raise Reject()  # TF's ValueError or InvalidArgumentError
    pairs = [tuple(pads[i:i + 2]) for i in range(0, len(pads), 2)]
    outer = (pairs[0], pairs[-1]) if last else pairs[:2]
    if any(p != (0, 0) for p in outer):
        raise Reject()  # TF refuses padding the batch or channel axis
    return pairs[1:-1] if last else pairs[2:]


def _to_channels_first(x, last):
    return ops.transpose(x, permutation=(0, x.ndim - 1, *range(1, x.ndim - 1))) if last else x


def _to_channels_last(x, last):
    return ops.transpose(x, permutation=(0, *range(2, x.ndim), 1)) if last else x


def _conv(value, kernel, strides, padding, dilations, data_format, explicit=False):
    x, w = operand_nodes(value, kernel)
    nsp = x.ndim - 2
    if nsp < 1 or w.ndim != x.ndim or not dt.is_float(x.dtype):
        raise Reject()
    last = _channels_last(data_format)
    strides, dilations = _spatial(strides, nsp, last), _spatial(dilations, nsp, last)
    x = _to_channels_first(x, last)
    w = ops.transpose(w, permutation=(w.ndim - 1, w.ndim - 2, *range(w.ndim - 2)))
    if x.shape[1] % w.shape[1]:
        raise Reject()
    pads = _padding_of(padding, x.shape[2:], w.shape[2:], strides, dilations,
                       last if explicit else None)
    out = ops.conv(x, w, window_strides=strides, padding=pads, rhs_dilation=dilations,
                   feature_group_count=x.shape[1] // w.shape[1])
    return wrap(_to_channels_last(out, last), value, kernel)


@lower(tf.nn.convolution, "input", "filters")
def convolution(input, filters, strides=None, padding="VALID", data_format=None,  # noqa: A002
                dilations=None):
    return _conv(input, filters, strides, padding, dilations, data_format)


@lower(tf.compat.v1.nn.convolution, "input")
def convolution_v1(input, filter=None, padding=None, strides=None,  # noqa: A002
                   dilation_rate=None, data_format=None, filters=None, dilations=None):
    """TF1's signature (filter or filters, dilation_rate or dilations), which TF's own Python
    still calls (atrous_conv2d at rate 1)."""
    if (filter is None) == (filters is None) or (dilation_rate is not None and
                                                 dilations is not None):
        raise Reject()  # TF's own error for both or neither
    return _conv(input, filter if filters is None else filters, strides, padding,
                 dilation_rate if dilations is None else dilations, data_format)


@lower(tf.nn.conv1d, "input", "filters")
def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None):  # noqa: A002
    return _conv(input, filters, stride, padding, dilations, data_format)


@lower(tf.nn.conv2d, "input", "filters")
def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None):  # noqa: A002
    return _conv(input, filters, strides, padding, dilations, data_format, explicit=True)


@lower_varargs(_gen_nn_ops.conv2d)
def raw_conv2d(input, filter, strides, padding, use_cudnn_on_gpu=True,  # noqa: A002
               explicit_paddings=(), data_format="NHWC", dilations=(1, 1, 1, 1)):
    """The Conv2D op itself, which TF's own Python reaches past tf.nn.conv2d (atrous_conv2d,
    tf.nn.with_space_to_batch): the same lowering; its EXPLICIT padding is TF's own, eagerly."""
    return _conv(input, filter, strides, padding, dilations, data_format)


@lower(tf.nn.conv3d, "input", "filters")
def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None):  # noqa: A002
    return _conv(input, filters, strides, padding, dilations, data_format)


def _depthwise_nodes(x, kernel, strides, padding, dilations, last=None):
    """x (N, C, *S), TF's depthwise kernel (*K, C, M): a conv with C groups, output channel
    c * M + m, as TF orders them."""
    nsp = x.ndim - 2
    *window, channels, mult = kernel.shape
    if channels != x.shape[1]:
        raise Reject()
    w = ops.reshape(kernel, new_sizes=(*window, channels * mult))
    w = ops.transpose(w, permutation=(nsp, *range(nsp)))
    w = ops.reshape(w, new_sizes=(channels * mult, 1, *window))
    pads = _padding_of(padding, x.shape[2:], window, strides, dilations, last)
    return ops.conv(x, w, window_strides=strides, padding=pads, rhs_dilation=dilations,
                    feature_group_count=channels)


@lower(tf.nn.depthwise_conv2d, "input", "filter")
def depthwise_conv2d(input, filter, strides, padding, data_format=None,  # noqa: A002
                     dilations=None):
    x, w = operand_nodes(input, filter)
    if x.ndim != 4 or w.ndim != 4 or not dt.is_float(x.dtype):
        raise Reject()
    last = _channels_last(data_format)
    xs = _to_channels_first(x, last)
    out = _depthwise_nodes(xs, w, _spatial(strides, 2, last), padding,
                           _spatial(dilations, 2, last), last)
    return wrap(_to_channels_last(out, last), input, filter)


@lower(_nn_impl.depthwise_conv2d, "input", "filter")
def depthwise_conv2d_v1(input, filter, strides, padding, rate=None,  # noqa: A002
                        data_format=None, dilations=None):
    """tf.compat.v1.nn.depthwise_conv2d, which TF's own tf.image.sobel_edges calls."""
    if rate is not None and dilations is not None:
        raise Reject()  # TF's ValueError: both names of one argument
    return depthwise_conv2d(input, filter, strides, padding, data_format,
                            rate if dilations is None else dilations)


@lower(tf.nn.separable_conv2d, "input", "depthwise_filter", "pointwise_filter")
def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     data_format=None, dilations=None):
    x, dw, pw = operand_nodes(input, depthwise_filter, pointwise_filter)
    if x.ndim != 4 or pw.ndim != 4 or pw.shape[:2] != (1, 1) or not dt.is_float(x.dtype):
        raise Reject()
    last = _channels_last(data_format)
    h = _depthwise_nodes(_to_channels_first(x, last), dw, _spatial(strides, 2, last), padding,
                         _spatial(dilations, 2, last))
    if pw.shape[2] != h.shape[1]:
        raise Reject()
    point = ops.transpose(pw, permutation=(3, 2, 0, 1))  # (1, 1, I, O) -> (O, I, 1, 1)
    out = ops.conv(h, point, window_strides=(1, 1), padding=((0, 0), (0, 0)))
    return wrap(_to_channels_last(out, last), input, depthwise_filter, pointwise_filter)


def _conv_transpose(value, kernel, output_shape, strides, padding, data_format, dilations):
    """The gradient of the forward convolution (output_shape -> input's shape) with respect to
    its input, applied to `value`: what TF defines conv*_transpose as, taken from the IR's
    conv gradient."""
    x, w = operand_nodes(value, kernel)
    nsp = x.ndim - 2
    out_shape = static_ints(output_shape)
    if nsp < 1 or w.ndim != x.ndim or not dt.is_float(x.dtype) or len(out_shape) != x.ndim:
        raise Reject()
    last = _channels_last(data_format)
    xs = _to_channels_first(x, last)
    z_shape = (out_shape[0], out_shape[-1], *out_shape[1:-1]) if last else tuple(out_shape)
    strides, dilations = _spatial(strides, nsp, last), _spatial(dilations, nsp, last)
    forward_kernel = ops.transpose(w, permutation=(nsp + 1, nsp, *range(nsp)))  # (*K, O, I)
    if forward_kernel.shape[1] != z_shape[1]:
        raise Reject()
    z = ops.broadcast_in_dim(ir.constant(0, x.dtype), shape=z_shape, broadcast_dimensions=())
    pads = _padding_of(padding, z_shape[2:], w.shape[:nsp], strides, dilations)
    y = ops.conv(z, forward_kernel, window_strides=strides, padding=pads,
                 rhs_dilation=dilations)
    if y.shape != xs.shape:
        raise Reject()  # TF's own shape error, eagerly
    (dz,) = autodiff.vjp([y], [xs], [z])
    return wrap(_to_channels_last(dz, last), value, kernel)


for _api, _format in ((tf.nn.conv_transpose, None), (tf.nn.conv1d_transpose, "NWC"),
                      (tf.nn.conv2d_transpose, "NHWC"), (tf.nn.conv3d_transpose, "NDHWC")):
    def _make(default_format):
        def lowering(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format=default_format, dilations=None):
            return _conv_transpose(input, filters, output_shape, strides, padding,
                                   data_format, dilations)
        return lowering
    _fn = _make(_format)
    _fn.__name__ = _api.__name__
    lower(_api, "input", "filters")(_fn)


def _pool(value, window, strides, padding, kind, data_format, dilations=None):
    """Max and average pooling on the reduce_window primitive (the torch frontend's pooling
    uses it too). TF's average counts only the in-bounds taps of a SAME-padded window."""
    x = _float_input(value)
    nsp = x.ndim - 2
    if nsp < 1 or not _channels_last(data_format) or kind not in ("MAX", "AVG"):
        raise Reject()  # channels-first pooling: TF's CPU kernels refuse it, eagerly
    window, strides = _spatial(window, nsp), _spatial(strides, nsp)
    dilations = _spatial(dilations, nsp) if dilations is not None else [1] * nsp
    pads = _padding_of(padding, x.shape[1:-1], window, strides, dilations)
    spans = [(k - 1) * d + 1 for k, d in zip(window, dilations)]
    if any(x.shape[1 + j] + lo + hi < spans[j] for j, (lo, hi) in enumerate(pads)):
        if dilations == [1] * nsp:
            raise Reject()  # a window larger than the input: TF's kernels refuse, eagerly
        # TF's dilated pooling (through space_to_batch) gives an empty result instead
        shape = [0 if x.shape[1 + j] + lo + hi < spans[j] else
                 (x.shape[1 + j] + lo + hi - spans[j]) // strides[j] + 1
                 for j, (lo, hi) in enumerate(pads)]
        return wrap(ops.broadcast_in_dim(ir.constant(0, x.dtype), shape=(
            x.shape[0], *shape, x.shape[-1]), broadcast_dimensions=()), value)

    def reduce(node, how):
        return ops.reduce_window(node, kind=how, window_dimensions=(1, *window, 1),
                                 window_strides=(1, *strides, 1),
                                 padding=((0, 0), *pads, (0, 0)),
                                 window_dilation=(1, *dilations, 1))
    if kind == "MAX":
        return wrap(reduce(x, "max"), value)
    count = reduce(const(1, x), "sum")
    return wrap(ops.div(reduce(x, "sum"), count), value)


@lower(tf.nn.pool, "input")
def pool(input, window_shape, pooling_type, strides=None, padding="VALID",  # noqa: A002
         data_format=None, dilations=None):
    window_shape = list(static_ints(window_shape))
    _check_pool_arguments(window_shape, strides, padding, dilations)
    return _pool(input, window_shape, strides or 1, padding, pooling_type.upper(), data_format,
                 dilations)


def _check_pool_arguments(window, strides, padding, dilations):
    """tf.nn.pool's own argument checks (its Python body, which the lowering replaces), with
    TF's helper for strides/dilations (it refuses both > 1) and TF's wording."""
    nsp = len(window)
    if not 1 <= nsp <= 3:
        raise ValueError("`len(window_shape)` must be 1, 2, or 3. Received: "
                         f"window_shape={window} of length {nsp}")
    strides, dilations = _tf_nn_ops._get_strides_and_dilation_rate(nsp, strides, dilations)
    if padding == "SAME" and np.any(dilations > 1):
        raise ValueError("pooling with 'SAME' padding is not implemented for `dilation_rate` > "
                         f"1. Received: padding={padding} and dilation_rate={dilations}")
    if np.any(strides > np.array(window)):
        raise ValueError("`strides` > `window_shape` not supported due to inconsistency "
                         f"between CPU and GPU implementations. Received: strides={strides} "
                         f"and window_shape={window}")


for _api, _kind in ((tf.nn.max_pool, "MAX"), (tf.nn.max_pool2d, "MAX"), (tf.nn.avg_pool, "AVG"),
                    (tf.nn.avg_pool2d, "AVG"), (tf.nn.max_pool1d, "MAX"),
                    (tf.nn.max_pool3d, "MAX"), (tf.nn.avg_pool1d, "AVG"),
                    (tf.nn.avg_pool3d, "AVG")):
    def _make(kind):
        def lowering(input, ksize, strides, padding, data_format=None):  # noqa: A002
            return _pool(input, ksize, strides, padding, kind, data_format)
        return lowering
    _fn = _make(_kind)
    _fn.__name__ = _api.__name__
    lower(_api, "input")(_fn)


# ---------------------------------------------------------------- smaller tf.nn functions


@lower(tf.nn.crelu, "features")
def crelu(features, axis=-1):
    x = _float_input(features)
    (a,) = axes_of(axis, x.ndim, allow_none=False)
    return wrap(ops.concatenate(_relu(x), _relu(ops.neg(x)), dimension=a), features)


@lower(tf.nn.log_poisson_loss, "targets", "log_input")
def log_poisson_loss(targets, log_input, compute_full_loss=False):
    t, c = operand_nodes(targets, log_input)
    if not dt.is_float(c.dtype) or t.shape != c.shape:
        raise Reject()
    loss = ops.sub(ops.exp(c), ops.mul(c, t))
    if compute_full_loss:
        # Stirling's term t log t - t + log(2 pi t) / 2, for targets above 1 only (TF's rule)
        safe = ops.select(ops.gt(t, const(1, t)), t, const(1, t))
        stirling = ops.add(ops.sub(ops.mul(safe, ops.log(safe)), safe),
                           ops.mul(const(0.5, t), ops.log(ops.mul(const(2 * math.pi, t), safe))))
        loss = ops.add(loss, ops.select(ops.gt(t, const(1, t)), stirling, const(0, t)))
    return wrap(loss, targets, log_input)


@lower(tf.nn.weighted_cross_entropy_with_logits, "labels", "logits")
def weighted_cross_entropy_with_logits(labels, logits, pos_weight):
    z, x = operand_nodes(labels, logits)
    if not dt.is_float(x.dtype) or z.shape != x.shape:
        raise Reject()
    (w,) = operand_nodes(pos_weight) if not isinstance(pos_weight, (int, float)) else \
        operand_nodes(logits, pos_weight)[1:]
    w = broadcast_to(w, x.shape)
    # TF's stable form: (1 - z) x + (1 + (w - 1) z) (log1p(exp(-|x|)) + max(-x, 0))
    log_weight = ops.add(const(1, x), ops.mul(ops.sub(w, const(1, x)), z))
    tail = ops.add(ops.log1p(ops.exp(ops.neg(ops.abs_(x)))), _relu(ops.neg(x)))
    return wrap(ops.add(ops.mul(ops.sub(const(1, x), z), x), ops.mul(log_weight, tail)),
                labels, logits, pos_weight)


@lower(tf.nn.embedding_lookup, "params", "ids")
def embedding_lookup(params, ids, max_norm=None):
    from .api_array import gather
    if max_norm is not None or isinstance(params, (list, tuple)):
        raise Reject()
    return gather(params, ids)


@lower(_embedding_ops.embedding_lookup, "ids", lists=("params",))
def embedding_lookup_v1(params, ids, partition_strategy="mod", validate_indices=True,
                        max_norm=None):
    """tf.compat.v1.nn.embedding_lookup, as tf.nn.sampled_softmax_loss calls it: one table
    (or a list of one), which has no partitions to choose among, so it is the v2 lookup."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise Reject()
        params = params[0]
    return embedding_lookup(params, ids, max_norm)


@lower(tf.nn.local_response_normalization, "input")
def local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5):  # noqa: A002
    x = _float_input(input)
    r = int(depth_radius)
    if x.ndim != 4 or r < 0:
        raise Reject()
    # the sum of squares over channels [c - r, c + r]: shifted slices of the zero-padded squares
    squares = ops.mul(x, x)
    c = x.shape[-1]
    padded = ops.pad(squares, ir.constant(0, x.dtype),
                     padding_config=[(0, 0, 0)] * 3 + [(r, r, 0)])
    total = None
    for shift in range(2 * r + 1):
        part = ops.slice_(padded, start_indices=(0, 0, 0, shift),
                          limit_indices=x.shape[:3] + (shift + c,))
        total = part if total is None else ops.add(total, part)
    scale = ops.add(const(float(bias), x), ops.mul(const(float(alpha), x), total))
    return wrap(ops.div(x, ops.pow_(scale, const(float(beta), x))), input)
