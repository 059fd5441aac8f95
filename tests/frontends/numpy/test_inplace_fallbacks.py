"""NumPy functions without a lowering that write into an argument (np.put, np.add.at, ...)
run as fallbacks on a host copy: the write must reach the lazy array, never be lost."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.numpy as lnp

WRITERS = {
    "put": lambda a: np.put(a, [0, 5, -1], [-1.0, -2.0, -3.0]),
    "place": lambda a: np.place(a, a > 8, [0.5, 1.5]),
    "putmask": lambda a: np.putmask(a, a > 8, -a),
    "fill_diagonal": lambda a: np.fill_diagonal(a, 0.0),
    "put_along_axis": lambda a: np.put_along_axis(a, np.array([[1], [0], [3]]), 9.0, axis=1),
    # (add, subtract, multiply, maximum and minimum .at are lowered: test_ufunc_at.py; with
    # an operand that widens NumPy's loop past the array's dtype, they run eagerly)
    "add.at longdouble into float64": lambda a: np.add.at(a, ([0, 0, 2], [1, 1, 3]),
                                                          np.longdouble(1.5)),
    "power.at": lambda a: np.power.at(a, [0, 2], 2.0),
}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_fallback_that_writes_into_its_argument_updates_the_lazy_array(name):
    host = np.arange(12.0).reshape(3, 4)
    want = host.copy()
    WRITERS[name](want)
    lazy = lnp.asarray(host) * 1.0  # pending when the function is called
    before = lazy + 1               # computed from the value before the write
    lazyx.reset_metrics()
    assert WRITERS[name](lazy) is None
    assert isinstance(lazy, lnp.ndarray)
    np.testing.assert_array_equal(np.asarray(lazy), want)
    np.testing.assert_array_equal(np.asarray(before), host + 1)
    assert sum(lazyx.metrics()["fallback_ops"].values()) == 1


@settings(max_examples=25, deadline=None)
@given(indices=st.lists(st.integers(-6, 5), min_size=1, max_size=12),
       values=st.floats(-4, 4, allow_nan=False))
def test_add_at_with_repeated_indices_matches_numpy(indices, values):
    want = np.linspace(-1, 1, 6)
    lazy = lnp.asarray(want.copy())
    np.add.at(want, indices, values)
    np.add.at(lazy, indices, values)
    np.testing.assert_array_equal(np.asarray(lazy), want)


def test_a_fallback_that_only_reads_leaves_its_arguments_alone():
    lazy = lnp.asarray(np.arange(6.0))
    node = lazy.__lazyx_handle__.node
    np.trim_zeros(lazy)  # a fallback that reads only
    assert lazy.__lazyx_handle__.node is node
