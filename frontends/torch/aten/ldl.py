"""linalg.ldl_factor(_ex) and ldl_solve on the IR's ldl / ldl_solve primitives: LAPACK sytrf's
Bunch-Kaufman factorization in its compact format (pivots and 2x2 blocks as LAPACK stores
them), which both backends compute step by step as dsytf2 does, so the factors and pivots are
CPU torch's. float32 is computed in float64 (closer to torch's float32 LAPACK than float32
arithmetic in another order). torch's ldl_factor checks `info` (a data-dependent sync,
data_dependent.py)."""
import torch

from ....core import ops
from .factorizations import _float_matrix, linalg_lower
from .table import aten, bcast, const, node_of


@linalg_lower(aten.linalg_ldl_factor_ex.default)
def _ldl_factor_ex(out, A, *, hermitian=False, check_errors=False):
    # a real matrix: hermitian or not, LAPACK's symmetric routine (sytrf) and the same result
    a = _float_matrix(A)
    ld, pivots, info = ops.ldl(_wide(a))
    return ops.convert(ld, dtype=a.dtype), pivots, info


@linalg_lower(aten.linalg_ldl_solve.default)
def _ldl_solve(out, LD, pivots, B, *, hermitian=False):
    ld = _float_matrix(LD)
    b = node_of(B, ld.dtype)
    if b.size == 0:
        return const(0, ld.dtype, tuple(out.shape))
    batch = tuple(torch.broadcast_shapes(ld.shape[:-2], b.shape[:-2]))
    n = ld.shape[-1]
    ld = bcast(ld, batch + (n, n))
    pivots = bcast(node_of(pivots), batch + (n,))
    x = ops.ldl_solve(_wide(ld), pivots, _wide(bcast(b, batch + b.shape[-2:])))
    return ops.convert(x, dtype=b.dtype)


def _wide(x):
    return ops.convert(x, dtype="float64") if x.dtype != "float64" else x
