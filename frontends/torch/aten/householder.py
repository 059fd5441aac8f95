"""LAPACK's compact Householder format: geqrf (the IR's geqrf primitive: R above the diagonal,
the reflectors' vectors below it, and tau) and ormqr (a product with the Q those reflectors make,
on householder_product). torch has no meta kernel for geqrf: its shapes are found here, and a
call torch refuses is replayed on CPU zeros for torch's own error."""
import torch

from ....core import ops
from ..tensor import SPECIAL, _to_cpu_zeros, eager, from_node
from .table import aten, const, node_of


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
