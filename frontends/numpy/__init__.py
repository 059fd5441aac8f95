"""lazyx.frontends.numpy (``lnp``): lazy NumPy arrays and an Array API 2023.12 namespace.

    import numpy as np
    import lazyx.frontends.numpy as lnp
    x = lnp.asarray(np.random.rand(3, 4))     # device data
    y = np.tanh(x @ x.T) + 1                  # plain NumPy calls: recorded, not run
    print(y)                                  # observation: cut, compile (XLA), run

Plain NumPy dispatches here through ``__array_ufunc__`` (NEP 13) and ``__array_function__``
(NEP 18); functions without a lowering fall back to eager NumPy (counted, warned once).
Semantics are NumPy 2's (NEP 50 promotion, float64/int64 defaults), views included: a write
into a view writes its base (see docs/numpy.md).
"""
import math as _math

import numpy as _np

from . import _layout, _methods
from ._base import DEVICE, LazyArray
from ._forward import forward as _forward
from ._creation import (arange, array, asarray, empty, empty_like, eye, from_dlpack, full,
                        full_like, identity, linspace, meshgrid, ones, ones_like, tril, triu,
                        zeros, zeros_like)
from ._elementwise import FUNCTIONS as _ELEMENTWISE
from ._elementwise import angle, round  # noqa: A004
from ._indexing import (argwhere, count_nonzero, flatnonzero, nonzero, take, take_along_axis,
                        unique, unique_all, unique_counts, unique_inverse, unique_values)
from ._info import (DTYPES as _DTYPES, __array_namespace_info__, bool, can_cast, finfo,  # noqa
                    complex64, complex128, float16, float32, float64, iinfo, int8, int16, int32, int64, isdtype,
                    result_type, uint8, uint16, uint32, uint64)
from ._linalg import (diag, dot, inner, matmul, norm, outer, tensordot, trace, vecdot)
from ._manipulation import (append, array_split, astype, atleast_1d, atleast_2d, atleast_3d,
                            broadcast_arrays, column_stack, concat, concatenate, copy, diff,
                            dstack, flip, hstack, pad, repeat, roll, split, stack, tile,
                            unstack, vstack)
from ._view_ops import (broadcast_to, diagonal, einsum, expand_dims, imag,  # views
                        matrix_transpose, moveaxis, permute_dims, ravel, real, reshape,
                        squeeze, swapaxes, transpose)
from ._choosing import clip, where
from ._reductions import (all, any, argmax, argmin, argsort, cumprod, cumsum,  # noqa: A004
                          cumulative_prod, cumulative_sum, max, mean, min, prod, searchsorted,
                          sort, std, sum, var)
from . import fft, hooks, linalg, random  # noqa: E402
from . import _replay  # noqa: E402,F401  (lazyx.compile learns lazy arrays)

_methods.install()
_layout.install()  # strides, flags, flat, `in`
hooks.install()  # numpy.nditer over lazy operands
globals().update(_ELEMENTWISE)

__array_api_version__ = "2023.12"
ndarray = LazyArray
e, pi, inf, nan = _math.e, _math.pi, _math.inf, _math.nan
newaxis = None
amax, amin = max, min
# NumPy's own asanyarray/ascontiguousarray take no __array_function__ route: forwarded, they
# would hand back a host copy. A lazy array is a base-class array and C-ordered already.
asanyarray = ascontiguousarray = asarray


def __getattr__(name):
    """NumPy's other public names (allclose, median, histogram, kron, floating, errstate, ...)
    are NumPy's own objects: called with lazy arrays, a NumPy function comes back to lazyx
    through __array_function__ (lowered, or a counted fallback), so lnp.X(x) is np.X(x)."""
    return _forward(_np, __name__, name)


def __dir__():
    return sorted(set(globals()) | {n for n in dir(_np) if not n.startswith("_")})


def sync():
    """Run everything pending (the same barrier as lazyx.sync())."""
    from ...core.runtime import sync as _sync
    _sync(cause="explicit")


def pad_to_bucket(x, axis=-1, buckets=None, value=0):
    """(padded, mask): `x` padded with `value` at the end of `axis` up to the next bucket size
    (`buckets`, or powers of two), and a bool mask of the padded shape, True where the data is
    real. A NumPy array gives NumPy arrays (pad before lnp.asarray: then every length in a
    bucket is one compiled program); a lazy array gives lazy arrays."""
    from ...core import buckets as _buckets
    if not isinstance(x, LazyArray):
        return _buckets.pad_numpy(x, axis, buckets, value)
    axis, size, target = _buckets.pad_plan(x.shape, axis, buckets)
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, target - size)
    padded = pad(x, widths, constant_values=value) if target != size else copy(x)
    return padded, asarray(_buckets.host_mask(padded.shape, axis, size))


# (last: every object its import made exists now; see core/long_lived.py)
from ...core.long_lived import freeze_imported as _freeze_imported  # noqa: E402
_freeze_imported()
