"""lnp.linalg's factorization-based functions and lnp.fft against numpy.linalg / numpy.fft,
on random inputs with batch dimensions (both backends, through the tox matrix)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyx.frontends.numpy as lnp
from numpy_checks import assert_matches

L = lnp.linalg
TOL = 1e-8


def _data(seed, batch=(2,)):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (4, 4))
    return a, rng.standard_normal(batch + (4, 3)), a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
def test_solvers_and_determinants(batch):
    a, b, _ = _data(0, batch)
    A, B = lnp.asarray(a), lnp.asarray(b)
    assert_matches(L.det(A), np.linalg.det(a), rtol=TOL)
    assert_matches(L.inv(A), np.linalg.inv(a), rtol=1e-7, atol=1e-9)
    assert_matches(L.solve(A, B), np.linalg.solve(a, b), rtol=1e-7, atol=1e-9)
    sign, logabs = L.slogdet(A)
    assert_matches(sign, np.linalg.slogdet(a).sign)
    assert_matches(logabs, np.linalg.slogdet(a).logabsdet, rtol=TOL)
    assert_matches(L.matrix_power(A, 3), np.linalg.matrix_power(a, 3), rtol=TOL)
    assert_matches(L.matrix_power(A, -2), np.linalg.matrix_power(a, -2), rtol=1e-6, atol=1e-9)
    assert_matches(L.matrix_power(A, 0), np.linalg.matrix_power(a, 0))


def test_solve_with_a_vector_and_integer_inputs():
    a = np.array([[3, 1], [1, 2]])
    v = np.array([9, 8])
    assert_matches(L.solve(lnp.asarray(a), lnp.asarray(v)), np.linalg.solve(a, v), rtol=TOL)
    assert_matches(L.det(lnp.asarray(a)), np.linalg.det(a), rtol=TOL)


def test_symmetric_and_orthogonal_factorizations():
    a, b, spd = _data(1)
    S, B = lnp.asarray(spd), lnp.asarray(b)
    assert_matches(L.cholesky(S), np.linalg.cholesky(spd), rtol=TOL)
    assert_matches(L.cholesky(S, upper=True), np.linalg.cholesky(spd, upper=True), rtol=TOL)
    w, v = L.eigh(S)
    assert_matches(w, np.linalg.eigvalsh(spd), rtol=TOL)
    assert_matches(v @ (w[..., None] * lnp.matrix_transpose(v)), spd, rtol=1e-7)
    assert_matches(L.eigvalsh(S), np.linalg.eigvalsh(spd), rtol=TOL)
    for mode in ("reduced", "complete"):
        q, r = L.qr(B, mode=mode)
        assert q.shape == np.linalg.qr(b, mode=mode).Q.shape
        assert_matches(q @ r, b, rtol=1e-7, atol=1e-9)
    u, s, vh = L.svd(B, full_matrices=False)
    assert_matches(s, np.linalg.svd(b, compute_uv=False), rtol=TOL)
    assert_matches((u * s[..., None, :]) @ vh, b, rtol=1e-7, atol=1e-9)
    assert L.svd(B).U.shape == (2, 4, 4)
    assert_matches(L.svdvals(B), np.linalg.svdvals(b), rtol=TOL)
    assert_matches(L.pinv(B), np.linalg.pinv(b), rtol=1e-7, atol=1e-9)
    low_rank = b @ np.ones((2, 3, 3))
    assert_matches(L.matrix_rank(lnp.asarray(low_rank)), np.linalg.matrix_rank(low_rank))
    assert_matches(L.cross(lnp.asarray(b[..., :3, :]), lnp.asarray(a[..., :3, :3]), axis=-2),
                   np.linalg.cross(b[..., :3, :], a[..., :3, :3], axis=-2), rtol=TOL)
    assert_matches(L.outer(lnp.asarray(b[0, 0]), lnp.asarray(a[0, 0])),
                   np.linalg.outer(b[0, 0], a[0, 0]))


def test_complex_through_the_real_block_form():
    rng = np.random.default_rng(5)
    z = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    w = rng.standard_normal((2, 3, 2)) + 1j * rng.standard_normal((2, 3, 2))
    r = rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))
    Z, W, R = lnp.asarray(z), lnp.asarray(w), lnp.asarray(r)
    assert_matches(L.inv(Z), np.linalg.inv(z), rtol=1e-8, atol=1e-10)
    assert_matches(L.solve(Z, W), np.linalg.solve(z, w), rtol=1e-8, atol=1e-10)
    assert_matches(L.pinv(R), np.linalg.pinv(r), rtol=1e-8, atol=1e-10)
    assert_matches(L.svdvals(R), np.linalg.svdvals(r), rtol=1e-10)
    low_rank = r[..., :2] @ r[:, :2, :]
    assert_matches(L.matrix_rank(lnp.asarray(low_rank)), np.linalg.matrix_rank(low_rank))


def test_linalg_errors_at_the_call():
    with pytest.raises(ValueError):
        L.inv(lnp.ones((2, 3)))
    # a complex svd is NumPy's own (counted), in lnp.linalg as in np.linalg
    z = np.array([[1 + 2j, 0.5], [3j, 4]], np.complex64)
    assert_matches(L.svd(lnp.asarray(z), compute_uv=False), np.linalg.svd(z, compute_uv=False),
                   rtol=1e-5)
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        L.det(lnp.ones((2, 3)))


FFT_1D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(FFT_1D), n=st.none() | st.integers(1, 9),
       axis=st.sampled_from([0, -1]), norm=st.sampled_from(["backward", "ortho", "forward"]),
       single=st.booleans(), seed=st.integers(0, 100))
def test_fft_1d(name, n, axis, norm, single, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 5))
    if name in ("fft", "ifft", "irfft", "hfft"):
        x = x + 1j * rng.standard_normal((3, 5))
    x = x.astype(np.complex64 if x.dtype.kind == "c" else np.float32) if single else x
    got = getattr(lnp.fft, name)(lnp.asarray(x), n=n, axis=axis, norm=norm)
    expected = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
    assert_matches(got, expected, rtol=1e-4 if single else 1e-9, atol=1e-4 if single else 1e-9)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("s, axes", [(None, None), ((2, 6), (1, 2)), (None, (0, 2)),
                                     ((3, 4), (2, 0))])
def test_fft_nd(name, s, axes):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 5))
    if name != "rfftn":
        x = x + 1j * rng.standard_normal(x.shape)
    got = getattr(lnp.fft, name)(lnp.asarray(x), s=s, axes=axes)
    assert_matches(got, getattr(np.fft, name)(x, s=s, axes=axes), rtol=1e-9, atol=1e-9)


def test_fft_helpers():
    x = np.arange(12.0).reshape(3, 4)
    assert_matches(lnp.fft.fftshift(lnp.asarray(x)), np.fft.fftshift(x))
    assert_matches(lnp.fft.ifftshift(lnp.asarray(x), axes=1), np.fft.ifftshift(x, axes=1))
    assert_matches(lnp.fft.fftfreq(7, d=0.5), np.fft.fftfreq(7, 0.5))
    assert_matches(lnp.fft.rfftfreq(8), np.fft.rfftfreq(8))
    with pytest.raises(ValueError):
        lnp.fft.fft(lnp.asarray(x), norm="sideways")
