"""tf.bitwise, tf.bitcast, and the smaller tf.math functions that are a line or two of IR
(cumprod, count_nonzero, nextafter, xlogy/xdivy/xlog1py, igamma/igammac, the *_no_nan forms,
rint, add_n/accumulate_n, reduce_euclidean_norm, zero_fraction, tf.nn.l2_loss)."""
import tensorflow as tf

from ...core import dtypes as dt
from ...core import compose, ir, ops
from .lowering import Reject, as_tensor, axes_of, broadcast_all, const, operand_nodes
from .registry import lower
from .tensor import ir_dtype, wrap


def _ints_only(x):
    if not dt.is_int(x.dtype):
        raise Reject()
    return x


def _bitwise_binary(api, fn):
    @lower(api, "x", "y")
    def lowering(x, y):
        a, b = broadcast_all(*operand_nodes(x, y))
        return wrap(fn(_ints_only(a), b), x, y)
    lowering.__name__ = api.__name__


def _clamped_count(y):
    """TF's CPU kernels clamp a shift count into [0, width - 1] (a negative count shifts by
    0, a count past the width by width - 1), which the IR's shifts do not: clamp first."""
    width = 8 * dt.ITEMSIZE[y.dtype]
    return ops.min_(ops.max_(y, const(0, y)), const(width - 1, y))


def _left_shift(x, y):
    return ops.shift_left(x, _clamped_count(y))


def _right_shift(x, y):
    # TF: arithmetic for signed integers, logical for unsigned
    if x.dtype in dt.SIGNED:
        return ops.shift_right_arithmetic(x, _clamped_count(y))
    return ops.shift_right_logical(x, _clamped_count(y))


_bitwise_binary(tf.bitwise.bitwise_and, ops.and_)
_bitwise_binary(tf.bitwise.bitwise_or, ops.or_)
_bitwise_binary(tf.bitwise.bitwise_xor, ops.xor)
_bitwise_binary(tf.bitwise.left_shift, _left_shift)
_bitwise_binary(tf.bitwise.right_shift, _right_shift)


@lower(tf.bitwise.invert, "x")
def invert(x):
    (node,) = operand_nodes(x)
    return wrap(ops.not_(_ints_only(node)), x)


@lower(tf.bitcast, "input")
def bitcast(input, type):  # noqa: A002 - TF's names
    (x,) = operand_nodes(input)
    target = ir_dtype(type)
    if dt.ITEMSIZE[target] != dt.ITEMSIZE[x.dtype] or dt.BOOL in (target, x.dtype) or \
            dt.is_complex(target) or dt.is_complex(x.dtype):
        raise Reject()  # a width change reshapes (TF's rule); the eager op handles it
    if target == x.dtype:
        return wrap(x, input)
    return wrap(ops.bitcast_convert(x, dtype=target), input)


# ---------------------------------------------------------------- small tf.math functions


def _shifted(x, axis, d, fill):
    """x moved d places up `axis`, the first d entries `fill`."""
    n = x.shape[axis]
    config = [(0, 0, 0)] * x.ndim
    config[axis] = (min(d, n), -min(d, n), 0)
    return ops.pad(x, ir.constant(fill, x.dtype), padding_config=config)


def _scan_product(x, axis):
    """Inclusive running product as log2(n) shifted multiplications (Hillis-Steele): only
    pad and mul, whose gradients the IR's autodiff knows, zeros included."""
    d = 1
    while d < x.shape[axis]:
        x = ops.mul(x, _shifted(x, axis, d, 1))
        d *= 2
    return x


@lower(tf.math.cumprod, "x")
def cumprod(x, axis=0, exclusive=False, reverse=False):
    (node,) = operand_nodes(x)
    if node.dtype == dt.BOOL or node.ndim == 0:
        raise Reject()
    (a,) = axes_of(axis, node.ndim, allow_none=False)
    if reverse:
        node = ops.rev(node, dimensions=(a,))
    if exclusive:  # shift by one along the axis, 1 entering first
        node = _shifted(node, a, 1, 1)
    out = _scan_product(node, a)
    return wrap(ops.rev(out, dimensions=(a,)) if reverse else out, x)


@lower(tf.math.count_nonzero, "input")
def count_nonzero(input, axis=None, keepdims=None, dtype=tf.int64):  # noqa: A002
    (x,) = operand_nodes(input)
    axes = axes_of(axis, x.ndim) if x.ndim else ()
    nonzero = ops.ne(x, const(0, x)) if x.dtype != dt.BOOL else x
    out = ops.convert(nonzero, dtype=ir_dtype(dtype))
    out = ops.reduce_sum(out, axes=axes) if axes else out
    if keepdims:
        out = ops.reshape(out, new_sizes=[1 if i in axes else d for i, d in enumerate(x.shape)])
    return wrap(out)


def _float_binary(api, fn, names=("x", "y")):
    @lower(api, *names)
    def lowering(**a):
        x, y = a[names[0]], a[names[1]]
        p, q = broadcast_all(*operand_nodes(x, y))
        if not dt.is_float(p.dtype):
            raise Reject()
        return wrap(fn(p, q), x, y)
    lowering.__name__ = api.__name__


def _zero_where_x_is_zero(fn):
    def apply(x, y):
        zero = const(0, x)
        return ops.select(ops.eq(x, zero), zero, fn(x, y))
    return apply


_float_binary(tf.math.nextafter, ops.nextafter, ("x1", "x2"))
_float_binary(tf.math.xlogy, _zero_where_x_is_zero(lambda x, y: ops.mul(x, ops.log(y))))
_float_binary(tf.math.xlog1py, _zero_where_x_is_zero(lambda x, y: ops.mul(x, ops.log1p(y))))
_float_binary(tf.math.xdivy, _zero_where_x_is_zero(ops.div))
_float_binary(tf.math.igamma, lambda a, x: compose.incomplete_gamma(a, x, False, "tf"),
              ("a", "x"))
_float_binary(tf.math.igammac, lambda a, x: compose.incomplete_gamma(a, x, True, "tf"),
              ("a", "x"))
_float_binary(tf.math.multiply_no_nan, lambda x, y: ops.select(
    ops.eq(y, const(0, y)), const(0, x), ops.mul(x, y)))


@lower(tf.math.reciprocal_no_nan, "x")
def reciprocal_no_nan(x):
    (node,) = operand_nodes(x)
    if not dt.is_float(node.dtype):
        raise Reject()
    zero = ops.eq(node, const(0, node))
    safe = ops.select(zero, const(1, node), node)
    return wrap(ops.select(zero, const(0, node), ops.div(const(1, node), safe)), x)


@lower(tf.math.rint, "x")
def rint(x):
    (node,) = operand_nodes(x)
    if not dt.is_float(node.dtype):
        raise Reject()
    return wrap(ops.round(node), x)  # half to even, as rint


@lower(tf.math.add_n, lists=("inputs",))
def add_n(inputs):
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise Reject()
    nodes = operand_nodes(*inputs)
    if any(n.shape != nodes[0].shape for n in nodes):
        raise Reject()  # TF's add_n does not broadcast
    out = nodes[0]
    for n in nodes[1:]:
        out = ops.add(out, n)
    return wrap(out, *inputs)


@lower(tf.math.accumulate_n, lists=("inputs",))
def accumulate_n(inputs, shape=None, tensor_dtype=None):
    # TF's deprecated alias of add_n, with its own checks: one dtype, one shape (merged with
    # `shape`), tensor_dtype equal to the inputs'; a bad call gets TF's error by replay
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise Reject()
    nodes = operand_nodes(*inputs)
    expected = None if shape is None else tuple(tf.TensorShape(shape).as_list())
    if any(n.dtype != nodes[0].dtype or n.shape != nodes[0].shape for n in nodes) or \
            expected is not None and (None in expected or expected != nodes[0].shape) or \
            tensor_dtype is not None and ir_dtype(tensor_dtype) != nodes[0].dtype:
        raise Reject()
    out = nodes[0]
    for n in nodes[1:]:
        out = ops.add(out, n)
    return wrap(out, *inputs)


@lower(tf.math.reduce_euclidean_norm, "input_tensor")
def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False):
    (x,) = operand_nodes(input_tensor)
    if not dt.is_float(x.dtype):
        raise Reject()
    axes = axes_of(axis, x.ndim) if x.ndim else ()
    out = ops.mul(x, x)
    out = ops.sqrt(ops.reduce_sum(out, axes=axes) if axes else out)
    if keepdims:
        out = ops.reshape(out, new_sizes=[1 if i in axes else d for i, d in enumerate(x.shape)])
    return wrap(out, input_tensor)


@lower(tf.math.zero_fraction, "value")
def zero_fraction(value):
    (x,) = operand_nodes(value)
    zeros = ops.convert(ops.eq(x, const(0, x)) if x.dtype != dt.BOOL else ops.not_(x),
                        dtype="float32")
    total = ops.reduce_sum(zeros, axes=tuple(range(x.ndim))) if x.ndim else zeros
    return wrap(ops.div(total, const(x.size, total)))  # empty: 0 / 0 = NaN, as TF


@lower(tf.nn.l2_loss, "t")
def l2_loss(t):
    (x,) = operand_nodes(t)
    if not dt.is_float(x.dtype):
        raise Reject()
    total = ops.reduce_sum(ops.mul(x, x), axes=tuple(range(x.ndim))) if x.ndim else \
        ops.mul(x, x)
    return wrap(ops.div(total, const(2, total)), t)


def _float_unary(api, fn, name="x"):
    @lower(api, name)
    def lowering(**a):
        (node,) = operand_nodes(a[name])
        if not dt.is_float(node.dtype):
            raise Reject()
        return wrap(fn(node), a[name])
    lowering.__name__ = api.__name__


# erfc as 1 - erf, as the torch frontend lowers it (absolute error ~eps; relative error
# grows where erfc is tiny, x > ~3)
_float_unary(tf.math.erfc, lambda x: ops.sub(const(1, x), ops.erf(x)))
_float_unary(tf.math.erfcinv, lambda x: ops.neg(ops.erf_inv(ops.sub(x, const(1, x)))))
# the normal quantile: sqrt(2) * erfinv(2p - 1)
_float_unary(tf.math.ndtri, lambda p: ops.mul(const(2 ** 0.5, p), ops.erf_inv(
    ops.sub(ops.mul(const(2, p), p), const(1, p)))))


@lower(tf.math.lbeta, "x")
def lbeta(x):
    # log B(x) over the last axis: sum(lgamma(x)) - lgamma(sum(x))
    (node,) = operand_nodes(x)
    if not dt.is_float(node.dtype) or node.ndim == 0 or node.shape[-1] == 0:
        raise Reject()
    last = (node.ndim - 1,)
    return wrap(ops.sub(ops.reduce_sum(ops.lgamma(node), axes=last),
                        ops.lgamma(ops.reduce_sum(node, axes=last))), x)


def _monotone(api, strict):
    @lower(api, "x")
    def lowering(x):
        (node,) = operand_nodes(x)
        if node.dtype == dt.BOOL or dt.is_complex(node.dtype):
            raise Reject()
        flat = ops.reshape(node, new_sizes=(node.size,))
        if node.size < 2:
            return wrap(ops.eq(ir.constant(0, "int32"), ir.constant(0, "int32")))
        head = ops.slice_(flat, start_indices=(0,), limit_indices=(node.size - 1,))
        tail = ops.slice_(flat, start_indices=(1,), limit_indices=(node.size,))
        return wrap(ops.reduce_and((ops.lt if strict else ops.le)(head, tail), axes=(0,)))
    lowering.__name__ = api.__name__


_monotone(tf.math.is_non_decreasing, False)
_monotone(tf.math.is_strictly_increasing, True)


@lower(tf.math.scalar_mul, "x")
def scalar_mul(scalar, x):
    s, node = operand_nodes(scalar, x) if isinstance(scalar, (int, float)) else \
        operand_nodes(x, scalar)[::-1]
    if s.shape != ():
        raise Reject()
    s = ops.broadcast_in_dim(s, shape=node.shape, broadcast_dimensions=())
    return wrap(ops.mul(s, node), x, scalar)


@lower(tf.math.polyval, "x", lists=("coeffs",))
def polyval(coeffs, x):
    # Horner: ((c0 x + c1) x + c2) ...
    if not isinstance(coeffs, (list, tuple)):
        raise Reject()
    if not coeffs:
        return wrap(ops.mul(operand_nodes(x)[0], const(0, operand_nodes(x)[0])), x)
    nodes = operand_nodes(x, *coeffs)
    shape = nodes[0].shape
    if any(n.shape not in ((), shape) for n in nodes[1:]):
        raise Reject()
    xs = nodes[0]
    terms = [n if n.shape == shape else ops.broadcast_in_dim(n, shape=shape,
                                                               broadcast_dimensions=())
             for n in nodes[1:]]
    acc = terms[0]
    for c in terms[1:]:
        acc = ops.add(ops.mul(acc, xs), c)
    return wrap(acc, x, *coeffs)


@lower(tf.math.cumulative_logsumexp, "x")
def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False):
    # log(cumsum(exp(x - max))) + max: the running sum of shifted exponentials
    (node,) = operand_nodes(x)
    if not dt.is_float(node.dtype) or node.ndim == 0 or exclusive:
        raise Reject()
    (a,) = axes_of(axis, node.ndim, allow_none=False)
    peak = ops.reduce_max(node, axes=tuple(range(node.ndim)))
    peak = ops.select(ops.is_finite(peak), peak, ir.constant(0, node.dtype))
    peak = ops.broadcast_in_dim(peak, shape=node.shape, broadcast_dimensions=())
    total = ops.cumsum(ops.exp(ops.sub(node, peak)), axis=a, reverse=bool(reverse))
    return wrap(ops.add(ops.log(total), peak), x)


def keras_gcd(x1, x2):
    """keras.ops.gcd's TF backend with lazy operands: its own steps (result_type, cast,
    integer check, broadcast, abs for signed dtypes), then its tf.while_loop on floor_mod
    unrolled (compose.euclid), which ran eagerly (a sync). keras.ops.lcm calls this too."""
    from keras.src.backend.common import dtypes as keras_dtypes
    x1, x2 = as_tensor(x1), as_tensor(x2)
    dtype = keras_dtypes.result_type(x1.dtype, x2.dtype)
    x1, x2 = tf.cast(x1, dtype), tf.cast(x2, dtype)
    if not x1.dtype.is_integer:
        raise TypeError("Arguments to gcd must be integers.")
    shape = tf.broadcast_static_shape(x1.shape, x2.shape)
    x1, x2 = tf.broadcast_to(x1, shape), tf.broadcast_to(x2, shape)
    if x1.dtype not in (tf.uint8, tf.uint16, tf.uint32, tf.uint64):
        x1, x2 = tf.abs(x1), tf.abs(x2)
    a, b = operand_nodes(x1, x2)
    return wrap(compose.euclid(a, b, compose.floor_mod), x1, x2)
