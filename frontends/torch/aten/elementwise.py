"""Element-wise aten ops. torch's meta kernel already chose the result dtype (type promotion,
int -> float for true division and transcendental functions); lowerings compute in it (half
types in float32, as torch's CPU kernels do) and broadcast explicitly."""
import math

import torch

from ....core import dtypes as dt
from ....core import capture, compose, ops
from ..tensor import FAST_ROUTES, LOWERINGS
from .table import (aten, bcast, compute_dtype, const, fill_value, is_complex, is_float,
                    lower, node_of, operands, scalar)

# ---------------------------------------------------------------- unary

_UNARY = {
    "exp": ops.exp, "exp2": ops.exp2, "expm1": ops.expm1, "log": ops.log, "log1p": ops.log1p,
    "sqrt": ops.sqrt, "rsqrt": ops.rsqrt, "sin": ops.sin, "cos": ops.cos, "tan": ops.tan,
    "asin": ops.asin, "acos": ops.acos, "atan": ops.atan, "sinh": ops.sinh, "cosh": ops.cosh,
    "tanh": ops.tanh, "asinh": ops.asinh, "acosh": ops.acosh, "atanh": ops.atanh,
    "erf": ops.erf, "erfinv": ops.erf_inv, "lgamma": ops.lgamma,  # digamma: special.py
    "sigmoid": ops.logistic, "neg": ops.neg,
}


def _unary(fn):
    def lowering(out, x):
        (a,) = operands(out, x)
        return fn(a)
    return lowering


for _name, _fn in _UNARY.items():
    _op = getattr(aten, _name).default
    lower(_op)(_unary(_fn))
    # a float operand is its own compute dtype: the lowering is _fn(node) (_native_dispatch.c)
    FAST_ROUTES[_op] = (1, _fn, LOWERINGS[_op])


lower(aten.log2.default)(_unary(lambda a: compose.log_base(a, 2)))
lower(aten.log10.default)(_unary(lambda a: compose.log_base(a, 10)))


def torch_sign(a):
    """torch's sign (and sgn of a real tensor): the IR's, but 0 at NaN (NumPy's and TF's, the
    IR's, is NaN)."""
    if not is_float(a):
        return ops.sign(a)
    return ops.select(ops.ne(a, a), const(0, a.dtype, a.shape), ops.sign(a))


@lower(aten.sign.default)
def _sign(out, x):
    (a,) = operands(out, x)
    return torch_sign(a)


@lower(aten.erfc.default)
def _erfc(out, x):
    (a,) = operands(out, x)
    return ops.sub(const(1, a.dtype, a.shape), ops.erf(a))


@lower(aten.reciprocal.default)
def _reciprocal(out, x):
    (a,) = operands(out, x)
    return ops.div(const(1, a.dtype, a.shape), a)


@lower(aten.relu.default)
def _relu(out, x):
    (a,) = operands(out, x)
    return compose.relu(a)

# (no C route: compose.relu is Python, two nodes a call; relu's recipe stamps the same two
# nodes in C, a microsecond sooner per call)


def _rounding(fn):
    def lowering(out, x):
        (a,) = operands(out, x)
        return fn(a) if is_float(a) else a  # integers are already whole
    return lowering


def _trunc(a):
    return ops.mul(ops.sign(a), ops.floor(ops.abs_(a)))


lower(aten.floor.default)(_rounding(ops.floor))
lower(aten.ceil.default)(_rounding(ops.ceil))
lower(aten.round.default)(_rounding(ops.round))
lower(aten.trunc.default)(_rounding(_trunc))


@lower(aten.round.decimals)
def _round_decimals(out, x, *, decimals=0):
    (a,) = operands(out, x)
    scale = const(10.0 ** decimals, a.dtype, a.shape)
    return ops.div(ops.round(ops.mul(a, scale)), scale)


@lower(aten.isnan.default)
def _isnan(out, x):
    a = node_of(x)
    return ops.ne(a, a)


@lower(aten.abs.default)
def _abs(out, x):
    a = node_of(x)
    if not is_complex(a):  # a complex input keeps its dtype: |z| is real, not |Re z|
        (a,) = operands(out, x)
    return ops.abs_(a)


def _on_parts(test, combine, a):
    """A float test of a complex number: of both its parts."""
    if is_complex(a):
        return combine(test(ops.real(a)), test(ops.imag(a)))
    return test(a)


def _infinite(a):
    return ops.eq(ops.abs_(a), const(math.inf, a.dtype, a.shape))


@lower(aten.isinf.default)
def _isinf(out, x):
    a = node_of(x)
    if not (is_float(a) or is_complex(a)):
        return const(False, "bool", a.shape)
    return _on_parts(_infinite, ops.or_, a)


@lower(aten.isfinite.default)
def _isfinite(out, x):
    a = node_of(x)
    if not (is_float(a) or is_complex(a)):
        return const(True, "bool", a.shape)
    return _on_parts(ops.is_finite, ops.and_, a)


@lower(aten.logical_not.default)
def _logical_not(out, x):
    return ops.not_(node_of(x, "bool"))


@lower(aten.bitwise_not.default)
def _bitwise_not(out, x):
    (a,) = operands(out, x)
    return ops.not_(a)


# ---------------------------------------------------------------- binary arithmetic

def _scaled(b, alpha, dtype):
    if alpha is None:
        return b
    if alpha == 1 and not isinstance(alpha, bool):
        capture.decided_by(alpha)  # (a compiled step's number of value 1: guarded by it)
        return b
    return ops.mul(b, scalar(alpha, dtype, b.shape))


@lower(aten.add.Tensor, aten.add.Scalar)
def _add(out, x, y, *, alpha=1):
    a, b = operands(out, x, y)
    if a.dtype == "bool":
        return ops.or_(a, b)
    return ops.add(a, _scaled(b, alpha, a.dtype))


# float operands of one shape, or a Python number, no alpha: ops.add(a, b) (_native_dispatch.c)
FAST_ROUTES[aten.add.Tensor] = (2, ops.add, _add)


def _is_bool(x):
    return isinstance(x, bool) or isinstance(x, torch.Tensor) and x.dtype == torch.bool


def _sub_check(x, y):
    """torch's CPU kernel (not its meta kernel) refuses bool subtraction; so do we."""
    x_bool, y_bool = _is_bool(x), _is_bool(y)  # (per op: each test reads a tensor's dtype)
    if x_bool and y_bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if x_bool or y_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")


@lower(aten.sub.Tensor, aten.sub.Scalar)
def _sub(out, x, y, *, alpha=1):
    _sub_check(x, y)
    a, b = operands(out, x, y)
    return ops.sub(a, _scaled(b, alpha, a.dtype))


# float operands of one shape, or a Python number, no alpha: ops.sub(a, b) (_native_dispatch.c)
FAST_ROUTES[aten.sub.Tensor] = (2, ops.sub, _sub)


@lower(aten.rsub.Tensor, aten.rsub.Scalar)
def _rsub(out, x, y, *, alpha=1):
    _sub_check(x, y)
    a, b = operands(out, x, y)
    return ops.sub(b, _scaled(a, alpha, a.dtype))


@lower(aten.mul.Tensor, aten.mul.Scalar)
def _mul(out, x, y):
    a, b = operands(out, x, y)
    return ops.and_(a, b) if a.dtype == "bool" else ops.mul(a, b)


# float operands of one shape, or a Python number, no alpha: ops.mul(a, b) (_native_dispatch.c)
FAST_ROUTES[aten.mul.Tensor] = (2, ops.mul, _mul)


def _floor_div(a, b):
    """torch's floor division: integers correct the truncating quotient; floats follow
    torch's div_floor (fmod-based, so that a // b is consistent with a % b)."""
    if not is_float(a):
        return compose.floor_divide(a, b)  # shared with NumPy and TF: the same graph
    zero = const(0, a.dtype, a.shape)
    mod = ops.rem(a, b)
    div = ops.div(ops.sub(a, mod), b)
    fix = ops.and_(ops.ne(mod, zero), ops.ne(ops.lt(b, zero), ops.lt(mod, zero)))
    div = ops.sub(div, ops.convert(fix, dtype=a.dtype))
    floor = ops.floor(div)
    half = const(0.5, a.dtype, a.shape)
    floor = ops.add(floor, ops.convert(ops.gt(ops.sub(div, floor), half), dtype=a.dtype))
    plain = ops.div(a, b)
    # div == 0 keeps the sign of the true quotient; b == 0 gives the IEEE quotient
    floor = ops.select(ops.eq(div, zero), ops.mul(zero, plain), floor)
    return ops.select(ops.eq(b, zero), plain, floor)


@lower(aten.div.Tensor, aten.div.Scalar)
def _div(out, x, y):
    a, b = operands(out, x, y)
    return ops.div(a, b)


# float operands of one shape, or a Python number, no alpha: ops.div(a, b) (_native_dispatch.c)
FAST_ROUTES[aten.div.Tensor] = (2, ops.div, _div)


@lower(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(out, x, y, *, rounding_mode=None):
    a, b = operands(out, x, y)
    if rounding_mode is None:
        return ops.div(a, b)
    if rounding_mode == "trunc":
        return _trunc(ops.div(a, b)) if is_float(a) else ops.div(a, b)
    return _floor_div(a, b)


@lower(aten.floor_divide.default, aten.floor_divide.Scalar)
def _floor_divide(out, x, y):
    a, b = operands(out, x, y)
    return _floor_div(a, b)


@lower(aten.remainder.Tensor, aten.remainder.Scalar, aten.remainder.Scalar_Tensor)
def _remainder(out, x, y):
    a, b = operands(out, x, y)
    return compose.floor_mod(a, b)  # shared with TF (and with NumPy for integers)


@lower(aten.fmod.Tensor, aten.fmod.Scalar)
def _fmod(out, x, y):
    a, b = operands(out, x, y)
    return ops.rem(a, b)


@lower(aten.igamma.default)
def _igamma(out, a, x):
    return compose.incomplete_gamma(*operands(out, a, x), False, "torch")


@lower(aten.igammac.default)
def _igammac(out, a, x):
    return compose.incomplete_gamma(*operands(out, a, x), True, "torch")


def _torch_gcd(a, b):
    """torch's: Euclid on the absolute values (in the dtype: abs(-128) stays -128 in int8)."""
    return compose.euclid(a, b) if dt.is_unsigned(a.dtype) else \
        compose.euclid(ops.abs_(a), ops.abs_(b))


@lower(aten.gcd.default)
def _gcd(out, x, y):
    return _torch_gcd(*operands(out, x, y))


@lower(aten.lcm.default)
def _lcm(out, x, y):
    """torch's: |a / gcd * b|, computed in C++'s int for int8/int16 (then truncated)."""
    a, b = operands(out, x, y)
    done, g = compose.nonzero_divisor(_torch_gcd(a, b))
    wide = "int32" if a.dtype in ("int8", "int16") else a.dtype
    m = ops.mul(ops.div(*(ops.convert(v, dtype=wide) for v in (a, g))),
                ops.convert(b, dtype=wide))
    m = ops.convert(m if dt.is_unsigned(a.dtype) else ops.abs_(m), dtype=a.dtype)
    return ops.select(done, const(0, a.dtype, a.shape), m)


# (float16 takes pow for both: torch's half kernel has no such shortcut)
_ROOT_POWER_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.complex64,
                      torch.complex128)


@lower(aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar)
def _pow(out, x, y):
    if type(y) is int and y < 0 and isinstance(x, torch.Tensor) and \
            not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError("Integers to negative integer powers are not allowed.")  # (eager's)
    if isinstance(y, (int, float)) and not isinstance(y, bool):
        if y in (0, 1, 2, 3, -1, -2, 0.5, -0.5):  # (a shortcut below: a number of a
            capture.decided_by(y)  # compiled step's call with this value is guarded by it)
        if y == 0 or y == 1:  # torch's pow_out fills ones or copies, for every dtype (and
            # autograd's backward of every x ** 2 is 2 * x ** 1: a full-size power until now)
            (a,) = operands(out, x)
            return a if y == 1 else const(1, a.dtype, a.shape)
        if y == 2:
            (a,) = operands(out, x)
            return ops.mul(a, a)  # what torch does for x ** 2, exact and cheap
        if y in (3, -1, -2) and out.dtype in (torch.float32, torch.float64):
            # torch's kernel takes these as products and a reciprocal (in float32 or float64:
            # half and bfloat16 round the product once, complex has its own kernel); a
            # run-time exponent was a full-size power, 32x a product's time on XLA:CPU
            (a,) = operands(out, x)
            if y == 3:
                return ops.mul(ops.mul(a, a), a)
            return ops.div(const(1, a.dtype, a.shape), a if y == -1 else ops.mul(a, a))
        if (y == 0.5 or y == -0.5) and out.dtype in _ROOT_POWER_DTYPES:
            # torch's kernel takes these exponents as sqrt and rsqrt: at -0.0 and -inf they
            # give -0.0 / -inf and nan, where pow gives +0.0 / +inf and inf / 0
            (a,) = operands(out, x)
            return ops.sqrt(a) if y == 0.5 else ops.rsqrt(a)
    a, b = operands(out, x, y)
    return ops.pow_(a, b)


_BINARY = {"maximum": ops.max_, "minimum": ops.min_, "atan2": ops.atan2,
           "nextafter": ops.nextafter}
for _name, _fn in _BINARY.items():
    def _make(fn):
        def lowering(out, x, y):
            a, b = operands(out, x, y)
            return fn(a, b)
        return lowering
    lower(getattr(aten, _name).default)(_make(_fn))


_BITWISE = {"bitwise_and": (ops.and_,), "bitwise_or": (ops.or_,), "bitwise_xor": (ops.xor,)}
for _name, (_fn,) in _BITWISE.items():
    def _make(fn):
        def lowering(out, x, y):
            a, b = operands(out, x, y)
            return fn(a, b)
        return lowering
    packet = getattr(aten, _name)
    lower(packet.Tensor, packet.Scalar)(_make(_fn))


@lower(aten.bitwise_left_shift.Tensor, aten.bitwise_left_shift.Tensor_Scalar,
       aten.__lshift__.Tensor, aten.__lshift__.Scalar)
def _shl(out, x, y):
    a, b = operands(out, x, y)
    return ops.shift_left(a, b)


@lower(aten.bitwise_right_shift.Tensor, aten.bitwise_right_shift.Tensor_Scalar,
       aten.__rshift__.Tensor, aten.__rshift__.Scalar)
def _shr(out, x, y):
    a, b = operands(out, x, y)
    return ops.shift_right_arithmetic(a, b) if not a.dtype.startswith("u") \
        else ops.shift_right_logical(a, b)


# ---------------------------------------------------------------- comparisons and logic

def _promoted(x, y):
    from ..tensor import _to_meta
    return compute_dtype(torch.result_type(_to_meta(x), _to_meta(y)))


_COMPARE = {"eq": ops.eq, "ne": ops.ne, "lt": ops.lt, "le": ops.le, "gt": ops.gt, "ge": ops.ge}
for _name, _fn in _COMPARE.items():
    def _make(fn):
        def lowering(out, x, y):
            a, b = operands(out, x, y, dtype=_promoted(x, y))
            return fn(a, b)
        return lowering
    packet = getattr(aten, _name)
    lower(packet.Tensor, packet.Scalar)(_make(_fn))

_LOGICAL = {"logical_and": ops.and_, "logical_or": ops.or_, "logical_xor": ops.xor}
for _name, _fn in _LOGICAL.items():
    def _make(fn):
        def lowering(out, x, y):
            a, b = operands(out, x, y, dtype="bool")
            return fn(a, b)
        return lowering
    lower(getattr(aten, _name).default)(_make(_fn))


@lower(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(out, condition, x, y):
    shape = tuple(out.shape)
    dtype = compute_dtype(out.dtype)  # (an int that does not fit is torch's error: no wrap)
    a, b = operands(out, fill_value(x, dtype), fill_value(y, dtype))
    return ops.select(bcast(node_of(condition, "bool"), shape), a, b)


@lower(aten.clamp.default, aten.clamp.Tensor)
def _clamp(out, x, min=None, max=None):
    (a,) = operands(out, x)
    if min is not None:
        a = ops.max_(a, operands(out, min)[0])
    if max is not None:
        a = ops.min_(a, operands(out, max)[0])
    return a


@lower(aten.clamp_min.default, aten.clamp_min.Tensor)
def _clamp_min(out, x, min):
    return _clamp(out, x, min=min)


@lower(aten.clamp_max.default, aten.clamp_max.Tensor)
def _clamp_max(out, x, max):
    return _clamp(out, x, max=max)


@lower(aten.gelu.default)
def _gelu(out, x, *, approximate="none"):
    (a,) = operands(out, x)
    shape, dtype = a.shape, a.dtype
    half = const(0.5, dtype, shape)
    if approximate == "tanh":
        inner = ops.mul(const(math.sqrt(2 / math.pi), dtype, shape),
                        ops.add(a, ops.mul(const(0.044715, dtype, shape),
                                           ops.mul(a, ops.mul(a, a)))))
        return ops.mul(ops.mul(half, a), ops.add(const(1, dtype, shape), ops.tanh(inner)))
    cdf = ops.mul(half, ops.add(const(1, dtype, shape),
                                ops.erf(ops.mul(a, const(1 / math.sqrt(2), dtype, shape)))))
    return ops.mul(a, cdf)


@lower(aten.silu.default)
def _silu(out, x):
    (a,) = operands(out, x)
    return ops.mul(a, ops.logistic(a))


@lower(aten.sigmoid_backward.default)
def _sigmoid_backward(out, grad, y):
    g, s = operands(out, grad, y)
    return ops.mul(g, ops.mul(s, ops.sub(const(1, s.dtype, s.shape), s)))


@lower(aten.tanh_backward.default)
def _tanh_backward(out, grad, y):
    g, t = operands(out, grad, y)
    return ops.mul(g, ops.sub(const(1, t.dtype, t.shape), ops.mul(t, t)))


@lower(aten.threshold_backward.default)
def _threshold_backward(out, grad, x, threshold):
    g, a = operands(out, grad, x)
    # torch zeroes where x <= threshold and passes the rest: a NaN x (relu keeps NaN) passes
    # its grad, as LPPool's NaN of a negative base to a fractional power relies on
    drop = ops.le(a, scalar(threshold, a.dtype, a.shape))
    return ops.select(drop, const(0, g.dtype, g.shape), g)


@lower(aten.hardshrink_backward.default, aten.softshrink_backward.default)
def _shrink_backward(out, grad, x, lambd):
    # both kernels zero the grad where -lambd <= x <= lambd and pass it elsewhere (NaN too)
    g, a = operands(out, grad, x)
    bound = scalar(lambd, a.dtype, a.shape)
    inside = ops.and_(ops.ge(a, ops.neg(bound)), ops.le(a, bound))
    return ops.select(inside, const(0, g.dtype, g.shape), g)


@lower(aten.lerp.Scalar, aten.lerp.Tensor)
def _lerp(out, x, end, weight):
    a, b, w = operands(out, x, end, weight)
    return ops.add(a, ops.mul(w, ops.sub(b, a)))


@lower(aten.addcmul.default)
def _addcmul(out, x, t1, t2, *, value=1):
    a, b, c = operands(out, x, t1, t2)
    return ops.add(a, ops.mul(scalar(value, a.dtype, a.shape), ops.mul(b, c)))


@lower(aten.addcdiv.default)
def _addcdiv(out, x, t1, t2, *, value=1):
    a, b, c = operands(out, x, t1, t2)
    return ops.add(a, ops.mul(scalar(value, a.dtype, a.shape), ops.div(b, c)))


