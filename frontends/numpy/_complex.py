"""Complex numbers in the NumPy frontend: the ufunc lowerings for complex loops, and the
Array API's complex functions (real, imag, conj, angle).

A ufunc whose loop NumPy resolves to a complex dtype takes its lowering from
``COMPLEX_UFUNCS`` instead of ``_ufuncs.UFUNCS``: the real lowerings use comparisons, bit
tricks and float-only primitives that would be wrong (or fail in core) on complex operands.
A ufunc NumPy defines on complex but lazyx does not (ordering comparisons, maximum, ...)
raises a TypeError at the call rather than computing something else.
"""
import math

import numpy as np

from ...core import dtypes as dt
from ...core import ops
from ._ufuncs import UFUNCS, ForBool, _compare, const, copysign, fill


def isnan(z):
    re, im = ops.real(z), ops.imag(z)
    return ops.or_(ops.ne(re, re), ops.ne(im, im))


def isinf(z):
    re, im = ops.abs_(ops.real(z)), ops.abs_(ops.imag(z))
    return ops.or_(ops.eq(re, const(math.inf, re)), ops.eq(im, const(math.inf, im)))


def isfinite(z):
    return ops.and_(ops.is_finite(ops.real(z)), ops.is_finite(ops.imag(z)))


def _c99_log(log_of):
    """log / log1p with C99's answer where a part is infinite (XLA gives nan + nan j):
    +inf + i*angle (angle of a NaN part is NaN)."""
    def lower(z):
        re, im = ops.real(z), ops.imag(z)
        inf_part = isinf(z)
        special = ops.complex_(const(math.inf, re), ops.atan2(im, re))
        return ops.select(inf_part, special, log_of(z))
    return lower


def sqrt(z):
    """XLA's sqrt with C99's answers where XLA's differ: the imaginary part takes the input's
    sign (-1 - 0j -> -1j: XLA ignores the sign of zero), x + inf j is inf + inf j, and an
    infinite real part beside a NaN gives +inf + nan j (+inf) or nan + inf j (-inf)."""
    re, im = ops.real(z), ops.imag(z)
    inf = const(math.inf, re)
    nan = const(math.nan, re)
    nan_im = ops.ne(im, im)
    out = ops.sqrt(z)
    out = ops.complex_(ops.real(out), copysign(ops.imag(out), im))
    out = ops.select(ops.and_(ops.eq(re, inf), nan_im), ops.complex_(inf, nan), out)
    out = ops.select(ops.and_(ops.eq(re, ops.neg(inf)), nan_im), ops.complex_(nan, inf), out)
    return ops.select(ops.eq(ops.abs_(im), inf), ops.complex_(inf, im), out)


log = _c99_log(ops.log)


# C99's (and the Array API's) values of exp, expm1, sinh, cosh and tanh where a part is
# infinite or NaN; XLA's complex formulas give nan + nan j there (finite inputs are untouched).
# Each rule: (when the real part is..., when the imaginary part is...) -> (real, imag) parts.

def _special(z, fn, rules):
    re, im = ops.real(z), ops.imag(z)
    inf, nan = const(math.inf, re), const(math.nan, re)
    finite_im = ops.is_finite(im)
    picks = {"-inf": ops.eq(re, ops.neg(inf)), "+inf": ops.eq(re, inf),
             "inf": ops.eq(ops.abs_(re), inf), "0": ops.eq(re, const(0, re))}
    parts = {"re": lambda: re, "nan": lambda: nan, "inf": lambda: inf,
             "0": lambda: const(0, re), "-1": lambda: const(-1, re),
             "sign": lambda: copysign(const(1, re), re),
             "0 im": lambda: copysign(const(0, re), im)}
    out = fn(z)
    for (where_re, im_finite), (real, imag) in rules.items():
        when = ops.and_(picks[where_re], finite_im if im_finite else ops.not_(finite_im))
        out = ops.select(when, ops.complex_(parts[real](), parts[imag]()), out)
    return out


def _with_special(fn, rules, real_fn=None):
    """fn with the C99 `rules`; with real_fn, a zero imaginary part computes the real
    function of the real part and keeps the zero (expm1(nan + 0j) is nan + 0j in C99)."""
    def lower(z):
        out = _special(z, fn, rules)
        if real_fn is None:
            return out
        re, im = ops.real(z), ops.imag(z)
        return ops.select(ops.eq(im, const(0, im)), ops.complex_(real_fn(re), im), out)
    return lower


_NOT_FINITE = False
exp = _with_special(ops.exp, {("-inf", _NOT_FINITE): ("0", "0"),
                              ("+inf", _NOT_FINITE): ("inf", "nan")})
expm1 = _with_special(ops.expm1, {("-inf", _NOT_FINITE): ("-1", "0"),
                                  ("+inf", _NOT_FINITE): ("inf", "nan")},
                      lambda re: ops.select(ops.eq(re, const(0, re)), const(0, re),
                                            ops.expm1(re)))  # the standard's +-0 + 0j -> 0 + 0j
cosh = _with_special(ops.cosh, {("0", _NOT_FINITE): ("nan", "0"),
                                ("inf", _NOT_FINITE): ("inf", "nan")})
sinh = _with_special(ops.sinh, {("0", _NOT_FINITE): ("re", "nan"),
                                ("inf", _NOT_FINITE): ("re", "nan")})


def _nan_parts(fn, name):
    """The inverse functions' C99 values where a part is NaN (XLA's carry a stray finite part:
    atanh(nan + 1j) gave nan + 1.57j)."""
    def lower(z):
        re, im = ops.real(z), ops.imag(z)
        nan, zero = const(math.nan, re), const(0, re)
        re_nan, im_nan = ops.ne(re, re), ops.ne(im, im)
        re_zero, re_inf = ops.eq(re, zero), ops.eq(ops.abs_(re), const(math.inf, re))
        out = fn(z)
        both_nan = ops.complex_(nan, nan)
        if name == "atanh":  # +-0 or +-inf beside NaN: +-0 + nan j; any other NaN: nan + nan j
            out = ops.select(ops.or_(im_nan, ops.and_(re_nan, ops.is_finite(im))), both_nan, out)
            keep = ops.and_(im_nan, ops.or_(re_zero, re_inf))
            out = ops.select(keep, ops.complex_(copysign(zero, re), nan), out)
        elif name == "acos":  # +-0 + nan j -> pi/2 + nan j; finite + nan j -> nan + nan j
            out = ops.select(ops.and_(im_nan, ops.is_finite(re)), both_nan, out)
            out = ops.select(ops.and_(im_nan, re_zero),
                             ops.complex_(const(math.pi / 2, re), nan), out)
        elif name == "acosh":  # +0 + nan j -> nan + pi/2 j; other finite + nan j -> nan + nan j
            out = ops.select(ops.and_(im_nan, ops.is_finite(re)), both_nan, out)
            out = ops.select(ops.and_(im_nan, re_zero),
                             ops.complex_(nan, const(math.pi / 2, re)), out)
        else:  # asinh: nan +- 0j -> nan +- 0j
            out = ops.select(ops.and_(re_nan, ops.eq(im, zero)), ops.complex_(nan, im), out)
        return out
    return lower


acos, acosh = _nan_parts(ops.acos, "acos"), _nan_parts(ops.acosh, "acosh")
asinh, atanh = _nan_parts(ops.asinh, "asinh"), _nan_parts(ops.atanh, "atanh")
tanh = _with_special(ops.tanh, {("0", _NOT_FINITE): ("re", "nan"),
                                ("inf", True): ("sign", "0 im"),  # the standard's sign
                                ("inf", _NOT_FINITE): ("sign", "0")})


def _log_base(base):
    def lower(z):  # each part scaled: a complex division would turn inf + 0j into inf + nan j
        out = log(z)
        re, im = ops.real(out), ops.imag(out)
        scale = const(1 / math.log(base), re)
        return ops.complex_(ops.mul(re, scale), ops.mul(im, scale))
    return lower


def exp2(z):
    return ops.exp(ops.mul(z, const(math.log(2), z)))


COMPLEX_UFUNCS = {
    np.add: ops.add, np.subtract: ops.sub, np.multiply: ops.mul, np.true_divide: ops.div,
    np.power: ops.pow_, np.float_power: ops.pow_, np.negative: ops.neg,
    np.positive: UFUNCS[np.positive], np.absolute: ops.abs_, np.sign: UFUNCS[np.sign],
    np.conjugate: ops.conj, np.square: UFUNCS[np.square], np.reciprocal: UFUNCS[np.reciprocal],
    np.sqrt: sqrt, np.exp: exp, np.exp2: exp2, np.expm1: expm1, np.log: log,
    np.log2: _log_base(2), np.log10: _log_base(10), np.log1p: _c99_log(ops.log1p),
    np.sin: ops.sin, np.cos: ops.cos, np.tan: ops.tan, np.arcsin: ops.asin,
    np.arccos: acos, np.arctan: ops.atan, np.sinh: sinh, np.cosh: cosh,
    np.tanh: tanh, np.arcsinh: asinh, np.arccosh: acosh, np.arctanh: atanh,
    np.isnan: isnan, np.isinf: isinf, np.isfinite: isfinite,
    np.equal: _compare(ops.eq), np.not_equal: _compare(ops.ne),
    np.logical_and: UFUNCS[np.logical_and], np.logical_or: UFUNCS[np.logical_or],
    np.logical_xor: UFUNCS[np.logical_xor], np.logical_not: UFUNCS[np.logical_not],
}


def lowering(ufunc, loop, nin):
    """The lowering for `ufunc` on these loop dtypes (complex ones from COMPLEX_UFUNCS)."""
    if not any(dt.is_complex(d) for d in loop[:nin]):
        lower = UFUNCS[ufunc]
        return lower.for_loop(loop) if type(lower) is ForBool else lower
    lower = COMPLEX_UFUNCS.get(ufunc)
    if lower is None:
        raise TypeError(f"lazyx.frontends.numpy: numpy.{ufunc.__name__} is not supported on "
                        f"complex arrays (loop {', '.join(loop)})")
    return lower


# ---------------------------------------------------------------- Array API functions

def real(node):
    return ops.real(node) if dt.is_complex(node.dtype) else node


def imag(node):
    return ops.imag(node) if dt.is_complex(node.dtype) else fill(0, node.dtype, node.shape)


def conj(node):
    return ops.conj(node) if dt.is_complex(node.dtype) else node


def angle(node, deg=False):
    """numpy.angle: atan2(imag, real) in the parts' float dtype (float64 for real ints)."""
    if not dt.is_complex(node.dtype):
        if not dt.is_float(node.dtype):
            node = ops.convert(node, dtype="float64")
        re, im = node, fill(0, node.dtype, node.shape)
    else:
        re, im = ops.real(node), ops.imag(node)
    out = ops.atan2(im, re)
    return ops.mul(out, const(180 / math.pi, out)) if deg else out

