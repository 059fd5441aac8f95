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


_BUNCH_KAUFMAN = (1 + np.sqrt(17.0)) / 8  # dsytf2's alpha: it bounds the growth of L


def _sytf2(a):
    """LAPACK dsytf2 (lower) on one matrix, in place: (pivots, info)."""
    n = a.shape[0]
    pivots, info, k = np.zeros(n, np.int32), 0, 0
    while k < n:
        step, diagonal = 1, abs(a[k, k])
        imax = k + 1 + int(np.argmax(abs(a[k + 1:, k]))) if k < n - 1 else k
        colmax = abs(a[imax, k]) if k < n - 1 else 0.0
        if max(diagonal, colmax) == 0 or np.isnan(diagonal):
            info, pivot = info or k + 1, k  # a zero (or NaN) column: no update
        else:
            pivot = k  # (comparisons as LAPACK words them: NaN takes the same branches)
            if not diagonal >= _BUNCH_KAUFMAN * colmax:
                rowmax = abs(a[imax, k:imax]).max()  # row imax, left of the diagonal
                if imax < n - 1:
                    rowmax = max(rowmax, abs(a[imax + 1:, imax]).max())
                if not diagonal >= _BUNCH_KAUFMAN * colmax * (colmax / rowmax):
                    pivot = imax
                    if not abs(a[imax, imax]) >= _BUNCH_KAUFMAN * rowmax:
                        step = 2
            kk = k + step - 1
            if pivot != kk:  # swap rows and columns kk, pivot of the lower trailing part
                a[pivot + 1:, [kk, pivot]] = a[pivot + 1:, [pivot, kk]]
                between = np.arange(kk + 1, pivot)
                a[between, kk], a[pivot, between] = a[pivot, between], a[between, kk].copy()
                a[kk, kk], a[pivot, pivot] = a[pivot, pivot], a[kk, kk]
                if step == 2:
                    a[k + 1, k], a[pivot, k] = a[pivot, k], a[k + 1, k]
            if step == 1:
                d11 = 1 / a[k, k]
                x = a[k + 1:, k].copy()
                a[k + 1:, k + 1:] -= d11 * np.outer(x, x)
                a[k + 1:, k] = x * d11
            else:
                d21 = a[k + 1, k]
                d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
                d21 = 1 / (d11 * d22 - 1) / d21
                x, y = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk, wkp1 = d21 * (d11 * x - y), d21 * (d22 * y - x)
                a[k + 2:, k + 2:] -= np.outer(x, wk) + np.outer(y, wkp1)
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
        pivots[k:k + step] = pivot + 1 if step == 1 else -(pivot + 1)
        k += step
    return pivots, info


def _ldl(x):
    RUNS["ldl"] += 1
    batch, n = x.shape[:-2], x.shape[-1]
    a = np.array(x, copy=True).reshape((-1, n, n))
    pivots = np.zeros((a.shape[0], n), np.int32)
    info = np.zeros(a.shape[0], np.int32)
    for i in range(a.shape[0]):
        pivots[i], info[i] = _sytf2(a[i])
    return (np.tril(a).reshape(x.shape), pivots.reshape(batch + (n,)),
            info.reshape(batch))


def _sytrs(ld, pivots, b):
    """LAPACK dsytrs (lower) on one matrix: b overwritten with x, A x = b."""
    n, k = ld.shape[0], 0
    while k < n:  # L D y = P b, forward
        if pivots[k] > 0:
            p = pivots[k] - 1
            b[[k, p]] = b[[p, k]]
            b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] /= ld[k, k]
            k += 1
        else:
            p = -pivots[k] - 1
            b[[k + 1, p]] = b[[p, k + 1]]
            b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
            off = ld[k + 1, k]
            first, second = ld[k, k] / off, ld[k + 1, k + 1] / off
            denominator = first * second - 1
            u, v = b[k] / off, b[k + 1] / off
            b[k], b[k + 1] = (second * u - v) / denominator, (first * v - u) / denominator
            k += 2
    k = n - 1
    while k >= 0:  # L^T P^T x = y, backward
        if pivots[k] > 0:
            b[k] -= ld[k + 1:, k] @ b[k + 1:]
            p = pivots[k] - 1
            b[[k, p]] = b[[p, k]]
            k -= 1
        else:
            b[k] -= ld[k + 1:, k] @ b[k + 1:]
            b[k - 1] -= ld[k + 1:, k - 1] @ b[k + 1:]
            p = -pivots[k] - 1
            b[[k, p]] = b[[p, k]]
            k -= 2
    return b


def _ldl_solve(ld, pivots, b):
    n, m = b.shape[-2:]
    lds = np.asarray(ld).reshape((-1, n, n))
    pivots = np.asarray(pivots).reshape((-1, n))
    x = np.array(b, copy=True).reshape((-1, n, m))
    with np.errstate(all="ignore"):  # a singular D divides by zero, as LAPACK does
        for i in range(x.shape[0]):
            _sytrs(lds[i], pivots[i], x[i])
    return x.reshape(b.shape)


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
              {"lu": _lu_all, "qr": _qr, "geqrf": _geqrf, "ldl": _ldl, "ldl_solve": _ldl_solve,
               "eigh": _eigh, "svd": _svd})
