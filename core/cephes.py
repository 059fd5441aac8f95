"""Bessel functions, Airy Ai, the normal quantile (ndtri), erfcx and log_ndtr as compositions
of IR primitives, for every frontend (torch's special functions, np.i0, tf.math's Bessel
functions).

Each is the Cephes rational / Chebyshev approximation that torch's CPU kernel evaluates (the
coefficients, numerical facts, are in cephes_tables.py), written once here as IR so both
backends compute the same thing in the input's dtype; branches become selects. Float64 is
as accurate as Cephes' double tables; float32 uses torch's shorter float tables where it has
them (i1, i1e). Each public function takes a floating-point node and returns one.
"""
import math

from . import ops
from .cephes_tables import TABLES
from .compose import const


class _Env:
    """Constant-making and the two series evaluators for one operand's dtype and shape."""

    def __init__(self, a):
        self.dtype, self.shape = a.dtype, a.shape

    def c(self, v):
        return const(v, self.dtype, self.shape)

    def horner(self, x, coefs):
        """sum coefs[i] x^(n-i) (Cephes polevl)."""
        if isinstance(coefs, str):
            coefs = TABLES[coefs]
        acc = self.c(coefs[0])
        for v in coefs[1:]:
            acc = ops.add(ops.mul(acc, x), self.c(v))
        return acc

    def chebyshev(self, x, coefs):
        """Clenshaw's sum of a Chebyshev series at x in [-2, 2] (Cephes chbevl)."""
        if isinstance(coefs, str):
            coefs = TABLES[coefs]
        b0, b1, b2 = self.c(coefs[0]), self.c(0), self.c(0)
        for v in coefs[1:]:
            b2, b1 = b1, b0
            b0 = ops.add(ops.sub(ops.mul(x, b1), b2), self.c(v))
        return ops.mul(self.c(0.5), ops.sub(b0, b2))


def _domain(e, x, result, at_zero):
    """K and Y are -inf / +inf at 0 and NaN for x < 0."""
    result = ops.select(ops.eq(x, e.c(0)), e.c(at_zero), result)
    return ops.select(ops.lt(x, e.c(0)), e.c(math.nan), result)


# ---------------------------------------------------------------- J and Y

_QUARTER_PI, _THREE_QUARTER_PI = math.pi / 4, 3 * math.pi / 4
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_TWO_OVER_PI = 2 / math.pi


def _hankel(e, x, name, shift, y_kind):
    """The large-x form (x > 5): sqrt(2/(pi x)) (P cos(x - shift) -+ 5/x Q sin(x - shift))."""
    w = ops.div(e.c(25), ops.mul(x, x)) if name in ("j0", "y0") else \
        ops.mul(ops.div(e.c(5), x), ops.div(e.c(5), x))
    p = ops.div(e.horner(w, f"{name}.PP"), e.horner(w, f"{name}.PQ"))
    q = ops.mul(ops.div(e.c(5), x), ops.div(e.horner(w, f"{name}.QP"), e.horner(w, f"{name}.QQ")))
    phase = ops.sub(x, e.c(shift))
    if y_kind:
        wave = ops.add(ops.mul(p, ops.sin(phase)), ops.mul(q, ops.cos(phase)))
    else:
        wave = ops.sub(ops.mul(p, ops.cos(phase)), ops.mul(q, ops.sin(phase)))
    return ops.div(ops.mul(wave, e.c(_SQRT_2_OVER_PI)), ops.sqrt(x))


def _j0(e, a):
    x = ops.abs_(a)
    x2 = ops.mul(x, x)
    small = ops.mul(ops.mul(ops.sub(x2, e.c(5.78318596294678452118)),
                            ops.sub(x2, e.c(3.04712623436620863991e1))),
                    ops.div(e.horner(x2, "j0.RP"), e.horner(x2, "j0.RQ")))
    tiny = ops.sub(e.c(1), ops.div(x2, e.c(4)))
    small = ops.select(ops.lt(x, e.c(1e-5)), tiny, small)
    return ops.select(ops.le(x, e.c(5)), small, _hankel(e, x, "j0", _QUARTER_PI, False))


def _j1(e, a):
    x = ops.abs_(a)
    x2 = ops.mul(x, x)
    small = ops.mul(ops.mul(ops.mul(ops.div(e.horner(x2, "j1.RP"), e.horner(x2, "j1.RQ")), x),
                            ops.sub(x2, e.c(1.46819706421238932572e1))),
                    ops.sub(x2, e.c(4.92184563216946036703e1)))
    value = ops.select(ops.le(x, e.c(5)), small, _hankel(e, x, "j1", _THREE_QUARTER_PI, False))
    return ops.select(ops.lt(a, e.c(0)), ops.neg(value), value)


def _y0(e, x):
    x2 = ops.mul(x, x)
    small = ops.add(ops.div(e.horner(x2, "y0.YP"), e.horner(x2, "y0.YQ")),
                    ops.mul(ops.mul(e.c(_TWO_OVER_PI), ops.log(x)), _j0(e, x)))
    small = _domain(e, x, small, -math.inf)
    return ops.select(ops.le(x, e.c(5)), small, _hankel(e, x, "y0", _QUARTER_PI, True))


def _y1(e, x):
    x2 = ops.mul(x, x)
    small = ops.add(ops.mul(x, ops.div(e.horner(x2, "y1.YP"), e.horner(x2, "y1.YQ"))),
                    ops.mul(e.c(_TWO_OVER_PI), ops.sub(ops.mul(_j1(e, x), ops.log(x)),
                                                        ops.div(e.c(1), x))))
    small = _domain(e, x, small, -math.inf)
    return ops.select(ops.le(x, e.c(5)), small, _hankel(e, x, "y1", _THREE_QUARTER_PI, True))


# ---------------------------------------------------------------- I and K

def _i_scaled(e, x, order, tables=("i0.A", "i0.B")):
    """exp(-|x|) I_order(|x|) (without the sign of x)."""
    small = e.chebyshev(ops.sub(ops.div(x, e.c(2)), e.c(2)), tables[0])
    if order == 1:
        small = ops.mul(small, x)
    large = ops.div(e.chebyshev(ops.sub(ops.div(e.c(32), x), e.c(2)), tables[1]), ops.sqrt(x))
    return ops.select(ops.le(x, e.c(8)), small, large)


def _i1_tables(e):
    # torch's float kernel of i1 / i1e uses Cephes' shorter float tables
    return ("i1e_a32", "i1e_b32") if e.dtype == "float32" else ("i1e_a64", "i1e_b64")


def _odd(a, e, value):
    return ops.select(ops.lt(a, e.c(0)), ops.neg(value), value)


def _i0(e, a):
    x = ops.abs_(a)
    return ops.mul(ops.exp(x), _i_scaled(e, x, 0))


def _i0e(e, a):
    return _i_scaled(e, ops.abs_(a), 0)


def _i1(e, a):
    x = ops.abs_(a)
    return _odd(a, e, ops.mul(ops.exp(x), _i_scaled(e, x, 1, _i1_tables(e))))


def _i1e(e, a):
    x = ops.abs_(a)
    return _odd(a, e, _i_scaled(e, x, 1, _i1_tables(e)))


def _modified_i1(e, a):
    x = ops.abs_(a)
    return _odd(a, e, ops.mul(ops.exp(x), _i_scaled(e, x, 1, ("i1.A", "i1.B"))))


def _k_scaled(e, x, order):
    """exp(x) K_order(x) for x > 0."""
    name = f"k{order}"
    series = e.chebyshev(ops.sub(ops.mul(x, x), e.c(2)), f"{name}.A")
    # log(x) - log 2, not log(x / 2): x / 2 of the smallest normal is a subnormal, which
    # XLA on CPU flushes to 0
    log_half = ops.sub(ops.log(x), e.c(math.log(2)))
    if order == 0:
        small = ops.sub(series, ops.mul(log_half, _i0(e, x)))
    else:
        small = ops.add(ops.mul(log_half, _modified_i1(e, x)), ops.div(series, x))
    small = ops.mul(small, ops.exp(x))
    large = ops.div(e.chebyshev(ops.sub(ops.div(e.c(8), x), e.c(2)), f"{name}.B"), ops.sqrt(x))
    return _domain(e, x, ops.select(ops.le(x, e.c(2)), small, large), math.inf)


def _k(order, scaled):
    def fn(e, x):
        value = _k_scaled(e, x, order)
        return value if scaled else ops.mul(value, ops.exp(ops.neg(x)))
    return fn


_k0, _k1, _k0e, _k1e = _k(0, False), _k(1, False), _k(0, True), _k(1, True)


def _spherical_j0(e, x):
    x2 = ops.mul(x, x)
    series = e.horner(x2, [(-1) ** k / math.factorial(2 * k + 1) for k in range(6, -1, -1)])
    value = ops.select(ops.lt(ops.abs_(x), e.c(0.5)), series, ops.div(ops.sin(x), x))
    return ops.select(ops.eq(ops.abs_(x), e.c(math.inf)), e.c(0), value)


# ---------------------------------------------------------------- Airy Ai

_AIRY_C1, _AIRY_C2 = 0.355028053887817239260, 0.258819403792806798405
_INV_SQRT_PI = 5.64189583547756286948e-01


def _airy_ai(e, x):
    # x < -2.09: oscillating asymptotic form
    neg_x = ops.neg(x)
    zeta_neg = ops.div(ops.mul(ops.mul(e.c(2), neg_x), ops.sqrt(neg_x)), e.c(3))
    z = ops.div(e.c(1), zeta_neg)
    z2 = ops.mul(z, z)
    f_ratio = ops.div(e.horner(z2, "airy.AFN"), e.horner(z2, "airy.AFD"))
    g_ratio = ops.div(e.horner(z2, "airy.AGN"), e.horner(z2, "airy.AGD"))
    theta = ops.add(zeta_neg, e.c(0.25 * math.pi))
    wave = ops.sub(ops.mul(ops.sin(theta), ops.add(e.c(1), ops.mul(z2, f_ratio))),
                   ops.mul(ops.cos(theta), ops.mul(z, g_ratio)))
    negative = ops.mul(ops.div(e.c(_INV_SQRT_PI), ops.sqrt(ops.sqrt(neg_x))), wave)
    # x >= 2.09: decaying asymptotic form
    zeta = ops.div(ops.mul(ops.mul(e.c(2), x), ops.sqrt(x)), e.c(3))
    inv = ops.div(e.c(1), zeta)
    ratio = ops.div(e.horner(inv, "airy.AN"), e.horner(inv, "airy.AD"))
    positive = ops.div(ops.mul(e.c(_INV_SQRT_PI), ratio),
                       ops.mul(ops.mul(e.c(2), ops.sqrt(ops.sqrt(x))), ops.exp(zeta)))
    # |x| < 2.09: the Maclaurin series in x^3 (12 terms reach double precision there)
    cube = ops.mul(ops.mul(x, x), x)
    f, g, m, n, k = e.c(1), x, e.c(1), x, 1.0
    for _ in range(12):
        m = ops.div(ops.mul(m, cube), e.c((k + 1) * (k + 2)))
        n = ops.div(ops.mul(n, cube), e.c((k + 2) * (k + 3)))
        f, g, k = ops.add(f, m), ops.add(g, n), k + 3
    series = ops.sub(ops.mul(e.c(_AIRY_C1), f), ops.mul(e.c(_AIRY_C2), g))
    value = ops.select(ops.lt(x, e.c(-2.09)), negative,
                       ops.select(ops.ge(x, e.c(2.09)), positive, series))
    value = ops.select(ops.gt(x, e.c(103.892)), e.c(0), value)
    return ops.select(ops.eq(ops.abs_(x), e.c(math.inf)), e.c(math.nan), value)


# ---------------------------------------------------------------- ndtri

_EXP_MINUS_2 = 0.13533528323661269189
_SQRT_2PI = 2.50662827463100050242


def _ndtri(e, y0):
    upper = ops.gt(y0, e.c(1 - _EXP_MINUS_2))
    y = ops.select(upper, ops.sub(e.c(1), y0), y0)
    # central region: a rational function of (y - 1/2)^2
    centred = ops.sub(y, e.c(0.5))
    sq = ops.mul(centred, centred)
    central = ops.mul(ops.add(centred, ops.mul(centred, ops.div(
        ops.mul(sq, e.horner(sq, "ndtri.P0")), e.horner(sq, "ndtri.Q0")))), e.c(_SQRT_2PI))
    # tails: in terms of t = sqrt(-2 log y)
    t = ops.sqrt(ops.mul(e.c(-2), ops.log(y)))
    t0 = ops.sub(t, ops.div(ops.log(t), t))
    z = ops.div(e.c(1), t)
    near = ops.div(e.horner(z, "ndtri.P1"), e.horner(z, "ndtri.Q1"))
    far = ops.div(e.horner(z, "ndtri.P2"), e.horner(z, "ndtri.Q2"))
    tail = ops.sub(t0, ops.mul(z, ops.select(ops.lt(t, e.c(8)), near, far)))
    tail = ops.select(upper, tail, ops.neg(tail))
    value = ops.select(ops.gt(y, e.c(_EXP_MINUS_2)), central, tail)
    value = ops.select(ops.eq(y0, e.c(0)), e.c(-math.inf), value)
    value = ops.select(ops.eq(y0, e.c(1)), e.c(math.inf), value)
    return ops.select(ops.or_(ops.lt(y0, e.c(0)), ops.gt(y0, e.c(1))), e.c(math.nan), value)


# ---------------------------------------------------------------- erfcx and log_ndtr

_CONTINUED_FRACTION_TERMS = 64  # erfcx's fraction converges to 2e-16 relative for x >= 2


def _erfcx64(x):
    """exp(x^2) erfc(x) in float64: below 2 directly (erfc(2) = 4.7e-3, so 1 - erf(x) keeps
    ~14 digits), above by Laplace's continued fraction
    erfcx(x) = 1/sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))."""
    e = _Env(x)
    direct = ops.mul(ops.exp(ops.mul(x, x)), ops.sub(e.c(1), ops.erf(x)))
    # evaluate the fraction bottom-up from a point where x stays >= 2 (no division by zero)
    big = ops.max_(x, e.c(2))
    tail = e.c(0)
    for k in range(_CONTINUED_FRACTION_TERMS, 0, -1):
        tail = ops.div(e.c(k / 2), ops.add(big, tail))
    fraction = ops.div(e.c(1 / math.sqrt(math.pi)), ops.add(big, tail))
    return ops.select(ops.lt(x, e.c(2)), direct, fraction)


def _log_ndtr64(x):
    """log Phi(x): log(erfcx(-t)/2) - t^2 in the left tail (t = x/sqrt 2), else
    log1p(-erfc(t)/2) with erfc(t) = exp(-t^2) erfcx(t) (no cancellation for large t)."""
    e = _Env(x)
    t = ops.mul(x, e.c(math.sqrt(0.5)))
    left = ops.sub(ops.log(ops.div(_erfcx64(ops.neg(t)), e.c(2))), ops.mul(t, t))
    erfc = ops.select(ops.lt(t, e.c(0)), ops.sub(e.c(1), ops.erf(t)),
                      ops.mul(ops.exp(ops.neg(ops.mul(t, t))), _erfcx64(t)))
    right = ops.log1p(ops.neg(ops.div(erfc, e.c(2))))
    return ops.select(ops.lt(x, e.c(-1)), left, right)


def _public(fn, name):
    """fn(env, a) as fn(a): the evaluator for a's dtype and shape made here."""
    def evaluate(a):
        return fn(_Env(a), a)
    evaluate.__name__ = name
    return evaluate


def _in_float64(fn, name):
    """Evaluate in float64 and round once: float32's 1 - erf(x) would keep only ~4 digits
    near x = 2; float64 keeps the float32 result correctly rounded."""
    def evaluate(a):
        return ops.convert(fn(ops.convert(a, dtype="float64")), dtype=a.dtype)
    evaluate.__name__ = name
    return evaluate


j0, j1, y0, y1 = (_public(f, n) for f, n in ((_j0, "j0"), (_j1, "j1"), (_y0, "y0"), (_y1, "y1")))
i0, i0e, i1, i1e = (_public(f, n) for f, n in ((_i0, "i0"), (_i0e, "i0e"), (_i1, "i1"),
                                               (_i1e, "i1e")))
modified_i1 = _public(_modified_i1, "modified_i1")
k0, k1, k0e, k1e = (_public(f, n) for f, n in ((_k0, "k0"), (_k1, "k1"), (_k0e, "k0e"),
                                               (_k1e, "k1e")))
spherical_j0 = _public(_spherical_j0, "spherical_j0")
airy_ai, ndtri = _public(_airy_ai, "airy_ai"), _public(_ndtri, "ndtri")
erfcx, log_ndtr = _in_float64(_erfcx64, "erfcx"), _in_float64(_log_ndtr64, "log_ndtr")
