"""tf.nn (activations, softmax, moments, convolution, pooling, normalization, dropout) and
stateless randomness, lowered to IR."""
import math

import numpy as np
import tensorflow as tf

from ...core import dtypes as dt
from ...core import ir, ops
from .lowering import Reject, axes_of, broadcast_to, const, operand_nodes, static_ints
from .registry import lower
from .tensor import LazyTensor, wrap


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
    lowering.__name__ = api.__name__
    lower(api, x_name)(lowering)


def _relu(x):
    return ops.max_(x, const(0, x))


def _elu(x):
    return ops.select(ops.gt(x, const(0, x)), x, ops.expm1(x))


def _selu(x):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return ops.mul(const(scale, x), ops.select(ops.gt(x, const(0, x)), x,
                                               ops.mul(const(alpha, x), ops.expm1(x))))


def _leaky_relu(x, alpha):
    slope = broadcast_to(ir.param(alpha, x.dtype), x.shape)
    return ops.select(ops.gt(x, const(0, x)), x, ops.mul(slope, x))


def _gelu(x, approximate):
    half = const(0.5, x)
    if approximate:
        inner = ops.mul(const(math.sqrt(2 / math.pi), x),
                        ops.add(x, ops.mul(const(0.044715, x), ops.mul(x, ops.mul(x, x)))))
        return ops.mul(ops.mul(half, x), ops.add(const(1, x), ops.tanh(inner)))
    return ops.mul(ops.mul(half, x), ops.add(const(1, x), ops.erf(
        ops.mul(x, const(1 / math.sqrt(2), x)))))


_activation(tf.nn.relu, _relu)
_activation(tf.nn.relu6, lambda x: ops.min_(_relu(x), const(6, x)))
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
    spread = _along(x, (axis,))
    shifted = ops.sub(x, spread(ops.reduce_max(x, axes=(axis,))))
    return ops.sub(shifted, spread(ops.log(ops.reduce_sum(ops.exp(shifted), axes=(axis,)))))


def _softmax_node(x, axis):
    spread = _along(x, (axis,))
    e = ops.exp(ops.sub(x, spread(ops.reduce_max(x, axes=(axis,)))))
    return ops.div(e, spread(ops.reduce_sum(e, axes=(axis,))))


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
        kept = [1 if i in axes else d for i, d in enumerate(node.shape)]
        mean, var = ops.reshape(mean, new_sizes=kept), ops.reshape(var, new_sizes=kept)
    return wrap(mean, x), wrap(var, x)


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
    nodes = operand_nodes(*[v for v in (x, mean, variance, offset, scale) if v is not None])
    shape = nodes[0].shape
    xn, m, v = [broadcast_to(n, shape) for n in nodes[:3]]
    inv = ops.rsqrt(ops.add(v, broadcast_to(ir.param(variance_epsilon, xn.dtype), shape)))
    rest = iter(nodes[3:])
    off = broadcast_to(next(rest), shape) if offset is not None else None
    if scale is not None:
        inv = ops.mul(inv, broadcast_to(next(rest), shape))
    out = ops.mul(ops.sub(xn, m), inv)
    if off is not None:
        out = ops.add(out, off)
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


def _spatial(value, n, name_default=1):
    value = static_ints(value) if value is not None else name_default
    if isinstance(value, int):
        return [value] * n
    if len(value) == n + 2:
        return list(value[1:-1])
    if len(value) != n:
        raise Reject()
    return list(value)


def _same_padding(size, k, stride, dilation):
    eff = (k - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


def _conv(value, kernel, strides, padding, dilations, data_format):
    x, w = operand_nodes(value, kernel)
    nsp = x.ndim - 2
    if nsp < 1 or w.ndim != x.ndim or not dt.is_float(x.dtype) or isinstance(padding, list):
        raise Reject()
    strides, dilations = _spatial(strides, nsp), _spatial(dilations, nsp)
    last = _channels_last(data_format)
    if last:
        x = ops.transpose(x, permutation=(0, x.ndim - 1, *range(1, x.ndim - 1)))
    w = ops.transpose(w, permutation=(w.ndim - 1, w.ndim - 2, *range(w.ndim - 2)))
    if x.shape[1] % w.shape[1]:
        raise Reject()
    pads = [(0, 0)] * nsp if padding.upper() == "VALID" else [
        _same_padding(x.shape[2 + i], w.shape[2 + i], strides[i], dilations[i])
        for i in range(nsp)]
    out = ops.conv(x, w, window_strides=strides, padding=pads, rhs_dilation=dilations,
                   feature_group_count=x.shape[1] // w.shape[1])
    if last:
        out = ops.transpose(out, permutation=(0, *range(2, out.ndim), 1))
    return wrap(out, value, kernel)


@lower(tf.nn.convolution, "input", "filters")
def convolution(input, filters, strides=None, padding="VALID", data_format=None,  # noqa: A002
                dilations=None):
    return _conv(input, filters, strides, padding, dilations, data_format)


@lower(tf.nn.conv2d, "input", "filters")
def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None):  # noqa: A002
    return _conv(input, filters, strides, padding, dilations, data_format)


def _pool(value, window, strides, padding, kind, data_format):
    x = _float_input(value)
    nsp = x.ndim - 2
    window, strides = _spatial(window, nsp), _spatial(strides, nsp)
    if not _channels_last(data_format) or kind not in ("MAX", "AVG"):
        raise Reject()
    sp = range(1, 1 + nsp)
    pads = [(0, 0)] * nsp if padding.upper() == "VALID" else [
        _same_padding(x.shape[i], window[j], strides[j], 1) for j, i in enumerate(sp)]
    fill = -math.inf if kind == "MAX" else 0
    config = [(0, 0, 0)] + [(lo, hi, 0) for lo, hi in pads] + [(0, 0, 0)]
    padded = ops.pad(x, ir.constant(fill, x.dtype), padding_config=config)
    outs = [(padded.shape[i] - window[j]) // strides[j] + 1 for j, i in enumerate(sp)]
    if any(o <= 0 for o in outs):
        raise Reject()
    # One strided slice per window offset, combined element-wise: no window primitive needed.
    result = None
    for offset in np.ndindex(*window):
        start = [0] + list(offset) + [0]
        limit = [x.shape[0]] + [o + (n - 1) * s + 1 for o, n, s in zip(offset, outs, strides)] \
            + [x.shape[-1]]
        piece = ops.slice_(padded, start_indices=start, limit_indices=limit,
                           strides=[1] + strides + [1])
        result = piece if result is None else (ops.max_ if kind == "MAX" else ops.add)(
            result, piece)
    if kind == "AVG":  # TF averages over the in-bounds part of each window only
        ones = ops.pad(const(1, x), ir.constant(0, x.dtype), padding_config=config)
        count = None
        for offset in np.ndindex(*window):
            start = [0] + list(offset) + [0]
            limit = [x.shape[0]] + [o + (n - 1) * s + 1 for o, n, s in zip(offset, outs,
                                                                            strides)] + [
                x.shape[-1]]
            piece = ops.slice_(ones, start_indices=start, limit_indices=limit,
                               strides=[1] + strides + [1])
            count = piece if count is None else ops.add(count, piece)
        result = ops.div(result, count)
    return wrap(result, value)


@lower(tf.nn.pool, "input")
def pool(input, window_shape, pooling_type, strides=None, padding="VALID",  # noqa: A002
         data_format=None, dilations=None):
    if dilations is not None and any(d != 1 for d in np.ravel(dilations)):
        raise Reject()
    return _pool(input, window_shape, strides or 1, padding, pooling_type.upper(), data_format)


for _api, _kind in ((tf.nn.max_pool, "MAX"), (tf.nn.max_pool2d, "MAX"), (tf.nn.avg_pool, "AVG"),
                    (tf.nn.avg_pool2d, "AVG")):
    def _make(kind):
        def lowering(input, ksize, strides, padding, data_format=None):  # noqa: A002
            return _pool(input, ksize, strides, padding, kind, data_format)
        return lowering
    _fn = _make(_kind)
    _fn.__name__ = _api.__name__
    lower(_api, "input")(_fn)


# ---------------------------------------------------------------- randomness

def key_from_seed(seed):
    """A uint32[2] Threefry key from a TF seed (a pair of ints, a tensor, or a lazy tensor)."""
    if isinstance(seed, LazyTensor):
        node = seed.node
    else:
        host = np.asarray(seed.numpy() if hasattr(seed, "numpy") else seed).astype(np.int64)
        if host.shape != (2,):
            raise Reject()
        return ir.param(host.astype(np.uint32), "uint32")  # new seeds never recompile
    if node.shape != (2,) or not dt.is_int(node.dtype):
        raise Reject()
    return ops.convert(node, dtype="uint32")


def uniform_node(key, shape, dtype):
    """Uniform [0, 1) floats from 23 random mantissa bits (exact in float32 and wider)."""
    bits = ops.random_bits(key, shape=tuple(shape))
    like = ops.shift_right_logical(bits, ops.broadcast_in_dim(
        ir.constant(9, "uint32"), shape=tuple(shape), broadcast_dimensions=()))
    one_to_two = ops.bitcast_convert(ops.or_(like, ops.broadcast_in_dim(
        ir.constant(0x3F800000, "uint32"), shape=tuple(shape), broadcast_dimensions=())),
        dtype="float32")
    unit = ops.sub(one_to_two, const(1, one_to_two))
    return unit if dtype == "float32" else ops.convert(unit, dtype=dtype)


def normal_node(key, shape, dtype):
    """Standard normals by Box-Muller from two uniform streams."""
    k2 = ops.add(key, ops.broadcast_in_dim(ir.constant(0x9E3779B9, "uint32"), shape=(2,),
                                           broadcast_dimensions=()))
    u1 = uniform_node(key, shape, "float32")
    u2 = uniform_node(k2, shape, "float32")
    radius = ops.sqrt(ops.mul(const(-2, u1), ops.log(ops.sub(const(1, u1), u1))))
    out = ops.mul(radius, ops.cos(ops.mul(const(2 * math.pi, u2), u2)))
    return out if dtype == "float32" else ops.convert(out, dtype=dtype)


@lower(tf.nn.experimental.stateless_dropout, "x")
def stateless_dropout(x, rate, seed, rng_alg=None, noise_shape=None):
    node = _float_input(x)
    if not 0 <= float(rate) < 1:
        raise Reject()
    shape = node.shape if noise_shape is None else tuple(static_ints(noise_shape))
    keep = ops.ge(uniform_node(key_from_seed(seed), shape, node.dtype),
                  broadcast_to(ir.param(rate, node.dtype), shape))
    keep = broadcast_to(keep, node.shape)
    scaled = ops.div(node, broadcast_to(ir.param(1 - float(rate), node.dtype), node.shape))
    return wrap(ops.select(keep, scaled, const(0, node)), x)
