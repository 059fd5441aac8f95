"""jax.lax.linalg lowerings of the matrix factorization primitives; merged into TABLE."""
from jax import lax

from ..core.tables import Table

TABLE = Table("lazyx.backends.xla_linalg.TABLE", {
    "lu": lambda x: lax.linalg.lu(x)[0],
    "lu_pivots": lambda x: lax.linalg.lu(x)[1],
    "lu_permutation": lambda x: lax.linalg.lu(x)[2],
    "qr_q": lambda x, *, full_matrices: lax.linalg.qr(x, full_matrices=full_matrices)[0],
    "qr_r": lambda x, *, full_matrices: lax.linalg.qr(x, full_matrices=full_matrices)[1],
    "eigh_values": lambda x, *, lower: lax.linalg.eigh(x, lower=lower,
                                                       symmetrize_input=False)[1],
    "eigh_vectors": lambda x, *, lower: lax.linalg.eigh(x, lower=lower,
                                                        symmetrize_input=False)[0],
    "svd_u": lambda x, *, full_matrices: lax.linalg.svd(x, full_matrices=full_matrices)[0],
    "svd_s": lambda x: lax.linalg.svd(x, compute_uv=False),
    "svd_vh": lambda x, *, full_matrices: lax.linalg.svd(x, full_matrices=full_matrices)[2],
})
