"""LAPACK's compact Householder format: geqrf (the IR's geqrf primitive: R above the diagonal,
the reflectors' vectors below it, and tau), and the products with the Q those reflectors make
-- householder_product (orgqr: Q's first columns) and ormqr (Q or Q^T times a matrix, from
either side) -- one rank-1 update per reflector, Q never formed. torch has no meta kernel for
geqrf: its shapes are found here, and a call torch refuses is replayed on CPU zeros for
torch's own error."""
import torch

from ....core import ops
from ....core.compose import batch_matmul as _matmul, matrix_transpose as _mT
from ..tensor import SPECIAL, _to_cpu_zeros, eager, from_node
from .factorizations import _eye, _float_matrix, _tri, linalg_lower
from .matrix_functions import _per_matrix
from .table import Unsupported, aten, const, lower, node_of


def _geqrf(A):
    if not isinstance(A, torch.Tensor) or A.dim() < 2 or \
            A.dtype not in (torch.float32, torch.float64):
        aten.geqrf.default(_to_cpu_zeros(A))  # torch's error, or a dtype left to it (complex)
        return eager(aten.geqrf.default, (A,), {}, cause="fallback")
    m, n = A.shape[-2:]
    a = node_of(A)
    if a.size == 0:  # nothing to factor: torch returns the empty input and empty tau
        a, tau = a, const(0, a.dtype, a.shape[:-2] + (min(m, n),))
    else:
        a, tau = ops.geqrf(a)
    return from_node(a, A.dtype), from_node(tau, A.dtype)


SPECIAL[aten.geqrf.default] = _geqrf


def _apply_reflectors(a, t, c, left=True, transpose=False):
    """c times Q = H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T with v_i column i of `a` below
    the diagonal and a 1 on it: Q c (left) or c Q, Q^T with `transpose`. Each H_i is a
    rank-1 update of c, applied in the order the product asks for."""
    mn, k, batch, nb = a.shape[-2], t.shape[-1], a.shape[:-2], a.ndim - 2
    reflectors = ops.add(_tri(a, True, -1), _eye(a.shape, a.dtype))
    for i in (range(k) if left == transpose else reversed(range(k))):
        v = ops.slice_(reflectors, start_indices=(0,) * nb + (0, i),
                       limit_indices=batch + (mn, i + 1))  # (..., mn, 1)
        tau_i = ops.slice_(t, start_indices=(0,) * nb + (i,), limit_indices=batch + (i + 1,))
        scale = _per_matrix(ops.reshape(tau_i, new_sizes=batch), c.shape)
        if left:  # H c = c - tau v (v^T c)
            update = _matmul(v, _matmul(_mT(v), c))
        else:  # c H = c - tau (c v) v^T
            update = _matmul(_matmul(c, v), _mT(v))
        c = ops.sub(c, ops.mul(update, scale))
    return c


@linalg_lower(aten.linalg_householder_product.default)
def _householder_product(out, A, tau):
    """The first n columns of H_1 ... H_k (LAPACK's orgqr): the identity's applied to."""
    a = _float_matrix(A)
    return _apply_reflectors(a, node_of(tau, a.dtype), _eye(a.shape, a.dtype))


@lower(aten.ormqr.default)
def _ormqr(out, A, tau, C, left=True, transpose=False):
    a, c = node_of(A), node_of(C)
    if a.dtype not in ("float32", "float64"):
        raise Unsupported(f"ormqr on {a.dtype}")  # complex: Q^H, left to CPU torch
    if c.size == 0:
        return const(0, c.dtype, c.shape)
    if a.size == 0:  # no reflectors: Q is the identity
        return c
    return _apply_reflectors(a, node_of(tau, a.dtype), c, left, transpose)
