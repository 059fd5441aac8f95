"""Calls third-party libraries make on lazy arrays, against NumPy: column-major reshapes
(MATLAB ports, `vec()`), the Array API namespace's unique_* functions agreeing on order
(scikit-learn's array-API path), and questions that need no values -- np.iterable (matplotlib
asks it of every plotted array), np.shares_memory / may_share_memory (scikit-learn's
copy checks) -- answered without a sync or a fallback."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.numpy as lnp


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_column_major_reshapes_are_numpys(dims, data):
    x = np.arange(float(np.prod(dims))).reshape(dims)
    size = x.size
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    first = data.draw(st.sampled_from(divisors))
    target = data.draw(st.sampled_from([(size,), (first, size // first), (-1, first),
                                        (first, -1, 1)]))
    order = data.draw(st.sampled_from(["F", "A", "C"]))
    a = lnp.asarray(x)
    np.testing.assert_array_equal(np.asarray(a.reshape(target, order=order)),
                                  x.reshape(target, order=order))
    np.testing.assert_array_equal(np.asarray(np.reshape(a, target, order=order)),
                                  np.reshape(x, target, order=order))
    for flat in ("F", "A", "K", "C"):
        np.testing.assert_array_equal(np.asarray(a.ravel(flat)), x.ravel(flat))
        np.testing.assert_array_equal(np.asarray(np.ravel(a, order=flat)),
                                      np.ravel(x, order=flat))


def test_flatten_in_fortran_order_and_bad_orders():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(lnp.asarray(x).flatten("F")), x.flatten("F"))
    for order in ("K", "X"):
        with pytest.raises(ValueError):
            x.reshape(3, 2, order=order)
        with pytest.raises(ValueError):
            lnp.asarray(x).reshape(3, 2, order=order)


def test_the_namespaces_unique_functions_agree_on_order():
    x = lnp.asarray(np.array([3, 1, 3, 0, 2, 1]))
    values = np.asarray(lnp.unique_values(x))
    np.testing.assert_array_equal(values, [0, 1, 2, 3])
    for result in (lnp.unique_counts(x), lnp.unique_inverse(x), lnp.unique_all(x)):
        np.testing.assert_array_equal(np.asarray(result.values), values)


def test_questions_that_need_no_values_run_nothing():
    y = lnp.asarray(np.arange(4.0)) * 2.0
    host = np.arange(4.0)
    lazyx.sync()
    lazyx.reset_metrics()
    assert np.iterable(y) and not np.iterable(lnp.asarray(np.float64(1.0)))
    assert np.may_share_memory(y, y) and np.shares_memory(y, y)
    assert np.may_share_memory(y, y[1:]) and np.shares_memory(y, y[1:])  # a view, as NumPy's
    assert not np.shares_memory(y[:1], y[1:]) and not np.shares_memory(y, host)
    assert not np.may_share_memory(lnp.asarray(np.zeros(0)), lnp.asarray(np.zeros(0)))
    m = lazyx.metrics()
    assert m["syncs"] == 0 and m["fallback_ops"] == {}
    assert list(y) == [0.0, 2.0, 4.0, 6.0]  # iterating still reads the values


def test_base_is_numpys():
    """Libraries test `x.base is None` before they write into x: an array lazyx made owns its
    value, a view's base is the array it was made from (as NumPy's)."""
    x = lnp.asarray(np.arange(4.0))
    assert x.base is None and x[1:].base is x and x[1:][::2].base is x
    assert (x + 1).base is None and x[[0, 1]].base is None and x[0].base is None
