"""NumPy's statistics functions on lazy arrays (frontends/numpy/_statistics.py) against NumPy:
same values, dtypes and shapes, and no fallback (before, each read its input on the host)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.numpy as lnp

def _arrays(dtype=np.float64, allow_nan=False, min_side=1):
    elements = st.integers(-50, 50)
    if np.dtype(dtype).kind == "f":
        elements = st.floats(-1e3, 1e3, width=32, allow_subnormal=False)
        if allow_nan:
            elements = st.one_of(elements, st.just(float("nan")))
    return hnp.arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=min_side,
                                              max_side=5), elements=elements)


def _axis_of(x, draw):
    return draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))


def _check(fn, *args, rtol=1e-6, atol=1e-9, lazy=(0,), same_dtype=True, **kwargs):
    """fn on NumPy arrays and on lazy ones (the arguments at `lazy`; q, weights stay host
    values): equal results, dtypes, shapes; no fallback."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's all-NaN / dof warnings
        want = fn(*args, **kwargs)
        lazyx.reset_metrics()
        got = fn(*[lnp.asarray(a) if k in lazy else a for k, a in enumerate(args)], **kwargs)
        fallbacks = lazyx.metrics()["fallback_ops"]
        got_host = [np.asarray(g) for g in (got if isinstance(got, tuple) else (got,))]
    assert fallbacks == {}, fallbacks
    for g, w in zip(got_host, want if isinstance(want, tuple) else (want,)):
        w = np.asarray(w)
        assert g.shape == w.shape and (g.dtype == w.dtype or not same_dtype), \
            (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int32]), st.booleans())
def test_median_quantile_percentile(data, dtype, keepdims):
    x = data.draw(_arrays(dtype, allow_nan=dtype != np.int32))
    axis = _axis_of(x, data.draw)
    _check(np.median, x, axis=axis, keepdims=keepdims)
    q = data.draw(st.one_of(st.floats(0, 1), st.lists(st.floats(0, 1), min_size=1,
                                                       max_size=3).map(np.array)))
    _check(np.quantile, x, q, axis=axis, keepdims=keepdims)
    _check(np.percentile, x, np.asarray(q) * 100 if isinstance(q, np.ndarray) else q * 100,
           axis=axis)


def test_quantile_over_several_axes_and_an_unsupported_method_falls_back():
    x = np.random.default_rng(0).normal(size=(3, 4, 5))
    _check(np.quantile, x, [0.1, 0.5], axis=(0, 2), keepdims=True)
    lazyx.reset_metrics()
    got = np.quantile(lnp.asarray(x), 0.3, method="nearest")
    assert lazyx.metrics()["fallback_ops"] == {"numpy.quantile": 1}
    np.testing.assert_array_equal(np.asarray(got), np.quantile(x, 0.3, method="nearest"))


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32]))
def test_nan_reductions(data, dtype):
    x = data.draw(_arrays(dtype, allow_nan=True))
    axis = _axis_of(x, data.draw)
    keepdims = data.draw(st.booleans())
    for fn in (np.nanmax, np.nanmin, np.nanmean):
        _check(fn, x, axis=axis, keepdims=keepdims, rtol=2e-6 if dtype == np.float32 else 1e-9)
    ddof = data.draw(st.integers(0, 2))
    for fn in (np.nanvar, np.nanstd):
        _check(fn, x, axis=axis, ddof=ddof, keepdims=keepdims,
               rtol=1e-4 if dtype == np.float32 else 1e-7, atol=1e-3)


@settings(max_examples=30, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int64]))
def test_average_ptp_trapezoid(data, dtype):
    x = data.draw(_arrays(dtype, min_side=2))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    w = data.draw(hnp.arrays(np.float64, (x.shape[axis],), elements=st.floats(0.5, 4)))
    tol = 1e-5 if dtype == np.float32 else 1e-6  # (sums in another order than NumPy's)
    _check(np.average, x, axis=axis, weights=w, rtol=tol)
    _check(np.average, x, axis=axis, weights=w, returned=True, rtol=tol)
    _check(np.average, x, axis=None, returned=True, rtol=tol)
    _check(np.ptp, x, axis=axis)
    if dtype != np.int64:
        _check(np.trapezoid, x, axis=axis, rtol=1e-5)
        _check(np.trapezoid, x, x=np.cumsum(w), axis=axis, rtol=1e-5)


def test_average_with_zero_weights_raises_numpys_error():
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        np.average(lnp.asarray(np.ones(3)), weights=np.zeros(3))


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(2, 6)),
                  elements=st.floats(-100, 100)), st.booleans())
def test_cov_and_corrcoef(x, rowvar):
    _check(np.cov, x, rowvar=rowvar, rtol=1e-7, atol=1e-7)
    _check(np.cov, x, rowvar=rowvar, bias=True, rtol=1e-7, atol=1e-7)
    _check(np.cov, x[0], x[-1], rtol=1e-7, atol=1e-7, lazy=(0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if np.all(np.std(x, axis=1 if rowvar else 0) > 1e-3):
            _check(np.corrcoef, x, rowvar=rowvar, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5])
@pytest.mark.parametrize("axes", [(0, 1), (1, 0), (2, 0)])
def test_flips(k, axes):
    x = np.arange(24.0).reshape(2, 3, 4)
    _check(np.rot90, x, k, axes)
    _check(np.fliplr, x)
    _check(np.flipud, x)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32]), st.booleans())
def test_nan_median_quantile_percentile(data, dtype, keepdims):
    x = data.draw(_arrays(dtype, allow_nan=True))
    axis = _axis_of(x, data.draw)
    _check(np.nanmedian, x, axis=axis, keepdims=keepdims)
    q = data.draw(st.one_of(st.floats(0, 1), st.lists(st.floats(0, 1), min_size=1,
                                                       max_size=3).map(np.array)))
    # NumPy gives a slice of NaNs only its array's dtype, whatever q's (a data-dependent
    # dtype a lazy result cannot have): values only, then
    plain = not np.isnan(x).all(axis=axis).any()
    _check(np.nanquantile, x, q, axis=axis, keepdims=keepdims, same_dtype=plain)
    _check(np.nanpercentile, x, np.asarray(q) * 100 if isinstance(q, np.ndarray) else q * 100,
           axis=axis, same_dtype=plain)


@settings(max_examples=40, deadline=None)
@given(_arrays(np.float64), hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(
    -1e3, 1e3, allow_subnormal=False)), st.booleans(), st.booleans())
def test_digitize_and_isin(x, bins, right, decreasing):
    """(No subnormal bins: XLA:CPU flushes them to zero, docs/numpy.md.)"""
    bins = np.sort(bins)[::-1] if decreasing else np.sort(bins)
    _check(np.digitize, x, bins, right=right)
    tests = np.concatenate([bins, x.ravel()[:2]])
    _check(np.isin, x, tests)
    _check(np.isin, x, tests, invert=True)
    _check(np.isin, x, tests, lazy=(0, 1))


@settings(max_examples=30, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int64]))
def test_cross_and_kron(data, dtype):
    elements = st.integers(-20, 20) if dtype == np.int64 else st.floats(-50, 50, width=32)
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    a = data.draw(hnp.arrays(dtype, batch + (3,), elements=elements))
    b = data.draw(hnp.arrays(dtype, batch + (3,), elements=elements))
    _check(np.cross, a, b, lazy=(0, 1), rtol=1e-5, atol=1e-4)
    _check(np.cross, a, b, lazy=(0,), axisc=0, rtol=1e-5, atol=1e-4)
    x = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, max_side=3),
                             elements=elements))
    y = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
                             elements=elements))
    _check(np.kron, x, y, lazy=(0, 1))
    _check(np.kron, x, y, lazy=(1,))


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int64]),
       st.sampled_from([1, 2]))
def test_gradient(data, dtype, edge_order):
    x = data.draw(_arrays(dtype, min_side=3))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    spacing = data.draw(st.one_of(st.just(()), st.tuples(st.sampled_from([0.5, 2, 3.0]))))
    _check(np.gradient, x, *spacing, axis=axis, edge_order=edge_order,
           rtol=1e-5 if dtype == np.float32 else 1e-9, atol=1e-3)
