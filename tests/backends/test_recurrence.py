"""recurrence3 (three-term recurrences to a per-element, data-dependent n) on both backends,
against NumPy's own polynomial evaluators (numpy.polynomial) for the classical families."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from numpy.polynomial import chebyshev, hermite, hermite_e, laguerre, legendre

from backend_harness import check, leaf
from lazyx.core import ops

# (p1, step, numpy evaluator of the degree-n basis polynomial)
FAMILIES = {
    "chebyshev_t": ((1, 0), (0, 2, 0, 0, 0, 1, 0, 1), chebyshev.chebval),
    "hermite_h": ((2, 0), (0, 2, 0, 0, 2, 0, 0, 1), hermite.hermval),
    "hermite_he": ((1, 0), (0, 1, 0, 0, 1, 0, 0, 1), hermite_e.hermeval),
    "laguerre": ((-1, 1), (0, -1, 2, 1, 1, 0, 1, 1), laguerre.lagval),
    "legendre": ((1, 0), (2, 1, 0, 0, 1, 0, 1, 1), legendre.legval),
}


def _basis(evaluate, x, n):
    """p_n(x) element by element via NumPy (n <= 0 -> p_0 = 1)."""
    out = [evaluate(xi, np.eye(max(ni, 0) + 1)[-1]) for xi, ni in zip(x.ravel(), n.ravel())]
    return np.array(out, dtype=np.float64).reshape(x.shape)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@given(x=st.lists(st.floats(-2, 2, width=32), min_size=6, max_size=6),
       n=st.lists(st.integers(-2, 12), min_size=6, max_size=6))
def test_recurrence3_matches_numpy_polynomials(family, x, n):
    p1, step, evaluate = FAMILIES[family]
    xs = np.array(x).reshape(2, 3)
    ns = np.array(n).reshape(2, 3)
    want = _basis(evaluate, xs, ns)
    roots = [ops.recurrence3(leaf(xs, "float64"), leaf(ns, "int64"), p1=p1, step=step),
             ops.recurrence3(leaf(xs, "float32"), leaf(ns, "int32"), p1=p1, step=step)]
    check(roots, [want, want.astype(np.float32)], rtol={"recurrence3": 1e-4}, atol=1e-4,
          names=["recurrence3", "recurrence3"])


def test_recurrence3_trip_count_is_data_and_stops_at_nan():
    # one program, two very different max(n): the loop length is decided at run time
    x = np.array([0.5, np.nan, 3.0, -0.25])
    p1, step, evaluate = FAMILIES["legendre"]
    for n in ([0, 1, 2, 3], [400, 5000, 7, 1]):
        n = np.array(n)
        (got,) = check([ops.recurrence3(leaf(x), leaf(n), p1=p1, step=step)])
        want = _basis(evaluate, x, n)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_recurrence3_rejects_bad_operands_at_the_call():
    x = leaf(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="recurrence3: n must be an integer"):
        ops.recurrence3(x, x, p1=(1, 0), step=(0,) * 8)
    with pytest.raises(ValueError, match="recurrence3: n must have x's shape"):
        ops.recurrence3(x, leaf(np.zeros(2, np.int32)), p1=(1, 0), step=(0,) * 8)
    with pytest.raises(ValueError, match="p1 needs 2 and step 8"):
        ops.recurrence3(x, leaf(np.zeros(3, np.int32)), p1=(1, 0), step=(0,) * 7)
    with pytest.raises(TypeError, match="recurrence3: needs floating"):
        ops.recurrence3(leaf(np.zeros(3, np.int32)), leaf(np.zeros(3, np.int32)), p1=(1, 0),
                        step=(0,) * 8)
