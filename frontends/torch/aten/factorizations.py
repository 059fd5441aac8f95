"""torch.linalg on the IR's factorization primitives (lu, qr, eigh, svd: one node each, whose
factors come from one computation; cholesky, triangular_solve): solve, inv, det, slogdet,
lu_factor / lu_solve / lu_unpack, pinv, lstsq, cholesky_* and the triangular solvers.
torch's wrappers call `_linalg_check_errors` on the `info` outputs; that is a data-dependent
sync (data_dependent.py). `info` is LAPACK's for an LU (the first exactly-zero pivot: a
singular matrix raises torch's LinAlgError, as eagerly); a Cholesky's is 0 unless its factor
visibly failed (a NaN factor: 1)."""
import math

import torch

from ....core import ops, runtime
from ....core.compose import batch_matmul as _matmul, matrix_transpose as _mT
from .. import dtypes
from ..tensor import SPECIAL, _to_cpu_zeros, eager, from_node
from .data_dependent import CAUSE
from .table import Unsupported, aten, bcast, const, lower, node_of


def _tri_mask(shape, lower_part, offset=0):
    """bool (..., m, n): True on and below (lower) / above (upper) diagonal `offset`."""
    rows = ops.iota(dtype="int64", shape=shape, dimension=len(shape) - 2)
    cols = ops.iota(dtype="int64", shape=shape, dimension=len(shape) - 1)
    diff = ops.sub(cols, rows)
    k = const(offset, "int64", shape)
    return ops.le(diff, k) if lower_part else ops.ge(diff, k)


def _tri(a, lower_part, offset=0):
    return ops.select(_tri_mask(a.shape, lower_part, offset), a, const(0, a.dtype, a.shape))


def _eye(shape, dtype):
    rows = ops.iota(dtype="int64", shape=shape, dimension=len(shape) - 2)
    cols = ops.iota(dtype="int64", shape=shape, dimension=len(shape) - 1)
    return ops.convert(ops.eq(rows, cols), dtype=dtype)


def _diag(a):
    """(..., n, n) -> (..., n) main diagonal."""
    n = a.shape[-1]
    eye = ops.eq(ops.iota(dtype="int64", shape=a.shape, dimension=a.ndim - 2),
                 ops.iota(dtype="int64", shape=a.shape, dimension=a.ndim - 1))
    return ops.reduce_sum(ops.select(eye, a, const(0, a.dtype, a.shape)), axes=(a.ndim - 1,)) \
        if n else ops.reduce_sum(a, axes=(a.ndim - 1,))


class _EmptyInput(Exception):
    """An input matrix stack has no elements: outputs follow from shapes alone."""


def _float_matrix(x):
    a = node_of(x)
    if a.dtype not in ("float32", "float64"):
        raise Unsupported(f"linalg on {a.dtype}")
    if a.size == 0:
        raise _EmptyInput
    return a


def linalg_lower(*overloads, ones=(), eye=()):
    """@lower for a factorization: on empty inputs every output is zeros of torch's shape,
    except the outputs listed in `ones` (det and sign of an empty product are 1) and in `eye`
    (a complete Q or U of an empty matrix is the identity)."""
    def register(fn):
        def lowering(out, *args, **kwargs):
            try:
                return fn(out, *args, **kwargs)
            except _EmptyInput:
                outs = out if isinstance(out, (tuple, list)) else (out,)
                made = tuple(_eye(tuple(o.shape), dtypes.to_ir(o.dtype)) if i in eye else
                             const(1 if i in ones else 0, dtypes.to_ir(o.dtype), tuple(o.shape))
                             for i, o in enumerate(outs))
                return made if isinstance(out, (tuple, list)) else made[0]
        return lower(*overloads)(lowering)
    return register


def _broadcast_batch(a, b):
    """Broadcast the batch dims of two matrix stacks against each other."""
    batch = tuple(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    return bcast(a, batch + a.shape[-2:]), bcast(b, batch + b.shape[-2:])


def _permute_rows(b, perm):
    """rows of b (..., m, k) reordered: out[..., i, :] = b[..., perm[..., i], :]."""
    m, k = b.shape[-2:]
    idx = ops.broadcast_in_dim(ops.convert(perm, dtype="int64"), shape=b.shape,
                               broadcast_dimensions=tuple(range(b.ndim - 1)))
    coords = [ops.reshape(ops.iota(dtype="int64", shape=b.shape, dimension=d),
                          new_sizes=b.shape + (1,)) for d in range(b.ndim - 2)]
    coords.append(ops.reshape(idx, new_sizes=b.shape + (1,)))
    coords.append(ops.reshape(ops.iota(dtype="int64", shape=b.shape, dimension=b.ndim - 1),
                              new_sizes=b.shape + (1,)))
    return ops.gather(b, ops.concatenate(*coords, dimension=b.ndim))


def _lu_solve_nodes(lu, perm, b):
    """x with A x = b given P A = L U."""
    pb = _permute_rows(b, perm)
    y = ops.triangular_solve(lu, pb, lower=True, unit_diagonal=True)
    return ops.triangular_solve(lu, y, lower=False)


def _nan_info(factor):
    """0 where the factor is finite, else 1 (torch's info is a position; 1 flags failure)."""
    bad = ops.reduce_or(ops.not_(ops.is_finite(factor)), axes=(factor.ndim - 2, factor.ndim - 1))
    return ops.convert(bad, dtype="int32")


def _lu_info(lu):
    """LAPACK getrf's info: the 1-based position of the first pivot U[i, i] that is exactly
    zero, else 0 -- what torch reads to raise LinAlgError for a singular matrix (a NaN input
    is no error there: its pivots are NaN, not zero)."""
    m, n = lu.shape[-2:]
    k, batch = min(m, n), lu.shape[:-2]
    square = ops.slice_(lu, start_indices=(0,) * lu.ndim, limit_indices=batch + (k, k))
    diagonal = ops.reduce_sum(_tri(_tri(square, True), False), axes=(lu.ndim - 1,))
    shape = batch + (k,)
    position = ops.add(ops.iota(dtype="int32", shape=shape, dimension=len(batch)),
                       const(1, "int32", shape))
    zero = ops.eq(diagonal, const(0, diagonal.dtype, shape))
    first = ops.reduce_min(ops.select(zero, position, const(k + 1, "int32", shape)),
                           axes=(len(batch),))
    return ops.select(ops.eq(first, const(k + 1, "int32", batch)), const(0, "int32", batch),
                      first)


@linalg_lower(aten.linalg_lu_factor_ex.default)
def _lu_factor_ex(out, x, *, pivot=True, check_errors=False):
    a = _float_matrix(x)
    if not pivot:
        raise Unsupported("LU without pivoting")
    lu, pivots, _ = ops.lu(a)
    pivots = ops.add(pivots, const(1, "int32", out[1].shape))
    return lu, pivots, _lu_info(lu)


def _unpack(lu, perm, out_shapes):
    m, n = lu.shape[-2:]
    k = min(m, n)
    batch = lu.shape[:-2]
    lower_full = ops.add(_tri(lu, True, -1), _eye(lu.shape, lu.dtype))
    L = ops.slice_(lower_full, start_indices=(0,) * lu.ndim, limit_indices=batch + (m, k))
    U = ops.slice_(_tri(lu, False), start_indices=(0,) * lu.ndim, limit_indices=batch + (k, n))
    # P with A = P L U: P[perm[i], i] = 1
    rows = ops.iota(dtype="int64", shape=batch + (m, m), dimension=len(batch))
    target = ops.broadcast_in_dim(ops.convert(perm, dtype="int64"), shape=batch + (m, m),
                                  broadcast_dimensions=tuple(range(len(batch))) + (len(batch) + 1,))
    P = ops.convert(ops.eq(rows, target), dtype=lu.dtype)
    return P, L, U


@linalg_lower(aten.linalg_lu.default)
def _linalg_lu(out, x, *, pivot=True):
    a = _float_matrix(x)
    if not pivot:
        raise Unsupported("LU without pivoting")
    lu, _, perm = ops.lu(a)
    return _unpack(lu, perm, None)


def _pivots_to_permutation(pivots, m):
    """LAPACK's 1-based sequential row swaps -> the permutation they make."""
    batch = pivots.shape[:-1]
    perm = ops.iota(dtype="int64", shape=batch + (m,), dimension=len(batch))
    piv = ops.sub(ops.convert(pivots, dtype="int64"), const(1, "int64", pivots.shape))
    positions = ops.iota(dtype="int64", shape=batch + (m,), dimension=len(batch))
    for i in range(pivots.shape[-1]):
        j = ops.slice_(piv, start_indices=(0,) * len(batch) + (i,),
                       limit_indices=batch + (i + 1,))
        j_b = bcast(j, batch + (m,))
        at_i = ops.slice_(perm, start_indices=(0,) * len(batch) + (i,),
                          limit_indices=batch + (i + 1,))
        at_j = ops.reduce_sum(ops.select(ops.eq(positions, j_b), perm,
                                         const(0, "int64", perm.shape)), axes=(len(batch),))
        at_j = ops.reshape(at_j, new_sizes=batch + (1,))
        is_i = ops.eq(positions, const(i, "int64", positions.shape))
        perm = ops.select(is_i, bcast(at_j, perm.shape),
                          ops.select(ops.eq(positions, j_b), bcast(at_i, perm.shape), perm))
    return perm


@linalg_lower(aten.lu_unpack.default)
def _lu_unpack(out, lu_data, lu_pivots, unpack_data=True, unpack_pivots=True):
    lu = _float_matrix(lu_data)
    if lu.ndim != node_of(lu_pivots).ndim + 1:
        raise Unsupported("lu_unpack with broadcast pivots")
    perm = _pivots_to_permutation(node_of(lu_pivots), lu.shape[-2])
    P, L, U = _unpack(lu, perm, None)
    shapes = [tuple(o.shape) for o in out]
    return tuple(r if r.shape == s else const(0, r.dtype, s) for r, s in zip((P, L, U), shapes))


@linalg_lower(aten.linalg_lu_solve.default)
def _lu_solve(out, LU, pivots, B, *, left=True, adjoint=False):
    lu = _float_matrix(LU)
    b = node_of(B, lu.dtype)
    if lu.shape[:-2] != b.shape[:-2] or lu.ndim != node_of(pivots).ndim + 1:
        raise Unsupported("lu_solve with broadcast batches")
    perm = _pivots_to_permutation(node_of(pivots), lu.shape[-2])
    if left and not adjoint:
        return _lu_solve_nodes(lu, perm, b)
    if not left and not adjoint:  # X A = B  <=>  A^T X^T = B^T
        bt = _mT(b)
        y = ops.triangular_solve(lu, bt, lower=False, transpose_a=True)
        z = ops.triangular_solve(lu, y, lower=True, transpose_a=True, unit_diagonal=True)
        return _mT(_inverse_permute_rows(z, perm))
    if left and adjoint:  # A^T X = B: U^T L^T P X = B
        y = ops.triangular_solve(lu, b, lower=False, transpose_a=True)
        z = ops.triangular_solve(lu, y, lower=True, transpose_a=True, unit_diagonal=True)
        return _inverse_permute_rows(z, perm)
    # X A^T = B  <=>  A X^T = B^T
    return _mT(_lu_solve_nodes(lu, perm, _mT(b)))


def _inverse_permute_rows(z, perm):
    """x with P x = z, i.e. x[perm[i]] = z[i]."""
    m = perm.shape[-1]
    batch = perm.shape[:-1]
    rows = ops.iota(dtype="int64", shape=batch + (m, m), dimension=len(batch))
    target = ops.broadcast_in_dim(ops.convert(perm, dtype="int64"), shape=batch + (m, m),
                                  broadcast_dimensions=tuple(range(len(batch))) + (len(batch) + 1,))
    P = ops.convert(ops.eq(rows, target), dtype=z.dtype)  # P^T applied = P_mat @ z
    return _matmul(P, z)


@linalg_lower(aten._linalg_solve_ex.default)
def _solve_ex(out, A, B, *, left=True, check_errors=False):
    a = _float_matrix(A)
    b = node_of(B, a.dtype)
    vector = b.ndim == a.ndim - 1 or (b.ndim == 1)
    if vector:
        b = ops.reshape(b, new_sizes=b.shape + (1,))
    if not left:
        a, b = _mT(a), _mT(b)
    a, b = _broadcast_batch(a, b)
    lu, _, perm = ops.lu(a)
    x = _lu_solve_nodes(lu, perm, b)
    if not left:
        x = _mT(x)
    result = ops.reshape(x, new_sizes=tuple(out[0].shape))
    lu_out, piv, _ = ops.lu(node_of(A))  # the same node as `lu` when A needed no broadcast
    if lu_out.shape != tuple(out[1].shape):
        lu_out = const(0, a.dtype, tuple(out[1].shape))
    piv = ops.add(piv, const(1, "int32", tuple(out[2].shape))) \
        if tuple(out[2].shape) == node_of(A).shape[:-1] else const(0, "int32", tuple(out[2].shape))
    if not left:
        raise Unsupported("right solve factors")
    return result, lu_out, piv, _lu_info(lu)


@linalg_lower(aten.linalg_inv_ex.default)
def _inv_ex(out, A, *, check_errors=False):
    a = _float_matrix(A)
    lu, _, perm = ops.lu(a)
    return _lu_solve_nodes(lu, perm, _eye(a.shape, a.dtype)), _lu_info(lu)


def _det_parts(a):
    lu, piv, _ = ops.lu(a)
    piv = ops.convert(piv, dtype="int64")
    n = a.shape[-1]
    swaps = ops.reduce_sum(ops.convert(ops.ne(piv, ops.iota(dtype="int64", shape=piv.shape,
                                                             dimension=piv.ndim - 1)),
                                       dtype="int64"), axes=(piv.ndim - 1,))
    odd = ops.eq(ops.rem(swaps, const(2, "int64", swaps.shape)), const(1, "int64", swaps.shape))
    parity = ops.select(odd, const(-1, a.dtype, swaps.shape), const(1, a.dtype, swaps.shape))
    return lu, piv, _diag(lu) if n else None, parity


@linalg_lower(aten._linalg_det.default, ones=(0,))
def _det(out, A):
    a = _float_matrix(A)
    lu, piv, diag, parity = _det_parts(a)
    det = ops.mul(parity, ops.reduce_prod(diag, axes=(diag.ndim - 1,)))
    return det, lu, ops.add(ops.convert(piv, dtype="int32"), const(1, "int32", piv.shape))


@linalg_lower(aten._linalg_slogdet.default, ones=(0,))
def _slogdet(out, A):
    a = _float_matrix(A)
    lu, piv, diag, parity = _det_parts(a)
    signs = ops.reduce_prod(ops.sign(diag), axes=(diag.ndim - 1,))
    logabs = ops.reduce_sum(ops.log(ops.abs_(diag)), axes=(diag.ndim - 1,))
    return (ops.mul(parity, signs), logabs, lu,
            ops.add(ops.convert(piv, dtype="int32"), const(1, "int32", piv.shape)))


# ---------------------------------------------------------------- cholesky family

def _cholesky_lower(a, upper):
    """Lower factor of the symmetric matrix defined by a's lower (or upper) triangle."""
    sym = ops.add(_tri(a, True), _mT(_tri(a, True, -1))) if not upper else \
        ops.add(_tri(a, False), _mT(_tri(a, False, 1)))
    return ops.cholesky(sym)


@linalg_lower(aten.linalg_cholesky_ex.default)
def _cholesky_ex(out, A, *, upper=False, check_errors=False):
    a = _float_matrix(A)
    L = _cholesky_lower(a, False)
    info = _nan_info(L)
    return (_mT(L) if upper else L), info


@linalg_lower(aten.cholesky.default)
def _cholesky_legacy(out, A, upper=False):
    L = _cholesky_lower(_float_matrix(A), False)
    return _mT(L) if upper else L


@linalg_lower(aten.cholesky_solve.default)
def _cholesky_solve(out, B, L, upper=False):
    l = _float_matrix(L)
    b = node_of(B, l.dtype)
    l, b = _broadcast_batch(l, b)
    if upper:  # A = U^T U
        y = ops.triangular_solve(l, b, lower=False, transpose_a=True)
        return ops.triangular_solve(l, y, lower=False)
    y = ops.triangular_solve(l, b, lower=True)
    return ops.triangular_solve(l, y, lower=True, transpose_a=True)


@linalg_lower(aten.cholesky_inverse.default)
def _cholesky_inverse(out, L, upper=False):
    l = _float_matrix(L)
    return _cholesky_solve(out, _eye(l.shape, l.dtype), l, upper)


@linalg_lower(aten.triangular_solve.default)
def _triangular_solve(out, B, A, upper=True, transpose=False, unitriangular=False):
    a = _float_matrix(A)
    b = node_of(B, a.dtype)
    a, b = _broadcast_batch(a, b)
    x = ops.triangular_solve(_tri(a, not upper), b, lower=not upper, transpose_a=transpose,
                             unit_diagonal=unitriangular)
    return x, a


@linalg_lower(aten.linalg_solve_triangular.default)
def _solve_triangular(out, A, B, *, upper, left=True, unitriangular=False):
    a = _float_matrix(A)
    b = node_of(B, a.dtype)
    a, b = _broadcast_batch(a, b)
    if left:
        return ops.triangular_solve(a, b, lower=not upper, unit_diagonal=unitriangular)
    # X A = B  <=>  A^T X^T = B^T
    return _mT(ops.triangular_solve(a, _mT(b), lower=not upper, transpose_a=True,
                                    unit_diagonal=unitriangular))


# ---------------------------------------------------------------- qr, eigh, svd

@linalg_lower(aten.linalg_qr.default, eye=(0,))
def _qr(out, A, mode="reduced"):
    a = _float_matrix(A)
    full = mode == "complete"
    q, r = ops.qr(a, full_matrices=full)
    return (q if mode != "r" else const(0, a.dtype, tuple(out[0].shape))), r


@linalg_lower(aten._linalg_eigh.default)
def _eigh(out, A, UPLO="L", compute_v=True):
    a = _float_matrix(A)
    lower_part = UPLO == "L"  # LAPACK's eigenvector signs depend on the triangle it reads
    values, vectors = ops.eigh(a, lower=lower_part)
    return values, (vectors if compute_v else const(0, a.dtype, tuple(out[1].shape)))


@linalg_lower(aten._linalg_svd.default, eye=(0, 2))
def _svd(out, A, full_matrices=False, compute_uv=True, driver=None):
    a = _float_matrix(A)
    if not compute_uv:
        (s,) = ops.svd(a, compute_uv=False)
        return (const(0, a.dtype, tuple(out[0].shape)), s, const(0, a.dtype, tuple(out[2].shape)))
    return ops.svd(a, full_matrices=full_matrices)


def _pinv_nodes(a, atol, rtol, hermitian):
    return _svd_pinv(a, atol, rtol)[0]


def _svd_pinv(a, atol, rtol):
    """(Moore-Penrose inverse by SVD, which singular values it kept, the singular values):
    it keeps those above max(atol, rtol * s_max)."""
    m, n = a.shape[-2:]
    u, s, vh = ops.svd(a, full_matrices=False)
    smax = ops.reduce_max(s, axes=(s.ndim - 1,))
    smax_b = ops.broadcast_in_dim(smax, shape=s.shape, broadcast_dimensions=tuple(range(s.ndim - 1)))
    if rtol is None:
        eps = 1.1920928955078125e-07 if a.dtype == "float32" else 2.220446049250313e-16
        rtol = None if atol is not None else const(eps * max(m, n), a.dtype, s.shape)
    cut = const(0, a.dtype, s.shape)
    if atol is not None:
        cut = ops.max_(cut, _batch_scalar(atol, a.dtype, s.shape))
    if rtol is not None:
        cut = ops.max_(cut, ops.mul(_batch_scalar(rtol, a.dtype, s.shape), smax_b))
    keep = ops.gt(s, cut)
    inv_s = ops.select(keep, ops.div(const(1, a.dtype, s.shape), s), const(0, a.dtype, s.shape))
    v_scaled = ops.mul(_mT(vh), ops.broadcast_in_dim(inv_s, shape=_mT(vh).shape,
                                                     broadcast_dimensions=tuple(range(s.ndim - 1))
                                                     + (s.ndim,)))
    return _matmul(v_scaled, _mT(u)), keep, s


def _batch_scalar(value, dtype, shape):
    """atol / rtol: a number or a tensor of the batch shape, broadcast along the values."""
    node = node_of(value, dtype)
    if node.ndim == 0 or node.shape == shape:
        return bcast(node, shape)
    return ops.broadcast_in_dim(node, shape=shape,
                                broadcast_dimensions=tuple(range(len(shape) - 1)))


@linalg_lower(aten.linalg_pinv.atol_rtol_tensor, aten.linalg_pinv.atol_rtol_float)
def _pinv(out, A, *, atol=None, rtol=None, hermitian=False):
    a = _float_matrix(A)
    if hermitian:  # torch takes eigh's route there; its cutoffs differ in the last bits
        raise Unsupported("hermitian pinv")
    if atol is not None and not isinstance(atol, (int, float)) and node_of(atol).ndim > 0 \
            and node_of(atol).shape != a.shape[:-2]:
        raise Unsupported("broadcast tolerances")
    if rtol is not None and not isinstance(rtol, (int, float)) and node_of(rtol).ndim > 0 \
            and node_of(rtol).shape != a.shape[:-2]:
        raise Unsupported("broadcast tolerances")
    return _pinv_nodes(a, atol, rtol, hermitian)


# ---------------------------------------------------------------- lstsq

# LAPACK's relative machine precision (half of finfo's eps): what gelsd / gelss use for a
# negative rcond
_LAPACK_EPS = {"float32": 2.0 ** -24, "float64": 2.0 ** -53}
_SVD_DRIVERS = ("gelsd", "gelss")  # they report the singular values, and residuals if full rank


def _lstsq_shapes(A, B, driver):
    """(batch, solution, residuals) shapes of CPU torch's lstsq (gelsd's and gelss' residuals
    as if every matrix had full rank: _lstsq_nodes reads whether they do); None for a call
    torch refuses, or that lazyx leaves to it (complex matrices)."""
    if A.dim() < 2 or B.dim() < 1 or A.dtype != B.dtype or \
            A.dtype not in (torch.float32, torch.float64) or \
            driver not in (None, "gelsy", "gels") + _SVD_DRIVERS:
        return None
    vector = A.dim() - B.dim() == 1  # B holds (*, m) vectors: torch solves B.unsqueeze(-1)
    if not (vector or A.dim() == B.dim()):
        return None
    m, n = A.shape[-2:]
    b_shape = tuple(B.shape) + ((1,) if vector else ())
    if b_shape[-2] != m:
        return None
    try:
        batch = tuple(torch.broadcast_shapes(A.shape[:-2], b_shape[:-2]))
    except RuntimeError:
        return None
    k = b_shape[-1]
    solution = batch + (n,) + (() if vector else (k,))
    residuals = batch + (k,) if driver in ("gels",) + _SVD_DRIVERS and m > n else (0,)
    return batch, solution, residuals


def _full_rank(rank, n):
    """Whether every matrix has rank n: one counted data-dependent read (gelsd and gelss
    give residuals only then, so their shape depends on it)."""
    handle = runtime.LazyHandle(ops.reduce_min(
        ops.convert(ops.eq(rank, const(n, "int64", rank.shape)), dtype="int32"),
        axes=tuple(range(rank.ndim))))
    return bool(runtime.to_host(handle, cause=CAUSE))


def _lstsq_nodes(A, B, rcond, driver, shapes):
    """The least-squares solution by SVD: pinv(A) B, the minimum-norm solution every driver
    but gels gives, and the rank as the count of singular values above rcond * s_max (gelsd
    and gelss count them so; gelsy estimates the rank by pivoted QR: an ill-conditioned A may
    differ, docs/torch_opinfo.md)."""
    batch, solution, residuals = shapes
    a = node_of(A)
    b = node_of(B)
    b = ops.reshape(b, new_sizes=b.shape + (1,)) if b.ndim < a.ndim else b
    (m, n), k = a.shape[-2:], b.shape[-1]
    if driver in _SVD_DRIVERS and rcond is not None and rcond < 0:
        rcond = _LAPACK_EPS[a.dtype]
    empty = a.size == 0 or b.size == 0
    if empty:  # LAPACK's quick return: zeros, rank 0
        x, rank = const(0, a.dtype, batch + (n, k)), const(0, "int64", a.shape[:-2])
        values = const(0, a.dtype, a.shape[:-2] + (min(m, n),))
    else:
        # A's own batch (torch's rank has its shape), the inverse broadcast against B's
        inverse, kept, values = _svd_pinv(a, None, rcond)
        x = _matmul(*_broadcast_batch(inverse, b))
        rank = ops.reduce_sum(ops.convert(kept, dtype="int64"), axes=(kept.ndim - 1,))
    if driver in _SVD_DRIVERS and residuals != (0,) and n and math.prod(batch) and \
            not _full_rank(rank, n):
        residuals = (0,)
    a, b = _broadcast_batch(a, b)
    if residuals != (0,) and math.prod(residuals):  # each column's squared residual
        miss = b if n == 0 else ops.sub(_matmul(a, x), b)
        residual = ops.reduce_sum(ops.mul(miss, miss), axes=(miss.ndim - 2,))
    else:
        residual = const(0, a.dtype, residuals)
    if driver == "gels":  # gels reports no rank
        rank = const(0, "int64", (0,))
    if driver not in _SVD_DRIVERS:  # nor singular values but from gelsd and gelss
        values = const(0, a.dtype, (0,))
    return ops.reshape(x, new_sizes=solution), residual, rank, values


def _lstsq(A, B, rcond=None, *, driver=None):
    """torch.linalg.lstsq has no meta kernel, so it bypasses the lowering table; its shapes
    are found here. A call torch refuses is replayed on CPU zeros for torch's own error."""
    shapes = _lstsq_shapes(A, B, driver)
    if shapes is None:
        aten.linalg_lstsq.default(_to_cpu_zeros(A), _to_cpu_zeros(B), rcond, driver=driver)
        return eager(aten.linalg_lstsq.default, (A, B, rcond), {"driver": driver},
                     cause="fallback")
    x, residual, rank, values = _lstsq_nodes(A, B, rcond, driver, shapes)
    return (from_node(x, A.dtype), from_node(residual, A.dtype), from_node(rank, torch.int64),
            from_node(values, A.dtype))


SPECIAL[aten.linalg_lstsq.default] = _lstsq
