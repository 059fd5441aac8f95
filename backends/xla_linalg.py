"""jax.lax.linalg lowerings of the matrix factorization primitives; merged into TABLE. Each
returns all of its op's results as a tuple (core/ir.py: multi nodes): one custom call each."""
from jax import lax
from jax._src.lax import linalg as _jax_linalg  # geqrf is not public (checked: jax 0.10.2)

from ..core.tables import Table
from .xla_ldl import ldl, ldl_solve


def _eigh(x, *, lower):
    vectors, values = lax.linalg.eigh(x, lower=lower, symmetrize_input=False)
    return values, vectors


def _svd(x, *, full_matrices, compute_uv):
    if not compute_uv:
        return (lax.linalg.svd(x, compute_uv=False),)
    return tuple(lax.linalg.svd(x, full_matrices=full_matrices))


TABLE = Table("lazyx.backends.xla_linalg.TABLE", {
    "lu": lambda x: tuple(lax.linalg.lu(x)),
    "qr": lambda x, *, full_matrices: tuple(lax.linalg.qr(x, full_matrices=full_matrices)),
    "geqrf": lambda x: tuple(_jax_linalg.geqrf(x)),  # CPU: LAPACK geqrf, as torch calls
    "ldl": ldl,  # Bunch-Kaufman, LAPACK's dsytf2 step by step (xla_ldl.py)
    "ldl_solve": ldl_solve,
    "eigh": _eigh,
    "svd": _svd,
})
