"""The zeta (Hurwitz) and betainc (regularized incomplete beta) primitives: both backends
agree on their domains (x > 1, q > 0; a, b > 0, 0 <= x <= 1) and match closed forms --
zeta(2, 1) = pi^2 / 6, zeta(x, q) - zeta(x, q + 1) = q**-x, I_x(a, 1) = x**a,
I_x(1, b) = 1 - (1 - x)**b, I_x(a, b) + I_{1-x}(b, a) = 1."""
import math

import numpy as np
import pytest

from backend_harness import check, leaf
from lazyx.core import ops

# the reference backend computes both with SciPy, not a lazyx dependency (README, "What you
# need"): the core environment, numpy alone, has none; jax brings it to every other one
pytest.importorskip("scipy")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_zeta_closed_forms(dtype):
    x = np.array([2.0, 1.5, 3.0, 7.0, 30.0, 1.01, 4.0], dtype)
    q = np.array([1.0, 0.3, 2.5, 1e-2, 1.0, 5.0, 100.0], dtype)
    z, z_next = ops.zeta(leaf(x), leaf(q)), ops.zeta(leaf(x), leaf(q + 1))
    tol = 1e-5 if dtype == "float32" else 1e-12
    got = check([z, z_next], rtol=tol, atol=0)
    assert math.isclose(got[0][0], math.pi ** 2 / 6, rel_tol=tol)
    np.testing.assert_allclose(got[0] - got[1], q.astype(np.float64) ** -x.astype(np.float64),
                               rtol=100 * tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_betainc_closed_forms(dtype):
    x = np.array([0.0, 1e-4, 0.2, 0.5, 0.77, 0.999, 1.0], dtype)
    a = np.array([0.5, 2.0, 3.0, 0.1, 40.0, 7.5, 1.0], dtype)
    ones = np.ones_like(x)
    tol = 2e-5 if dtype == "float32" else 1e-12
    check([ops.betainc(leaf(a), leaf(ones), leaf(x)), ops.betainc(leaf(ones), leaf(a), leaf(x))],
          [x.astype(np.float64) ** a, 1 - (1 - x.astype(np.float64)) ** a],
          rtol=tol, atol=tol, names=["betainc(a, 1)", "betainc(1, b)"])
    b = a[::-1].copy()
    forward, mirrored = check([ops.betainc(leaf(a), leaf(b), leaf(x)),
                               ops.betainc(leaf(b), leaf(a), leaf((1 - x).astype(dtype)))],
                              rtol=tol, atol=tol)
    np.testing.assert_allclose(forward + mirrored, 1, atol=10 * tol)
