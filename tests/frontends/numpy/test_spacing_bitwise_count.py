"""np.spacing and np.bitwise_count, the last NumPy ufuncs that were fallbacks, are lowered and
give NumPy's numbers bit for bit: zeros of both signs, subnormals (kept as bits on XLA:CPU,
which flushes subnormal arithmetic), the largest finite, infinities, NaNs, NumPy's own
float16 rule for negative values; and every integer dtype's extremes for bitwise_count."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.numpy as lnp

FLOATS = [np.float16, np.float32, np.float64]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _same_bits(got, want):
    assert got.dtype == want.dtype
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | \
        (np.isnan(got) & np.isnan(want))
    assert same.all(), (got[~same], want[~same])


def _spacing_both(x):
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy's overflow at the largest)
        want = np.spacing(x)
    got = np.asarray(np.spacing(lnp.asarray(x)))
    assert lazyx.metrics()["fallbacks"] == 0
    return got, want


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
def test_spacing_edges(dtype):
    fi = np.finfo(dtype)
    x = np.array([0.0, -0.0, 1.0, -1.0, -1.5, 2.0, 0.5, np.inf, -np.inf, np.nan, fi.max,
                  -fi.max, fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal,
                  fi.tiny / 3, -fi.tiny / 5], dtype)
    _same_bits(*_spacing_both(x))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(FLOATS).flatmap(lambda d: hnp.arrays(d, 16)))
def test_spacing_any_float(x):
    _same_bits(*_spacing_both(x))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(INTS + [np.bool_]).flatmap(lambda d: hnp.arrays(d, 16)))
def test_bitwise_count(x):
    lazyx.reset_metrics()
    got = np.asarray(np.bitwise_count(lnp.asarray(x)))
    assert lazyx.metrics()["fallbacks"] == 0
    want = np.bitwise_count(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: d.__name__)
def test_bitwise_count_extremes(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, info.min, info.max, info.min + 1, info.max - 1], dtype)
    np.testing.assert_array_equal(np.asarray(np.bitwise_count(lnp.asarray(x))),
                                  np.bitwise_count(x))
