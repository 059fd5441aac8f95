"""scipy.special's ufuncs as lowerings: one table {ufunc: lowering}, node in, node out.

scipy.special's functions are NumPy ufuncs, so they reach ``LazyArray.__array_ufunc__`` and
the entry applies their loop dtypes as for NumPy's own (scipy's loop list, read by
``ufunc.resolve_dtypes``: float32 in -> float32 out, integers -> float64). Importing
scipy.special takes most of a second, so lazyx never does it: the table is filled the first
time a ufunc outside NumPy's table arrives while scipy.special is already imported (a caller
holding one of its ufuncs has imported it). Edge values follow scipy's C code: expit/logit at
0, 1 and +-inf, xlogy(0, 0) = 0, ndtri at 0 and 1, digamma's signed poles at +-0.
"""
import math
import sys
import threading

from ...core import cephes, compose, ops
from ...core.tables import Table
from ._ufuncs import const, copysign

SPECIAL = Table("lazyx.frontends.numpy SPECIAL (scipy.special's ufuncs)")
_LOCK = threading.Lock()
_filled = []  # [True] once SPECIAL holds scipy.special's entries


def _in_float64(fn):
    """scipy's float32 loops of its Cephes functions compute in double and round once; so
    does this (XLA's float32 lgamma(1) is 5e-7, not 0)."""
    def lower(*xs):
        if xs[0].dtype == "float64":
            return fn(*xs)
        wide = fn(*[ops.convert(x, dtype="float64") for x in xs])
        return ops.convert(wide, dtype=xs[0].dtype)
    lower.__name__ = fn.__name__
    return lower


def _isnan(x):
    return ops.ne(x, x)


def logit(p):
    # log(p / (1 - p)) loses digits near 1/2; scipy takes log1p(s) - log1p(-s) there
    direct = ops.log(ops.div(p, ops.sub(const(1, p), p)))
    s = ops.mul(const(2, p), ops.sub(p, const(0.5, p)))
    central = ops.sub(ops.log1p(s), ops.log1p(ops.neg(s)))
    near_half = ops.and_(ops.ge(p, const(0.3, p)), ops.le(p, const(0.65, p)))
    return ops.select(near_half, central, direct)


def log_expit(x):
    below = ops.sub(x, ops.log1p(ops.exp(x)))
    above = ops.neg(ops.log1p(ops.exp(ops.neg(x))))
    return ops.select(ops.lt(x, const(0, x)), below, above)


def _erfc64(x):
    # 1 - erf(x) keeps every digit below 1/2; above, exp(-x^2) erfcx(x) keeps the tail's
    tail = ops.mul(ops.exp(ops.neg(ops.mul(x, x))), cephes.erfcx(x))
    return ops.select(ops.lt(x, const(0.5, x)), ops.sub(const(1, x), ops.erf(x)), tail)


def _ndtr64(x):
    return ops.mul(const(0.5, x), _erfc64(ops.mul(x, const(-math.sqrt(0.5), x))))


def _erfcinv64(y):
    # scipy's: -ndtri(y / 2) / sqrt(2), accurate for tiny y where 1 - y is not
    return ops.mul(cephes.ndtri(ops.mul(y, const(0.5, y))), const(-math.sqrt(0.5), y))


def _gammaln64(x):
    return ops.select(ops.eq(x, const(-math.inf, x)), x, ops.lgamma(x))  # scipy's -inf there


def _digamma64(x):
    # the pole at 0 is signed: digamma(+0) = -inf, digamma(-0) = +inf
    pole = ops.neg(copysign(const(math.inf, x), x))
    return ops.select(ops.eq(x, const(0, x)), pole, ops.digamma(x))


def _zero_where_x_is_zero(log):
    def lower(x, y):
        zero = ops.and_(ops.eq(x, const(0, x)), ops.eq(y, y))  # xlogy(0, nan) stays nan
        return ops.select(zero, const(0, x), ops.mul(x, log(y)))
    return lower


def entr(x):
    value = ops.select(ops.eq(x, const(0, x)), const(0, x), ops.neg(ops.mul(x, ops.log(x))))
    return ops.select(ops.lt(x, const(0, x)), const(-math.inf, x), value)


def _relative_entropy(positive, at_zero):
    """scipy's rel_entr / kl_div: `positive(x, y)` where both are > 0, `at_zero(y)` where
    x = 0 <= y, inf elsewhere, nan where either is."""
    def lower(x, y):
        zero = const(0, x)
        value = ops.select(ops.and_(ops.eq(x, zero), ops.ge(y, zero)), at_zero(y),
                           const(math.inf, x))
        value = ops.select(ops.and_(ops.gt(x, zero), ops.gt(y, zero)), positive(x, y), value)
        return ops.select(ops.or_(_isnan(x), _isnan(y)), ops.add(x, y), value)
    return lower


def _x_log_ratio(x, y):
    return ops.mul(x, ops.log(ops.div(x, y)))


rel_entr = _relative_entropy(_x_log_ratio, lambda y: const(0, y))
kl_div = _relative_entropy(lambda x, y: ops.add(ops.sub(_x_log_ratio(x, y), x), y),
                           lambda y: y)

# scipy.special name -> lowering (names looked up on the imported module: a scipy without
# one of them simply lacks that entry)
_LOWERINGS = {
    "expit": ops.logistic, "logit": logit, "log_expit": log_expit,
    "erf": ops.erf, "erfc": _in_float64(_erfc64), "erfcx": cephes.erfcx,
    "erfinv": ops.erf_inv, "erfcinv": _in_float64(_erfcinv64),
    "ndtr": _in_float64(_ndtr64), "log_ndtr": cephes.log_ndtr,
    "ndtri": _in_float64(cephes.ndtri),
    "gammaln": _in_float64(_gammaln64), "digamma": _in_float64(_digamma64),
    "psi": _in_float64(_digamma64),
    "xlogy": _zero_where_x_is_zero(ops.log), "xlog1py": _zero_where_x_is_zero(ops.log1p),
    "entr": entr, "rel_entr": rel_entr, "kl_div": kl_div,
    "gammainc": lambda a, x: compose.incomplete_gamma(a, x, False, "scipy"),
    "gammaincc": lambda a, x: compose.incomplete_gamma(a, x, True, "scipy"),
    "expm1": ops.expm1, "log1p": ops.log1p, "exp2": ops.exp2, "cbrt": ops.cbrt,
    # (not j0/j1/y0/y1: core.cephes evaluates them as torch's kernel does, up to 3e-7 off
    # scipy's near x = 5; scipy runs them, a counted fallback)
    **{name: _in_float64(getattr(cephes, name)) for name in (
        "i0", "i0e", "i1", "i1e", "k0", "k0e", "k1", "k1e")},
}


def lowers(ufunc):
    """True when SPECIAL has a lowering for `ufunc` (filling it on first need)."""
    if ufunc in SPECIAL:
        return True
    if _filled or "scipy.special" not in sys.modules:
        return False
    _fill(sys.modules["scipy.special"])
    return ufunc in SPECIAL


def _fill(special):
    with _LOCK:
        if _filled or getattr(special, "expit", None) is None:  # or scipy.special is mid-import
            return
        for name, lower in _LOWERINGS.items():
            ufunc = getattr(special, name, None)
            if ufunc is not None and ufunc not in SPECIAL:  # psi is digamma's other name
                SPECIAL.add(ufunc, lower, __name__)
        _filled.append(True)


def name(ufunc):
    """The name fallbacks and warnings give `ufunc`: scipy.special.<name> for scipy's."""
    special = sys.modules.get("scipy.special")
    if special is not None and getattr(special, ufunc.__name__, None) is ufunc:
        return f"scipy.special.{ufunc.__name__}"
    return f"numpy.{ufunc.__name__}"
