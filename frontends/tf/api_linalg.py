"""tf.linalg beyond matmul: band parts, diagonals, determinants, solves, factorizations
(QR, SVD, eigh, LU) and norms, lowered onto the IR's factorization primitives."""
import collections

import numpy as np

import tensorflow as tf

from ...core import dtypes as dt
from ...core import compose, ir, ops, runtime
from .api_math import _diag_part, _swap_last
from .lowering import Reject, broadcast_all, const, operand_nodes, static_ints
from .registry import fallback_undispatched, lower, lower_undispatched
from .tensor import LazyTensor, ir_dtype, node_of, wrap


def _square(x, kinds="f"):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise Reject()
    if kinds == "f" and not dt.is_float(x.dtype):
        raise Reject()
    return x


def _band_mask(shape, lower, upper):
    """True inside the band: -lower <= col - row <= upper (a negative bound: unbounded)."""
    rows = ops.iota(dtype="int32", shape=shape[-2:], dimension=0)
    cols = ops.iota(dtype="int32", shape=shape[-2:], dimension=1)
    offset = ops.sub(cols, rows)
    keep = ops.eq(rows, rows)
    if lower >= 0:
        keep = ops.and_(keep, ops.ge(offset, const(-lower, offset)))
    if upper >= 0:
        keep = ops.and_(keep, ops.le(offset, const(upper, offset)))
    return ops.broadcast_in_dim(keep, shape=shape, broadcast_dimensions=(len(shape) - 2,
                                                                          len(shape) - 1))


@lower(tf.linalg.band_part, "input")
def band_part(input, num_lower, num_upper):  # noqa: A002
    (x,) = operand_nodes(input)
    if x.ndim < 2:
        raise Reject()
    lower, upper = static_ints(num_lower), static_ints(num_upper)
    return wrap(ops.select(_band_mask(x.shape, lower, upper), x, const(0, x)), input)


@lower(tf.linalg.adjoint, "matrix")
def adjoint(matrix):
    (x,) = operand_nodes(matrix)
    if x.ndim < 2:
        raise Reject()
    out = _swap_last(x)
    return wrap(ops.conj(out) if dt.is_complex(x.dtype) else out, matrix)


def _diag_matrix(d):
    n = d.shape[-1]
    shape = d.shape + (n,)
    rows = ops.iota(dtype="int32", shape=(n, n), dimension=0)
    cols = ops.iota(dtype="int32", shape=(n, n), dimension=1)
    eye = ops.broadcast_in_dim(ops.eq(rows, cols), shape=shape,
                               broadcast_dimensions=(d.ndim - 1, d.ndim))
    spread = ops.broadcast_in_dim(d, shape=shape, broadcast_dimensions=tuple(range(d.ndim)))
    return ops.select(eye, spread, ops.broadcast_in_dim(ir.constant(0, d.dtype), shape=shape,
                                                        broadcast_dimensions=()))


@lower(tf.linalg.diag, "diagonal")
def diag(diagonal, k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    (d,) = operand_nodes(diagonal)
    n = d.shape[-1] if d.ndim else 0
    if d.ndim < 1 or k != 0 or num_rows not in (-1, n) or num_cols not in (-1, n) or \
            not (isinstance(padding_value, (int, float)) and padding_value == 0):
        raise Reject()
    return wrap(_diag_matrix(d), diagonal)


@lower(tf.linalg.tensor_diag, "diagonal")
def tensor_diag(diagonal):
    (d,) = operand_nodes(diagonal)
    if d.ndim != 1:
        raise Reject()
    return wrap(_diag_matrix(d), diagonal)


@lower(tf.linalg.tensor_diag_part, "input")
def tensor_diag_part(input):  # noqa: A002
    (x,) = operand_nodes(input)
    if x.ndim != 2 or x.shape[0] != x.shape[1] or x.dtype == dt.BOOL:
        raise Reject()
    return wrap(_diag_part(x), input)


@lower(tf.linalg.set_diag, "input", "diagonal")
def set_diag(input, diagonal, k=0, align="RIGHT_LEFT"):  # noqa: A002
    x, d = operand_nodes(input, diagonal)
    if k != 0 or x.ndim < 2 or d.shape != x.shape[:-2] + (min(x.shape[-2:]),):
        raise Reject()
    rows = ops.iota(dtype="int32", shape=x.shape[-2:], dimension=0)
    cols = ops.iota(dtype="int32", shape=x.shape[-2:], dimension=1)
    on = ops.broadcast_in_dim(ops.eq(rows, cols), shape=x.shape,
                              broadcast_dimensions=(x.ndim - 2, x.ndim - 1))
    # the diagonal entry of row i is d[..., i] (rows beyond min(m, n) have none)
    spread = ops.broadcast_in_dim(d, shape=x.shape[:-2] + (d.shape[-1], x.shape[-1]),
                                  broadcast_dimensions=tuple(range(d.ndim)))
    spread = ops.pad(spread, ir.constant(0, x.dtype), padding_config=[(0, 0, 0)] * (
        x.ndim - 2) + [(0, x.shape[-2] - d.shape[-1], 0), (0, 0, 0)])
    return wrap(ops.select(on, spread, x), input, diagonal)


# ---------------------------------------------------------------- LU: det, solve, inv


def _permutation_matrix(perm, n, dtype):
    """P with P[..., i, j] = (perm[..., i] == j): P @ a gathers a's rows by perm."""
    shape = perm.shape + (n,)
    cols = ops.iota(dtype=perm.dtype, shape=shape, dimension=len(shape) - 1)
    rows = ops.broadcast_in_dim(perm, shape=shape, broadcast_dimensions=tuple(range(perm.ndim)))
    return ops.convert(ops.eq(rows, cols), dtype=dtype)


def _batched_matmul(a, b):
    nb = a.ndim - 2
    return ops.dot_general(a, b, contracting_dimensions=((nb + 1,), (nb,)),
                           batch_dimensions=(tuple(range(nb)), tuple(range(nb))))


def _lu_solve(a, b):
    packed, _, perm = ops.lu(a)
    pb = _batched_matmul(_permutation_matrix(perm, a.shape[-1], b.dtype), b)
    y = ops.triangular_solve(packed, pb, lower=True, unit_diagonal=True)
    return ops.triangular_solve(packed, y, lower=False)


def _det(x):
    packed, pivots, _ = ops.lu(x)
    product = ops.reduce_prod(_diag_part(packed), axes=(x.ndim - 2,))
    steps = ops.iota(dtype="int32", shape=pivots.shape, dimension=pivots.ndim - 1)
    swaps = ops.reduce_sum(ops.convert(ops.ne(pivots, steps), dtype="int32"),
                           axes=(pivots.ndim - 1,))
    odd = ops.eq(ops.rem(swaps, const(2, swaps)), const(1, swaps))
    return ops.select(odd, ops.neg(product), product)


@lower(tf.linalg.det, "input")
def det(input):  # noqa: A002
    (x,) = operand_nodes(input)
    return wrap(_det(_square(x)), input)


@lower_undispatched(tf.linalg, "slogdet")
def slogdet(input):  # noqa: A002 - TF's name
    """(sign, log|det|) from one LU: the pivots' parity times the diagonal's signs, and the
    sum of the diagonal's log-magnitudes (a singular matrix: sign 0, -inf)."""
    (x,) = operand_nodes(input)
    if x.dtype not in ("float32", "float64") or x.size == 0:
        raise Reject()
    packed, pivots, _ = ops.lu(_square(x))
    diagonal = _diag_part(packed)
    axis = (diagonal.ndim - 1,)
    steps = ops.iota(dtype="int32", shape=pivots.shape, dimension=pivots.ndim - 1)
    swaps = ops.reduce_sum(ops.convert(ops.ne(pivots, steps), dtype="int32"), axes=axis)
    odd = ops.eq(ops.rem(swaps, const(2, swaps)), const(1, swaps))
    signs = ops.reduce_prod(ops.sign(diagonal), axes=axis)
    sign = ops.select(odd, ops.neg(signs), signs)
    return wrap(sign, input), wrap(ops.reduce_sum(ops.log(ops.abs_(diagonal)), axes=axis), input)


@lower(tf.linalg.logdet, "matrix")
def logdet(matrix):
    # TF's definition for Hermitian positive-definite matrices: 2 * sum(log(diag(chol)))
    (x,) = operand_nodes(matrix)
    diagonal = _diag_part(ops.cholesky(_square(x)))
    total = ops.reduce_sum(ops.log(diagonal), axes=(diagonal.ndim - 1,))
    return wrap(ops.mul(const(2, total), total), matrix)


@lower(tf.linalg.solve, "matrix", "rhs")
def solve(matrix, rhs, adjoint=False):
    a, b = operand_nodes(matrix, rhs)
    _square(a)
    if b.ndim != a.ndim or b.shape[:-1] != a.shape[:-1]:
        raise Reject()
    if adjoint:
        a = _swap_last(a)
    return wrap(_lu_solve(a, b), matrix, rhs)


def _identity_like(a):
    n = a.shape[-1]
    rows = ops.iota(dtype="int32", shape=(n, n), dimension=0)
    cols = ops.iota(dtype="int32", shape=(n, n), dimension=1)
    return ops.broadcast_in_dim(ops.convert(ops.eq(rows, cols), dtype=a.dtype), shape=a.shape,
                                broadcast_dimensions=(a.ndim - 2, a.ndim - 1))


@lower(tf.linalg.inv, "input")
def inv(input, adjoint=False):  # noqa: A002
    (a,) = operand_nodes(input)
    _square(a)
    if adjoint:
        a = _swap_last(a)
    return wrap(_lu_solve(a, _identity_like(a)), input)


@lower(tf.linalg.cholesky_solve, "chol", "rhs")
def cholesky_solve(chol, rhs):
    c, b = operand_nodes(chol, rhs)
    _square(c)
    if b.ndim != c.ndim or b.shape[:-1] != c.shape[:-1]:
        raise Reject()
    y = ops.triangular_solve(c, b, lower=True)
    return wrap(ops.triangular_solve(c, y, lower=True, transpose_a=True), chol, rhs)


Lu = collections.namedtuple("Lu", ["lu", "p"])
Qr = collections.namedtuple("Qr", ["q", "r"])


# ---------------------------------------------------------------- factorizations
# On the IR's multi-result primitives (core/ir.py): all outputs of one call come from one
# node, computed once; gradients come from core/autodiff's rules for those nodes. Inputs
# lazyx does not lower (complex, half precision, empty matrices) and bad calls are replayed
# on real TF (its result or its error).

def _matrix(x, square=False):
    (node,) = operand_nodes(x)
    if node.ndim < 2 or node.dtype not in ("float32", "float64") or node.size == 0 or \
            (square and node.shape[-1] != node.shape[-2]):
        raise Reject()
    return node


@lower(tf.linalg.lu, "input")
def lu(input, output_idx_type=tf.int32):  # noqa: A002 - TF's name
    packed, _pivots, perm = ops.lu(_matrix(input, square=True))
    idx = ir_dtype(output_idx_type)
    return Lu(wrap(packed, input), wrap(perm if idx == "int32" else ops.convert(perm, dtype=idx)))


@lower(tf.linalg.qr, "input")
def qr(input, full_matrices=False):  # noqa: A002 - TF's name
    q, r = ops.qr(_matrix(input), full_matrices=bool(full_matrices))
    return Qr(wrap(q, input), wrap(r, input))


@lower(tf.linalg.svd, "tensor")
def svd(tensor, full_matrices=False, compute_uv=True):
    a = _matrix(tensor)
    if not compute_uv:
        return wrap(ops.svd(a, compute_uv=False)[0], tensor)
    u, s, vh = ops.svd(a, full_matrices=bool(full_matrices))
    return wrap(s, tensor), wrap(u, tensor), wrap(_swap_last(vh), tensor)  # TF gives v


@lower(tf.linalg.eigh, "tensor")
def eigh(tensor):
    values, vectors = ops.eigh(_matrix(tensor, square=True), lower=True)  # TF reads the lower
    return wrap(values, tensor), wrap(vectors, tensor)


@lower(tf.linalg.eigvalsh, "tensor")
def eigvalsh(tensor):
    return wrap(ops.eigh(_matrix(tensor, square=True), lower=True)[0], tensor)


@lower(tf.linalg.cross, "a", "b")
def cross(a, b):
    x, y = broadcast_all(*operand_nodes(a, b))
    if x.ndim < 1 or x.shape[-1] != 3 or x.dtype == dt.BOOL:
        raise Reject()
    last = x.ndim - 1

    def part(n, i):
        start, limit = [0] * n.ndim, list(n.shape)
        start[last], limit[last] = i, i + 1
        return ops.slice_(n, start_indices=start, limit_indices=limit)
    x0, x1, x2 = (part(x, i) for i in range(3))
    y0, y1, y2 = (part(y, i) for i in range(3))
    out = ops.concatenate(ops.sub(ops.mul(x1, y2), ops.mul(x2, y1)),
                          ops.sub(ops.mul(x2, y0), ops.mul(x0, y2)),
                          ops.sub(ops.mul(x0, y1), ops.mul(x1, y0)), dimension=last)
    return wrap(out, a, b)


@lower(tf.debugging.check_numerics, "tensor")
def check_numerics(tensor, message):
    # Lazily the values are not known: the check cannot raise at the call (docs/errors.md);
    # the tensor passes through unchanged, as it does when every value is finite.
    (x,) = operand_nodes(tensor)
    if not dt.is_float(x.dtype):
        raise Reject()
    return wrap(x, tensor)



def _cutoff(s, shape, tol, rtol):
    """TF's singular-value threshold: tol, or rtol (default: eps * max(m, n)) * max(s)."""
    top = ops.reduce_max(s, axes=(s.ndim - 1,))
    if tol is not None:
        return ops.broadcast_in_dim(ir.constant(float(tol), s.dtype), shape=top.shape,
                                    broadcast_dimensions=())
    rtol = float(np.finfo(np.dtype(s.dtype)).eps) * max(shape[-2:]) if rtol is None else rtol
    return ops.mul(top, const(rtol, top))


@lower(tf.linalg.matrix_rank, "a")
def matrix_rank(a, tol=None, validate_args=False):
    (x,) = operand_nodes(a)
    if x.ndim < 2 or not dt.is_float(x.dtype) or not (tol is None or
                                                      isinstance(tol, (int, float))):
        raise Reject()
    s = ops.svd(x, compute_uv=False)[0]
    cut = ops.broadcast_in_dim(_cutoff(s, x.shape, tol, None), shape=s.shape,
                               broadcast_dimensions=tuple(range(s.ndim - 1)))
    return wrap(ops.reduce_sum(ops.convert(ops.gt(s, cut), dtype="int32"),
                               axes=(s.ndim - 1,)))


@lower(tf.linalg.pinv, "a")
def pinv(a, rcond=None, validate_args=False):
    (x,) = operand_nodes(a)
    if x.ndim < 2 or not dt.is_float(x.dtype) or not (rcond is None or
                                                      isinstance(rcond, (int, float))):
        raise Reject()
    # TF's default rcond: 10 * max(m, n) * eps
    if rcond is None:
        rcond = 10 * max(x.shape[-2:]) * float(np.finfo(np.dtype(x.dtype)).eps)
    return wrap(svd_pinv(x, rcond), a)


def svd_pinv(x, rcond):
    """The pseudo-inverse of x by SVD, singular values at or below rcond * max(s) taken as
    zero: V diag(1/s) U^T, the columns of V scaled, then multiplied by U^T."""
    u, s, vh = ops.svd(x)
    cut = ops.broadcast_in_dim(_cutoff(s, x.shape, None, rcond), shape=s.shape,
                               broadcast_dimensions=tuple(range(s.ndim - 1)))
    keep = ops.gt(s, cut)
    inverse = ops.select(keep, ops.div(const(1, s), ops.select(keep, s, const(1, s))),
                         const(0, s))
    v = _swap_last(vh)
    scaled = ops.mul(v, ops.broadcast_in_dim(inverse, shape=v.shape, broadcast_dimensions=tuple(
        range(s.ndim - 1)) + (s.ndim,)))
    return _batched_matmul(scaled, _swap_last(u))


# Generated ops with no dispatch hook that lazyx does not lower (a matrix logarithm):
# TF's own kernels on materialized inputs, counted, instead of a TypeError
fallback_undispatched(tf.linalg, "logm")
fallback_undispatched(tf.sparse, "from_dense")  # (its result is a SparseTensor: TF's own)


@lower_undispatched(tf.sparse, "sparse_dense_matmul")
def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False):
    """A SparseTensor on the host times a lazy dense matrix: each stored value scales the row
    of `b` its column names, summed into the row it names (a gather, then a scatter-add).
    Anything else (a lazy sparse part, a dense `sp_a`, a call TF refuses) runs on TF."""
    if not isinstance(sp_a, tf.SparseTensor) or not isinstance(b, LazyTensor) or \
            any(isinstance(t, LazyTensor) for t in (sp_a.indices, sp_a.values)) or \
            b.node.ndim != 2 or sp_a.values.dtype != b.dtype:
        raise Reject()
    index, shape = sp_a.indices.numpy(), [int(n) for n in sp_a.dense_shape]
    rows, cols = (index[:, 1], index[:, 0]) if adjoint_a else (index[:, 0], index[:, 1])
    n_rows, inner = shape[::-1] if adjoint_a else shape
    x = _adjoint(b.node) if adjoint_b else b.node
    if x.shape[0] != inner or not len(rows) or rows.min() < 0 or cols.min() < 0 or \
            rows.max() >= n_rows or cols.max() >= inner:
        raise Reject()  # TF's own error, from its own kernel
    values = node_of(sp_a.values)
    if adjoint_a and dt.is_complex(values.dtype):
        values = ops.conj(values)
    picked = ops.gather(x, runtime.from_host(cols.reshape(-1, 1)))
    scaled = ops.mul(picked, ops.broadcast_in_dim(values, shape=picked.shape,
                                                  broadcast_dimensions=(0,)))
    zeros = compose.const(0, x.dtype, (n_rows, x.shape[1]))
    return wrap(ops.scatter(zeros, runtime.from_host(rows.reshape(-1, 1)), scaled, mode="add"),
                b)


def _adjoint(x):
    x = ops.transpose(x, permutation=(1, 0))
    return ops.conj(x) if dt.is_complex(x.dtype) else x
