"""NEP 18 dispatch, fallback accounting, observation and its sync causes."""
import inspect
import warnings

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.core import runtime
from numpy_checks import assert_matches

A = np.random.default_rng(1).normal(size=(3, 4))


def test_plain_numpy_calls_stay_lazy():
    x = lnp.asarray(A)
    lazyx.sync()
    lazyx.reset_metrics()
    y = np.clip(np.exp(np.tanh(x)) @ x.T, -1, 2) + np.mean(x) - np.linalg.norm(x)
    z = np.concatenate([np.reshape(y, (-1,)), np.stack([np.max(x, axis=1)]).ravel()])
    assert isinstance(z, lnp.LazyArray)
    assert lazyx.metrics()["syncs"] == 0
    expected_y = np.clip(np.exp(np.tanh(A)) @ A.T, -1, 2) + np.mean(A) - np.linalg.norm(A)
    assert_matches(z, np.concatenate([expected_y.ravel(), np.max(A, axis=1)]))
    assert lazyx.metrics()["syncs"] == 1 and lazyx.metrics()["fallbacks"] == 0


def test_unlowered_function_falls_back_counted_and_warned_once():
    x = lnp.asarray(A)
    lazyx.reset_metrics()
    runtime._warned_fallbacks.discard("numpy.trim_zeros")  # (warned once per process)
    with pytest.warns(RuntimeWarning, match="trim_zeros has no lowering") as told:
        m = np.trim_zeros(x)  # (its result's shape depends on the values)
    # the warning names this line, not the frontend's code that ran the fallback
    assert (told[0].filename, told[0].lineno) == (__file__, inspect.currentframe().f_lineno - 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second call does not warn again
        m2 = np.trim_zeros(x + 1)
    metrics = lazyx.metrics()
    assert metrics["fallback_ops"] == {"numpy.trim_zeros": 2}
    assert metrics["sync_causes"].get("fallback") == 1  # x was device data; x + 1 was pending
    assert isinstance(m, lnp.LazyArray)  # results come back as device data
    assert_matches(m, np.trim_zeros(A))
    assert_matches(m2, np.trim_zeros(A + 1))


def test_fallback_with_lazy_out():
    out = lnp.zeros(4)
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.percentile(lnp.asarray(A), 50, axis=0, out=out)
    assert_matches(out, np.percentile(A, 50, axis=0))


@pytest.mark.parametrize("observe,cause", [
    (lambda x: np.asarray(x), "convert"), (lambda x: x.tolist(), "convert"),
    (lambda x: repr(x), "print"), (lambda x: str(x), "print"),
    (lambda x: x[0, 0].item(), "item"), (lambda x: float(x[0, 0]), "item"),
    (lambda x: int(x[0, 0]), "item"), (lambda x: bool(x[0, 0] > 0), "item"),
    (lambda x: list(x[0]), "convert"),
])
def test_observation_syncs_with_its_cause(observe, cause):
    x = lnp.asarray(A) * 2
    lazyx.reset_metrics()
    observe(x)
    m = lazyx.metrics()
    assert m["sync_causes"] == {cause: 1}
    # One source line is recorded. (core/source.py treats any path containing "/numpy/" as
    # NumPy's own code, so for this file -- under tests/frontends/numpy/ -- it walks past it.)
    assert sum(m["sync_sources"].values()) == 1


def test_observed_values_match_numpy():
    x = lnp.asarray(A) * 2
    assert x.tolist() == (A * 2).tolist()
    assert float(x[1, 2]) == float(A[1, 2] * 2)
    assert str(x) == str(A * 2)
    assert repr(x).startswith("lazy_array([[")
    assert len(x) == 3 and [list(r) for r in x] == (A * 2).tolist()
    assert np.asarray(x, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="truth value of an array with more than one"):
        bool(x)


def test_static_facts_never_sync():
    x = lnp.asarray(A) + 1
    lazyx.reset_metrics()
    assert (len(x), x.shape, x.ndim, x.size, x.dtype) == (3, (3, 4), 2, 12, np.float64)
    assert np.shape(x) == (3, 4)
    assert lazyx.metrics()["syncs"] == 0


def test_data_dependent_functions_sync_with_that_cause():
    x = lnp.asarray(np.array([[0, 3, 0], [1, 1, 2]]))
    lazyx.reset_metrics()
    host = np.array([[0, 3, 0], [1, 1, 2]])
    assert_matches(np.nonzero(x + 0), np.nonzero(host))  # x + 0: pending, so it must sync
    assert_matches(np.unique(x + 0), np.array([0, 1, 2, 3]))
    # (NumPy 2.4's own order is its hash table's, which NumPy leaves unspecified; lazyx's is
    # sorted, as the namespace's other unique_* functions are)
    assert_matches(lnp.unique_values(x + 0), np.sort(np.unique_values(host)))
    assert lazyx.metrics()["sync_causes"] == {"data_dependent": 3}


def test_numpy_array_and_lazy_array_mix():
    x = lnp.asarray(A)
    assert isinstance(A + x, lnp.LazyArray)
    assert isinstance(np.float64(2.0) * x, lnp.LazyArray)
    assert_matches(A - x, A - A)
    assert_matches(np.array_equal(x, A), np.array_equal(A, A))
    assert np.allclose(x, A + 1e-12)
    assert_matches(np.isclose(x, A + 1e-3), np.isclose(A, A + 1e-3))
