"""np.add.at, subtract.at, multiply.at, maximum.at and minimum.at on a lazy array are one
scatter in the step's graph (no fallback, no sync), with NumPy's unbuffered semantics: an
index given twice combines twice. Compared with NumPy on random keys, values and dtypes."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.numpy as lnp

UFUNCS = [np.add, np.subtract, np.multiply, np.maximum, np.minimum]
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8]


def _values(dtype, shape, rng):
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-3, 3, shape).astype(dtype)
    if dtype is np.uint8:  # small: multiply.at of repeated indices stays in range... or wraps
        return rng.integers(0, 4, shape).astype(dtype)
    return rng.integers(-4, 5, shape).astype(dtype)


@settings(max_examples=60, deadline=None)
@given(ufunc=st.sampled_from(UFUNCS), dtype=st.sampled_from(DTYPES),
       rows=st.lists(st.integers(-4, 3), min_size=1, max_size=8),
       two_d=st.booleans(), lazy_value=st.booleans(), seed=st.integers(0, 2**16))
def test_matches_numpy(ufunc, dtype, rows, two_d, lazy_value, seed):
    rng = np.random.default_rng(seed)
    host = _values(dtype, (4, 3), rng)
    if two_d:  # a (rows, cols) pair of index arrays: one element per entry
        key = (np.array(rows), np.array([r % 3 for r in rows]))
        value = _values(dtype, (len(rows),), rng)
    else:      # rows: each entry selects a whole row
        key = np.array(rows)
        value = _values(dtype, (len(rows), 3), rng)
    want = host.copy()
    ufunc.at(want, key, value)
    lazy = lnp.asarray(host) * dtype(1)  # pending: the scatter joins the graph
    lazyx.reset_metrics()
    assert ufunc.at(lazy, key, lnp.asarray(value) if lazy_value else value) is None
    assert lazyx.metrics()["fallbacks"] == 0 and lazyx.metrics()["syncs"] == 0
    got = np.asarray(lazy)
    assert got.dtype == want.dtype
    if np.dtype(dtype).kind == "f":  # a repeated index sums in the scatter's order
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum])
def test_nan_propagates_as_in_numpy(ufunc):
    host = np.array([1.0, np.nan, 3.0], np.float32)
    want = host.copy()
    ufunc.at(want, [0, 1, 2, 2], np.array([np.nan, 5.0, 2.0, np.nan], np.float32))
    lazy = lnp.asarray(host)
    ufunc.at(lazy, [0, 1, 2, 2], np.array([np.nan, 5.0, 2.0, np.nan], np.float32))
    np.testing.assert_array_equal(np.asarray(lazy), want)


def test_python_numbers_and_scalar_keys():
    host = np.arange(6, dtype=np.int32)
    want, lazy = host.copy(), lnp.asarray(host)
    for fn in (lambda a: np.add.at(a, 2, 5), lambda a: np.multiply.at(a, [-1, -1], 3),
               lambda a: np.subtract.at(a, slice(0, 2), 1)):
        fn(want)
        fn(lazy)
    np.testing.assert_array_equal(np.asarray(lazy), want)
    assert lazyx.metrics()["fallback_ops"].get("numpy.add.at") is None


def test_out_of_bounds_raises_numpys_error():
    lazy = lnp.asarray(np.zeros(3, np.float32))
    with pytest.raises(IndexError, match="out of bounds"):
        np.add.at(lazy, [5], np.float32(1))


@pytest.mark.parametrize("ufunc", [np.add, np.maximum, np.power], ids=lambda u: u.__name__)
def test_a_host_target_written_from_lazy_values_reads_them_as_an_observation(ufunc):
    # numpy-ml's col2im: np.add.at(host_buffer, index, lazy_columns). It was reported as a
    # fallback with no lowering; it is what `host += lazy` is, a read of the lazy values
    rng = np.random.default_rng(3)
    values = rng.uniform(0.5, 1.5, (2, 4))
    index = (slice(None), np.array([0, 2, 2, 1]))
    want = np.ones((2, 3))
    ufunc.at(want, index, values * 2)
    got = np.ones((2, 3))
    lazyx.reset_metrics()
    ufunc.at(got, index, lnp.asarray(values) * 2)
    assert lazyx.metrics()["fallback_ops"] == {}
    assert lazyx.metrics()["sync_causes"] == {"convert": 1}
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target,value", [(np.float64, np.float32), (np.float64, np.int64),
                                          (np.int64, np.int32), (np.float32, np.float64)])
@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_a_value_of_another_dtype(ufunc, target, value):
    """A value x's dtype takes in (numpy-ml's col2im: float32 patches into a float64 image)
    is NumPy's loop in x's dtype: one scatter. One that would widen x's loop (float64 into
    float32) is NumPy's own, a counted fallback."""
    rng = np.random.default_rng(3)
    host = _values(target, (4, 3), rng)
    key, v = np.array([0, 2, 2, 3]), _values(value, (4, 3), rng)
    want = host.copy()
    ufunc.at(want, key, v)
    lazy = lnp.asarray(host) * target(1)
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ufunc.at(lazy, key, lnp.asarray(v))
    widens = np.result_type(target, value) != np.dtype(target)
    assert lazyx.metrics()["fallbacks"] == (1 if widens else 0)
    got = np.asarray(lazy)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12 if target is np.float64 else 1e-6)
