"""Idioms of NumPy programs written by others (nn-from-scratch's backprop, ML-From-Scratch's
regression and polynomial features, Gaussian-process code's diagonal jitter), run on lazy
arrays: NumPy's numbers, and no fallback where NumPy's own Python would have read the value."""
from itertools import combinations_with_replacement

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

RNG = np.random.default_rng(22)


def _two_layer_steps(X, y, W1, W2, steps, lr=0.05):
    """A hand-written two-layer classifier: the softmax gradient is `probs - onehot`, made by
    subtracting 1 at [range(n), y] (a `range` as an index, as nn-from-scratch writes it)."""
    n = len(y)
    for _ in range(steps):
        hidden = np.tanh(X.dot(W1))
        scores = np.exp(hidden.dot(W2))
        probs = scores / np.sum(scores, axis=1, keepdims=True)
        loss = -np.log(probs[range(n), y]).mean()
        probs[range(n), y] -= 1
        dW2 = hidden.T.dot(probs)
        dW1 = X.T.dot(probs.dot(W2.T) * (1 - hidden ** 2))
        W1 = W1 - lr * dW1
        W2 = W2 - lr * dW2
    return W1, W2, loss


@pytest.mark.parametrize("lazy_labels", [True, False])
def test_range_as_an_index_in_a_backprop_step(lazy_labels):
    X, y = RNG.normal(size=(40, 2)), RNG.integers(0, 2, 40)
    W1, W2 = RNG.normal(size=(2, 5)), RNG.normal(size=(5, 2))
    want = _two_layer_steps(X, y, W1, W2, 3)
    got = _two_layer_steps(lnp.asarray(X), lnp.asarray(y) if lazy_labels else y,
                           lnp.asarray(W1), lnp.asarray(W2), 3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)


def _polynomial_features(X, degree):
    """Columns of products of features, picked with a tuple of column numbers (the empty
    tuple for the constant column)."""
    combos = [c for d in range(degree + 1)
              for c in combinations_with_replacement(range(X.shape[1]), d)]
    return np.stack([np.prod(X[:, combo], axis=1) for combo in combos], axis=1)


def test_tuples_inside_an_index_pick_columns():
    X = RNG.normal(size=(6, 3))
    lazyx.reset_metrics()
    got = _polynomial_features(lnp.asarray(X), 2)
    np.testing.assert_allclose(np.asarray(got), _polynomial_features(X, 2), rtol=1e-15)
    assert lazyx.metrics()["fallbacks"] == 0
    for key in [(slice(None), (2, 0)), ((1, 3), slice(None)), ((0, 1), (2, 2)), (range(2, 5),)]:
        np.testing.assert_array_equal(np.asarray(lnp.asarray(X)[key]), X[key])


def test_range_index_errors_are_numpys():
    x = lnp.asarray(np.zeros((3, 2)))
    with pytest.raises(IndexError, match="index 3 is out of bounds"):
        x[range(4), 0]
    with pytest.raises(IndexError):
        x[(0.5, 1), 0]  # a float in a tuple index: NumPy's IndexError


def _jittered(K, noise):
    np.einsum("ii->i", K)[:] += noise  # the diagonal through einsum's writeable view
    return K


@pytest.mark.parametrize("subscripts, shape", [("ii->i", (4, 4)), ("ij->ji", (2, 3)),
                                               ("ij", (2, 3)), ("...ii->...i", (2, 3, 3)),
                                               ("iij->ji", (2, 2, 3))])
def test_einsum_that_sums_nothing_is_a_view(subscripts, shape):
    host = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    lazy = lnp.asarray(host.copy())
    view, lazy_view = np.einsum(subscripts, host), np.einsum(subscripts, lazy)
    view[...] = view * 2 + 100   # a write into the view reaches the array
    lazy_view[...] = lazy_view * 2 + 100
    host += 1                    # and a write into the array reaches the view
    lazy += 1
    np.testing.assert_array_equal(np.asarray(lazy), host)
    np.testing.assert_array_equal(np.asarray(lazy_view), view)


def test_einsum_diagonal_jitter_and_sums_stay_new_values():
    X = RNG.normal(size=(5, 2))
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))
    got = _jittered(lnp.asarray(K.copy()), 0.1)
    np.testing.assert_array_equal(np.asarray(got), _jittered(K.copy(), 0.1))
    lazy = lnp.asarray(K.copy())
    trace = np.einsum("ii", lazy)        # a sum: NumPy makes a new array
    rows = np.einsum("ij->i", lazy)
    rows += 1
    np.testing.assert_array_equal(np.asarray(lazy), K)
    assert float(trace) == np.einsum("ii", K)


INSERTS = [  # (array, obj, values, axis)
    (np.arange(12.0).reshape(3, 4), 0, 1, 1),               # a bias column
    (np.arange(12.0).reshape(3, 4), 0, 1, None),
    (np.arange(12.0).reshape(3, 4), 2, [7, 8, 9], 1),
    (np.arange(12.0).reshape(3, 4), [1, 3], 5.5, 1),
    (np.arange(12.0).reshape(3, 4), 1, [[1, 2, 3, 4]], 0),
    (np.arange(12.0).reshape(3, 4), slice(0, 3), -1, 1),
    (np.arange(12.0).reshape(3, 4), [0, 0, 2], [1, 2, 3], None),
    (np.arange(12.0).reshape(3, 4), [], 1, 0),
    (np.arange(6, dtype=np.int8).reshape(2, 3), 1, 2.7, 0),  # cast to the array's dtype
    (np.arange(3.0), 1, np.array([9.0, 8.0]), 0),           # several values at one place
    (np.zeros((0, 2)), 0, 1.0, 0),
    (np.arange(8, dtype=np.float32).reshape(2, 4), 1, np.float64(0.1), 1),
]


@pytest.mark.parametrize("lazy_values", [False, True])
@pytest.mark.parametrize("case", range(len(INSERTS)))
def test_insert_is_lowered(case, lazy_values):
    arr, obj, values, axis = INSERTS[case]
    want = np.insert(arr, obj, values, axis=axis)
    if lazy_values:
        values = lnp.asarray(np.asarray(values))
    lazyx.reset_metrics()
    got = np.insert(lnp.asarray(arr), obj, values, axis=axis)
    assert isinstance(got, lnp.ndarray) and lazyx.metrics()["fallbacks"] == 0
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("obj, values, axis, error", [
    (5, 1, 1, IndexError), (0, [1, 2], 1, ValueError), (1, 1000, 0, OverflowError)])
def test_insert_errors_are_numpys(obj, values, axis, error):
    arr = np.arange(12, dtype=np.int8).reshape(3, 4)
    with pytest.raises(error) as want:
        np.insert(arr, obj, values, axis=axis)
    with pytest.raises(error) as got:
        np.insert(lnp.asarray(arr), obj, values, axis=axis)
    assert str(got.value) == str(want.value)
