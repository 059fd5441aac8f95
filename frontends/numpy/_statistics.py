"""NumPy's statistics functions written in Python (numpy/lib), lowered: median, quantile,
percentile, the NaN-ignoring reductions, average with weights, ptp, cov, corrcoef, trapezoid,
fliplr/flipud/rot90.

NumPy's own implementations start with `np.asanyarray(a)`, which reads a lazy array on the
host, so each of these was a counted fallback: a sync in the middle of the step and the rest
of it run by NumPy. These are the same formulas written with NumPy calls on lazy arrays --
each call dispatches back to lazyx (__array_function__ / __array_ufunc__) -- so the graph stays
whole. Options they do not take (another interpolation method, out=, a lazy q) go to the
counted fallback, as before.
"""
import numpy as np

from ._base import LazyArray
from ._fallback import run_eagerly
from ._promote import as_lazy


def _fallback(fn, name, args, kwargs):
    # NumPy's defaults for where/mean/correction are its _NoValue, not None: pass only those given
    kwargs = {k: v for k, v in kwargs.items()
              if v is not None or k not in ("where", "mean", "correction")}
    return run_eagerly(fn, f"numpy.{name}", args, kwargs)


# ---------------------------------------------------------------- order statistics

def _lerp(a, b, t):
    """NumPy's linear interpolation between neighbours (numpy/lib/_function_base_impl._lerp):
    from b downwards when t >= 0.5, which keeps the result monotone in t."""
    diff = b - a
    return np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


def _quantile(a, q, axis, keepdims):
    """The 'linear' quantile of `a` at host fractions `q` (NumPy's default method), computed
    as NumPy does: a Python-number q in a float array's dtype, an array q in its own; a slice
    holding a NaN gives NaN."""
    x = as_lazy(a)
    if x.dtype.kind not in "biuf":
        raise TypeError
    if isinstance(q, (int, float)) and x.dtype.kind == "f":
        q = np.asarray(q, dtype=x.dtype)
    else:
        q = np.asarray(q)
    work, axes = _slices_last(x, axis)
    n = work.shape[-1]
    if n == 0:
        raise TypeError  # NumPy's own warning and NaN
    ordered = np.sort(work, axis=-1)  # NaN last
    index = q * (n - 1)
    below = np.floor(index)  # (in q's dtype, as NumPy keeps it for the interpolation weight)
    lo = below.astype(np.intp)
    hi = np.minimum(lo + 1, n - 1)
    gamma = np.asarray(index - below).ravel()
    out = _lerp(np.take(ordered, lo.ravel(), axis=-1), np.take(ordered, hi.ravel(), axis=-1),
                gamma)
    if ordered.dtype.kind == "f":  # a NaN in the slice
        out = np.where(np.isnan(ordered[..., -1:]), np.nan, out)
    return _quantile_layout(out, q, axes, keepdims)


def _given(**kwargs):
    """The keyword arguments the caller gave (NumPy's defaults left out: some, interpolation=
    for one, are not even accepted any more)."""
    defaults = {"out": None, "overwrite_input": False, "method": "linear", "keepdims": False,
                "weights": None, "interpolation": None, "axis": None}
    return {k: v for k, v in kwargs.items() if k not in defaults or v is not defaults[k]}


def _nan_quantile(a, q, axis, keepdims):
    """_quantile of each slice's non-NaN values (NumPy's nanquantile): the interpolation
    index is per slice, q * (count - 1), gathered from the sorted slice (NaN last); a slice
    of NaNs only gives NaN."""
    x = as_lazy(a)
    if x.dtype.kind != "f":
        return _quantile(a, q, axis, keepdims)
    q = np.asarray(q, dtype=x.dtype) if isinstance(q, (int, float)) else np.asarray(q)
    work, axes = _slices_last(x, axis)
    ordered = np.sort(work, axis=-1)
    valid = np.sum(~np.isnan(work), axis=-1, keepdims=True)
    last = valid - 1
    index = last.astype(q.dtype) * q.ravel()
    below = np.floor(index)
    lo = np.maximum(below.astype(np.intp), 0)
    hi = np.maximum(np.minimum(lo + 1, last), 0)
    out = _lerp(np.take_along_axis(ordered, lo, axis=-1),
                np.take_along_axis(ordered, hi, axis=-1), index - below)
    out = np.where(valid == 0, np.nan, out)
    return _quantile_layout(out, q, axes, keepdims)


def _slices_last(x, axis):
    """(x with the reduced axes flattened into one last axis, the reduced axes)."""
    if axis is None:
        return x.reshape(-1), tuple(range(x.ndim))
    axes = tuple(sorted(d % x.ndim for d in np.atleast_1d(axis).tolist()))
    rest = [d for d in range(x.ndim) if d not in axes]
    work = np.transpose(x, rest + list(axes))
    return work.reshape(work.shape[:len(rest)] + (-1,)), axes


def _quantile_layout(out, q, axes, keepdims):
    """(..., q.size) results in NumPy's layout: q's axes first, reduced axes kept if asked."""
    out = out.reshape(out.shape[:-1] + q.shape)
    if q.ndim:
        out = np.moveaxis(out, list(range(out.ndim - q.ndim, out.ndim)), list(range(q.ndim)))
    if keepdims:
        for d in axes:
            out = np.expand_dims(out, q.ndim + d)
    return out


def _nan_variant(plain, lowering, name):
    def fn(a, q, axis=None, out=None, overwrite_input=False, method="linear",
           keepdims=False, **more):
        given = _given(axis=axis, out=out, overwrite_input=overwrite_input, method=method,
                       keepdims=keepdims, **more)
        scale = 100 if name == "nanpercentile" else 1
        if set(given) - {"axis", "keepdims", "overwrite_input"} or \
                isinstance(q, LazyArray) or not as_lazy(a).size or \
                not np.all((np.asarray(q) >= 0) & (np.asarray(q) <= scale)):
            return _fallback(plain, name, (a, q), given)
        if scale != 1:
            q = q / scale if isinstance(q, (int, float)) else np.true_divide(np.asarray(q),
                                                                             scale)
        return lowering(a, q, axis, keepdims)
    return fn


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if out is not None or not as_lazy(a).size:
        return _fallback(np.nanmedian, "nanmedian", (a,), dict(axis=axis, out=out,
                                                               keepdims=keepdims))
    return _nan_quantile(a, 0.5, axis, keepdims)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, **more):
    given = _given(axis=axis, out=out, overwrite_input=overwrite_input, method=method,
                   keepdims=keepdims, **more)
    if set(given) - {"axis", "keepdims", "overwrite_input"} or isinstance(q, LazyArray) or \
            not np.all((np.asarray(q) >= 0) & (np.asarray(q) <= 1)):
        return _fallback(np.quantile, "quantile", (a, q), given)
    try:
        return _quantile(a, q, axis, keepdims)
    except TypeError:
        return _fallback(np.quantile, "quantile", (a, q), given)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, **more):
    given = _given(axis=axis, out=out, overwrite_input=overwrite_input, method=method,
                   keepdims=keepdims, **more)
    if isinstance(q, LazyArray) or not np.all((np.asarray(q) >= 0) & (np.asarray(q) <= 100)):
        return _fallback(np.percentile, "percentile", (a, q), given)
    # NumPy's q / 100 (a Python number stays one: it takes the array's float dtype)
    q = q / 100 if isinstance(q, (int, float)) else np.true_divide(np.asarray(q), 100)
    return quantile(a, q, **given)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    # an empty slice: NumPy's median gives NaN with its "Mean of empty slice" warning, where
    # its quantile (which the lowering falls back to) raises IndexError
    if out is not None or not _slices_last(as_lazy(a), axis)[0].shape[-1]:
        return _fallback(np.median, "median", (a,), dict(axis=axis, out=out,
                                                         keepdims=keepdims))
    return quantile(a, 0.5, axis, keepdims=keepdims)


# ---------------------------------------------------------------- NaN-ignoring reductions

def _nan_extreme(reduce, name):
    def fn(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        x = as_lazy(a)
        if out is not None or initial is not None or where is not None:
            return _fallback(getattr(np, name), name, (a,), dict(
                axis=axis, out=out, keepdims=keepdims, initial=initial, where=where))
        if x.dtype.kind != "f":
            return reduce(x, axis=axis, keepdims=keepdims)
        nan = np.isnan(x)
        fill = -np.inf if reduce is np.max else np.inf
        result = reduce(np.where(nan, fill, x), axis=axis, keepdims=keepdims)
        return np.where(np.all(nan, axis=axis, keepdims=keepdims), np.nan, result)
    return fn


def _nan_moments(a, axis, dtype, keepdims):
    """(x with NaNs as 0, count of non-NaN values) in the computation's dtype."""
    x = as_lazy(a)
    if x.dtype.kind in "biu":
        x = x.astype(dtype or np.float64)
    elif dtype is not None:
        x = x.astype(dtype)
    nan = np.isnan(x)
    kept = np.where(nan, 0, x)
    count = np.sum(~nan, axis=axis, keepdims=keepdims, dtype=np.intp)
    return kept, nan, count


def _divide_by_count(total, count):
    """NumPy's total / count written back into total's dtype (np.true_divide(..., out=total,
    casting='unsafe'): a float32 total is divided in float64, then rounded to float32)."""
    quotient = total.astype(np.float64) / count
    return quotient.astype(total.dtype) if total.dtype != quotient.dtype else quotient


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    if out is not None or where is not None:
        return _fallback(np.nanmean, "nanmean", (a,), dict(
            axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where))
    kept, _, count = _nan_moments(a, axis, dtype, keepdims)
    return _divide_by_count(np.sum(kept, axis=axis, keepdims=keepdims), count)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    if out is not None or where is not None or mean is not None:
        return _fallback(np.nanvar, "nanvar", (a,), dict(
            axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where,
            mean=mean, correction=correction))
    ddof = ddof if correction is None else correction
    kept, nan, count = _nan_moments(a, axis, dtype, keepdims)
    centre = _divide_by_count(np.sum(kept, axis=axis, keepdims=True),
                              np.sum(~nan, axis=axis, keepdims=True, dtype=np.intp))
    dev = np.where(nan, 0, kept - centre)
    squares = np.sum(dev * dev, axis=axis, keepdims=keepdims)
    dof = count - ddof
    return np.where(dof <= 0, np.nan, _divide_by_count(squares, dof))  # NumPy's NaN there


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    if out is not None or where is not None or mean is not None:
        return _fallback(np.nanstd, "nanstd", (a,), dict(
            axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where,
            mean=mean, correction=correction))
    return np.sqrt(nanvar(a, axis, dtype, None, ddof, keepdims, correction=correction))


# ---------------------------------------------------------------- weighted and spread

def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    x = as_lazy(a)
    if weights is None:
        avg = np.mean(x, axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        scale = np.full(np.shape(avg), x.size / max(np.size(avg), 1), dtype=avg.dtype)
        return avg, as_lazy(scale)
    if not isinstance(weights, LazyArray):  # NumPy's check, where the weights are known
        host = np.asarray(weights)
        if np.any(host.sum(axis=axis if host.shape == x.shape else None) == 0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    w = as_lazy(weights)
    if w.shape != x.shape:
        if axis is None or w.ndim != 1 or w.shape[0] != x.shape[axis]:
            return _fallback(np.average, "average", (a,), dict(
                axis=axis, weights=weights, returned=returned, keepdims=keepdims))
        shape = [1] * x.ndim
        shape[axis % x.ndim] = w.shape[0]
        w = np.broadcast_to(w.reshape(shape), x.shape)
    dtype = np.result_type(x.dtype, w.dtype, np.float64) if x.dtype.kind in "biu" else \
        np.result_type(x.dtype, w.dtype)
    total = np.sum(w.astype(dtype), axis=axis, keepdims=keepdims)
    avg = np.sum(x.astype(dtype) * w.astype(dtype), axis=axis, keepdims=keepdims) / total
    return (avg, np.broadcast_to(total, np.shape(avg))) if returned else avg


def ptp(a, axis=None, out=None, keepdims=False):
    if out is not None:
        return _fallback(np.ptp, "ptp", (a,), dict(axis=axis, out=out, keepdims=keepdims))
    x = as_lazy(a)
    return np.max(x, axis=axis, keepdims=keepdims) - np.min(x, axis=axis, keepdims=keepdims)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """numpy.cov without weights, step by step as NumPy computes it (its product by the
    reciprocal of the degrees of freedom included)."""
    x = as_lazy(m)
    if fweights is not None or aweights is not None or x.ndim > 2 or x.dtype.kind == "c" \
            or (y is not None and (np.ndim(y) > 2 or np.iscomplexobj(np.empty(0, np.result_type(
                as_lazy(y).dtype))))):
        return _fallback(np.cov, "cov", (m, y), dict(
            rowvar=rowvar, bias=bias, ddof=ddof, fweights=fweights, aweights=aweights,
            dtype=dtype))
    if dtype is None:
        dtype = np.result_type(x.dtype, np.float64) if y is None else \
            np.result_type(x.dtype, as_lazy(y).dtype, np.float64)
    data = np.atleast_2d(x).astype(dtype)
    if not rowvar and x.ndim != 1:
        data = data.T
    if data.shape[0] == 0:
        return _fallback(np.cov, "cov", (m, y), dict(rowvar=rowvar, bias=bias, ddof=ddof))
    if y is not None:
        other = np.atleast_2d(as_lazy(y)).astype(dtype)
        if not rowvar and other.shape[0] != 1:
            other = other.T
        data = np.concatenate((data, other), axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    fact = data.shape[1] - ddof
    centred = data - np.mean(data, axis=1)[:, None]
    with np.errstate(divide="ignore"):
        scale = np.true_divide(1, max(fact, 0.0))
    c = np.matmul(centred, centred.T) * scale
    return np.squeeze(c)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if not isinstance(c, LazyArray) or c.ndim == 0:
        return c / c
    d = np.diagonal(c)
    std = np.sqrt(d)
    c = c / std[:, None] / std[None, :]
    return np.clip(c, -1, 1)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    values = as_lazy(y)
    axis = axis % values.ndim
    before = (slice(None),) * axis
    head, tail = values[before + (slice(1, None),)], values[before + (slice(None, -1),)]
    if x is None:
        step = dx
    else:
        step = np.diff(as_lazy(x), axis=-1 if np.ndim(x) == 1 else axis)
        if np.ndim(x) == 1:
            shape = [1] * values.ndim
            shape[axis] = step.shape[0]
            step = step.reshape(shape)
    return np.sum(step * (head + tail) / 2.0, axis=axis)


# ---------------------------------------------------------------- flips

def fliplr(m):
    if np.ndim(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return np.flip(m, axis=1)


def flipud(m):
    if np.ndim(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return np.flip(m, axis=0)


def rot90(m, k=1, axes=(0, 1)):
    x = as_lazy(m)
    axes = tuple(axes)
    if len(axes) != 2 or x.ndim < 2 or axes[0] % x.ndim == axes[1] % x.ndim:
        return _fallback(np.rot90, "rot90", (m,), dict(k=k, axes=axes))  # NumPy's errors
    k %= 4
    if k == 0:
        return x[...]
    if k == 2:
        return np.flip(np.flip(x, axes[0]), axes[1])
    order = list(range(x.ndim))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    if k == 1:
        return np.transpose(np.flip(x, axes[1]), order)
    return np.flip(np.transpose(x, order), axes[1])


# ---------------------------------------------------------------- membership and bins

def digitize(x, bins, right=False):
    """NumPy's digitize (searchsorted into monotonic bins); bins must be known on the host
    (NumPy checks their monotonicity first)."""
    values = as_lazy(x)
    if isinstance(bins, LazyArray) or values.dtype.kind == "c":
        return _fallback(np.digitize, "digitize", (x, bins), dict(right=right))
    bins = np.asarray(bins)
    increasing, decreasing = np.all(bins[1:] >= bins[:-1]), np.all(bins[1:] <= bins[:-1])
    if not (increasing or decreasing) or bins.ndim != 1:
        return _fallback(np.digitize, "digitize", (x, bins), dict(right=right))  # its error
    side = "left" if right else "right"
    if not increasing:  # decreasing
        return len(bins) - np.searchsorted(bins[::-1], values, side=side)
    return np.searchsorted(bins, values, side=side)


_ISIN_MAX = 1 << 24  # elements of the comparison table (element x test values)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """element == any test value (NumPy's result, whichever `kind` it would pick)."""
    values = as_lazy(element)
    tests = as_lazy(test_elements).reshape(-1)
    if values.size * tests.size > _ISIN_MAX or values.dtype.kind == "c":
        return _fallback(np.isin, "isin", (element, test_elements), dict(
            assume_unique=assume_unique, invert=invert, kind=kind))
    found = np.any(values[..., None] == tests, axis=-1)
    return ~found if invert else found


FUNCTIONS = {
    np.quantile: quantile, np.percentile: percentile, np.median: median,
    np.nanquantile: _nan_variant(np.nanquantile, _nan_quantile, "nanquantile"),
    np.nanpercentile: _nan_variant(np.nanpercentile, _nan_quantile, "nanpercentile"),
    np.nanmedian: nanmedian, np.digitize: digitize, np.isin: isin,
    np.nanmax: _nan_extreme(np.max, "nanmax"), np.nanmin: _nan_extreme(np.min, "nanmin"),
    np.nanmean: nanmean, np.nanvar: nanvar, np.nanstd: nanstd,
    np.average: average, np.ptp: ptp, np.cov: cov, np.corrcoef: corrcoef,
    np.trapezoid: trapezoid, np.fliplr: fliplr, np.flipud: flipud, np.rot90: rot90,
}
