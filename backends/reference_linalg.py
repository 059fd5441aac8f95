"""Reference (NumPy) kernels for the matrix factorization primitives; merged into TABLE.

Each returns all of its op's results as a tuple (core/ir.py: multi nodes); RUNS counts how
often each ran, so a test can tell that one factorization served all of its factors."""
import collections

import numpy as np

from ..core.tables import Table

RUNS = collections.Counter()  # multi-result kernel name -> runs (reference sort kernels too)


def _lu_all(x):
    """Doolittle LU with partial pivoting (LAPACK getrf's choice: first largest |pivot|)."""
    RUNS["lu"] += 1
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


def _qr(x, *, full_matrices):
    RUNS["qr"] += 1
    return tuple(np.linalg.qr(x, mode="complete" if full_matrices else "reduced"))


def _geqrf(x):
    """LAPACK geqrf's compact QR, column by column in float64 (dlarfg's reflector: beta =
    -sign(alpha) * ||(alpha, x)||, tau = (beta - alpha) / beta, v = x / (alpha - beta); tau 0
    and the column left as it is when x is zero), so signs and scales are LAPACK's."""
    RUNS["geqrf"] += 1
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    a = np.array(x, dtype=np.float64).reshape((-1, m, n))
    k = min(m, n)
    tau = np.zeros((a.shape[0], k))
    for i in range(k):
        alpha, below = a[:, i, i], a[:, i + 1:, i]
        norm = np.linalg.norm(below, axis=1)
        reflect = norm != 0
        beta = -np.copysign(np.hypot(alpha, norm), alpha)
        with np.errstate(all="ignore"):
            t = np.where(reflect, (beta - alpha) / beta, 0.0)
            v = np.where(reflect[:, None], below / (alpha - beta)[:, None], below)
        a[:, i, i] = np.where(reflect, beta, alpha)
        a[:, i + 1:, i] = v
        # the trailing columns times H = I - t [1; v] [1; v]^T
        w = a[:, i, i + 1:] + np.einsum("br,brc->bc", v, a[:, i + 1:, i + 1:])
        a[:, i, i + 1:] -= t[:, None] * w
        a[:, i + 1:, i + 1:] -= t[:, None, None] * v[:, :, None] * w[:, None, :]
        tau[:, i] = t
    return a.reshape(x.shape).astype(x.dtype), tau.reshape(batch + (k,)).astype(x.dtype)


def _eigh(x, *, lower):
    RUNS["eigh"] += 1
    values, vectors = np.linalg.eigh(x, UPLO="L" if lower else "U")
    return values, vectors


def _svd(x, *, full_matrices, compute_uv):
    RUNS["svd"] += 1
    if not compute_uv:
        return (np.linalg.svd(x, compute_uv=False),)
    return tuple(np.linalg.svd(x, full_matrices=full_matrices))


TABLE = Table("lazyx.backends.reference_linalg.TABLE",
              {"lu": _lu_all, "qr": _qr, "geqrf": _geqrf, "eigh": _eigh, "svd": _svd})
