"""np.linalg's factorizations with NumPy's signatures (the Array API's are _factorizations.py),
on the IR's multi-result primitives (core/ir.py): svd, svdvals, qr, eigh, eigvalsh (and pinv,
matrix_rank onto the Array API's). All
factors of one call come from one node, computed once. NumPy's
LinAlgError for a bad shape is raised at the call; what lazyx does not lower (complex or
half-precision input, empty matrices, hermitian svd, qr's 'raw' mode) runs on NumPy, counted."""
import collections

import numpy as np

from ...core import compose, ops, runtime
from ...core.compose import const
from ._base import LazyArray, wrap
from ._factorizations import matrix_rank as _array_api_matrix_rank
from ._factorizations import pinv as _array_api_pinv
from ._factorizations import svd_inverse
from ._fallback import run_eagerly
from ._linalg import dot as _dot
from ._promote import as_node

# NumPy 2's result types, by field name (they are namedtuples there too)
SVDResult = collections.namedtuple("SVDResult", "U S Vh")
QRResult = collections.namedtuple("QRResult", "Q R")
EighResult = collections.namedtuple("EighResult", "eigenvalues eigenvectors")


def _matrix(x, square=False):
    """x's node in float32/float64 (NumPy's linalg computes integers in float64), or None when
    lazyx does not lower this input."""
    runtime.maybe_cut()
    node = as_node(x)
    if node.ndim < 2:
        raise np.linalg.LinAlgError(f"{node.ndim}-dimensional array given. Array must be at "
                                    f"least two-dimensional")
    if square and node.shape[-1] != node.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    if node.dtype not in ("float32", "float64"):
        if node.dtype.startswith(("float", "bfloat", "complex")):
            return None
        node = ops.convert(node, dtype="float64")
    return node if node.size else None


def _lazy(nodes, kind):
    return kind(*(wrap(n) for n in nodes))


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    node = _matrix(a)
    if node is None or hermitian:
        return run_eagerly(np.linalg.svd, "numpy.linalg.svd", (a,),
                           {"full_matrices": full_matrices, "compute_uv": compute_uv,
                            "hermitian": hermitian})
    if not compute_uv:
        return wrap(ops.svd(node, compute_uv=False)[0])
    return _lazy(ops.svd(node, full_matrices=bool(full_matrices)), SVDResult)


def svdvals(x, /):
    node = _matrix(x)
    if node is None:
        return run_eagerly(np.linalg.svd, "numpy.linalg.svdvals", (x,), {"compute_uv": False})
    return wrap(ops.svd(node, compute_uv=False)[0])


def qr(a, mode="reduced"):
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    node = _matrix(a)
    if node is None or mode == "raw":
        return run_eagerly(np.linalg.qr, "numpy.linalg.qr", (a,), {"mode": mode})
    q, r = ops.qr(node, full_matrices=mode == "complete")
    return wrap(r) if mode == "r" else _lazy((q, r), QRResult)


def _uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO == "L"


def eigh(a, UPLO="L"):
    lower = _uplo(UPLO)
    node = _matrix(a, square=True)
    if node is None:
        return run_eagerly(np.linalg.eigh, "numpy.linalg.eigh", (a,), {"UPLO": UPLO})
    return _lazy(ops.eigh(node, lower=lower), EighResult)


def eigvalsh(a, UPLO="L"):
    lower = _uplo(UPLO)
    node = _matrix(a, square=True)
    if node is None:
        return run_eagerly(np.linalg.eigvalsh, "numpy.linalg.eigvalsh", (a,), {"UPLO": UPLO})
    return wrap(ops.eigh(node, lower=lower)[0])


_UNSET = object()  # NumPy's _NoValue: "not passed", apart from None


def pinv(a, rcond=None, hermitian=False, *, rtol=_UNSET):
    """NumPy's cut-off rules (rcond defaults to 1e-15, rtol=None to max(m, n) * eps) on the
    Array API's pinv; `hermitian` only picks NumPy's algorithm, not the result."""
    if rcond is not None and rtol is not _UNSET:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    cutoff = rcond if rcond is not None else 1e-15 if rtol is _UNSET else rtol
    if cutoff is not None and (isinstance(cutoff, LazyArray) or np.ndim(cutoff)):
        kwargs = {"rcond": rcond, "hermitian": hermitian}
        if rtol is not _UNSET:
            kwargs["rtol"] = rtol
        return run_eagerly(np.linalg.pinv, "numpy.linalg.pinv", (a,), kwargs)
    return _array_api_pinv(a, rtol=cutoff)


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """NumPy's default tolerance is the Array API's; an absolute `tol`, array tolerances and
    vectors (whose rank NumPy answers as a Python int, a read) run on NumPy."""
    if tol is not None and rtol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    if tol is not None or np.ndim(A) < 2 or isinstance(rtol, LazyArray) or np.ndim(rtol):
        return run_eagerly(np.linalg.matrix_rank, "numpy.linalg.matrix_rank", (A,),
                           dict(tol=tol, hermitian=hermitian, rtol=rtol))
    return _array_api_matrix_rank(A, rtol=rtol)


_DOUBLE_EPS = float(np.finfo(np.float64).eps)


def lstsq(a, b, rcond=None):
    """NumPy's least squares (LAPACK's gelsd, in float64 whatever the input, the results cast
    back), by one SVD: the minimum-norm solution keeping singular values above
    rcond * s_max, the rank as their count. NumPy gives residuals only when m > n and the rank
    is n, so their shape depends on the rank: one counted data-dependent read of it. Empty,
    complex and half-precision input, and a lazy rcond, run on NumPy."""
    runtime.maybe_cut()
    an, bn = as_node(a), as_node(b)
    for node in (an, bn if bn.ndim != 1 else an):
        if node.ndim != 2:
            raise np.linalg.LinAlgError(f"{node.ndim}-dimensional array given. Array must be "
                                        f"two-dimensional")
    (m, n), vector = an.shape, bn.ndim == 1
    if bn.shape[0] != m:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    real = ("float32", "float64")
    if any(x.dtype.startswith(("float", "bfloat", "complex")) and x.dtype not in real
           for x in (an, bn)) or not an.size or not bn.size or isinstance(rcond, LazyArray):
        return run_eagerly(np.linalg.lstsq, "numpy.linalg.lstsq", (a, b), {"rcond": rcond})
    result = "float32" if an.dtype == bn.dtype == "float32" else "float64"
    a64, b64 = (x if x.dtype == "float64" else ops.convert(x, dtype="float64") for x in (an, bn))
    if vector:
        b64 = ops.reshape(b64, new_sizes=(m, 1))
    if rcond is None:
        rcond = _DOUBLE_EPS * max(m, n)
    elif rcond < 0:  # gelsd's rule: LAPACK's machine precision
        rcond = _DOUBLE_EPS / 2
    inverse, kept, s = svd_inverse(a64, float(rcond))  # (the minimum-norm solution gelsd gives)
    x = compose.batch_matmul(inverse, b64)
    rank = ops.reduce_sum(ops.convert(kept, dtype="int32"), axes=(0,))
    residuals = const(0, "float64", (0,))
    if m > n and bool(runtime.to_host(runtime.LazyHandle(ops.eq(rank, const(n, "int32"))),
                                      cause="data_dependent")):
        miss = ops.sub(compose.batch_matmul(a64, x), b64)
        residuals = ops.reduce_sum(ops.mul(miss, miss), axes=(0,))
    if vector:
        x = ops.reshape(x, new_sizes=(n,))
    x, residuals, s = (v if result == "float64" else ops.convert(v, dtype=result)
                       for v in (x, residuals, s))
    return wrap(x), wrap(residuals), wrap(rank), wrap(s)


def multi_dot(arrays, *, out=None):
    """NumPy's: the chain of products in the order of fewest multiplications (NumPy's own
    choice, so the rounding is NumPy's), a 1-D first or last array a row or a column."""
    if out is not None:
        return run_eagerly(np.linalg.multi_dot, "numpy.linalg.multi_dot", (arrays,),
                           {"out": out})
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return _dot(arrays[0], arrays[1])
    runtime.maybe_cut()
    nodes = [as_node(a) for a in arrays]
    first, last = nodes[0].ndim, nodes[-1].ndim
    if first == 1:
        nodes[0] = ops.reshape(nodes[0], new_sizes=(1,) + nodes[0].shape)
    if last == 1:
        nodes[-1] = ops.reshape(nodes[-1], new_sizes=nodes[-1].shape + (1,))
    for node in nodes:
        if node.ndim != 2:
            raise np.linalg.LinAlgError(f"{node.ndim}-dimensional array given. Array must be "
                                        f"two-dimensional")
    split = _chain_order([node.shape for node in nodes])
    arrays = [wrap(node) for node in nodes]

    def product(i, j):
        if i == j:
            return arrays[i]
        k = split[i][j]
        return _dot(product(i, k), product(k + 1, j))
    result = product(0, n - 1)
    if first == 1 and last == 1:
        return result[0, 0]
    return result.reshape(-1) if first == 1 or last == 1 else result


def _chain_order(shapes):
    """split[i][j]: where the cheapest product of matrices i..j splits (matrix-chain dynamic
    programming over the multiplication counts, ties to the first split: NumPy's choice,
    which for three matrices is its cost comparison)."""
    n = len(shapes)
    dims = [s[0] for s in shapes] + [shapes[-1][1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


FUNCTIONS = {np.linalg.svd: svd, np.linalg.qr: qr, np.linalg.eigh: eigh,
             np.linalg.eigvalsh: eigvalsh, np.linalg.pinv: pinv,
             np.linalg.matrix_rank: matrix_rank, np.linalg.multi_dot: multi_dot,
             np.linalg.lstsq: lstsq}
if hasattr(np.linalg, "svdvals"):
    FUNCTIONS[np.linalg.svdvals] = svdvals

__all__ = ["svd", "svdvals", "qr", "eigh", "eigvalsh", "LazyArray"]
