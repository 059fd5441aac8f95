"""Matrix functions with no factorization primitive: the matrix exponential
(nn.utils.parametrizations.orthogonal calls it, or householder_product (householder.py), at
every forward; it was a CPU fallback and a sync per training step). Shapes are static, so it is
a fixed sequence of matrix products: no loop counts that depend on the values."""
import math

from ....core import ops
from ....core.compose import batch_matmul as _matmul
from .factorizations import _eye, _float_matrix, _lu_solve_nodes, linalg_lower
from .table import aten, const

# Scaling and squaring with the degree 13 diagonal Pade approximant (Higham, "The scaling and
# squaring method for the matrix exponential revisited", SIAM J. Matrix Anal. Appl. 26(4),
# 2005): accurate to double precision for a 1-norm up to theta_13; a larger norm is halved s
# times and the result squared s times. Always degree 13 (a few more products than picking the
# degree by the norm, but one program for every input), and always in float64: in float32 the
# squarings amplified rounding to about 10 ulps, where torch's float32 kernel is within a few.
_THETA_13 = 5.371920351148152
_PADE_13 = (64764752532480000, 32382376266240000, 7771770303897600, 1187353796428800,
            129060195264000, 10559470521600, 670442572800, 33522128640, 1323241920, 40840800,
            960960, 16380, 182, 1)
# squarings done (each selected per matrix): norms up to theta_13 * 2^_MAX_SQUARINGS (2e10)
# get the approximant's accuracy; beyond, the scaled matrix stays too large for it
_MAX_SQUARINGS = 32


def _polynomial(powers, coefficients):
    """sum_j c_j * A^(2j) for the even powers [I, A^2, A^4, ...] given."""
    total = None
    for power, c in zip(powers, coefficients):
        term = ops.mul(power, const(float(c), power.dtype, power.shape))
        total = term if total is None else ops.add(total, term)
    return total


def _pade(a):
    """The [13/13] Pade approximant of exp(a), (V - U)^-1 (V + U), in Higham's grouping."""
    b = _PADE_13
    a2 = _matmul(a, a)
    a4 = _matmul(a2, a2)
    a6 = _matmul(a4, a2)
    powers = [_eye(a.shape, a.dtype), a2, a4, a6]
    u = _matmul(a, ops.add(_matmul(a6, _polynomial(powers[1:], b[9::2])),
                           _polynomial(powers, b[1:8:2])))
    v = ops.add(_matmul(a6, _polynomial(powers[1:], b[8::2])), _polynomial(powers, b[0:8:2]))
    lu, _, perm = ops.lu(ops.sub(v, u))
    return _lu_solve_nodes(lu, perm, ops.add(v, u))


@linalg_lower(aten.linalg_matrix_exp.default)
def _matrix_exp(out, A):
    given = _float_matrix(A)
    a = ops.convert(given, dtype="float64") if given.dtype != "float64" else given
    batch, nb = a.shape[:-2], a.ndim - 2
    # per matrix: s = max(0, ceil(log2(||A||_1 / theta))), A scaled by 2^-s
    norm = ops.reduce_max(ops.reduce_sum(ops.abs_(a), axes=(nb,)), axes=(nb,))
    s = ops.max_(ops.ceil(ops.div(ops.log(ops.div(norm, const(_THETA_13, a.dtype, batch))),
                                  const(math.log(2.0), a.dtype, batch))),
                 const(0.0, a.dtype, batch))
    s = ops.min_(s, const(float(_MAX_SQUARINGS), a.dtype, batch))  # (inf, NaN norms too)
    scale = ops.pow_(const(0.5, a.dtype, batch), s)
    result = _pade(ops.mul(a, _per_matrix(scale, a.shape)))
    for i in range(_MAX_SQUARINGS):
        squared = ops.gt(s, const(float(i), a.dtype, batch))
        result = ops.select(_per_matrix(squared, a.shape), _matmul(result, result), result)
    return ops.convert(result, dtype=given.dtype) if given.dtype != "float64" else result


def _per_matrix(x, shape):
    """A value per matrix of a stack, broadcast over its rows and columns."""
    return ops.broadcast_in_dim(x, shape=shape, broadcast_dimensions=tuple(range(len(shape) - 2)))
