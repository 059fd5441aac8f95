"""The regularized incomplete gamma functions for the reference interpreter: P(a, x) (igamma),
Q(a, x) = 1 - P (igammac) and dP/da (igamma_grad_a), computed in float64 and rounded to the
operands' dtype.

Cephes' method, which XLA's, torch's and TF's kernels also start from: P by its power series
where x < a or x < 1, else Q by its continued fraction, each summed until its terms stop
changing the result. dP/da is an extrapolated central difference of that float64 P (about
eleven correct digits; XLA differentiates its series). Defined for a > 0 and
x >= 0 (P(a, 0) = 0, P(a, inf) = 1); NaN elsewhere, where each frontend puts its framework's
own answers (core/compose.incomplete_gamma)."""
import math

import numpy as np

_EPS = np.finfo(np.float64).eps
_BIG, _BIG_INV = 4503599627370496.0, 2.22044604925031308085e-16
_MAX_TERMS = 20000  # (the series for a = x = 1e8 needs about 1e4)

_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _log_prefactor(a, x):
    """log(x**a * exp(-x) / Gamma(a))."""
    return a * np.log(x) - x - _lgamma(a)


def _series(a, x):
    """P(a, x) by sum_n x**n / ((a + 1) ... (a + n)), for x < max(a, 1)."""
    r, c, total = a.copy(), np.ones_like(a), np.ones_like(a)
    active = np.ones(a.shape, bool)
    for _ in range(_MAX_TERMS):
        if not active.any():
            break
        r = r + 1
        c = np.where(active, c * x / r, 0.0)
        total = total + c
        active &= c > total * _EPS
    return total * np.exp(_log_prefactor(a, x)) / a


def _continued_fraction(a, x):
    """Q(a, x) by its continued fraction (cephes' igamc), for x >= max(a, 1)."""
    y, z, c = 1 - a, x + (1 - a) + 1, np.zeros_like(a)
    pkm2, qkm2, pkm1, qkm1 = np.ones_like(a), x.copy(), x + 1, z * x
    answer = pkm1 / qkm1
    active = np.ones(a.shape, bool)
    for _ in range(_MAX_TERMS):
        if not active.any():
            break
        c, y, z = c + 1, y + 1, z + 2
        yc = y * c
        pk, qk = pkm1 * z - pkm2 * yc, qkm1 * z - qkm2 * yc
        ok = qk != 0
        r = np.where(ok, pk / np.where(ok, qk, 1), answer)
        change = np.where(ok, np.abs((answer - r) / np.where(r != 0, r, 1)), 1.0)
        answer = np.where(active, r, answer)
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        big = np.abs(pk) > _BIG
        pkm2, pkm1 = np.where(big, pkm2 * _BIG_INV, pkm2), np.where(big, pkm1 * _BIG_INV, pkm1)
        qkm2, qkm1 = np.where(big, qkm2 * _BIG_INV, qkm2), np.where(big, qkm1 * _BIG_INV, qkm1)
        active &= change > _EPS
    return answer * np.exp(_log_prefactor(a, x))


def _p_and_q(a, x):
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    p, q = np.full(a.shape, np.nan), np.full(a.shape, np.nan)
    valid = (a > 0) & np.isfinite(a) & (x >= 0)
    zero, infinite = valid & (x == 0), valid & np.isinf(x)
    p[zero], q[zero], p[infinite], q[infinite] = 0.0, 1.0, 1.0, 0.0
    inner = valid & ~zero & ~infinite
    by_series = inner & ((x < a) | (x < 1))
    by_fraction = inner & ~by_series
    if by_series.any():
        p[by_series] = _series(a[by_series], x[by_series])
        q[by_series] = 1 - p[by_series]
    if by_fraction.any():
        q[by_fraction] = _continued_fraction(a[by_fraction], x[by_fraction])
        p[by_fraction] = 1 - q[by_fraction]
    return p, q


def igamma(a, x):
    return _p_and_q(a, x)[0].astype(a.dtype)


def igammac(a, x):
    return _p_and_q(a, x)[1].astype(a.dtype)


def igamma_grad_a(a, x):
    """Richardson's extrapolation of two central differences (error h**4 P^(5)), with steps
    wide enough that P's own rounding (1e-16) stays below 1e-12 in the quotient."""
    wide = np.asarray(a, np.float64)
    h = np.maximum(np.abs(wide), 1.0) * 1e-3
    h = np.where(wide - h > 0, h, wide / 4)  # (stays inside a > 0)

    def central(step):
        return (_p_and_q(wide + step, x)[0] - _p_and_q(wide - step, x)[0]) / (2 * step)
    return ((4 * central(h / 2) - central(h)) / 3).astype(a.dtype)


def _scipy_special(op):
    """SciPy's special functions, which these two primitives alone need on this backend (jax
    depends on SciPy, so the xla extra brings it; README, "What you need")."""
    try:
        from scipy import special
    except ImportError as err:
        raise ImportError(f"lazyx's reference backend computes the {op} primitive with "
                          f"SciPy, which is not installed: pip install scipy (or run on the "
                          f"xla backend)") from err
    return special


def zeta(x, q):
    """The Hurwitz zeta function, SciPy's (Cephes') in float64."""
    special = _scipy_special("zeta")
    return special.zeta(x.astype(np.float64), q.astype(np.float64)).astype(x.dtype)


def betainc(a, b, x):
    """The regularized incomplete beta function, SciPy's (Cephes' incbet) in float64."""
    special = _scipy_special("betainc")
    return special.betainc(a.astype(np.float64), b.astype(np.float64),
                           x.astype(np.float64)).astype(x.dtype)
