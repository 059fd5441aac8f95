"""np.gcd / np.lcm are lowered (Euclid unrolled to the dtype's worst case, no loop primitive)
and give NumPy's numbers in every integer dtype: the extremes, where abs() wraps, zeros, and
consecutive Fibonacci numbers (Euclid's longest runs) included."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.numpy as lnp

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _edges(dtype):
    info = np.iinfo(dtype)
    fib = [1, 2]
    while fib[-1] + fib[-2] <= info.max:
        fib.append(fib[-1] + fib[-2])
    a = [0, 0, 5, info.min, info.max, info.min, fib[-1], 12, 7, info.max, 1]
    b = [0, 7, 0, 6, info.max, info.min, fib[-2], 18, 1, info.max - 1, info.min]
    return np.array(a, dtype), np.array(b, dtype)


def _check(a, b):
    lazyx.reset_metrics()
    for ufunc in (np.gcd, np.lcm):
        with np.errstate(all="ignore"):
            want = ufunc(a, b)
        got = np.asarray(ufunc(lnp.asarray(a), lnp.asarray(b)))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{ufunc.__name__} {a.dtype}")
    assert lazyx.metrics()["fallbacks"] == 0


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_edges(dtype):
    _check(*_edges(dtype))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(lambda d: st.tuples(
    hnp.arrays(d, 12), hnp.arrays(d, 12))))
def test_random_operands(ab):
    _check(*ab)


def test_broadcast_and_python_int():
    a = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(np.gcd(lnp.asarray(a), 4)), np.gcd(a, 4))
    np.testing.assert_array_equal(np.asarray(np.lcm(lnp.asarray(a), np.int32([2, 3, 4, 5]))),
                                  np.lcm(a, np.int32([2, 3, 4, 5])))
