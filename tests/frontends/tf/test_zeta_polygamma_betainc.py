"""tf.math.zeta, polygamma and betainc are lowered (they were counted fallbacks): values
against eager TF over grids with TF's edge values (poles, negative q, inf, NaN, a or b <= 0,
x outside [0, 1]), and gradients: in q / x as TF's, None where TF registers none."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

S = [-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 7.0, 30.0, np.inf, np.nan, -2.0, -1.5]
Q = [-2.0, -1.5, -1.0, 0.0, 1e-3, 0.5, 1.0, 2.5, 30.0, np.inf, np.nan, -np.inf]
A = [-1.0, 0.0, 0.5, 1.0, 2.0, 10.0, 300.0, np.inf, np.nan]
X = [-0.1, 0.0, 1e-4, 0.3, 0.999, 1.0, 1.5, np.nan]


def assert_like_tf(fn, args, rtol, atol=0.0):
    lazyx.reset_metrics()
    got = fn(*(ltf.constant(a) for a in args))
    assert isinstance(got, ltf.Tensor) and lazyx.metrics()["fallbacks"] == 0
    want = fn(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=rtol, atol=atol,
                               equal_nan=True)


def _float32_grid(s, q):
    # TF's float32 zeta loses digits for q < 0 (cancellation: 2.8e-3 relative at
    # zeta(7, -1.5)) and flushes a denormal result to 0; the reference backend computes in
    # float64. The float64 grid covers those edges.
    keep = q[0] >= 0
    return s[:, keep], q[:, keep]


@pytest.mark.parametrize("fn", [tf.math.zeta, tf.math.polygamma], ids=["zeta", "polygamma"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_zeta_and_polygamma_values_and_edges(fn, dtype):
    s, q = np.meshgrid(S, Q, indexing="ij")
    if dtype == np.float32:
        s, q = _float32_grid(s, q)
    tol = 1e-11 if dtype == np.float64 else 1e-5
    assert_like_tf(fn, (s.astype(dtype), q.astype(dtype)), rtol=tol, atol=1e-37)


def test_zeta_broadcasts_as_tf():
    assert_like_tf(tf.math.zeta, (np.array([2.0, 3.5]), np.array([[0.5], [4.0]])), 1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_betainc_values_and_edges(dtype):
    a, b, x = (v.astype(dtype) for v in np.meshgrid(A, A, X, indexing="ij"))
    # float32: TF's continued fraction is 3e-5 off at I_0.999(300, 1) (the reference: float64)
    tol = 1e-12 if dtype == np.float64 else 5e-5
    assert_like_tf(tf.math.betainc, (a, b, x), rtol=tol, atol=tol)


def test_betainc_scalars_broadcast_other_shapes_raise_as_tf():
    x = np.linspace(0, 1, 6)
    assert_like_tf(tf.math.betainc, (np.array(2.0), np.full(6, 3.0), x), 1e-12)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.math.betainc(np.ones(3), np.ones(2), np.ones(3) / 2)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.math.betainc(ltf.constant(np.ones(3)), np.ones(2), np.ones(3) / 2)


def _grads(fn, inputs, const, tape_cls):
    variables = [tf.Variable(v) for v in inputs]
    with tape_cls() as tape:
        y = tf.reduce_sum(fn(*(const(v0) + v - v0 for v0, v in zip(inputs, variables)))
                          * np.arange(1.0, 5.0))
    return tape.gradient(y, variables)


@pytest.mark.parametrize("fn, inputs", [
    (tf.math.zeta, (np.array([2.0, 3.5, 7.0, 1.5]), np.array([0.5, 2.0, 1.2, 9.0]))),
    (tf.math.polygamma, (np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.5, 2.0, 1.2, 9.0]))),
    (tf.math.betainc, (np.array([0.5, 2.0, 1.0, 9.0]), np.array([3.0, 1.0, 0.7, 2.0]),
                       np.array([0.2, 0.5, 0.9, 0.6]))),
], ids=["zeta", "polygamma", "betainc"])
def test_gradients_where_tf_has_them_none_elsewhere(fn, inputs):
    got = _grads(fn, inputs, ltf.constant, ltf.GradientTape)
    want = _grads(fn, inputs, tf.constant, tf.GradientTape)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-9)
    assert want[-1] is not None and all(w is None for w in want[:-1])
