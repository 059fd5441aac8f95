"""np.r_ / np.c_ with lazy items (numpy-ml's `np.c_[np.ones(n), X]` bias column, in five of
its linear models): NumPy converted each item with np.array, so the result was a host array
read through a counted fallback, and everything after it ran on NumPy. Now lazy, with
NumPy's values, dtype and shape for its directives, slices, scalars and promotions."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((4, 3))
V = np.arange(5, dtype=np.int32)


@pytest.mark.parametrize("make", [
    lambda np_, x, v: np_.c_[np_.ones(4), x],                 # the bias column
    lambda np_, x, v: np_.c_[x, x[:, 0]],                     # a 1-d item as a column
    lambda np_, x, v: np_.r_[v, 7, 8.5, v[::-1]],             # scalars promote (float64)
    lambda np_, x, v: np_.r_[0:3, v],                         # a slice is an arange
    lambda np_, x, v: np_.r_[-1:1:4j, v],                     # a complex step: linspace
    lambda np_, x, v: np_.r_["0,2", v, v],                    # directive: axis, ndmin
    lambda np_, x, v: np_.r_["0,2,0", v, v],                  # ... and where 1-d goes
    lambda np_, x, v: np_.r_["1", x, x],                      # directive: axis
    lambda np_, x, v: np_.r_[x.astype(np.float32), v[:3].reshape(1, 3)],
    lambda np_, x, v: np_.c_[v.astype(np.float32), v],        # int32 with float32
], ids=["bias_column", "column", "scalars", "slice", "linspace", "ndmin", "trans1d", "axis",
        "float32_int32_rows", "float32_int32_columns"])
def test_concatenating_lazy_items_stays_lazy_with_numpys_result(make):
    want = make(np, X, V)
    lazyx.reset_metrics()
    got = make(np, lnp.asarray(X), lnp.asarray(V))
    assert type(got) is lnp.ndarray
    assert lazyx.metrics()["syncs"] == 0 and lazyx.metrics()["fallback_ops"] == {}
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)


def test_a_bad_key_is_numpys_error():
    with pytest.raises(ValueError, match="special directives must be the first entry"):
        np.r_[lnp.asarray(V), "0,2"]
    with pytest.raises(ValueError):
        np.r_[lnp.asarray(X), lnp.asarray(V)]  # (2-d with 1-d: concatenate's error)


def test_host_keys_are_numpys_own():
    assert type(np.c_[np.ones(4), X]) is np.ndarray
    assert type(np.r_["0,2", V, V]) is np.ndarray
