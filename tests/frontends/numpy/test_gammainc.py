"""scipy.special.gammainc / gammaincc on lazy arrays are lowered (they ran on scipy, counted
fallbacks): values and scipy's answers at the edges (any NaN operand gives NaN), in float32
and float64, against scipy."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

special = pytest.importorskip("scipy.special")

EDGES = [-1.0, 0.0, 0.5, 2.0, np.inf, np.nan, 1e-3, 30.0, 100.0, 7.5]
XS = EDGES + [31.0, 90.0, 200.0, 0.1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_values_and_edges(name, dtype):
    fn = getattr(special, name)
    a, x = (v.astype(dtype) for v in np.meshgrid(EDGES, XS, indexing="ij"))
    lazyx.reset_metrics()
    got = np.asarray(fn(lnp.asarray(a), lnp.asarray(x)))
    assert lazyx.metrics()["fallbacks"] == 0
    want = fn(a, x)
    assert got.dtype == want.dtype
    tol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
