"""The matrix factorization primitives on both backends: each factor satisfies its defining
identity (checked with NumPy), and the two backends agree on the unique parts (pivots,
eigenvalues, singular values, reconstructions)."""
import numpy as np
import pytest

from lazyx.backends.reference_linalg import TABLE as REF
from lazyx.core import ops
from lazyx.core.ir import Node  # noqa: F401  (ops build Nodes)

jax = pytest.importorskip("jax")
from lazyx.backends.xla_linalg import TABLE as XLA  # noqa: E402

SHAPES = [(4, 4), (3, 5), (5, 3), (2, 4, 4), (2, 3, 1, 1)]


def _both(op, x, **attrs):
    ref = np.asarray(REF[op](x, **attrs))
    xla = np.asarray(jax.jit(lambda a: XLA[op](a, **attrs))(x))
    return ref, xla


def _matrix(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factors_reconstruct_the_permuted_matrix(shape):
    a = _matrix(shape, 0)
    m, n = shape[-2:]
    k = min(m, n)
    for backend in (0, 1):
        lu = _both("lu", a)[backend]
        perm = _both("lu_permutation", a)[backend]
        lower = np.tril(lu, -1)[..., :, :k] + np.eye(m, k, dtype=a.dtype)
        upper = np.triu(lu)[..., :k, :]
        permuted = np.take_along_axis(a, perm[..., :, None].astype(np.int64), axis=-2)
        np.testing.assert_allclose(lower @ upper, permuted, rtol=1e-4, atol=1e-5)
    for op in ("lu_pivots", "lu_permutation"):
        ref, xla = _both(op, a)
        np.testing.assert_array_equal(ref, xla)
        assert ref.dtype == np.int32


def test_lu_pivots_replay_into_the_permutation():
    a = _matrix((5, 5), 1)
    pivots, perm = _both("lu_pivots", a)[0], _both("lu_permutation", a)[0]
    replay = np.arange(5)
    for i, p in enumerate(pivots):
        replay[[i, p]] = replay[[p, i]]
    np.testing.assert_array_equal(replay, perm)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [False, True])
def test_qr_is_orthonormal_times_upper_triangular(shape, full):
    a = _matrix(shape, 2)
    for backend in (0, 1):
        q = _both("qr_q", a, full_matrices=full)[backend]
        r = _both("qr_r", a, full_matrices=full)[backend]
        np.testing.assert_allclose(q @ r, a, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(
            np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), atol=1e-5)
        np.testing.assert_array_equal(r, np.triu(r))
    ref, xla = _both("qr_r", a, full_matrices=full)
    np.testing.assert_allclose(np.abs(ref), np.abs(xla), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("lower", [True, False])
def test_eigh_reads_one_triangle_and_diagonalizes(lower):
    a = _matrix((2, 4, 4), 3)
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2) if lower else \
        np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
    values = _both("eigh_values", a, lower=lower)
    np.testing.assert_allclose(values[0], np.linalg.eigvalsh(sym), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(values[1], values[0], rtol=1e-4, atol=1e-5)
    for backend in (0, 1):
        v = _both("eigh_vectors", a, lower=lower)[backend]
        np.testing.assert_allclose(sym @ v, v * values[backend][..., None, :], rtol=1e-3,
                                   atol=1e-4)


@pytest.mark.parametrize("shape", SHAPES)
def test_svd_reconstructs(shape):
    a = _matrix(shape, 4)
    s_ref, s_xla = _both("svd_s", a)
    np.testing.assert_allclose(s_ref, np.linalg.svd(a, compute_uv=False), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(s_xla, s_ref, rtol=1e-4, atol=1e-5)
    for backend in (0, 1):
        u = _both("svd_u", a, full_matrices=False)[backend]
        vh = _both("svd_vh", a, full_matrices=False)[backend]
        s = (s_ref, s_xla)[backend]
        np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, rtol=1e-4, atol=1e-5)
    m, n = shape[-2:]
    assert _both("svd_u", a, full_matrices=True)[1].shape[-2:] == (m, m)
    assert _both("svd_vh", a, full_matrices=True)[0].shape[-2:] == (n, n)


def test_builders_check_shapes_and_dtypes():
    from lazyx.core import ir
    square = ir.constant(np.zeros((3, 4), np.float32), "float32")
    assert ops.lu_pivots(square).shape == (3,) and ops.lu_pivots(square).dtype == "int32"
    assert ops.qr_q(square).shape == (3, 3) and ops.qr_r(square).shape == (3, 4)
    assert ops.svd_vh(square, full_matrices=True).shape == (4, 4)
    with pytest.raises(ValueError, match="eigh_values: needs square"):
        ops.eigh_values(square)
    with pytest.raises(TypeError, match="lu: needs floating"):
        ops.lu(ir.constant(np.zeros((2, 2), np.int32), "int32"))
    with pytest.raises(ValueError, match="svd_s: needs matrices"):
        ops.svd_s(ir.constant(np.zeros((3,), np.float32), "float32"))
