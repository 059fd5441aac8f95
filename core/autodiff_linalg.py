"""VJP rules of the matrix factorizations (nodes with several results, see core/ir.py): each
rule gets one cotangent per factor (zeros for a factor nobody used, None for integer ones).

The formulas and their limits are TensorFlow's gradients (core/autodiff.py's conventions): eigh
and svd need distinct eigen / singular values (equal ones give inf or NaN, as in TF); qr and
svd with full_matrices=True on a non-square matrix, and lu of a non-square matrix, have no
gradient (TF has none either). Registered into autodiff.VJP when core/autodiff.py is imported.
"""
from . import ir, ops
from .autodiff import rule
from .compose import batch_matmul as _mm, matrix_transpose as _mT


def _const(value, like):
    return ops.broadcast_in_dim(ir.constant(value, like.dtype), shape=like.shape,
                                broadcast_dimensions=())


def _where_band(x, keep):
    """x where keep(column - row) holds for the element, else 0 (iota masks, no data)."""
    rows = ops.iota(dtype="int32", shape=x.shape, dimension=x.ndim - 2)
    cols = ops.iota(dtype="int32", shape=x.shape, dimension=x.ndim - 1)
    offset = ops.sub(cols, rows)
    zero = ops.broadcast_in_dim(ir.constant(0, "int32"), shape=x.shape, broadcast_dimensions=())
    return ops.select(keep(offset, zero), x, _const(0, x))


def _lower(x, strict=False):
    return _where_band(x, ops.lt if strict else ops.le)


def _upper(x, strict=False):
    return _where_band(x, ops.gt if strict else ops.ge)


def _diag_embed(v):
    """(..., n) -> (..., n, n) with v on the diagonal."""
    shape = v.shape + (v.shape[-1],)
    rows = ops.broadcast_in_dim(v, shape=shape, broadcast_dimensions=tuple(range(v.ndim)))
    return _where_band(rows, ops.eq)


def _diagonal_only(x):
    return _where_band(x, ops.eq)


def _pairwise_inverse_gaps(values):
    """f[..., i, j] = 1 / (values[j] - values[i]) off the diagonal, 0 on it."""
    shape = values.shape + (values.shape[-1],)
    batch = tuple(range(values.ndim - 1))
    vj = ops.broadcast_in_dim(values, shape=shape, broadcast_dimensions=batch + (values.ndim,))
    vi = ops.broadcast_in_dim(values, shape=shape, broadcast_dimensions=batch + (values.ndim - 1,))
    gaps = ops.sub(vj, vi)
    off = _where_band(_const(1, gaps), ops.ne)
    safe = ops.select(ops.eq(off, _const(0, off)), _const(1, gaps), gaps)
    return ops.mul(off, ops.div(_const(1, gaps), safe))


def _times_inv_rT(x, r):
    """x @ inv(r^T) for upper-triangular r: the transpose of inv(r) @ x^T (one solve)."""
    return _mT(ops.triangular_solve(r, _mT(x), lower=False))


@rule("eigh")
def _eigh(n, gs):
    g_values, g_vectors = gs
    values, vectors = ops.result(n, index=0), ops.result(n, index=1)
    inner = ops.add(_diag_embed(g_values),
                    ops.mul(_pairwise_inverse_gaps(values), _mm(_mT(vectors), g_vectors)))
    g = _mm(vectors, _mm(inner, _mT(vectors)))
    # the op reads one triangle: fold the other one's share onto it (the diagonal once)
    both = ops.add(g, _mT(g))
    tri = _lower(both) if n.attrs["lower"] else _upper(both)
    half = ops.mul(_diagonal_only(both), _const(0.5, both))
    return (ops.sub(tri, half),)


@rule("qr")
def _qr(n, gs):
    a = n.inputs[0]
    dq, dr = gs
    q, r = ops.result(n, index=0), ops.result(n, index=1)
    m, cols = a.shape[-2:]
    if n.attrs["full_matrices"] and m > cols:
        raise NotImplementedError("lazyx autodiff: no gradient for qr with full_matrices=True "
                                  "of a matrix with more rows than columns")
    if m >= cols:
        return (_qr_deep(q, r, dq, dr),)
    # wide: a = [x | y], r = [u | v] with x square (TF's formulation)
    batch = a.shape[:-2]
    zero = (0,) * len(batch)

    def cols_of(t, start, stop):
        return ops.slice_(t, start_indices=zero + (0, start),
                          limit_indices=batch + (t.shape[-2], stop))
    y, u = cols_of(a, m, cols), cols_of(r, 0, m)
    dv, du = cols_of(dr, m, cols), cols_of(dr, 0, m)
    dx = _qr_deep(q, u, ops.add(dq, _mm(y, _mT(dv))), du)
    return (ops.concatenate(dx, _mm(q, dv), dimension=a.ndim - 1),)


def _qr_deep(q, r, dq, dr):
    qdq = _mm(_mT(q), dq)
    rdr = _mm(r, _mT(dr))
    tril = _lower(ops.add(ops.sub(qdq, _mT(qdq)), ops.sub(rdr, _mT(rdr))))
    grad_a = _mm(q, ops.add(dr, _times_inv_rT(tril, r)))
    return ops.add(grad_a, _times_inv_rT(ops.sub(dq, _mm(q, qdq)), r))


@rule("svd")
def _svd(n, gs):
    a = n.inputs[0]
    if not n.attrs["compute_uv"]:  # d s = u^T da v: the vectors are needed (TF recomputes too)
        u, _, vh = ops.svd(a, full_matrices=False)
        return (_mm(ops.mul(u, _row(gs[0], u)), vh),)
    m, cols = a.shape[-2:]
    if n.attrs["full_matrices"] and m != cols:
        raise NotImplementedError("lazyx autodiff: no gradient for svd with full_matrices=True "
                                  "of a non-square matrix")
    u, s, vh = (ops.result(n, index=i) for i in range(3))
    gu, gs_, gvh = gs
    v, gv = _mT(vh), _mT(gvh)
    if m > cols:  # work on a^T (u and v swap roles), transpose the result back
        return (_mT(_svd_wide(v, s, u, gv, gs_, gu)),)
    return (_svd_wide(u, s, v, gu, gs_, gv),)


def _row(values, like):
    """(..., k) -> (..., r, k): values repeated down the rows of `like`."""
    batch = tuple(range(values.ndim - 1))
    return ops.broadcast_in_dim(values, shape=like.shape, broadcast_dimensions=batch +
                                (values.ndim,))


def _svd_wide(u, s, v, gu, gs, gv):
    """TF's SvdGrad for a (..., m, n) with m <= n and thin factors: u (m, m), v (n, m)."""
    f = _pairwise_inverse_gaps(ops.mul(s, s))
    s_mat = _diag_embed(s)
    f_u = ops.mul(f, _mm(_mT(u), gu))
    f_v = ops.mul(f, _mm(_mT(v), gv))
    inner = ops.add(_diag_embed(gs), ops.add(_mm(ops.add(f_u, _mT(f_u)), s_mat),
                                              _mm(s_mat, ops.add(f_v, _mT(f_v)))))
    grad = _mm(u, _mm(inner, _mT(v)))
    if v.shape[-2] == v.shape[-1]:
        return grad
    gvt = _mT(gv)
    rest = ops.sub(gvt, _mm(_mm(gvt, v), _mT(v)))
    u_s_inv = ops.div(u, _row(s, u))
    return ops.add(grad, _mm(u_s_inv, rest))


@rule("lu")
def _lu(n, gs):
    """P a = L U: with M = strict_lower(L^T gL) + upper(gU U^T), the cotangent of a is
    P^T L^-T M U^-T (gL, gU: the packed cotangent's strict lower and upper parts)."""
    a = n.inputs[0]
    if a.shape[-1] != a.shape[-2]:
        raise NotImplementedError("lazyx autodiff: no gradient for lu of a non-square matrix")
    g = gs[0]
    packed, perm = ops.result(n, index=0), ops.result(n, index=2)
    lower_l = ops.add(_lower(packed, strict=True), _diagonal_only(_const(1, packed)))
    middle = ops.add(_lower(_mm(_mT(lower_l), _lower(g, strict=True)), strict=True),
                     _upper(_mm(_upper(g), _mT(_upper(packed)))))
    y = ops.triangular_solve(packed, middle, lower=True, transpose_a=True, unit_diagonal=True)
    z = _times_inv_rT(y, packed)
    # rows back to where the permutation took them: P^T z, with P[i, j] = (perm[i] == j)
    shape = perm.shape + (perm.shape[-1],)
    batch = tuple(range(perm.ndim - 1))
    target = ops.broadcast_in_dim(perm, shape=shape, broadcast_dimensions=batch + (perm.ndim - 1,))
    p = ops.convert(ops.eq(target, ops.iota(dtype="int32", shape=shape, dimension=perm.ndim)),
                    dtype=a.dtype)
    return (_mm(_mT(p), z),)



@rule("triangular_solve")
def _triangular_solve(n, g):
    """x = op(a)^-1 b: gb = op(a)^-T g (one solve), ga = -gb x^T (or -x gb^T for op = a^T),
    kept to a's triangle (its strict part for a unit diagonal, which a does not hold)."""
    a = n.inputs[0]
    lower, transpose, unit = n.attrs["lower"], n.attrs["transpose_a"], n.attrs["unit_diagonal"]
    gb = ops.triangular_solve(a, g, lower=lower, transpose_a=not transpose, unit_diagonal=unit)
    outer = _mm(n, _mT(gb)) if transpose else _mm(gb, _mT(n))
    keep = _lower if lower else _upper
    return ops.neg(keep(outer, strict=unit)), gb


@rule("cholesky")
def _cholesky(n, g):
    """a = L L^T: with P = L^T gL, its lower triangle with the diagonal halved, and
    S = L^-T P L^-1, the cotangent of a is (S + S^T) / 2 (TF's CholeskyGrad)."""
    middle = _mm(_mT(n), g)
    middle = ops.sub(_lower(middle), ops.mul(_const(0.5, middle), _diagonal_only(middle)))
    left = ops.triangular_solve(n, middle, lower=True, transpose_a=True)   # L^-T P
    s = _mT(ops.triangular_solve(n, _mT(left), lower=True, transpose_a=True))  # (L^-T (..)^T)^T
    return (ops.mul(_const(0.5, s), ops.add(s, _mT(s))),)
