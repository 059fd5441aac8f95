"""Element-wise ops that torch implements as dedicated kernels with no decomposition: NaN-aware
max/min, hypot, signbit, the Hurwitz zeta function and polygamma, logcumsumexp. Each is a
short composition of IR primitives (written once here, shared by the aten and prims names)."""
import math

from ....core import ops
from .table import Unsupported, aten, const, is_float, lower, node_of, operands

import torch

prims = torch.ops.prims


def _fmax_fmin(pick):
    def lowering(out, x, y):
        a, b = operands(out, x, y)
        if not is_float(a):
            return pick(a, b)
        # NaN only when both are NaN: a NaN operand yields the other one
        picked = pick(a, b)
        picked = ops.select(ops.ne(a, a), b, picked)
        return ops.select(ops.ne(b, b), a, picked)
    return lowering


lower(aten.fmax.default, prims.fmax.default)(_fmax_fmin(ops.max_))
lower(aten.fmin.default, prims.fmin.default)(_fmax_fmin(ops.min_))


@lower(aten.hypot.default, prims.hypot.default)
def _hypot(out, x, y):
    a, b = operands(out, x, y)
    a, b = ops.abs_(a), ops.abs_(b)
    big, small = ops.max_(a, b), ops.min_(a, b)
    # big * sqrt(1 + (small/big)^2) avoids overflow; 0/0 and inf/inf are patched below
    ratio = ops.div(small, big)
    one = const(1, a.dtype, a.shape)
    scaled = ops.mul(big, ops.sqrt(ops.add(one, ops.mul(ratio, ratio))))
    zero = const(0, a.dtype, a.shape)
    inf = const(math.inf, a.dtype, a.shape)
    scaled = ops.select(ops.eq(big, zero), zero, scaled)
    return ops.select(ops.or_(ops.eq(a, inf), ops.eq(b, inf)), inf, scaled)


_SIGNED_INT = {"float16": "int16", "bfloat16": "int16", "float32": "int32", "float64": "int64"}


@lower(aten.signbit.default, prims.signbit.default)
def _signbit(out, x):
    a = node_of(x)
    if a.dtype == "bool" or a.dtype.startswith("uint"):
        return const(False, "bool", a.shape)
    if not is_float(a):
        return ops.lt(a, const(0, a.dtype, a.shape))
    bits = ops.bitcast_convert(a, dtype=_SIGNED_INT[a.dtype])  # -0.0 and -NaN count too
    return ops.lt(bits, const(0, bits.dtype, bits.shape))


# ---------------------------------------------------------------- zeta and polygamma

# Euler-Maclaurin summation of the Hurwitz zeta function (the method of Cephes' zeta.c, which
# torch's CPU kernel also uses): a direct sum of N terms, then a tail of Bernoulli terms.
_TERMS = 9
_MAX_TERMS = 40
_BERNOULLI_OVER_FACTORIAL = (  # B_2k / (2k)!
    1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
    -691.0 / 1307674368000, 1.0 / 74724249600, -3617.0 / 10670622842880000,
    43867.0 / 5109094217170944000, -174611.0 / 802857662698291200000,
    77683.0 / 14101100039391805440000, -236364091.0 / 1693824136731743669452800000)


def hurwitz_zeta(s, q):
    """zeta(s, q) = sum_k (q + k)^-s for s > 1 (NaN / inf where torch gives them)."""
    dtype, shape = s.dtype, s.shape

    def c(v):
        return const(v, dtype, shape)

    # Cephes sums while k < 9 or q + k <= 9, so the tail starts past 9 even for negative q;
    # the IR is static, so every term up to _MAX_TERMS is built and masked (q >= -20 exact).
    total, used = c(0), c(0)
    for k in range(_MAX_TERMS):
        term = ops.pow_(ops.add(q, c(k)), ops.neg(s))
        if k >= _TERMS:
            take = ops.le(ops.add(q, c(k)), c(9))
            term = ops.select(take, term, c(0))
            used = ops.add(used, ops.convert(take, dtype=dtype))
        total = ops.add(total, term)
    a = ops.add(ops.add(q, c(_TERMS)), used)
    total = ops.add(total, ops.div(ops.pow_(a, ops.sub(c(1), s)), ops.sub(s, c(1))))
    a_pow = ops.pow_(a, ops.neg(s))
    total = ops.add(total, ops.mul(c(0.5), a_pow))
    # tail: sum_j B_2j/(2j)! * s(s+1)...(s+2j-2) * a^(-s-2j+1)
    rising = s
    term_pow = ops.div(a_pow, a)  # a^(-s-1)
    inv_a2 = ops.div(c(1), ops.mul(a, a))
    for j, coef in enumerate(_BERNOULLI_OVER_FACTORIAL):
        total = ops.add(total, ops.mul(ops.mul(c(coef), rising), term_pow))
        rising = ops.mul(rising, ops.mul(ops.add(s, c(2 * j + 1)), ops.add(s, c(2 * j + 2))))
        term_pow = ops.mul(term_pow, inv_a2)
    nan, inf = c(math.nan), c(math.inf)
    # torch/Cephes domain: s == 1 -> inf; s < 1 -> NaN; q <= 0 integer -> inf, else NaN
    total = ops.select(ops.eq(s, c(1)), inf, ops.select(ops.lt(s, c(1)), nan, total))
    q_nonpositive = ops.le(q, c(0))
    q_whole = ops.eq(q, ops.floor(q))
    s_whole = ops.eq(s, ops.floor(s))
    bad_q = ops.select(q_whole, inf, ops.select(s_whole, total, nan))
    return ops.select(ops.and_(q_nonpositive, ops.gt(s, c(1))), bad_q, total)


@lower(aten.special_zeta.default, prims.zeta.default)
def _zeta(out, x, q):
    s, a = operands(out, x, q)
    if not is_float(s):
        raise Unsupported("integer zeta")
    return hurwitz_zeta(s, a)


def _digamma(a):
    """torch's digamma: the pole at +-0 gives -+inf (as SciPy); the IR's digamma (XLA's, TF's)
    gives NaN there. -1 / x is that infinity with the right sign."""
    zero = ops.eq(a, const(0, a.dtype, a.shape))
    return ops.select(zero, ops.div(const(-1, a.dtype, a.shape), a), ops.digamma(a))


@lower(aten.digamma.default, prims.digamma.default)
def _digamma_lowering(out, x):
    (a,) = operands(out, x)
    return _digamma(a)


@lower(aten.polygamma.default)
def _polygamma(out, n, x):
    (a,) = operands(out, x)
    if n == 0:
        return _digamma(a)
    # psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x)
    factor = (-1.0) ** (n + 1) * math.factorial(n)
    s = const(float(n + 1), a.dtype, a.shape)
    return ops.mul(const(factor, a.dtype, a.shape), hurwitz_zeta(s, a))


@lower(aten.logcumsumexp.default)
def _logcumsumexp(out, x, dim):
    a = node_of(x, "float32" if node_of(x).dtype in ("float16", "bfloat16") else None)
    if a.ndim == 0:
        return a
    axis = dim % a.ndim
    # shift by the running maximum of the whole axis (finite part) for stability
    peak = ops.reduce_max(a, axes=(axis,))
    finite = ops.select(ops.is_finite(peak), peak, const(0, a.dtype, peak.shape))
    keep = tuple(i for i in range(a.ndim) if i != axis)
    shift = ops.broadcast_in_dim(finite, shape=a.shape, broadcast_dimensions=keep)
    summed = ops.cumsum(ops.exp(ops.sub(a, shift)), axis=axis)
    return ops.add(ops.log(summed), shift)



# ---------------------------------------------------------------- frexp

# (same-width int, mantissa bits, exponent bits, exponent bias - 1): x = m * 2**e, 0.5 <= |m| < 1
_FLOAT_LAYOUT = {"float32": ("int32", 23, 8, 126), "float64": ("int64", 52, 11, 1022)}


@lower(aten.frexp.Tensor, prims.frexp.default)
def _frexp(out, x):
    a = node_of(x)
    if a.dtype not in _FLOAT_LAYOUT:
        raise Unsupported(f"frexp of {a.dtype}")
    int_dtype, mantissa_bits, exponent_bits, bias = _FLOAT_LAYOUT[a.dtype]

    def c(v, dtype=int_dtype):
        return const(v, dtype, a.shape)
    # subnormals: scale into the normal range first, and take the scale off the exponent
    tiny = ops.lt(ops.abs_(a), c(2.0 ** -(bias - 1), a.dtype))
    boost = mantissa_bits + 2
    scaled = ops.select(tiny, ops.mul(a, c(2.0 ** boost, a.dtype)), a)
    bits = ops.bitcast_convert(scaled, dtype=int_dtype)
    field_mask = (1 << exponent_bits) - 1
    field = ops.and_(ops.shift_right_logical(bits, c(mantissa_bits)), c(field_mask))
    exponent = ops.sub(ops.sub(field, c(bias)), ops.select(tiny, c(boost), c(0)))
    cleared = ops.and_(bits, c(~(field_mask << mantissa_bits)))
    mantissa = ops.bitcast_convert(ops.or_(cleared, c(bias << mantissa_bits)), dtype=a.dtype)
    # 0, +-inf and NaN come back unchanged with exponent 0, as C's frexp gives them
    special = ops.or_(ops.eq(a, c(0, a.dtype)), ops.not_(ops.is_finite(a)))
    mantissa = ops.select(special, a, mantissa)
    exponent = ops.select(special, c(0), exponent)
    return mantissa, ops.convert(exponent, dtype="int32")
