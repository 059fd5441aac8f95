"""np.polyval, np.vander, np.interp and np.polyfit, lowered. NumPy's own versions start with
`asarray`, a host read of a lazy operand (a counted fallback and a mid-step sync); these
follow NumPy's steps and formulas with NumPy calls on lazy arrays, which dispatch back to
lazyx."""
import numpy as np

from ...core import runtime, source
from ._base import LazyArray
from ._fallback import run_eagerly
from ._promote import as_lazy


def polyval(p, x):
    if isinstance(p, np.poly1d) or isinstance(x, np.poly1d):
        return run_eagerly(np.polyval, "numpy.polyval", (p, x), {})
    coefficients = p if isinstance(p, LazyArray) else np.asarray(p)
    x = as_lazy(x)
    y = np.zeros_like(x)
    for c in coefficients:  # Horner's rule, in NumPy's order (so its rounding)
        y = y * x + c
    return y


def vander(x, N=None, increasing=False):
    v = as_lazy(x)
    if v.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = v.shape[0] if N is None else N
    dtype = np.promote_types(v.dtype, int)
    v = v.astype(dtype)
    columns = [np.ones_like(v)] if n > 0 else []
    for _ in range(n - 1):  # each power from the last, as NumPy's multiply.accumulate
        columns.append(columns[-1] * v if len(columns) > 1 else v)
    if not increasing:
        columns.reverse()
    if not columns:
        return as_lazy(np.empty((v.shape[0], 0), dtype))
    return np.stack(columns, axis=1)


def interp(x, xp, fp, left=None, right=None, period=None):
    args = (x, xp, fp)
    kwargs = dict(left=left, right=right, period=period)
    xs, xps, fps = as_lazy(x), as_lazy(xp), as_lazy(fp)
    if fps.dtype.kind == "c" or xs.dtype.kind == "c" or xps.ndim != 1 or fps.ndim != 1 or \
            xps.shape[0] != fps.shape[0] or xps.shape[0] == 0 or \
            any(isinstance(v, LazyArray) or np.ndim(v) for v in kwargs.values() if v is not None) \
            or period == 0:
        return run_eagerly(np.interp, "numpy.interp", args, kwargs)  # NumPy's errors, complex
    xs, xps, fps = (a.astype(np.float64) for a in (xs, xps, fps))  # NumPy computes in double
    if period is not None:  # NumPy's steps: one period, sorted, padded by a point each side
        period = abs(period)
        left = right = None
        xs, xps = np.mod(xs, period), np.mod(xps, period)
        order = np.argsort(xps)
        xps, fps = xps[order], fps[order]
        xps = np.concatenate((xps[-1:] - period, xps, xps[0:1] + period))
        fps = np.concatenate((fps[-1:], fps, fps[0:1]))
    low = fps[0] if left is None else np.float64(left)
    high = fps[-1] if right is None else np.float64(right)
    n = xps.shape[0]
    if n == 1:  # NumPy's single-point rule: a NaN x gets fp[0] too
        return np.where(xs < xps[0], low, np.where(xs > xps[0], high, fps[0]))
    # NumPy's compiled interp: j with xp[j] <= x < xp[j+1], the line through j and j+1, and
    # from j+1 when that is NaN (an infinite fp), then the flat value
    j = np.searchsorted(xps, xs, side="right") - 1
    inner = np.clip(j, 0, n - 2)
    x0, x1, y0, y1 = xps[inner], xps[inner + 1], fps[inner], fps[inner + 1]
    slope = (y1 - y0) / (x1 - x0)
    y = slope * (xs - x0) + y0
    y = np.where(np.isnan(y), slope * (xs - x1) + y1, y)
    y = np.where(np.isnan(y) & (y0 == y1), y0, y)
    y = np.where(xs == x0, y0, y)
    y = np.where(j == n - 1, fps[-1], y)
    y = np.where(j < 0, low, y)
    y = np.where(xs > xps[-1], high, y)
    return np.where(np.isnan(xs), xs, y)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """NumPy's steps (scaled Vandermonde columns, least squares, the scale undone) on lazy
    arrays. Its warning that the fit lost rank needs the rank: with more points than
    coefficients the least squares' own read of it answers (residuals exist only at full
    rank); with fewer the rank is short by construction; with as many, one more read."""
    order = int(deg) + 1
    x, y = as_lazy(x) + 0.0, as_lazy(y) + 0.0
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = len(x) * np.finfo(x.dtype).eps
    lhs, rhs = np.vander(x, order), y
    if w is not None:
        w = as_lazy(w) + 0.0
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, np.newaxis]
        rhs = rhs * (w[:, np.newaxis] if rhs.ndim == 2 else w)
    scale = np.sqrt((lhs * lhs).sum(axis=0))
    lhs = lhs / scale
    c, resids, rank, s = np.linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if not full and _lost_rank(len(x), order, resids, rank):
        source.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning,
                    source.user_line())
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    base = np.linalg.inv(np.dot(lhs.T, lhs)) / np.outer(scale, scale)
    if cov == "unscaled":
        fac = 1
    else:
        if len(x) <= order:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        fac = resids / (len(x) - order)
    return (c, base * fac) if y.ndim == 1 else (c, base[:, :, np.newaxis] * fac)


def _lost_rank(points, order, resids, rank):
    if points > order:
        return resids.shape[0] == 0
    if points < order:
        return True
    return bool(runtime.to_host(rank.__lazyx_handle__, cause="data_dependent") != order) \
        if isinstance(rank, LazyArray) else rank != order


FUNCTIONS = {np.polyval: polyval, np.vander: vander, np.interp: interp, np.polyfit: polyfit}
