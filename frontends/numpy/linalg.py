"""lnp.linalg: the Array API linalg extension's functions that lazyx lowers."""

from ._factorizations import (cholesky, cross, det, inv, matrix_power, slogdet, solve,
                              svdvals)
# numpy.linalg's signatures (svd(a, full_matrices, compute_uv), qr's mode="r", eigh's UPLO,
# pinv's rcond, matrix_rank's tol): supersets of the Array API's, as NumPy 2's own are
from ._numpy_linalg import eigh, eigvalsh, matrix_rank, multi_dot, pinv, qr, svd
from . import _linalg
from ._linalg import matmul, norm, outer, tensordot, vecdot
from ._manipulation import matrix_transpose, moveaxis, reshape
from ._promote import as_lazy, axes_tuple


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = as_lazy(x)
    axes = axes_tuple(axis if axis is None or not isinstance(axis, list) else tuple(axis),
                      x.ndim)
    moved = moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim)))
    flat = reshape(moved, moved.shape[:x.ndim - len(axes)] + (-1,))
    out = norm(flat, ord=ord, axis=-1)
    if keepdims:
        out = reshape(out, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return out


def diagonal(x, /, *, offset=0):
    """The diagonals of the last two axes (numpy.linalg's and the Array API's axes; the
    namespace's lnp.diagonal keeps numpy.diagonal's axis1=0, axis2=1)."""
    return _linalg.diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    """Sums of the diagonals of the last two axes (numpy.linalg.trace)."""
    return _linalg.trace(x, offset, -2, -1, dtype)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


__all__ = ["diagonal", "matmul", "norm", "outer", "tensordot", "trace", "vecdot",
           "matrix_transpose", "vector_norm", "matrix_norm", "cholesky", "cross", "det", "eigh",
           "eigvalsh", "inv", "matrix_power", "matrix_rank", "multi_dot", "pinv", "qr", "slogdet",
           "solve", "svd", "svdvals"]


def __getattr__(name):
    """numpy.linalg's other public names (lstsq, cond, eig, ...): NumPy's own, which come
    back to lazyx through __array_function__ when called with lazy arrays."""
    import numpy
    from ._forward import forward
    return forward(numpy.linalg, __name__, name)
