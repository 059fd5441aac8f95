"""The Array API linalg extension's factorization-based functions, as lowerings onto core's
factorization primitives (lu, qr_*, eigh_*, svd_*, cholesky, triangular_solve).

Those primitives are real-float only. inv, solve, pinv, matrix_rank and svdvals take complex
matrices through the real representation of X + iY as [[X, -Y], [Y, X]] (it maps products,
inverses and pseudo-inverses to the same block form, and doubles each singular value); the
others raise a TypeError at the call on complex input. Integer operands compute in float64,
as numpy.linalg does.
"""
import collections
import operator

from numpy.linalg import LinAlgError

from ...core import compose, ops
from ...core import dtypes as dt
from ._entry import traced
from ._promote import broadcast_node, broadcast_shapes, nodes_result_dtype
from ._ufuncs import fill

EighResult = collections.namedtuple("EighResult", "eigenvalues eigenvectors")
QRResult = collections.namedtuple("QRResult", "Q R")
SlogdetResult = collections.namedtuple("SlogdetResult", "sign logabsdet")
SVDResult = collections.namedtuple("SVDResult", "U S Vh")


def _float_matrix(node, name, square=True, complex_ok=False):
    if dt.is_complex(node.dtype) and not complex_ok:
        raise TypeError(f"lazyx.frontends.numpy: linalg.{name} is not supported on complex "
                        f"arrays")
    if node.ndim < 2:  # NumPy's LinAlgError (a ValueError) and wording
        raise LinAlgError(f"{node.ndim}-dimensional array given. Array must be at least "
                          f"two-dimensional")
    if square and node.shape[-1] != node.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    if dt.is_complex(node.dtype):
        return node
    return node if dt.is_float(node.dtype) else ops.convert(node, dtype="float64")


def _embed(z):
    """(..., m, n) complex -> (..., 2m, 2n) real [[X, -Y], [Y, X]]."""
    x, y = ops.real(z), ops.imag(z)
    top = ops.concatenate(x, ops.neg(y), dimension=z.ndim - 1)
    bottom = ops.concatenate(y, x, dimension=z.ndim - 1)
    return ops.concatenate(top, bottom, dimension=z.ndim - 2)


def _corner(node, rows, cols, row0=0):
    start = (0,) * (node.ndim - 2) + (row0, 0)
    return ops.slice_(node, start_indices=start,
                      limit_indices=node.shape[:-2] + (row0 + rows, cols))


def _unembed(block, m, n):
    """The complex (..., m, n) whose real representation is `block` (..., 2m, 2n)."""
    return ops.complex_(_corner(block, m, n), _corner(block, m, n, row0=m))


def _stack_parts(z):
    """(..., n, k) complex -> (..., 2n, k) real [Re; Im] (what the block form multiplies)."""
    return ops.concatenate(ops.real(z), ops.imag(z), dimension=z.ndim - 2)


_mT = compose.matrix_transpose  # (the name its many call sites use)


def _eye(shape, dtype):
    n = len(shape)
    rows = ops.iota(dtype="int64", shape=shape, dimension=n - 2)
    cols = ops.iota(dtype="int64", shape=shape, dimension=n - 1)
    return ops.convert(ops.eq(rows, cols), dtype=dtype)


def _tri(node, lower, k=0):
    """node's lower (col <= row + k) or upper (col >= row + k) triangle, zeros elsewhere."""
    n = node.ndim
    rows = ops.iota(dtype="int64", shape=node.shape, dimension=n - 2)
    cols = ops.iota(dtype="int64", shape=node.shape, dimension=n - 1)
    shifted = ops.add(rows, fill(k, "int64", node.shape))
    keep = ops.le(cols, shifted) if lower else ops.ge(cols, shifted)
    return ops.select(keep, node, fill(0, node.dtype, node.shape))


def _diag(node):
    """The main diagonals (..., n) of square matrices (..., n, n)."""
    picked = ops.select(ops.convert(_eye(node.shape, "int8"), dtype=dt.BOOL), node,
                        fill(0, node.dtype, node.shape))
    return ops.reduce_sum(picked, axes=(node.ndim - 1,))


def _permute_rows(b, perm):
    """out[..., i, :] = b[..., perm[..., i], :], as a one-hot matmul (exact: one 1 per row)."""
    m = b.shape[-2]
    batch = b.shape[:-2]
    cols = ops.iota(dtype="int64", shape=batch + (m, m), dimension=len(batch) + 1)
    target = ops.broadcast_in_dim(ops.convert(perm, dtype="int64"), shape=batch + (m, m),
                                  broadcast_dimensions=tuple(range(len(batch))) + (len(batch),))
    onehot = ops.convert(ops.eq(cols, target), dtype=b.dtype)
    nb = len(batch)
    return ops.dot_general(onehot, b, contracting_dimensions=((nb + 1,), (nb,)),
                           batch_dimensions=(tuple(range(nb)), tuple(range(nb))))


def _lu_solve(a, b):
    lu, _, perm = ops.lu(a)
    y = ops.triangular_solve(lu, _permute_rows(b, perm), lower=True, unit_diagonal=True)
    return ops.triangular_solve(lu, y, lower=False)


def _det_parts(a):
    lu, piv, _ = ops.lu(a)
    piv = ops.convert(piv, dtype="int64")
    swaps = ops.reduce_sum(ops.convert(ops.ne(piv, ops.iota(dtype="int64", shape=piv.shape,
                                                             dimension=piv.ndim - 1)),
                                       dtype="int64"), axes=(piv.ndim - 1,))
    odd = ops.eq(ops.rem(swaps, fill(2, "int64", swaps.shape)), fill(1, "int64", swaps.shape))
    parity = ops.select(odd, fill(-1, a.dtype, swaps.shape), fill(1, a.dtype, swaps.shape))
    return _diag(lu), parity


@traced("x")
def det(x):
    a = _float_matrix(x, "det")
    if a.shape[-1] == 0:
        return fill(1, a.dtype, a.shape[:-2])
    diag, parity = _det_parts(a)
    return ops.mul(parity, ops.reduce_prod(diag, axes=(diag.ndim - 1,)))


@traced("x")
def _slogdet(x):
    a = _float_matrix(x, "slogdet")
    if a.shape[-1] == 0:
        return fill(1, a.dtype, a.shape[:-2]), fill(0, a.dtype, a.shape[:-2])
    diag, parity = _det_parts(a)
    sign = ops.mul(parity, ops.reduce_prod(ops.sign(diag), axes=(diag.ndim - 1,)))
    return sign, ops.reduce_sum(ops.log(ops.abs_(diag)), axes=(diag.ndim - 1,))


def slogdet(x, /):
    return SlogdetResult(*_slogdet(x))


@traced("x")
def inv(x):
    a = _float_matrix(x, "inv", complex_ok=True)
    if a.shape[-1] == 0:
        return a
    if dt.is_complex(a.dtype):
        n = a.shape[-1]
        block = _embed(a)
        return _unembed(_lu_solve(block, _eye(block.shape, block.dtype)), n, n)
    return _lu_solve(a, _eye(a.shape, a.dtype))


@traced("x1", "x2")
def solve(x1, x2):
    a = _float_matrix(x1, "solve", complex_ok=True)
    b = x2 if dt.is_float(x2.dtype) or dt.is_complex(x2.dtype) else ops.convert(x2, dtype="float64")
    dtype = nodes_result_dtype(a, b)
    a = a if a.dtype == dtype else ops.convert(a, dtype=dtype)
    b = b if b.dtype == dtype else ops.convert(b, dtype=dtype)
    vector = b.ndim == 1
    if vector:
        b = ops.reshape(b, new_sizes=b.shape + (1,))
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"linalg.solve: x2 has {b.shape[-2]} rows; x1 is {a.shape[-2:]}")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = broadcast_node(a, batch + a.shape[-2:]), broadcast_node(b, batch + b.shape[-2:])
    if a.shape[-1] == 0:
        out = b
    elif dt.is_complex(dtype):
        n = a.shape[-1]
        parts = _lu_solve(_embed(a), _stack_parts(b))
        out = ops.complex_(_corner(parts, n, b.shape[-1]), _corner(parts, n, b.shape[-1], n))
    else:
        out = _lu_solve(a, b)
    return ops.reshape(out, new_sizes=out.shape[:-1]) if vector else out


@traced("x")
def cholesky(x, upper=False):
    a = _float_matrix(x, "cholesky")
    if a.shape[-1] == 0:
        return a
    lower = ops.cholesky(ops.add(_tri(a, True), _mT(_tri(a, True, -1))))  # the lower triangle
    return _mT(lower) if upper else lower


@traced("x")
def _eigh(x):
    a = _float_matrix(x, "eigh")
    return tuple(ops.eigh(a))


def eigh(x, /):
    return EighResult(*_eigh(x))


@traced("x")
def eigvalsh(x):
    return ops.eigh(_float_matrix(x, "eigvalsh"))[0]


@traced("x")
def _qr(x, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    a = _float_matrix(x, "qr", square=False)
    full = mode == "complete"
    return tuple(ops.qr(a, full_matrices=full))


def qr(x, /, *, mode="reduced"):
    return QRResult(*_qr(x, mode))


@traced("x")
def _svd(x, full_matrices=True):
    a = _float_matrix(x, "svd", square=False)
    return tuple(ops.svd(a, full_matrices=full_matrices))


def svd(x, /, *, full_matrices=True):
    return SVDResult(*_svd(x, full_matrices))


@traced("x")
def svdvals(x):
    a = _float_matrix(x, "svdvals", square=False, complex_ok=True)
    return _singular_values(a)


def _singular_values(a):
    if not dt.is_complex(a.dtype):
        return ops.svd(a, compute_uv=False)[0]
    s = ops.svd(_embed(a), compute_uv=False)[0]  # each value twice, descending: keep every other one
    return ops.slice_(s, start_indices=(0,) * s.ndim, limit_indices=s.shape,
                      strides=(1,) * (s.ndim - 1) + (2,))


def _cutoff(a, s, rtol):
    """rtol * largest singular value; rtol defaults to max(m, n) * eps (the standard's)."""
    if rtol is None:
        import numpy as np
        rtol = max(a.shape[-2:]) * float(np.finfo(a.dtype).eps)
    largest = ops.reduce_max(s, axes=(s.ndim - 1,))
    scale = rtol if hasattr(rtol, "ndim") else fill(rtol, s.dtype, largest.shape)
    if scale.dtype != s.dtype:
        scale = ops.convert(scale, dtype=s.dtype)
    return ops.mul(largest, broadcast_node(scale, largest.shape))


@traced("x", "rtol")
def matrix_rank(x, rtol=None):
    a = _float_matrix(x, "matrix_rank", square=False, complex_ok=True)
    if min(a.shape[-2:]) == 0:
        return fill(0, "int64", a.shape[:-2])
    s = _singular_values(a)
    tol = _cutoff(a, s, rtol)
    big = ops.gt(s, ops.broadcast_in_dim(tol, shape=s.shape,
                                         broadcast_dimensions=tuple(range(s.ndim - 1))))
    return ops.reduce_sum(ops.convert(big, dtype="int64"), axes=(s.ndim - 1,))


@traced("x", "rtol")
def pinv(x, rtol=None):
    a = _float_matrix(x, "pinv", square=False, complex_ok=True)
    m, n = a.shape[-2:]
    if min(m, n) == 0:
        return fill(0, a.dtype, a.shape[:-2] + (n, m))
    if dt.is_complex(a.dtype):  # the block form's largest singular value is a's
        if rtol is None:
            import numpy as np
            rtol = max(m, n) * float(np.finfo(a.dtype).eps)
        return _unembed(pinv.lowering(_embed(a), rtol), n, m)
    return svd_inverse(a, rtol)[0]


def svd_inverse(a, rtol=None):
    """(the pseudo-inverse of a real nonempty `a` by SVD, which singular values it kept --
    those above rtol * the largest --, the singular values)."""
    u, s, vh = ops.svd(a, full_matrices=False)
    tol = ops.broadcast_in_dim(_cutoff(a, s, rtol), shape=s.shape,
                               broadcast_dimensions=tuple(range(s.ndim - 1)))
    keep = ops.gt(s, tol)
    inv_s = ops.select(keep, ops.div(fill(1, s.dtype, s.shape),
                                     ops.select(keep, s, fill(1, s.dtype, s.shape))),
                       fill(0, s.dtype, s.shape))
    nb = a.ndim - 2
    scaled = ops.mul(_mT(vh), ops.broadcast_in_dim(inv_s, shape=_mT(vh).shape,
                                                   broadcast_dimensions=tuple(range(nb)) +
                                                   (nb + 1,)))
    inverse = ops.dot_general(scaled, _mT(u), contracting_dimensions=((nb + 1,), (nb,)),
                              batch_dimensions=(tuple(range(nb)), tuple(range(nb))))
    return inverse, keep, s


def _matmul_nodes(a, b):
    nb = a.ndim - 2
    return ops.dot_general(a, b, contracting_dimensions=((nb + 1,), (nb,)),
                           batch_dimensions=(tuple(range(nb)), tuple(range(nb))))


@traced("x")
def matrix_power(x, n):
    n = operator.index(n)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.matrix_power: needs square matrices, got shape {x.shape}")
    a = x
    if n < 0:
        a, n = inv.lowering(x), -n
    result = _eye(a.shape, a.dtype)
    square = a
    while n:  # binary powering: the graph has O(log n) products
        if n & 1:
            result = _matmul_nodes(result, square)
        n >>= 1
        if n:
            square = _matmul_nodes(square, square)
    return result


@traced("x1", "x2")
def cross(x1, x2, axis=-1):
    dtype = nodes_result_dtype(x1, x2)
    shape = broadcast_shapes(x1.shape, x2.shape)
    ax = operator.index(axis)
    if not -len(shape) <= ax < len(shape):
        raise ValueError(f"linalg.cross: axis {axis} is out of range for {shape}")
    ax %= len(shape)
    if shape[ax] != 3 or x1.shape[ax - len(shape)] != 3 or x2.shape[ax - len(shape)] != 3:
        raise ValueError("linalg.cross: both arrays need size 3 along axis")
    a = broadcast_node(x1 if x1.dtype == dtype else ops.convert(x1, dtype=dtype), shape)
    b = broadcast_node(x2 if x2.dtype == dtype else ops.convert(x2, dtype=dtype), shape)

    def part(node, i):
        start = [0] * len(shape)
        limit = list(shape)
        start[ax], limit[ax] = i, i + 1
        return ops.slice_(node, start_indices=tuple(start), limit_indices=tuple(limit))

    parts = [ops.sub(ops.mul(part(a, (i + 1) % 3), part(b, (i + 2) % 3)),
                     ops.mul(part(a, (i + 2) % 3), part(b, (i + 1) % 3))) for i in range(3)]
    return ops.concatenate(*parts, dimension=ax)


__all__ = ["cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "matrix_power",
           "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd", "svdvals"]
