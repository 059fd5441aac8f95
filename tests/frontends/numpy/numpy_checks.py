"""Compare a lazy result with NumPy's: same dtype, same shape, same numbers (to the ulps XLA's
transcendental functions may differ by)."""
import numpy as np

import lazyx.frontends.numpy as lnp

RTOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12, "complex64": 2e-6,
        "complex128": 1e-12}


def host(x):
    if isinstance(x, lnp.LazyArray):
        return np.asarray(x)
    return x


def assert_matches(lazy, expected, rtol=None, atol=0.0, check_dtype=True):
    if isinstance(expected, (tuple, list)):
        assert isinstance(lazy, (tuple, list)) and len(lazy) == len(expected)
        for a, b in zip(lazy, expected):
            assert_matches(a, b, rtol, atol, check_dtype)
        return
    expected = np.asarray(expected)
    got = np.asarray(host(lazy))
    if check_dtype:
        assert got.dtype == expected.dtype, f"dtype {got.dtype} != NumPy's {expected.dtype}"
    assert got.shape == expected.shape, f"shape {got.shape} != NumPy's {expected.shape}"
    if expected.dtype.kind in "fc":
        tol = rtol if rtol is not None else RTOL.get(expected.dtype.name, 1e-12)
        np.testing.assert_allclose(got, expected, rtol=tol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def both(fn, *arrays):
    """fn on host arrays and on lazy copies of them: (lazy result, NumPy result)."""
    lazy = [lnp.asarray(a) if isinstance(a, np.ndarray) else a for a in arrays]
    with np.errstate(all="ignore"):
        expected = fn(*arrays)
    return fn(*lazy), expected
