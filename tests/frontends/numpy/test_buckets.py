"""lnp.pad_to_bucket: host arrays stay NumPy, lazy arrays stay lazy; a loop over varying
lengths compiles once per bucket and, masked, gives NumPy's unpadded results."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_pad_to_bucket_matches_np_pad_on_host_and_lazy(axis, dtype):
    x = (np.arange(2 * 5 * 3).reshape(2, 5, 3) % 4).astype(dtype)
    padded, mask = lnp.pad_to_bucket(x, axis, buckets=(4, 8), value=1)
    assert type(padded) is np.ndarray and type(mask) is np.ndarray
    size = x.shape[axis]
    widths = [(0, 0)] * 3
    widths[axis] = (0, (4 if size <= 4 else 8) - size)
    np.testing.assert_array_equal(padded, np.pad(x, widths, constant_values=1))
    np.testing.assert_array_equal(mask, np.pad(np.ones(x.shape, bool), widths))
    lazy_padded, lazy_mask = lazyx.pad_to_bucket(lnp.asarray(x), axis, buckets=(4, 8), value=1)
    assert isinstance(lazy_padded, lnp.ndarray) and isinstance(lazy_mask, lnp.ndarray)
    np.testing.assert_array_equal(np.asarray(lazy_padded), padded)
    np.testing.assert_array_equal(np.asarray(lazy_mask), mask)


def test_varying_lengths_compile_once_per_bucket_and_match_numpy():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 6))
    lazyx.reset_metrics()
    for length in (5, 9, 16, 6, 12, 7, 30, 17):  # buckets 8, 16, 32
        x = rng.standard_normal((3, length, 6))
        expected = np.tanh(x @ w).mean(axis=1)  # per-row mean over the real positions
        padded, mask = lnp.pad_to_bucket(x, axis=1)
        m = lnp.asarray(mask[..., :1].astype(np.float64))
        h = np.tanh(lnp.asarray(padded) @ lnp.asarray(w)) * m
        got = np.asarray(h.sum(axis=1) / m.sum(axis=1))
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert lazyx.metrics()["compiles"] == 3
