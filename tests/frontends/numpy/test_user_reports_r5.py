"""Outside prober's reports, round 5: each compared against NumPy on real inputs."""
import numpy as np
import pytest

import lazyx.frontends.numpy as lnp

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


# ---------------------------------------------------------------- Generator.integers
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("endpoint", [False, True])
def test_integers_cover_the_whole_dtype_range(dtype, endpoint):
    info = np.iinfo(dtype)
    high = info.max if endpoint else info.max + 1
    v = np.asarray(lnp.random.default_rng(0).integers(info.min, high, 20000, dtype=dtype,
                                                      endpoint=endpoint))
    assert v.dtype == dtype
    # both halves of the range are hit, and the extremes are approached (NumPy does the same)
    width = float(info.max) - float(info.min)
    assert float(v.min()) < float(info.min) + width * 0.01
    assert float(v.max()) > float(info.max) - width * 0.01
    if info.bits <= 8:  # small ranges: every value can be seen, both ends are
        assert v.min() == info.min and v.max() == info.max
    # low bits stay random (float offsets lost them past 2**53)
    assert len(np.unique(v.astype(np.uint64) % np.uint64(64))) == 64


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integers_uniform_on_a_range_that_overflows_the_offset(dtype):
    v = np.asarray(lnp.random.default_rng(1).integers(-100, 100, 40000, dtype=dtype))
    assert v.min() == -100 and v.max() == 99
    counts = np.bincount(v.astype(np.int64) + 100, minlength=200)
    expected = 40000 / 200
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 320  # 199 degrees of freedom: mean 199, sd ~20


def test_integers_wide_int64_spans():
    g = lnp.random.default_rng(2)
    v = np.asarray(g.integers(-2**63, 2**63 - 1, 4000))
    assert (v < 0).any() and (v > 0).any()
    w = np.asarray(g.integers(0, 2**62, 4000))
    assert 0 <= w.min() and w.max() < 2**62
    np.testing.assert_allclose(np.bincount(w % 64, minlength=64) / 4000, 1 / 64, atol=0.01)
    top = np.asarray(g.integers(2**63 - 4, 2**63 - 1, 2000, endpoint=True))
    assert set(np.unique(top)) == {2**63 - 4, 2**63 - 3, 2**63 - 2, 2**63 - 1}
    u = np.asarray(g.integers(2**64 - 3, 2**64, 600, dtype=np.uint64))
    assert set(np.unique(u)) == {2**64 - 3, 2**64 - 2, 2**64 - 1}


def test_randint_module_level_int32_full_range():
    v = np.asarray(lnp.random.randint(-2**31, 2**31, 10000, dtype=np.int32))
    assert v.min() < -2**30 and v.max() > 2**30


def test_integers_bound_errors_like_numpy():
    g, ref = lnp.random.default_rng(0), np.random.default_rng(0)
    for args, kwargs in [((5, 5), {}), ((5, 4), {"endpoint": True}),
                         ((0, 300), {"dtype": np.uint8}), ((-1, 3), {"dtype": np.uint8})]:
        with pytest.raises(ValueError) as expected:
            ref.integers(*args, **kwargs)
        with pytest.raises(ValueError, match=str(expected.value)):
            g.integers(*args, **kwargs)
