"""torch's Bessel functions, Airy Ai, ndtri, erfcx and log_ndtr: the Cephes compositions in
core/cephes.py (shared with np.i0 and tf.math's Bessel functions), registered for their aten
and prims overloads. Integer operands promote to torch's float result first."""
import torch

from ....core import cephes
from .table import Unsupported, aten, is_float, lower, operands

prims = torch.ops.prims


def _unary(fn, *overloads):
    """Register fn(a) (a floating-point node) for `overloads`."""
    def lowering(out, x):
        (a,) = operands(out, x)
        if not is_float(a):
            raise Unsupported(f"{fn.__name__} of {a.dtype}")
        return fn(a)
    lower(*overloads)(lowering)


_unary(cephes.j0, aten.special_bessel_j0.default, prims.bessel_j0.default)
_unary(cephes.j1, aten.special_bessel_j1.default, prims.bessel_j1.default)
_unary(cephes.y0, aten.special_bessel_y0.default)
_unary(cephes.y1, aten.special_bessel_y1.default)
_unary(cephes.i0, aten.i0.default, prims.bessel_i0.default,
       aten.special_modified_bessel_i0.default)
_unary(cephes.i0e, aten.special_i0e.default, prims.bessel_i0e.default)
_unary(cephes.i1, aten.special_i1.default, prims.bessel_i1.default)
_unary(cephes.i1e, aten.special_i1e.default, prims.bessel_i1e.default)
_unary(cephes.modified_i1, aten.special_modified_bessel_i1.default)
_unary(cephes.k0, aten.special_modified_bessel_k0.default)
_unary(cephes.k1, aten.special_modified_bessel_k1.default)
_unary(cephes.k0e, aten.special_scaled_modified_bessel_k0.default)
_unary(cephes.k1e, aten.special_scaled_modified_bessel_k1.default)
_unary(cephes.spherical_j0, aten.special_spherical_bessel_j0.default,
       prims.spherical_bessel_j0.default)
_unary(cephes.airy_ai, aten.special_airy_ai.default)
_unary(cephes.ndtri, aten.special_ndtri.default, prims.ndtri.default)
_unary(cephes.erfcx, aten.special_erfcx.default, prims.erfcx.default)
_unary(cephes.log_ndtr, aten.special_log_ndtr.default)
