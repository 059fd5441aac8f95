"""Basic and advanced indexing and assignment against NumPy, plus NumPy's IndexErrors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.numpy as lnp
from numpy_checks import assert_matches

X = np.arange(60.0).reshape(3, 4, 5)


@settings(max_examples=40)
@given(index=hnp.basic_indices(shape=(3, 4, 5), allow_newaxis=True, allow_ellipsis=True))
def test_basic_indexing(index):
    assert_matches(lnp.asarray(X)[index], X[index])


@settings(max_examples=25)
@given(index=hnp.integer_array_indices(shape=(3, 4, 5), result_shape=hnp.array_shapes(
    max_dims=2, max_side=3)))
def test_integer_array_indexing(index):
    assert_matches(lnp.asarray(X)[index], X[index])


ADVANCED = [
    (slice(None), [0, 2]), ([0, 2], slice(None), [1, 1]), (0, slice(None), [1, 3]),
    (Ellipsis, [4, 0]), ([[0], [2]], [1, 3]), (None, [1, 0]), (slice(1, None), None, [3, 0]),
    (np.array([True, False, True]),), (slice(None), np.array([True, False, True, True])),
    (np.array([[True, False, False, True]] * 3),), ([-1, -3],), (1, [-1, 0], slice(None, None, -2)),
]


@pytest.mark.parametrize("index", ADVANCED, ids=[str(i) for i in range(len(ADVANCED))])
def test_advanced_indexing(index):
    assert_matches(lnp.asarray(X)[index], X[index])


def test_lazy_index_arrays():
    lx = lnp.asarray(X)
    idx = np.array([2, -1, 0])
    assert_matches(lx[lnp.asarray(idx)], X[idx])
    assert_matches(lx[:, lnp.asarray(idx)], X[:, idx])


def test_lazy_boolean_mask_syncs_as_data_dependent():
    lx = lnp.asarray(X)
    lazyx.reset_metrics()
    got = lx[lx > 30]
    assert lazyx.metrics()["sync_causes"] == {"data_dependent": 1}
    assert_matches(got, X[X > 30])


def test_new_integer_index_reuses_the_program():
    lx = lnp.asarray(X)
    lazyx.sync()
    lazyx.reset_metrics()
    for i in range(3):
        assert_matches(lx[i, 1:3] * 2, X[i, 1:3] * 2)
    assert lazyx.metrics()["compiles"] == 1


SETS = [(0, 5.0), ((1, slice(None)), np.arange(5.0)), ((slice(None), 2, slice(1, 3)), -1.0),
        ((Ellipsis, 0), np.ones((3, 4))), ((slice(None, None, 2),), 7.0),
        (([0, 2], [1, 3]), np.array([[1.0], [2.0]]).repeat(5, 1)),
        ((X > 40,), 0.0), ((slice(None), [3, 0]), 9.0), ((-1, -1, -1), 3.5),
        ((np.array([True, False, True]), 0), -2.0)]


@pytest.mark.parametrize("index,value", SETS, ids=[str(i) for i in range(len(SETS))])
def test_setitem(index, value):
    expected = X.copy()
    expected[index] = value
    lx = lnp.asarray(X)
    lx[index] = value
    assert_matches(lx, expected)


def test_setitem_lazy_mask_needs_no_sync():
    lx = lnp.asarray(X)
    lazyx.sync()
    lazyx.reset_metrics()
    lx[lx > 30] = 0
    assert lazyx.metrics()["syncs"] == 0
    expected = X.copy()
    expected[expected > 30] = 0
    assert_matches(lx, expected)


def test_setitem_casts_like_numpy():
    a = np.arange(4)
    a[1] = 2.7
    la = lnp.arange(4)
    la[1] = 2.7
    assert_matches(la, a)


def test_views_are_numpys():
    """A slice is NumPy's view of its base (test_views.py has the rest)."""
    lx = lnp.asarray(np.arange(6.0))
    view = lx[:3]
    lx[0] = 100.0
    assert float(view[0]) == 100.0
    view[1] = -1.0
    assert float(lx[1]) == -1.0
    alias = lx
    alias += 1  # in-place on the same Python object is seen through every reference
    assert float(lx[0]) == 101.0


@pytest.mark.parametrize("index", [10, (0, 4), (0, 0, -6), [0, 3], (slice(None), [5])])
def test_out_of_range_integer_index_raises_index_error(index):
    with pytest.raises(IndexError) as numpy_err:
        X[index]
    with pytest.raises(IndexError, match=str(numpy_err.value).split(" with")[0].replace(
            "[", r"\[")):
        lnp.asarray(X)[index]
    with pytest.raises(IndexError):
        lx = lnp.asarray(X)
        lx[index] = 0.0


def test_too_many_indices_and_bad_index_types():
    with pytest.raises(IndexError, match="too many indices for array"):
        lnp.asarray(X)[0, 0, 0, 0]
    with pytest.raises(IndexError, match="only integers, slices"):
        lnp.asarray(X)["a"]
    with pytest.raises(IndexError, match="boolean index did not match"):
        lnp.asarray(X)[np.array([True, False])]
    with pytest.raises(IndexError, match="shape mismatch"):
        lnp.asarray(X)[[0, 1], [0, 1, 2]]
