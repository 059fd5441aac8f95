"""np.matmul of two bfloat16 arrays: NumPy has no bfloat16 matmul loop, so it casts both to
float32 and returns float32 (np.dot keeps bfloat16). Lazily it gave bfloat16."""
import numpy as np
import pytest

import lazyx.frontends.numpy as lnp
from numpy_checks import assert_matches

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(3)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4, 3)),
                                    ((3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul_of_bfloat16_arrays_is_float32_as_numpys(shapes):
    a, b = (RNG.standard_normal(s).astype(BF16) for s in shapes)
    assert_matches(lnp.asarray(a) @ lnp.asarray(b), a @ b, rtol=1e-6)
    assert_matches(np.matmul(lnp.asarray(a), b), np.matmul(a, b), rtol=1e-6)


def test_dot_of_bfloat16_arrays_stays_bfloat16():
    a, b = RNG.standard_normal((3, 4)).astype(BF16), RNG.standard_normal((4, 2)).astype(BF16)
    assert np.asarray(np.dot(lnp.asarray(a), lnp.asarray(b))).dtype == np.dot(a, b).dtype == BF16
