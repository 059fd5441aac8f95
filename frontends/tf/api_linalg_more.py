"""tf.linalg functions built on the factorizations api_linalg lowers: solves and inverses from
a given LU (lu_solve, lu_reconstruct, lu_matrix_inverse), tridiagonal and banded systems (as
dense matrices: the IR has no banded solver, and the few diagonals cost little), least
squares (lstsq) and the matrix exponential (expm).

Each ran eagerly on TF before (a counted fallback reading its lazy inputs: a mid-step sync).
Gradients come from core/autodiff's rules for the primitives used, as api_linalg's. What the
IR's factorizations do not take (complex, half precision) runs on TF's own kernel on the
real values (`_eagerly`), not through `Reject`: TF's replay of a rejected call on zeros
(registry._rejected) would judge a different call there -- lu_reconstruct inverts its zero
`perm` and fails. A bad shape is `Reject`: the replay raises TF's own error for it.
"""
import numpy as np

import tensorflow as tf

from ...core import compose, ir, ops
from .api_linalg import _band_mask, _batched_matmul, _identity_like, _lu_solve, svd_pinv
from .api_math import _swap_last
from .lowering import Reject, broadcast_shapes, broadcast_to, const, operand_nodes
from .registry import lower, lower_undispatched, run_eagerly
from .tensor import LazyTensor, node_of, wrap

_FLOATS = ("float32", "float64")


def _eagerly(api, arguments):
    """TF's own function on the materialized inputs (a counted fallback): its result, or its
    error, for a call the IR cannot express (see the module's docstring)."""
    return run_eagerly(api, (), arguments)


def _batch_to(node, batch):
    """`node` (..., m, n) broadcast to batch + (m, n), or Reject (TF's broadcasting error)."""
    return broadcast_to(node, tuple(batch) + node.shape[node.ndim - 2:])


# ---------------------------------------------------------------- from a given LU

def _rows_by(x, index):
    """x[..., index[..., i], :]: x's rows gathered by index (..., m), batch shapes equal."""
    full = ops.broadcast_in_dim(index, shape=x.shape,
                                broadcast_dimensions=tuple(range(index.ndim)))
    return compose.take_along_axis(x, full, x.ndim - 2)


def _inverse_permutation(perm):
    """inv with inv[..., perm[..., i]] = i, in integers (exact): inv[j] = sum_i i [perm[i] = j]."""
    last = perm.ndim - 1
    shape = perm.shape + (perm.shape[-1],)
    spread = ops.broadcast_in_dim(perm, shape=shape, broadcast_dimensions=tuple(range(perm.ndim)))
    rows = ops.iota(dtype=perm.dtype, shape=shape, dimension=last)
    cols = ops.iota(dtype=perm.dtype, shape=shape, dimension=last + 1)
    return ops.reduce_sum(ops.select(ops.eq(spread, cols), rows, const(0, rows)), axes=(last,))


def _lu_operands(lower_upper, perm):
    """(lu, perm, lowerable) after TF's static checks (lu_reconstruct_assertions: a bad
    shape is Reject, TF's ValueError); lowerable: the dtypes are the IR's (float, int)."""
    (lu,) = operand_nodes(lower_upper)
    (p,) = operand_nodes(perm)
    if lu.ndim < 2 or lu.ndim != p.ndim + 1 or lu.shape[-1] != lu.shape[-2]:
        raise Reject()
    return lu, p, lu.dtype in _FLOATS and p.dtype in ("int32", "int64")


@lower(tf.linalg.lu_reconstruct, "lower_upper", "perm")
def lu_reconstruct(lower_upper, perm, validate_args=False):
    """P^-1 L U, rows put back where `perm` took them from (an exact integer inverse and a
    gather, not a permutation-matrix product); perm's values are not checked (TF's
    invert_permutation would raise for a bad one: a value read)."""
    lu, p, lowerable = _lu_operands(lower_upper, perm)
    if not lowerable or p.shape != lu.shape[:-1]:  # (TF reshapes perm to lu's batch size)
        return _eagerly(tf.linalg.lu_reconstruct, dict(lower_upper=lower_upper, perm=perm,
                                                       validate_args=validate_args))
    lower = ops.select(_band_mask(lu.shape, -1, 0), lu, const(0, lu))
    unit_lower = ops.select(_band_mask(lu.shape, 0, 0), const(1, lu), lower)
    upper = ops.select(_band_mask(lu.shape, 0, -1), lu, const(0, lu))
    product = _batched_matmul(unit_lower, upper)
    return wrap(_rows_by(product, _inverse_permutation(p)), lower_upper, perm)


def _solve_with_lu(lu, p, b):
    """TF's lu_solve: rhs rows permuted by perm, then the unit-lower and upper solves, batch
    shapes broadcast (TF's broadcast of rhs with perm, then triangular_solve's with lu)."""
    if p.dtype == "int64" and not (b.ndim == 2 and p.ndim == 1):
        raise Reject()  # TF stacks int32 batch indices with an int64 perm there: its error
    batch = broadcast_shapes(lu.shape[:-2], p.shape[:-1], b.shape[:-2])
    lu, b = _batch_to(lu, batch), _batch_to(b, batch)
    p = broadcast_to(p, tuple(batch) + p.shape[-1:])
    y = ops.triangular_solve(lu, _rows_by(b, p), lower=True, unit_diagonal=True)
    return ops.triangular_solve(lu, y, lower=False)


@lower(tf.linalg.lu_solve, "lower_upper", "perm", "rhs")
def lu_solve(lower_upper, perm, rhs, validate_args=False):
    lu, p, lowerable = _lu_operands(lower_upper, perm)
    (b,) = operand_nodes(rhs)
    if b.ndim < 2 or b.shape[-2] != lu.shape[-1]:
        raise Reject()  # _lu_solve_assertions' ValueError
    if not lowerable or b.dtype != lu.dtype:
        return _eagerly(tf.linalg.lu_solve, dict(lower_upper=lower_upper, perm=perm, rhs=rhs,
                                                 validate_args=validate_args))
    return wrap(_solve_with_lu(lu, p, b), lower_upper, perm, rhs)


@lower(tf.linalg.lu_matrix_inverse, "lower_upper", "perm")
def lu_matrix_inverse(lower_upper, perm, validate_args=False):
    lu, p, lowerable = _lu_operands(lower_upper, perm)
    if not lowerable:
        return _eagerly(tf.linalg.lu_matrix_inverse, dict(
            lower_upper=lower_upper, perm=perm, validate_args=validate_args))
    return wrap(_solve_with_lu(lu, p, _identity_like(lu)), lower_upper, perm)


# ---------------------------------------------------------------- tridiagonal and banded

def _offset_mask(shape, offset):
    """True at (i, i + offset) of (..., M, M) matrices."""
    rows = ops.iota(dtype="int32", shape=shape[-2:], dimension=0)
    cols = ops.iota(dtype="int32", shape=shape[-2:], dimension=1)
    on = ops.eq(ops.sub(cols, rows), const(offset, rows))
    return ops.broadcast_in_dim(on, shape=shape, broadcast_dimensions=(len(shape) - 2,
                                                                       len(shape) - 1))


def _by_row(values, offset, shape):
    """The (..., M, M) matrix holding values[..., i] at (i, i + offset), zero elsewhere."""
    spread = ops.broadcast_in_dim(values, shape=shape,
                                  broadcast_dimensions=tuple(range(values.ndim)))
    return ops.select(_offset_mask(shape, offset), spread, const(0, spread))


def _last(node, i):
    """node[..., i, :] of a (..., K, M) node."""
    start, limit = [0] * node.ndim, list(node.shape)
    start[-2], limit[-2] = i, i + 1
    return ops.reshape(ops.slice_(node, start_indices=start, limit_indices=limit),
                       new_sizes=node.shape[:-2] + node.shape[-1:])


def _row_diagonal(x, offset):
    """d[..., i] = x[..., i, i + offset] (0 where that is outside the matrix)."""
    kept = ops.select(_offset_mask(x.shape, offset), x, const(0, x))
    return ops.reduce_sum(kept, axes=(x.ndim - 1,))


def _three_diagonals(diagonals, diagonals_format, short=True):
    """(superdiagonal, diagonal, subdiagonal), each (..., M), indexed by row: sup[i] is
    A[i, i+1], sub[i] is A[i, i-1] (TF's compact layout; the unused ends hold anything).
    `short`: the 'sequence' format's off-diagonals may have M - 1 entries (tridiagonal_solve
    pads them; tridiagonal_matmul's kernel refuses them). Reject where TF raises for the
    format or the shapes."""
    if diagonals_format == "compact":
        (d,) = operand_nodes(diagonals)
        if d.ndim < 2 or d.shape[-2] != 3:
            raise Reject()
        return _last(d, 0), _last(d, 1), _last(d, 2)
    if diagonals_format == "sequence":
        if not isinstance(diagonals, (tuple, list)) or len(diagonals) != 3:
            raise Reject()
        sup, main, sub = operand_nodes(*diagonals)
        m = main.shape[-1] if main.ndim else 0
        if not main.ndim or any(n.shape[:-1] != main.shape[:-1] for n in (sup, sub)):
            raise Reject()
        parts = []
        for n, end in ((sup, 1), (main, None), (sub, 0)):
            if n.shape[-1] == m - 1 and end is not None and short:  # TF pads the short one with 0
                pads = [(0, 0, 0)] * (n.ndim - 1) + [(1 - end, end, 0)]
                n = ops.pad(n, ir.constant(0, n.dtype), padding_config=pads)
            elif n.shape[-1] != m:
                raise Reject()
            parts.append(n)
        return tuple(parts)
    if diagonals_format == "matrix":
        (x,) = operand_nodes(diagonals)
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            raise Reject()
        return _row_diagonal(x, 1), _row_diagonal(x, 0), _row_diagonal(x, -1)
    raise Reject()  # TF's ValueError: unrecognized format


def _tridiagonal_matrix(sup, main, sub):
    shape = main.shape + main.shape[-1:]
    return ops.add(ops.add(_by_row(sub, -1, shape), _by_row(main, 0, shape)),
                   _by_row(sup, 1, shape))


def _shift_rows(x, up):
    """x[..., i + 1, :] (up) or x[..., i - 1, :] (down), zero rows coming in at the edge."""
    m = x.shape[-2]
    start, limit = [0] * x.ndim, list(x.shape)
    start[-2], limit[-2] = (1, m) if up else (0, m - 1)
    kept = ops.slice_(x, start_indices=start, limit_indices=limit)
    pads = [(0, 0, 0)] * x.ndim
    pads[-2] = (0, 1, 0) if up else (1, 0, 0)
    return ops.pad(kept, ir.constant(0, x.dtype), padding_config=pads)


def _column(d, like):
    return ops.broadcast_in_dim(d, shape=like.shape, broadcast_dimensions=tuple(range(d.ndim)))


@lower(tf.linalg.tridiagonal_matmul, "diagonals", "rhs", as_given=("diagonals",))
def tridiagonal_matmul(diagonals, rhs, diagonals_format="compact"):
    """sub[i] rhs[i-1] + main[i] rhs[i] + sup[i] rhs[i+1], element-wise (O(M N), as TF's
    kernel; sup's last and sub's first entries meet no row, as there)."""
    sup, main, sub = _three_diagonals(diagonals, diagonals_format, short=False)
    (b,) = operand_nodes(rhs)
    if b.ndim != main.ndim + 1 or b.shape[:-2] != main.shape[:-1] or \
            b.shape[-2] != main.shape[-1] or \
            b.dtype not in _FLOATS + ("complex64", "complex128") or \
            any(n.dtype != b.dtype for n in (sup, main, sub)):
        raise Reject()  # TF's kernel: same rank, same outer dimensions, its dtypes
    out = ops.mul(_column(main, b), b)
    if b.shape[-2] > 1:
        out = ops.add(ops.mul(_column(sub, b), _shift_rows(b, up=False)), out)
        out = ops.add(out, ops.mul(_column(sup, b), _shift_rows(b, up=True)))
    inputs = diagonals if isinstance(diagonals, (tuple, list)) else (diagonals,)
    return wrap(out, *inputs, rhs)


@lower(tf.linalg.tridiagonal_solve, "diagonals", "rhs", as_given=("diagonals",))
def tridiagonal_solve(diagonals, rhs, diagonals_format="compact", transpose_rhs=False,
                      conjugate_rhs=False, partial_pivoting=True, perturb_singular=False):
    """A dense LU solve (partial pivoting) of the tridiagonal matrix: TF's Gaussian
    elimination with or without pivoting gives the same solution up to rounding for the
    matrices it solves. perturb_singular changes the answer for singular matrices only,
    which cannot be known without reading them: TF's kernel runs it."""
    if perturb_singular and not partial_pivoting:
        raise Reject()  # TF's ValueError
    sup, main, sub = _three_diagonals(diagonals, diagonals_format)
    (b,) = operand_nodes(rhs)
    rank = main.ndim + 1  # the compact form's rank
    if b.ndim not in (rank, rank - 1) or b.shape[:rank - 2] != main.shape[:-1]:
        raise Reject()  # TF's ValueError: rank, or batch shapes
    vector = b.ndim == rank - 1
    if not vector and transpose_rhs:
        b = _swap_last(b)
    if (b.shape[-1] if vector else b.shape[-2]) != main.shape[-1]:
        raise Reject()
    if perturb_singular or b.dtype not in _FLOATS or \
            any(n.dtype != b.dtype for n in (sup, main, sub)):
        return _eagerly(tf.linalg.tridiagonal_solve, dict(
            diagonals=diagonals, rhs=rhs, diagonals_format=diagonals_format,
            transpose_rhs=transpose_rhs, conjugate_rhs=conjugate_rhs,
            partial_pivoting=partial_pivoting, perturb_singular=perturb_singular))
    if vector:
        b = ops.reshape(b, new_sizes=b.shape + (1,))
    x = _lu_solve(_tridiagonal_matrix(sup, main, sub), b)  # (conjugate_rhs: real, no-op)
    if vector:
        x = ops.reshape(x, new_sizes=x.shape[:-1])
    inputs = diagonals if isinstance(diagonals, (tuple, list)) else (diagonals,)
    return wrap(x, *inputs, rhs)


def _banded_matrix(bands, lower):
    """The triangular (..., M, M) matrix of TF's banded storage, 'LEFT_RIGHT' aligned: lower,
    row k of bands is subdiagonal k (bands[k, i] = A[i, i - k]); upper, row r is
    superdiagonal K-1-r (bands[r, i] = A[i, i + K-1-r]). Bands past M are ignored."""
    k, m = bands.shape[-2:]
    shape = bands.shape[:-2] + (m, m)
    out = None
    for r in range(k):
        offset = -r if lower else k - 1 - r
        if abs(offset) >= m:
            continue
        part = _by_row(_last(bands, r), offset, shape)
        out = part if out is None else ops.add(out, part)
    return out


@lower_undispatched(tf.linalg, "banded_triangular_solve")
def banded_triangular_solve(bands, rhs, lower=True, adjoint=False, name=None):
    """A dense triangular solve of the banded matrix, batch shapes broadcast as TF's. TF's
    kernel raises for a zero on the diagonal; lazily the values are unknown (inf/nan, as
    tf.linalg.triangular_solve gives). Anything else TF decides (Reject: its kernel on the
    real values, undispatched_wrapper)."""
    a, b = operand_nodes(bands, rhs)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-2] == 0 or a.dtype not in _FLOATS or \
            a.shape[-1] != b.shape[-2] or not isinstance(lower, bool) or \
            not isinstance(adjoint, bool):
        raise Reject()
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    matrix = _batch_to(_banded_matrix(a, lower), batch)
    x = ops.triangular_solve(matrix, _batch_to(b, batch), lower=lower, transpose_a=adjoint)
    return wrap(x, bands, rhs)


# ---------------------------------------------------------------- least squares

def _gramian_cholesky(a, l2, first_kind):
    """chol(A^T A + l2 I) (first kind) or chol(A A^T + l2 I): TF's _RegularizedGramianCholesky."""
    nb = a.ndim - 2
    batch = (tuple(range(nb)), tuple(range(nb)))
    side = nb if first_kind else nb + 1
    gram = ops.dot_general(a, a, contracting_dimensions=((side,), (side,)),
                           batch_dimensions=batch)
    if l2 is not None:
        eye = _identity_like(gram)
        scale = ops.broadcast_in_dim(l2, shape=gram.shape, broadcast_dimensions=())
        gram = ops.add(gram, ops.mul(scale, eye))
    return ops.cholesky(gram)


def _cholesky_solve(chol, b):
    y = ops.triangular_solve(chol, b, lower=True)
    return ops.triangular_solve(chol, y, lower=True, transpose_a=True)


def _l2_node(l2, dtype):
    """The regularizer as a rank-0 node of the matrix dtype; None for a Python zero (TF adds
    nothing then); Reject for what TF's `l2 * identity` refuses."""
    if isinstance(l2, (LazyTensor, tf.Tensor, tf.Variable)):
        node = node_of(l2)
        if node.shape != () or node.dtype != dtype:
            raise Reject()
        return node
    if isinstance(l2, (bool, np.bool_)) or not isinstance(l2, (int, float, np.number)):
        raise Reject()
    if l2 == 0:
        return None
    return node_of(float(l2), dtype)


def _composite(matrix_shape, fast, itemsize):
    """TF's _use_composite_impl: fast=True runs its Cholesky composite unless the tensor is
    large and I/O bound (then the MatrixSolveLs kernel: same Cholesky, no broadcasting)."""
    size = int(np.prod(matrix_shape)) * itemsize
    io_bound = int(np.prod(matrix_shape[:-2])) > min(matrix_shape[-2:])
    return fast and not (size > 256000 and io_bound)


@lower(tf.linalg.lstsq, "matrix", "rhs", "l2_regularizer")
def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True):
    """fast: Cholesky of the regularized normal equations, as TF (m >= n: (A^T A + l2 I)^-1
    A^T b; m < n: A^T (A A^T + l2 I)^-1 b). fast=False: the minimum-norm least-squares
    solution (TF's complete orthogonal decomposition) from an SVD pseudo-inverse, the same
    answer; TF ignores l2_regularizer there."""
    a, b = operand_nodes(matrix, rhs)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-2] != b.shape[-2]:
        raise Reject()
    if a.dtype not in _FLOATS:
        return _eagerly(tf.linalg.lstsq, dict(matrix=matrix, rhs=rhs,
                                              l2_regularizer=l2_regularizer, fast=fast))
    composite = _composite(a.shape, bool(fast), np.dtype(a.dtype).itemsize)
    if not composite and a.shape[:-2] != b.shape[:-2]:
        raise Reject()  # the kernel's "same rank" / batch error
    if not fast:
        return wrap(_min_norm_solution(a, b), matrix, rhs)
    m, n = a.shape[-2:]
    l2 = _l2_node(l2_regularizer, a.dtype)
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = _batch_to(a, batch), _batch_to(b, batch)
    chol = _gramian_cholesky(a, l2, first_kind=m >= n)
    if m >= n:
        x = _cholesky_solve(chol, _batched_matmul(_swap_last(a), b))
    else:
        x = _batched_matmul(_swap_last(a), _cholesky_solve(chol, b))
    return wrap(x, matrix, rhs, l2_regularizer)


def _min_norm_solution(a, b):
    """pinv(a) @ b: singular values below eps * min(m, n) * max(s) count as zero (the rank
    rule of Eigen's complete orthogonal decomposition, TF's kernel); the rank is never read."""
    eps = float(np.finfo(np.dtype(a.dtype)).eps) * min(a.shape[-2:])
    return _batched_matmul(svd_pinv(a, eps), b)


# ---------------------------------------------------------------- matrix exponential

# TF's Padé coefficients (linalg_impl._matrix_exp_pade*, from Eigen's MatrixExponential)
_PADE = {
    3: [120.0, 60.0, 12.0],
    5: [30240.0, 15120.0, 3360.0, 420.0, 30.0],
    7: [17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0],
    9: [17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
        110880.0, 3960.0, 90.0],
    13: [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
         40840800.0, 960960.0, 16380.0, 182.0],
}
# float32: Padé 3, 5 or 7 by the 1-norm (7 on the scaled matrix); float64: 3, 5, 7, 9 or 13
_EXPM = {"float32": (3.925724783138660, (4.258730016922831e-001, 1.880152677804762e+000),
                     (3, 5, 7)),
         "float64": (5.371920351148152, (1.495585217958292e-002, 2.539398330063230e-001,
                                         9.504178996162932e-001, 2.097847961257068e+000),
                     (3, 5, 7, 9, 13))}
# TF squares floor(log2(norm / maxnorm)) times in a while loop. The IR has no loop, and that
# count is a value: every step is unrolled, squaring only the matrices whose count reaches
# it (a select per step). 64 steps cover 1-norms below maxnorm * 2**65 (about 1.4e20); a
# matrix needing more gives NaN (as jax.scipy.linalg.expm past its max_squarings) rather
# than a wrong finite result.
_MAX_SQUARINGS = 64


def _pade(x, order, eye):
    b = _PADE[order]

    def times(c, y):
        return ops.mul(const(c, y), y)

    def plus(*terms):
        out = terms[0]
        for t in terms[1:]:
            out = ops.add(out, t)
        return out
    mm = _batched_matmul
    x2 = mm(x, x)
    if order == 3:
        return mm(x, plus(x2, times(b[1], eye))), plus(times(b[2], x2), times(b[0], eye))
    x4 = mm(x2, x2)
    if order == 5:
        u = mm(x, plus(x4, times(b[3], x2), times(b[1], eye)))
        return u, plus(times(b[4], x4), times(b[2], x2), times(b[0], eye))
    x6 = mm(x4, x2)
    if order == 7:
        u = mm(x, plus(x6, times(b[5], x4), times(b[3], x2), times(b[1], eye)))
        return u, plus(times(b[6], x6), times(b[4], x4), times(b[2], x2), times(b[0], eye))
    if order == 9:
        x8 = mm(x6, x2)
        u = mm(x, plus(x8, times(b[7], x6), times(b[5], x4), times(b[3], x2),
                       times(b[1], eye)))
        return u, plus(times(b[8], x8), times(b[6], x6), times(b[4], x4), times(b[2], x2),
                       times(b[0], eye))
    inner_u = plus(mm(x6, plus(x6, times(b[11], x4), times(b[9], x2))), times(b[7], x6),
                   times(b[5], x4), times(b[3], x2), times(b[1], eye))
    inner_v = plus(times(b[12], x6), times(b[10], x4), times(b[8], x2))
    v = plus(mm(x6, inner_v), times(b[6], x6), times(b[4], x4), times(b[2], x2),
             times(b[0], eye))
    return mm(x, inner_u), v


def _power_of_two(s, dtype):
    """2**s for integral s in [0, _MAX_SQUARINGS], exactly: the exponent field's bits."""
    if dtype == "float32":
        bits, mantissa, bias = "int32", 23, 127
    else:
        bits, mantissa, bias = "int64", 52, 1023
    e = ops.convert(s, dtype=bits)
    e = ops.add(e, const(bias, e))
    return ops.bitcast_convert(ops.shift_left(e, const(mantissa, e)), dtype=dtype)


def _matrix_exp(x):
    maxnorm, conds, orders = _EXPM[x.dtype]
    nb = x.ndim - 2

    def per_matrix(v):  # (...,) -> (..., n, n)
        return ops.broadcast_in_dim(v, shape=x.shape, broadcast_dimensions=tuple(range(nb)))
    # the 1-norm picks the Padé order and the squarings: steps, no gradient (TF's flows
    # through floor and comparisons: zero)
    norm = ops.reduce_max(ops.reduce_sum(ops.abs_(ops.stop_gradient(x)), axes=(nb,)),
                          axes=(nb,))
    squarings = ops.max_(ops.floor(ops.div(ops.log(ops.div(norm, const(maxnorm, norm))),
                                           ops.log(const(2.0, norm)))), const(0, norm))
    # (a NaN or infinite norm makes the whole result NaN below, as TF's cond does)
    finite = ops.is_finite(ops.reduce_max(norm, axes=tuple(range(nb))))
    steps = ops.min_(ops.select(ops.is_finite(squarings), squarings, const(0, norm)),
                     const(_MAX_SQUARINGS, norm))
    eye = _identity_like(x)
    scaled = ops.div(x, per_matrix(ops.stop_gradient(_power_of_two(steps, x.dtype))))
    pairs = [_pade(x, order, eye) for order in orders[:-1]] + [_pade(scaled, orders[-1], eye)]
    u, v = pairs[-1]
    for bound, (u_low, v_low) in reversed(list(zip(conds, pairs))):
        below = per_matrix(ops.lt(norm, const(bound, norm)))
        u, v = ops.select(below, u_low, u), ops.select(below, v_low, v)
    result = _lu_solve(ops.sub(v, u), ops.add(u, v))
    for i in range(_MAX_SQUARINGS):
        more = per_matrix(ops.lt(const(float(i), steps), steps))
        result = ops.select(more, _batched_matmul(result, result), result)
    beyond = ops.gt(squarings, const(_MAX_SQUARINGS, squarings))
    nan = const(float("nan"), result)
    result = ops.select(per_matrix(beyond), nan, result)
    whole = ops.broadcast_in_dim(finite, shape=x.shape, broadcast_dimensions=())
    return ops.select(whole, result, nan)


@lower(tf.linalg.expm, "input")
def expm(input):  # noqa: A002 - TF's name
    """TF's scaling and squaring with its Padé orders and thresholds, the squarings unrolled
    (see _MAX_SQUARINGS)."""
    (x,) = operand_nodes(input)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise Reject()  # TF's own error (a matmul's shape error)
    if x.dtype not in _FLOATS:
        return _eagerly(tf.linalg.expm, dict(input=input))
    if x.size == 0:  # TF returns an empty input as it is
        return wrap(x, input)
    if x.ndim == 2:
        return wrap(ops.reshape(_matrix_exp(ops.reshape(x, new_sizes=(1,) + x.shape)),
                                new_sizes=x.shape), input)
    return wrap(_matrix_exp(x), input)


# ---------------------------------------------------------------- tridiagonal eigenvalues

@lower(tf.linalg.eigh_tridiagonal, "alpha", "beta")
def eigh_tridiagonal(alpha, beta, eigvals_only=True, select="a", select_range=None, tol=None):
    """All eigenvalues (ascending, as TF's bisection gives them) from a dense eigh of the real
    symmetric tridiagonal matrix. Eigenvectors (TF's inverse iteration fixes signs the dense
    solver need not share), a selected range or index set (its count of eigenvalues is a
    value) and complex off-diagonals run on TF."""
    a, b = operand_nodes(alpha, beta)
    if a.ndim != 1 or b.ndim != 1 or b.shape[0] != a.shape[0] - 1 or a.shape[0] == 0 or \
            a.dtype not in _FLOATS or eigvals_only is not True or select != "a":
        return _eagerly(tf.linalg.eigh_tridiagonal, dict(
            alpha=alpha, beta=beta, eigvals_only=eigvals_only, select=select,
            select_range=select_range, tol=tol))
    off = ops.pad(b, ir.constant(0, b.dtype), padding_config=[(0, 1, 0)])  # off[i] = T[i, i+1]
    shape = a.shape + a.shape
    matrix = ops.add(_by_row(a, 0, shape), ops.add(
        _by_row(off, 1, shape), _swap_last(_by_row(off, 1, shape))))
    return wrap(ops.eigh(matrix, lower=True)[0], alpha, beta)
