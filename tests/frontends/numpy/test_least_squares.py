"""np.linalg.lstsq and np.polyfit on lazy arrays: lowered (they ran on NumPy, a counted
fallback that read every input), compared with NumPy on the same inputs. NumPy gives
residuals only when m > n and the rank is n, so lstsq reads that one fact (a counted
data-dependent sync); polyfit's rank warning reuses it."""
import inspect
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.numpy as lnp


def _same(got, want, tol):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, tol)
        return
    if not isinstance(want, np.ndarray) and not isinstance(want, np.generic):  # rcond
        assert got == want
        return
    got, want = np.asarray(got), np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _no_fallback():
    return lazyx.metrics()["fallback_ops"] == {}


@given(m=st.integers(1, 6), n=st.integers(1, 6), k=st.sampled_from([None, 1, 3]),
       dtype=st.sampled_from(["float32", "float64", "int64"]), deficient=st.booleans(),
       rcond=st.sampled_from([None, -1.0, 0.3]), seed=st.integers(0, 100))
@settings(max_examples=30, deadline=None)
def test_lstsq_matches_numpy(m, n, k, dtype, deficient, rcond, seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((m, n)) * 4).astype(dtype)
    if deficient and n > 1:
        a[:, -1] = a[:, 0]  # one rank down: no residuals even when m > n
    b = (rng.standard_normal((m,) if k is None else (m, k)) * 4).astype(dtype)
    want = np.linalg.lstsq(a, b, rcond=rcond)
    lazyx.reset_metrics()
    got = np.linalg.lstsq(lnp.asarray(a), lnp.asarray(b), rcond=rcond)
    assert _no_fallback()
    _same(tuple(got), tuple(want), 1e-4 if dtype == "float32" else 1e-8)
    assert lazyx.metrics()["sync_causes"].get("data_dependent", 0) == (1 if m > n else 0)


def test_lstsq_mixed_dtypes_compute_in_double():
    rng = np.random.default_rng(1)
    a, b = rng.random((7, 3)).astype(np.float32), rng.random(7)
    want = np.linalg.lstsq(a, b)
    _same(tuple(np.linalg.lstsq(lnp.asarray(a), lnp.asarray(b))), tuple(want), 1e-10)
    assert want[0].dtype == np.float64


@pytest.mark.parametrize("a,b", [
    (np.ones(3), np.ones(3)), (np.ones((3, 2)), np.ones((4,))),
    (np.ones((2, 3, 2)), np.ones((2, 3))), (np.ones((3, 2)), np.ones((3, 2, 2)))])
def test_lstsq_errors_are_numpys(a, b):
    with pytest.raises(np.linalg.LinAlgError) as eager:
        np.linalg.lstsq(a, b)
    lazyx.reset_metrics()
    with pytest.raises(np.linalg.LinAlgError) as lazy:
        np.linalg.lstsq(lnp.asarray(a), lnp.asarray(b))
    assert str(lazy.value) == str(eager.value)
    assert _no_fallback()


def test_lstsq_of_complex_or_empty_input_is_numpys_own():
    a = np.ones((3, 2), np.complex128)
    lazyx.reset_metrics()
    with pytest.warns(RuntimeWarning, match="numpy.linalg.lstsq has no lowering"):
        got = np.linalg.lstsq(lnp.asarray(a), lnp.asarray(np.ones(3)))
    _same(tuple(got), tuple(np.linalg.lstsq(a, np.ones(3))), 1e-12)
    assert lazyx.metrics()["fallback_ops"] == {"numpy.linalg.lstsq": 1}


X = np.linspace(-2, 3, 10)
Y = 3 * X ** 2 - 2 * X + 1 + np.random.default_rng(0).random(10)


@pytest.mark.parametrize("kwargs", [{}, {"full": True}, {"w": np.linspace(0.5, 1.5, 10)},
                                    {"cov": True}, {"cov": "unscaled"}, {"deg": 9},
                                    {"rcond": 1e-3}])
@pytest.mark.parametrize("two_d", [False, True])
def test_polyfit_matches_numpy(kwargs, two_d):
    kwargs = dict(kwargs)
    deg = kwargs.pop("deg", 2)
    y = np.stack([Y, -Y / 2], axis=1) if two_d else Y
    want = np.polyfit(X, y, deg, **kwargs)
    lazyx.reset_metrics()
    got = np.polyfit(lnp.asarray(X), lnp.asarray(y), deg, **kwargs)
    assert _no_fallback()
    _same(got, want, 1e-8)


def test_polyfit_float32_stays_float32():
    x, y = X.astype(np.float32), Y.astype(np.float32)
    _same(np.polyfit(lnp.asarray(x), lnp.asarray(y), 2), np.polyfit(x, y, 2), 1e-4)


@pytest.mark.parametrize("deg,points", [(12, 10), (3, 4), (2, 4)])
def test_polyfit_warns_of_lost_rank_as_numpy_at_the_users_line(deg, points):
    x = X[:points].copy()
    if deg == 3:  # as many points as coefficients, two of them equal: rank short by one
        x[1] = x[0]
    y = Y[:points]
    with warnings.catch_warnings(record=True) as eager:
        warnings.simplefilter("always")
        want = np.polyfit(x, y, deg)
    with warnings.catch_warnings(record=True) as lazy:
        warnings.simplefilter("always")
        got = np.polyfit(lnp.asarray(x), lnp.asarray(y), deg)
        line = inspect.currentframe().f_lineno - 1
    assert [w.category for w in lazy] == [w.category for w in eager]
    if eager:
        assert (lazy[0].filename, lazy[0].lineno) == (__file__, line)
    else:
        _same(got, want, 1e-8)


@pytest.mark.parametrize("x,y,deg,error", [
    (np.ones((2, 2)), np.ones(2), 1, TypeError), (np.ones(0), np.ones(0), 1, TypeError),
    (np.ones(3), np.ones((3, 1, 1)), 1, TypeError), (np.ones(3), np.ones(4), 1, TypeError),
    (np.ones(3), np.ones(3), -1, ValueError)])
def test_polyfit_errors_are_numpys(x, y, deg, error):
    with pytest.raises(error) as eager:
        np.polyfit(x, y, deg)
    with pytest.raises(error) as lazy:
        np.polyfit(lnp.asarray(x), lnp.asarray(y), deg)
    assert str(lazy.value) == str(eager.value)
