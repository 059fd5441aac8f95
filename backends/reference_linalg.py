"""Reference (NumPy) kernels for the matrix factorization primitives; merged into TABLE."""
import numpy as np

from ..core.tables import Table


def _lu_all(x):
    """Doolittle LU with partial pivoting (LAPACK getrf's choice: first largest |pivot|)."""
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    a = np.array(x, copy=True).reshape((-1, m, n))
    k = min(m, n)
    pivots = np.zeros((a.shape[0], k), np.int32)
    perm = np.tile(np.arange(m, dtype=np.int32), (a.shape[0], 1))
    rows = np.arange(a.shape[0])
    for i in range(k):
        p = i + np.argmax(np.abs(a[:, i:, i]), axis=1)
        pivots[:, i] = p
        a[rows, i], a[rows, p] = a[rows, p].copy(), a[rows, i].copy()
        perm[rows, i], perm[rows, p] = perm[rows, p].copy(), perm[rows, i].copy()
        pivot = a[:, i, i][:, None]
        with np.errstate(all="ignore"):
            factors = np.where(pivot != 0, a[:, i + 1:, i] / pivot, a[:, i + 1:, i])
        a[:, i + 1:, i] = factors
        a[:, i + 1:, i + 1:] -= factors[:, :, None] * a[:, i, i + 1:][:, None, :]
    return (a.reshape(x.shape), pivots.reshape(batch + (k,)), perm.reshape(batch + (m,)))


def _qr(x, full_matrices):
    return np.linalg.qr(x, mode="complete" if full_matrices else "reduced")


def _eigh(x, lower):
    return np.linalg.eigh(x, UPLO="L" if lower else "U")


def _svd(x, full_matrices):
    return np.linalg.svd(x, full_matrices=full_matrices)


TABLE = Table("lazyx.backends.reference_linalg.TABLE", {
    "lu": lambda x: _lu_all(x)[0],
    "lu_pivots": lambda x: _lu_all(x)[1],
    "lu_permutation": lambda x: _lu_all(x)[2],
    "qr_q": lambda x, *, full_matrices: _qr(x, full_matrices)[0],
    "qr_r": lambda x, *, full_matrices: _qr(x, full_matrices)[1],
    "eigh_values": lambda x, *, lower: _eigh(x, lower)[0],
    "eigh_vectors": lambda x, *, lower: _eigh(x, lower)[1],
    "svd_u": lambda x, *, full_matrices: _svd(x, full_matrices)[0],
    "svd_s": lambda x: np.linalg.svd(x, compute_uv=False),
    "svd_vh": lambda x, *, full_matrices: _svd(x, full_matrices)[2],
})
