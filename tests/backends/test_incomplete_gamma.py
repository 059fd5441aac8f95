"""The incomplete gamma primitives (igamma, igammac, igamma_grad_a): both backends agree on
a > 0, x >= 0, and match closed forms -- P(1, x) = 1 - exp(-x), P(1/2, x) = erf(sqrt(x)),
P(n, x) = 1 - exp(-x) sum_{k < n} x**k / k! -- and dP/da matches a central difference of
them in a; from tiny to large a and x (series and continued-fraction sides)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from backend_harness import check, leaf
from lazyx.core import ops


def _closed_form_p(a, x):
    if a == 0.5:
        return math.erf(math.sqrt(x))
    return 1 - math.exp(-x) * sum(x ** k / math.factorial(k) for k in range(int(a)))


@settings(max_examples=15, deadline=None)
@given(a=st.sampled_from([0.5, 1.0, 2.0, 5.0, 12.0]),
       xs=st.lists(st.floats(0.0, 60.0), min_size=6, max_size=6))
def test_closed_forms(a, xs):
    x = np.array(xs + [0.0, math.inf], np.float64)
    av = np.full_like(x, a)
    p = np.array([_closed_form_p(a, v) if math.isfinite(v) else 1.0 for v in x])
    na, nx = leaf(av), leaf(x)
    check([ops.igamma(na, nx), ops.igammac(na, nx)], [p, 1 - p], rtol=1e-9, atol=1e-12,
          names=["igamma", "igammac"])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_backends_agree_over_a_grid(dtype):
    a, x = np.meshgrid([1e-3, 0.1, 0.7, 3.0, 29.0, 150.0, 2000.0],
                       [1e-4, 0.05, 1.0, 2.9, 30.0, 160.0, 2100.0], indexing="ij")
    na, nx = leaf(a.astype(dtype)), leaf(x.astype(dtype))
    tol = 2e-5 if dtype == "float32" else 1e-9  # (XLA's float32 series is the loose one)
    check([ops.igamma(na, nx), ops.igammac(na, nx), ops.igamma_grad_a(na, nx)],
          rtol=tol, atol=tol, names=["igamma", "igammac", "igamma_grad_a"])


def test_grad_a_is_the_derivative_in_a():
    a = np.array([0.5, 1.0, 3.0, 10.0, 40.0])
    x = np.array([0.4, 2.0, 2.5, 12.0, 35.0])
    h = 1e-5 * a
    nx = leaf(x)
    grad, up, down = check([ops.igamma_grad_a(leaf(a), nx), ops.igamma(leaf(a + h), nx),
                            ops.igamma(leaf(a - h), nx)], rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(grad, (up - down) / (2 * h), rtol=1e-5)
