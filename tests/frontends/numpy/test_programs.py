"""Real NumPy programs run unchanged on lazy arrays: NumPy's numbers, one compile per step."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp
from programs import kmeans, mlp_train

RNG = np.random.default_rng(0)


def _mlp_data():
    X = RNG.normal(size=(64, 5))
    Y = np.eye(3)[RNG.integers(0, 3, 64)]
    params = [RNG.normal(size=(5, 8)) * 0.3, np.zeros(8), RNG.normal(size=(8, 3)) * 0.3,
              np.zeros(3)]
    return X, Y, params


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mlp_matches_numpy_and_compiles_one_graph(dtype):
    X, Y, params = _mlp_data()
    X, Y, params = X.astype(dtype), Y.astype(dtype), [p.astype(dtype) for p in params]
    expected = mlp_train(X, Y, *[p.copy() for p in params], 0.1, 12, 16, lambda: None)
    lazy_inputs = [lnp.asarray(a) for a in (X, Y, *params)]
    lazyx.sync()
    lazyx.reset_metrics()
    got = mlp_train(*lazy_inputs, 0.1, 12, 16, lazyx.sync)
    m = lazyx.metrics()
    assert m["compiles"] == 1, m  # one graph for every step (the minibatch start is a param)
    assert m["cache_hits"] == 11 and m["fallbacks"] == 0
    tol = 1e-10 if dtype == np.float64 else 2e-5
    for g, e in zip(got[:4], expected[:4]):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(np.asarray(g), e, rtol=tol, atol=tol)
    np.testing.assert_allclose([float(v) for v in got[4]], [float(v) for v in expected[4]],
                               rtol=tol)


def test_kmeans_matches_numpy_and_compiles_one_graph():
    centres = RNG.normal(size=(4, 2)) * 4
    X = np.concatenate([c + RNG.normal(size=(50, 2)) for c in centres])
    init = X[[0, 60, 120, 180]].copy()
    expected = kmeans(X, init, 6, lambda: None)
    lx, linit = lnp.asarray(X), lnp.asarray(init)
    lazyx.sync()
    lazyx.reset_metrics()
    got = kmeans(lx, linit, 6, lazyx.sync)
    m = lazyx.metrics()
    assert m["compiles"] == 1 and m["cache_hits"] == 5 and m["fallbacks"] == 0, m
    np.testing.assert_allclose(np.asarray(got[0]), expected[0], rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(got[1]), expected[1])
    np.testing.assert_allclose(float(got[2]), float(expected[2]), rtol=1e-12)
