"""Gradients that raised "no gradient rule" on lazy values, against eager TF under both tapes:
tf.linalg.inv / solve / det / cholesky / logdet / triangular_solve / cholesky_solve
(core/autodiff_linalg.py: triangular_solve and cholesky) and tf.reduce_prod, zeros included
(core/autodiff.py: products of the other elements, no division)."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf

_RNG = np.random.default_rng(0)
_M = _RNG.normal(size=(2, 3, 3))
_SPD = _M @ np.swapaxes(_M, -1, -2) + 3 * np.eye(3)
_B = _RNG.normal(size=(2, 3, 2))

_FUNCTIONS = {
    "inv": lambda a, b: tf.reduce_sum(tf.linalg.inv(a) ** 2),
    "solve": lambda a, b: tf.reduce_sum(tf.sin(tf.linalg.solve(a, b))),
    "det": lambda a, b: tf.reduce_sum(tf.linalg.det(a)),
    "cholesky": lambda a, b: tf.reduce_sum(tf.linalg.cholesky(a) * tf.cos(a)),
    "logdet": lambda a, b: tf.reduce_sum(tf.linalg.logdet(a)),
    "triangular_solve": lambda a, b: tf.reduce_sum(
        tf.linalg.triangular_solve(tf.linalg.band_part(a, -1, 0), b) ** 2),
    "triangular_solve_upper_adjoint": lambda a, b: tf.reduce_sum(tf.linalg.triangular_solve(
        tf.linalg.band_part(a, 0, -1), b, lower=False, adjoint=True) ** 2),
    "cholesky_solve": lambda a, b: tf.reduce_sum(
        tf.linalg.cholesky_solve(tf.linalg.cholesky(a), b) * b),
}


def _gradients(fn, make, Tape, *arrays):
    values = [make(a) for a in arrays]
    with Tape() as tape:
        for v in values:
            tape.watch(v)
        y = fn(*values)
    return [None if g is None else np.asarray(g) for g in tape.gradient(y, values)]


@pytest.mark.parametrize("Tape", [tf.GradientTape, ltf.GradientTape], ids=["tf", "ltf"])
@pytest.mark.parametrize("name", sorted(_FUNCTIONS))
def test_linear_algebra_gradients_are_tfs(name, Tape):
    want = _gradients(_FUNCTIONS[name], tf.constant, tf.GradientTape, _SPD, _B)
    got = _gradients(_FUNCTIONS[name], ltf.constant, Tape, _SPD, _B)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
def test_reduce_prod_gradient_with_zeros_is_tfs(axis):
    x = _RNG.normal(size=(3, 4, 2)).astype(np.float32)
    x[0, 1, 0] = 0.0
    x[2, 2:, 1] = 0.0  # two zeros in one product
    fn = lambda v: tf.reduce_sum(tf.reduce_prod(v, axis=axis) * 1.5)  # noqa: E731
    want = _gradients(fn, tf.constant, tf.GradientTape, x)
    for Tape in (tf.GradientTape, ltf.GradientTape):
        got = _gradients(fn, ltf.constant, Tape, x)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
