"""tf.math.igamma / igammac are lowered (they were fallbacks): values, TF's (Eigen's) own
answers at the edges (P(0, x) is NaN, P(inf, inf) is 0), and gradients with respect to both
a (a derivative the IR has as a primitive, igamma_grad_a) and x, against eager TF."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

EDGES = [-1.0, 0.0, 0.5, 2.0, np.inf, np.nan, 1e-3, 30.0, 100.0, 7.5]
XS = EDGES + [31.0, 90.0, 200.0, 0.1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [tf.math.igamma, tf.math.igammac], ids=["igamma", "igammac"])
def test_values_and_edges(fn, dtype):
    a, x = (v.astype(dtype) for v in np.meshgrid(EDGES, XS, indexing="ij"))
    lazyx.reset_metrics()
    got = np.asarray(fn(ltf.constant(a), ltf.constant(x)))
    assert lazyx.metrics()["fallbacks"] == 0
    tol = 1e-9 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, fn(a, x).numpy(), rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("fn", [tf.math.igamma, tf.math.igammac], ids=["igamma", "igammac"])
def test_gradients_with_respect_to_a_and_x(fn):
    a0, x0 = np.array([0.5, 2.0, 30.0, 4.0]), np.array([0.3, 2.5, 28.0, 9.0])

    def grads(const, tape_cls):
        a, x = tf.Variable(a0), tf.Variable(x0)
        with tape_cls() as tape:
            y = tf.reduce_sum(fn(const(a0) + a - a0, const(x0) + x - x0) * np.arange(1.0, 5.0))
        return [np.asarray(g) for g in tape.gradient(y, [a, x])]
    for got, want in zip(grads(ltf.constant, ltf.GradientTape),
                         grads(tf.constant, tf.GradientTape)):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-10)
