"""cholesky, triangular_solve and random_bits on both backends."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from backend_harness import REFERENCE, check, leaf, run
from lazyx.core import ops

batches = st.sampled_from([(), (2,), (2, 3)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@given(batch=batches, n=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_cholesky_of_spd_matrices(dtype, batch, n, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=batch + (n, n))
    spd = (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)
    (low,) = check([ops.cholesky(leaf(spd))], [np.linalg.cholesky(spd)],
                   rtol=1e-4 if dtype == "float32" else None,
                   atol=1e-5 if dtype == "float32" else None)
    np.testing.assert_array_equal(np.triu(low, 1), 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@given(batch=batches, n=st.integers(1, 4), m=st.integers(1, 3), lower=st.booleans(),
       transpose_a=st.booleans(), unit_diagonal=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_triangular_solve_solves(dtype, batch, n, m, lower, transpose_a, unit_diagonal, seed):
    rng = np.random.default_rng(seed)
    # a well-conditioned triangle; the other triangle holds junk that must be ignored
    a = rng.uniform(-1, 1, batch + (n, n)) + 4 * np.eye(n)
    b = rng.uniform(-1, 1, batch + (n, m))
    a, b = a.astype(dtype), b.astype(dtype)
    (x,) = check([ops.triangular_solve(leaf(a), leaf(b), lower=lower, transpose_a=transpose_a,
                                       unit_diagonal=unit_diagonal)],
                 rtol=1e-4 if dtype == "float32" else None,
                 atol=1e-5 if dtype == "float32" else None)
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:  # the stored diagonal is ignored and taken as ones
        tri[..., np.arange(n), np.arange(n)] = 1
    op_a = np.swapaxes(tri, -1, -2) if transpose_a else tri
    np.testing.assert_allclose(op_a.astype(np.float64) @ x.astype(np.float64), b,
                               rtol=1e-4, atol=1e-4)


def test_cholesky_of_non_spd_is_nan_not_an_error():
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    (low,) = run(REFERENCE, [ops.cholesky(leaf(bad))])
    assert np.isnan(low).any()


key_values = st.integers(0, 2**32 - 1)
random_shapes = st.sampled_from([(), (0,), (1,), (7,), (4, 5), (2, 3, 3)])


@given(k0=key_values, k1=key_values, shape=random_shapes)
def test_random_bits_bit_identical_and_equal_to_jax(k0, k1, shape):
    key = np.array([k0, k1], np.uint32)
    (bits,) = check([ops.random_bits(leaf(key), shape=shape)])  # exact across backends
    assert bits.dtype == np.uint32 and bits.shape == shape
    jax = pytest.importorskip("jax")
    from jax.extend.random import threefry_2x32
    n = int(np.prod(shape))
    want = np.asarray(threefry_2x32(jax.numpy.asarray(key), jax.numpy.arange(n, dtype=np.uint32)))
    np.testing.assert_array_equal(bits.ravel(), want)


def test_random_bits_look_uniform():
    (bits,) = run(REFERENCE, [ops.random_bits(leaf(np.array([0, 42], np.uint32)), shape=(4096,))])
    # each of the 32 bit positions is set about half the time; nearby keys give other streams
    ones = np.unpackbits(bits.view(np.uint8)).reshape(-1, 8).mean()
    assert 0.48 < ones < 0.52
    (other,) = run(REFERENCE, [ops.random_bits(leaf(np.array([0, 43], np.uint32)), shape=(4096,))])
    assert (bits != other).mean() > 0.99


def _philox_64bit(key, counter, n):
    """Philox-4x32-10 written independently of core/prng.py: 64-bit products, a Python-int
    128-bit counter."""
    mask = 0xFFFFFFFF
    start = sum(int(w) << (32 * i) for i, w in enumerate(counter))
    out = []
    for j in range(-(-n // 4)):
        value = (start + j) % 2**128
        c = [(value >> (32 * i)) & mask for i in range(4)]
        k0, k1 = int(key[0]), int(key[1])
        for _ in range(10):
            p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
            c = [(p1 >> 32) ^ c[1] ^ k0, p1 & mask, (p0 >> 32) ^ c[3] ^ k1, p0 & mask]
            k0, k1 = (k0 + 0x9E3779B9) & mask, (k1 + 0xBB67AE85) & mask
        out += c
    return np.array(out[:n], np.uint32)


# counters whose low words are about to wrap: block j's counter carries into the high words
counters = st.lists(st.sampled_from([0, 1, 2**31, 2**32 - 2, 2**32 - 1]), min_size=4, max_size=4)


@given(k0=key_values, k1=key_values, counter=counters, shape=random_shapes)
def test_philox_bits_bit_identical_and_equal_to_64_bit_philox(k0, k1, counter, shape):
    key, counter = np.array([k0, k1], np.uint32), np.array(counter, np.uint32)
    (bits,) = check([ops.philox_bits(leaf(key), leaf(counter), shape=shape)])
    assert bits.dtype == np.uint32 and bits.shape == shape
    np.testing.assert_array_equal(bits.ravel(), _philox_64bit(key, counter, int(np.prod(shape))))


@given(k0=key_values, k1=key_values, counter=counters,
       rows=st.sampled_from([(1, 4, 1), (3, 8, 2), (5, 32, 256), (2, 64, 128)]))
def test_philox_bits_with_a_stride_start_each_row_at_its_block(k0, k1, counter, rows):
    """(groups, words) with stride s: row g is the stream from block g * s on (TF's
    truncated normal: each group of numbers has its own run of blocks)."""
    groups, words, stride = rows
    key, counter = np.array([k0, k1], np.uint32), np.array(counter, np.uint32)
    (bits,) = check([ops.philox_bits(leaf(key), leaf(counter), shape=(groups, words),
                                     stride=stride)])
    start = sum(int(w) << (32 * i) for i, w in enumerate(counter))
    for g in range(groups):
        at = (start + g * stride) % 2**128
        row_counter = np.array([(at >> (32 * i)) & 0xFFFFFFFF for i in range(4)], np.uint32)
        np.testing.assert_array_equal(bits[g], _philox_64bit(key, row_counter, words))
