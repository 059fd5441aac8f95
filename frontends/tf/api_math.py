"""tf.math, the operators, casting and core tf.linalg, lowered to IR."""
import math

import numpy as np
import tensorflow as tf

from ...core import dtypes as dt
from ...core import cephes, compose, host_values, ops
from .lowering import (Reject, axes_of, binary_operands, broadcast_to, const, operand_nodes,
                       scalar, static_ints)
from .registry import lower, lower_varargs, raise_for_values, raise_like_tf, require_dtype
from .tensor import FAST_BINARY, LazyTensor, ir_dtype, wrap

# ---------------------------------------------------------------- element-wise, binary


def _floordiv(x, y):
    if dt.is_float(x.dtype):
        return ops.floor(ops.div(x, y))
    return compose.floor_divide(x, y)  # shared with NumPy and torch: the same graph


def _truediv(x, y):
    if dt.is_int(x.dtype):  # TF: small ints divide in float32, wide ones in float64
        target = "float32" if dt.ITEMSIZE[x.dtype] <= 2 else "float64"
        x, y = ops.convert(x, dtype=target), ops.convert(y, dtype=target)
    elif not (dt.is_float(x.dtype) or dt.is_complex(x.dtype)):
        raise Reject()
    return ops.div(x, y)


def _truncatediv(x, y):
    # C's division: the quotient rounds toward zero (the IR's integer div), for floats too
    if dt.is_int(x.dtype):
        return ops.div(x, y)
    if not dt.is_float(x.dtype):
        raise Reject()
    q = ops.div(x, y)
    return ops.select(ops.lt(q, const(0, q)), ops.ceil(q), ops.floor(q))


def _truncatemod(x, y):
    if not (dt.is_int(x.dtype) or dt.is_float(x.dtype)):
        raise Reject()
    return ops.rem(x, y)  # C's fmod: the remainder takes the dividend's sign


def _squared_difference(x, y):
    d = ops.sub(x, y)
    return ops.mul(d, d)


def _logical(fn):
    def apply(x, y):
        if x.dtype != dt.BOOL:
            raise Reject()
        return fn(x, y)
    return apply


def _divide_no_nan(x, y):
    if not dt.is_float(x.dtype):
        raise Reject()
    zero = const(0, y)
    return ops.select(ops.eq(y, zero), zero, ops.div(x, ops.select(ops.eq(y, zero),
                                                                  const(1, y), y)))


def _pow(x, y):
    return ops.pow_(x, y)


BINARY = {
    tf.math.add: ops.add, tf.__operators__.add: ops.add, tf.math.subtract: ops.sub,
    tf.math.multiply: ops.mul, tf.math.truediv: _truediv, tf.math.divide: _truediv,
    tf.math.floordiv: _floordiv, tf.math.floormod: compose.floor_mod, tf.math.pow: _pow,
    tf.math.maximum: ops.max_, tf.math.minimum: ops.min_, tf.math.atan2: ops.atan2,
    tf.math.squared_difference: _squared_difference, tf.math.divide_no_nan: _divide_no_nan,
    tf.math.equal: ops.eq, tf.math.not_equal: ops.ne, tf.__operators__.eq: ops.eq,
    tf.__operators__.ne: ops.ne, tf.math.less: ops.lt, tf.math.less_equal: ops.le,
    tf.math.greater: ops.gt, tf.math.greater_equal: ops.ge,
    tf.math.logical_and: _logical(ops.and_), tf.math.logical_or: _logical(ops.or_),
    tf.math.logical_xor: _logical(ops.xor),
    tf.truncatediv: _truncatediv, tf.truncatemod: _truncatemod,
}


def _register_binary(api, fn):
    x_name, y_name = list(__import__("inspect").signature(api).parameters)[:2]
    compares = api in (tf.__operators__.eq, tf.__operators__.ne)
    # (read now: hooks.install() later puts a wrapper in tf.__operators__.ne, and a test of
    # `api is tf.__operators__.ne` at the call was always False: `lazy != None` was False)
    not_equal = api is tf.__operators__.ne
    power = api is tf.math.pow

    def binary(x, y):
        if compares and (x is None or y is None):
            return not_equal  # TF's `==` / `!=` answer None so; any other object converts
        nodes = binary_operands(x, y)
        require_dtype(api, nodes[0].dtype, 2)
        if api in _INTEGER_DIVISIONS and dt.is_int(nodes[1].dtype):
            divisor = host_values.known(operand_nodes(y)[0])
            if divisor is not None and not np.all(divisor):
                # TF raises "Integer division by zero" eagerly; we can where y is known
                raise_for_values(api, {x_name: x, y_name: y}, {y_name: divisor})
        if power and dt.is_int(nodes[0].dtype):
            _refuse_negative_int_power(api, {x_name: x, y_name: y})
        if power and isinstance(y, (int, float)) and not isinstance(y, bool):
            # x ** 2 is x * x, as in every framework (the same graph as NumPy's and torch's)
            return wrap(compose.power_scalar(nodes[0], y), x, y)
        return wrap(fn(*nodes), x, y)

    def lowering(**a):
        return binary(a[x_name], a[y_name])
    lowering.__name__ = api.__name__
    lower(api, x_name, y_name, direct=binary)(lowering)
    if fn in (ops.add, ops.sub, ops.mul):  # its float operands' commonest call, built at once
        FAST_BINARY[api] = fn


def _refuse_negative_int_power(api, arguments):
    """TF refuses an integer tensor to a negative integer power ("Integers to negative
    integer powers are not allowed"): its error at the call, where the exponent is known."""
    x_name, y_name = list(arguments)
    y = arguments[y_name]
    if type(y) is int:
        known = np.asarray(y)
    elif isinstance(y, LazyTensor):
        known = host_values.known(operand_nodes(y)[0])
    else:
        return
    if known is not None and np.any(known < 0):
        raise_for_values(api, arguments, {y_name: known})


_INTEGER_DIVISIONS = (tf.math.floordiv, tf.math.floormod, tf.truncatediv, tf.truncatemod)


for _api, _fn in BINARY.items():
    _register_binary(_api, _fn)

# ---------------------------------------------------------------- element-wise, unary


def _float_only(fn, complex_too=False):
    def apply(x):
        if not (dt.is_float(x.dtype) or complex_too and dt.is_complex(x.dtype)):
            raise Reject()
        return fn(x)
    return apply


def _softplus(x):
    return ops.add(ops.log1p(ops.exp(ops.neg(ops.abs_(x)))), ops.max_(x, const(0, x)))


def _is_inf(x):
    return ops.eq(ops.abs_(x), const(math.inf, x))


def _bool_only(fn):
    def apply(x):
        if x.dtype != dt.BOOL:
            raise Reject()
        return fn(x)
    return apply


def _not_bool(fn):
    def apply(x):
        if x.dtype == dt.BOOL:
            raise Reject()
        return fn(x)
    return apply


UNARY = {name: _float_only(ops.OPS[ir_name], ir_name in ops.COMPLEX_UNARY) for name, ir_name in (
    ("exp", "exp"), ("log", "log"), ("log1p", "log1p"), ("expm1", "expm1"), ("sqrt", "sqrt"),
    ("rsqrt", "rsqrt"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("asin", "asin"),
    ("acos", "acos"), ("atan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"), ("tanh", "tanh"),
    ("asinh", "asinh"), ("acosh", "acosh"), ("atanh", "atanh"), ("erf", "erf"),
    ("erfinv", "erf_inv"), ("lgamma", "lgamma"), ("digamma", "digamma"),
    ("sigmoid", "logistic"), ("floor", "floor"), ("ceil", "ceil"))}
UNARY.update({
    "abs": _not_bool(ops.abs_), "negative": _not_bool(ops.neg), "sign": _not_bool(ops.sign),
    "square": _not_bool(lambda x: ops.mul(x, x)),
    "round": lambda x: ops.round(x) if dt.is_float(x.dtype) else x,
    "reciprocal": _float_only(lambda x: ops.div(const(1, x), x), complex_too=True),
    "softplus": _float_only(_softplus),
    "log_sigmoid": _float_only(lambda x: ops.neg(_softplus(ops.neg(x)))),
    "is_nan": _float_only(lambda x: ops.ne(x, x)), "is_inf": _float_only(_is_inf),
    "is_finite": _float_only(ops.is_finite), "logical_not": _bool_only(ops.not_),
})


def _register_unary(api, fn):
    x_name = list(__import__("inspect").signature(api).parameters)[0]

    def unary(x):
        (node,) = operand_nodes(x)
        require_dtype(api, node.dtype, 1)
        return wrap(fn(node), x)

    def lowering(**a):
        return unary(a[x_name])
    lowering.__name__ = api.__name__
    lower(api, x_name, direct=unary)(lowering)


for _name, _fn in UNARY.items():
    _register_unary(getattr(tf.math, _name), _fn)


# tf.math.special's modified Bessel functions (tf.math.bessel_i0 & co. are the same
# functions): the Cephes compositions every frontend shares (core/cephes.py), equal to TF's
# to float rounding. J0/J1/Y0/Y1 stay TF's own: those compositions follow torch's kernels,
# which are 1e-6 relative off the true values in float64 near x = 5 and 8.6 (TF, mpmath agree).
def _tf_k_domain(fn):
    """TF's K_n is +inf for every x <= 0 (torch's, and so the composition's, is NaN below 0)."""
    def apply(x):
        return ops.select(ops.lt(x, const(0, x)), const(math.inf, x), fn(x))
    return apply


for _name, _fn in (("bessel_i0", cephes.i0), ("bessel_i0e", cephes.i0e),
                   ("bessel_i1", cephes.i1), ("bessel_i1e", cephes.i1e),
                   ("bessel_k0", _tf_k_domain(cephes.k0)),
                   ("bessel_k0e", _tf_k_domain(cephes.k0e)),
                   ("bessel_k1", _tf_k_domain(cephes.k1)),
                   ("bessel_k1e", _tf_k_domain(cephes.k1e))):
    _register_unary(getattr(tf.math.special, _name), _float_only(compose.in_float32(_fn)))


@lower(tf.cast, "x")
def cast(x, dtype):
    target = ir_dtype(dtype)
    (node,) = operand_nodes(x)
    if node.dtype == target:
        return x if isinstance(x, LazyTensor) else wrap(node, x)
    return wrap(ops.convert(node, dtype=target), x)


@lower(tf.clip_by_value, "t")
def clip_by_value(t, clip_value_min, clip_value_max):
    x, lo, hi = operand_nodes(t, clip_value_min, clip_value_max)
    lo, hi = broadcast_to(lo, x.shape), broadcast_to(hi, x.shape)
    if _ordered_numbers(clip_value_min, clip_value_max):
        # (the same values either way: NumPy's and torch's order, so the three frontends
        # record one graph for a clip by two numbers -- the equivalence corpus's "clip")
        return wrap(ops.min_(ops.max_(x, lo), hi), t, clip_value_min, clip_value_max)
    # TF's order, maximum(minimum(t, max), min): where min > max the result is min
    return wrap(ops.max_(ops.min_(x, hi), lo), t, clip_value_min, clip_value_max)


def _ordered_numbers(lo, hi):
    """Whether both bounds are Python (or NumPy) numbers with lo <= hi. (A compiled step's
    numbers are symbolic: the comparison is then part of its guard, core/symbolic.py.)"""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi))
    return numbers and lo <= hi


@lower(tf.histogram_fixed_width, "values", "value_range")
def histogram_fixed_width(values, value_range, nbins=100, dtype=tf.int32):
    """TF's kernel: bin = int(min((max(v, lo) - lo) / step, nbins - 1)) with the difference in
    the values' dtype and the division in double; the counts are a scatter-add of ones."""
    v, bounds = operand_nodes(values, value_range)
    n, out = static_ints(nbins), ir_dtype(tf.as_dtype(dtype))
    if not isinstance(n, int) or n < 1 or bounds.shape != (2,) or out not in ("int32", "int64") \
            or v.dtype == dt.BOOL or dt.is_complex(v.dtype) or v.dtype == "float16" or not v.size:
        raise Reject()
    flat = ops.reshape(v, new_sizes=(v.size,))
    lo, hi = (ops.reshape(ops.slice_(bounds, start_indices=(i,), limit_indices=(i + 1,)),
                          new_sizes=()) for i in (0, 1))
    width = ops.convert(ops.sub(hi, lo), dtype="float64")
    step = ops.div(width, compose.const(n, "float64"))
    low = broadcast_to(lo, flat.shape)
    shifted = ops.convert(ops.sub(ops.max_(flat, low), low), dtype="float64")
    ratio = ops.div(shifted, broadcast_to(step, flat.shape))
    ratio = ops.min_(ratio, compose.const(n - 1, "float64", flat.shape))
    index = ops.reshape(ops.convert(ratio, dtype="int32"), new_sizes=(v.size, 1))
    ones = compose.const(1, out, (v.size,))
    return wrap(ops.scatter(compose.const(0, out, (n,)), index, ones, mode="add"), values)


# ---------------------------------------------------------------- reductions


def _reduce(api, combine, kinds="fi", post=None):
    def lowering(input_tensor, axis=None, keepdims=False):
        (x,) = operand_nodes(input_tensor)
        if x.dtype not in _KINDS[kinds]:
            raise Reject()
        axes = axes_of(axis, x.ndim) if x.ndim else ()
        out = combine(x, axes) if axes else x
        if post is not None:
            out = post(out, x, axes)
        if keepdims:
            out = compose.keepdims(out, x.shape, axes)
        return wrap(out, input_tensor)
    lowering.__name__ = api.__name__
    lower(api, "input_tensor")(lowering)


_KINDS = {"fi": dt.FLOATS + dt.SIGNED + dt.UNSIGNED, "f": dt.FLOATS, "b": (dt.BOOL,),
          "fic": dt.FLOATS + dt.SIGNED + dt.UNSIGNED + dt.COMPLEX}


def _mean_sum(x, axes):
    # TF's mean sums an integer narrower than 64 bits in 64 (the mean of uint8 pixels 200
    # and 250 is 225, not a wrapped 97); the quotient truncates, as its division does
    wide = _WIDE_SUMS.get(x.dtype)
    return ops.reduce_sum(x if wide is None else ops.convert(x, dtype=wide), axes=axes)


_WIDE_SUMS = {"int8": "int64", "int16": "int64", "int32": "int64", "uint8": "uint64",
              "uint16": "uint64", "uint32": "uint64"}


def _mean(total, x, axes):
    count = math.prod(x.shape[a] for a in axes)
    out = ops.div(total, const(count, total))
    return out if out.dtype == x.dtype else ops.convert(out, dtype=x.dtype)


def _variance(x, axes):
    mean = ops.reduce_sum(x, axes=axes)
    mean = ops.div(mean, const(math.prod(x.shape[a] for a in axes), mean))
    kept = tuple(i for i in range(x.ndim) if i not in axes)
    centered = ops.sub(x, ops.broadcast_in_dim(mean, shape=x.shape, broadcast_dimensions=kept))
    return _mean(ops.reduce_sum(ops.mul(centered, centered), axes=axes), x, axes)


def _logsumexp(x, axes):
    kept = tuple(i for i in range(x.ndim) if i not in axes)
    # the shift cancels: held constant for differentiation (compose._row_peak says why)
    peak = compose.held_constant(ops.reduce_max(x, axes=axes))
    finite = ops.select(ops.is_finite(peak), peak, const(0, peak))
    shifted = ops.sub(x, ops.broadcast_in_dim(finite, shape=x.shape, broadcast_dimensions=kept))
    return ops.add(ops.log(ops.reduce_sum(ops.exp(shifted), axes=axes)), finite)


_reduce(tf.math.reduce_sum, lambda x, a: ops.reduce_sum(x, axes=a), kinds="fic")
_reduce(tf.math.reduce_prod, lambda x, a: ops.reduce_prod(x, axes=a), kinds="fic")
_reduce(tf.math.reduce_max, lambda x, a: ops.reduce_max(x, axes=a))
_reduce(tf.math.reduce_min, lambda x, a: ops.reduce_min(x, axes=a))
_reduce(tf.math.reduce_mean, _mean_sum, post=_mean, kinds="fic")
_reduce(tf.math.reduce_any, lambda x, a: ops.reduce_or(x, axes=a), kinds="b")
_reduce(tf.math.reduce_all, lambda x, a: ops.reduce_and(x, axes=a), kinds="b")
_reduce(tf.math.reduce_variance, _variance, kinds="f")
_reduce(tf.math.reduce_std, lambda x, a: ops.sqrt(_variance(x, a)), kinds="f")
_reduce(tf.math.reduce_logsumexp, _logsumexp, kinds="f")


def _arg_reduce(api, op):
    @lower(api, "input")
    def lowering(input, axis=None, output_type=tf.int64):  # noqa: A002 - TF's name
        (x,) = operand_nodes(input)
        (a,) = axes_of(0 if axis is None else axis, x.ndim, allow_none=False)
        if x.ndim == 0 or x.dtype == dt.BOOL:
            raise Reject()
        if dt.is_float(x.dtype):  # TF's kernel never picks a NaN (an all-NaN row gives 0)
            skip = const(-math.inf if op is ops.argmax else math.inf, x)
            x = ops.select(ops.ne(x, x), skip, x)
        return wrap(op(x, axis=a, index_dtype=ir_dtype(output_type)))
    lowering.__name__ = api.__name__


_arg_reduce(tf.math.argmax, ops.argmax)
_arg_reduce(tf.math.argmin, ops.argmin)


@lower(tf.math.cumsum, "x")
def cumsum(x, axis=0, exclusive=False, reverse=False):
    (node,) = operand_nodes(x)
    (a,) = axes_of(axis, node.ndim, allow_none=False)
    out = ops.cumsum(node, axis=a, reverse=bool(reverse))
    if exclusive:
        out = ops.sub(out, node)
    return wrap(out, x)


@lower(tf.math.top_k, "input")
def top_k(input, k=1, sorted=True, index_type=tf.int32):  # noqa: A002 - TF's names
    (x,) = operand_nodes(input)
    k = int(k)
    if x.ndim == 0 or not 0 <= k <= x.shape[-1] or x.dtype == dt.BOOL:
        raise Reject()
    values, indices = ops.top_k(x, k=k, index_dtype=ir_dtype(index_type))
    values, indices = wrap(values, input), wrap(indices)
    return TopKV2(values, indices)


@lower(tf.math.approx_max_k, "operand")
def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    # TF's CPU kernel (the only one eager TF has) is an exact top-k over the last axis for
    # half/bfloat16/float32; other axes, dtypes or k get TF's own error by replay
    (x,) = operand_nodes(operand)
    k = int(k)
    if x.ndim == 0 or reduction_dimension != -1 or not aggregate_to_topk \
            or x.dtype not in ("float16", "bfloat16", "float32") or not 0 <= k <= x.shape[-1]:
        raise Reject()
    values, indices = ops.top_k(x, k=k, index_dtype="int32")
    return ApproxTopK(wrap(values, operand), wrap(indices))


class TopKV2(tuple):
    """TF's (values, indices) namedtuple shape: indexable and with named fields."""
    _fields = ("values", "indices")

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


class ApproxTopK(TopKV2):
    """tf.math.approx_max_k's (values, indices)."""


# ---------------------------------------------------------------- linear algebra


def _swap_last(node):
    perm = list(range(node.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return ops.transpose(node, permutation=perm)


@lower(tf.linalg.matmul, "a", "b")
def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, grad_a=False,
           grad_b=False):
    x, y = operand_nodes(a, b)
    if x.ndim < 2 or y.ndim < 2 or output_type is not None or x.dtype == dt.BOOL:
        raise Reject()
    if transpose_a or adjoint_a:
        x = _swap_last(x)
    if transpose_b or adjoint_b:
        y = _swap_last(y)
    if adjoint_a and dt.is_complex(x.dtype):
        x = ops.conj(x)
    if adjoint_b and dt.is_complex(y.dtype):
        y = ops.conj(y)
    if x.shape[-1] != y.shape[-2]:
        raise Reject()
    if y.ndim == 2 and x.ndim > 2:
        # activations (..., k) @ weights (k, n): one matrix product over the flattened rows,
        # as torch's matmul records it -- not the weight broadcast to every batch entry,
        # whose gradient is a batched product summed over the batch (W2: 2x the run time)
        return wrap(compose.tensordot(x, y, (x.ndim - 1,), (0,)), a, b)
    batch = broadcast_shapes_or_reject(x.shape[:-2], y.shape[:-2])
    x = broadcast_to(x, batch + x.shape[-2:])
    y = broadcast_to(y, batch + y.shape[-2:])
    return wrap(compose.batch_matmul(x, y), a, b)


def broadcast_shapes_or_reject(*shapes):
    from .lowering import broadcast_shapes
    return broadcast_shapes(*shapes)


@lower(tf.tensordot, "a", "b")
def tensordot(a, b, axes):
    x, y = operand_nodes(a, b)
    if isinstance(axes, int) or np.ndim(axes) == 0:
        n = int(axes)
        if not 0 <= n <= min(x.ndim, y.ndim):
            raise Reject()
        ax_a, ax_b = tuple(range(x.ndim - n, x.ndim)), tuple(range(n))
    else:
        ax_a, ax_b = ([v] if np.ndim(v) == 0 else list(v) for v in axes)
        ax_a = tuple(int(i) % max(x.ndim, 1) for i in ax_a)
        ax_b = tuple(int(i) % max(y.ndim, 1) for i in ax_b)
    if len(ax_a) != len(ax_b) or any(x.shape[i] != y.shape[j] for i, j in zip(ax_a, ax_b)):
        raise Reject()
    # the shared formulation (transpose, flatten, one matmul): the same graph as torch's
    return wrap(compose.tensordot(x, y, ax_a, ax_b), a, b)


@lower(tf.linalg.matrix_transpose, "a")
def matrix_transpose(a, conjugate=False):
    (x,) = operand_nodes(a)
    if x.ndim < 2:
        raise Reject()
    if conjugate and dt.is_complex(x.dtype):
        return wrap(ops.conj(_swap_last(x)), a)
    return wrap(_swap_last(x), a)


@lower(tf.linalg.cholesky, "input")
def cholesky(input):  # noqa: A002
    (x,) = operand_nodes(input)
    return wrap(ops.cholesky(x), input)


@lower(tf.linalg.triangular_solve, "matrix", "rhs")
def triangular_solve(matrix, rhs, lower=True, adjoint=False):
    a, b = operand_nodes(matrix, rhs)
    return wrap(ops.triangular_solve(a, b, lower=bool(lower), transpose_a=bool(adjoint)),
                matrix, rhs)


@lower(tf.linalg.trace, "x")
def trace(x):
    (node,) = operand_nodes(x)
    if node.ndim < 2 or node.dtype == dt.BOOL:
        raise Reject()
    return wrap(ops.reduce_sum(_diag_part(node), axes=(node.ndim - 2,)), x)


def _diag_part(node):
    n = min(node.shape[-2:])
    rows = ops.iota(dtype="int32", shape=node.shape[-2:], dimension=0)
    cols = ops.iota(dtype="int32", shape=node.shape[-2:], dimension=1)
    mask = ops.broadcast_in_dim(ops.eq(rows, cols), shape=node.shape,
                                broadcast_dimensions=(node.ndim - 2, node.ndim - 1))
    masked = ops.select(mask, node, const(0, node))
    summed = ops.reduce_sum(masked, axes=(node.ndim - 1,))  # diagonal entries, one per row
    start = [0] * summed.ndim
    limit = list(summed.shape)
    limit[-1] = n
    return ops.slice_(summed, start_indices=start, limit_indices=limit)


@lower(tf.linalg.diag_part, "input")
def diag_part(input, k=0, padding_value=0, align="RIGHT_LEFT"):  # noqa: A002
    (x,) = operand_nodes(input)
    if k != 0 or x.ndim < 2 or x.dtype == dt.BOOL:
        raise Reject()
    return wrap(_diag_part(x), input)


__all__ = ["scalar"]


# ---------------------------------------------------------------- einsum

def _sum_unused(node, labels, keep):
    drop = tuple(i for i, c in enumerate(labels) if c not in keep)
    if drop:
        node = ops.reduce_sum(node, axes=drop)
        labels = "".join(c for c in labels if c in keep)
    return node, labels


def _diagonal(node, labels):
    """A label repeated in one operand ("bii"): the diagonal of its axes, as masked sums (the
    same select-and-reduce _diag_part records, so its gradient is the IR's own)."""
    for c in set(labels):
        while labels.count(c) > 1:
            i, j = labels.index(c), labels.index(c, labels.index(c) + 1)
            if node.shape[i] != node.shape[j]:
                raise Reject()  # (einsum replays the call for TF's error)
            on = ops.eq(ops.iota(dtype="int32", shape=node.shape, dimension=i),
                        ops.iota(dtype="int32", shape=node.shape, dimension=j))
            node = ops.reduce_sum(ops.select(on, node, const(0, node)), axes=(j,))
            labels = labels[:j] + labels[j + 1:]
    return node, labels


def _expand_ellipses(subs, out, nodes):
    """Each "..." as fresh labels (characters no equation uses), right-aligned across the
    operands; an operand's size-1 ellipsis axis broadcast to the others' size, as TF does."""
    spans = [n.ndim - len(s) + 3 if "..." in s else 0 for s, n in zip(subs, nodes)]
    rank = max(spans, default=0)
    if min(spans, default=0) < 0 or "." in "".join(subs).replace("...", ""):
        raise Reject()
    fresh = "".join(chr(0x100 + k) for k in range(rank))
    if out is None:  # implicit output: the ellipsis, then the labels used once, sorted
        used = "".join(s.replace("...", "") for s in subs)
        out = "..." + "".join(sorted(c for c in set(used) if used.count(c) == 1))
    elif "..." not in out and any(spans):
        raise Reject()  # (TF's own rule for a dropped ellipsis: run it)
    subs = [s.replace("...", fresh[rank - k:]) for s, k in zip(subs, spans)]
    sizes = {}
    for s, n in zip(subs, nodes):
        for c, d in zip(s, n.shape):
            if c in fresh and d != 1:
                sizes[c] = d
    grown = []
    for s, n in zip(subs, nodes):
        shape = tuple(sizes.get(c, d) if c in fresh else d for c, d in zip(s, n.shape))
        if shape != n.shape:
            if any(d not in (1, sizes[c]) for c, d in zip(s, n.shape) if c in fresh):
                raise Reject()
            n = ops.broadcast_in_dim(n, shape=shape, broadcast_dimensions=tuple(range(n.ndim)))
        grown.append(n)
    return subs, out.replace("...", fresh), grown


@lower_varargs(tf.einsum)
def einsum(equation, *inputs, **kwargs):
    """Any number of operands, folded left to right: each pair one dot_general (the labels
    no later operand and not the output uses, contracted); ellipses as labels of their own;
    a label repeated in one operand its diagonal."""
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    eq = equation.replace(" ", "")
    ins, out = eq.split("->") if "->" in eq else (eq, None)
    subs = ins.split(",")
    nodes = operand_nodes(*inputs)
    if not inputs or len(subs) != len(nodes) or (out is not None and out.count("->")):
        raise Reject()
    subs, out, nodes = _expand_ellipses(subs, out, nodes)
    sizes = {}
    for s, n in zip(subs, nodes):
        for c, d in zip(s, n.shape):
            if sizes.setdefault(c, d) != d:  # TF's own error, at the call, not a fallback
                raise_like_tf(tf.einsum, (equation, *inputs))
    if any(len(s) != n.ndim for s, n in zip(subs, nodes)) or len(set(out)) != len(out):
        raise Reject()
    pairs = [_diagonal(n, s) for n, s in zip(nodes, subs)]
    node, labels = _sum_unused(*pairs[0], set(out).union(*(s for _, s in pairs[1:])))
    for k, (b, lb) in enumerate(pairs[1:], 2):
        keep = set(out).union(*(s for _, s in pairs[k:]))
        node, labels = _sum_unused(node, labels, keep | set(lb))
        b, lb = _sum_unused(b, lb, keep | set(labels))
        batch = [c for c in labels if c in lb and c in keep]
        contract = [c for c in labels if c in lb and c not in keep]
        node = ops.dot_general(node, b, contracting_dimensions=(
            tuple(labels.index(c) for c in contract), tuple(lb.index(c) for c in contract)),
            batch_dimensions=(tuple(labels.index(c) for c in batch),
                              tuple(lb.index(c) for c in batch)))
        labels = "".join(batch) + "".join(c for c in labels if c not in batch + contract) + \
            "".join(c for c in lb if c not in batch + contract)
    if sorted(labels) != sorted(out):
        raise Reject()
    return wrap(ops.transpose(node, permutation=[labels.index(c) for c in out]), *inputs)
