"""Complex numbers in the NumPy frontend: the ufunc lowerings for complex loops, and the
Array API's complex functions (real, imag, conj, angle).

A ufunc whose loop NumPy resolves to a complex dtype takes its lowering from
``COMPLEX_UFUNCS`` instead of ``_ufuncs.UFUNCS``: the real lowerings use comparisons, bit
tricks and float-only primitives that would be wrong (or fail in core) on complex operands.
A ufunc NumPy defines on complex but lazyx does not (ordering comparisons, maximum, ...)
raises a TypeError at the call rather than computing something else.
"""
import math

import numpy as np

from ...core import dtypes as dt
from ...core import ops
from ._ufuncs import UFUNCS, _compare, const, fill


def isnan(z):
    re, im = ops.real(z), ops.imag(z)
    return ops.or_(ops.ne(re, re), ops.ne(im, im))


def isinf(z):
    re, im = ops.abs_(ops.real(z)), ops.abs_(ops.imag(z))
    return ops.or_(ops.eq(re, const(math.inf, re)), ops.eq(im, const(math.inf, im)))


def isfinite(z):
    return ops.and_(ops.is_finite(ops.real(z)), ops.is_finite(ops.imag(z)))


def _log_base(base):
    return lambda z: ops.div(ops.log(z), const(math.log(base), z))


def exp2(z):
    return ops.exp(ops.mul(z, const(math.log(2), z)))


COMPLEX_UFUNCS = {
    np.add: ops.add, np.subtract: ops.sub, np.multiply: ops.mul, np.true_divide: ops.div,
    np.power: ops.pow_, np.float_power: ops.pow_, np.negative: ops.neg,
    np.positive: UFUNCS[np.positive], np.absolute: ops.abs_, np.sign: UFUNCS[np.sign],
    np.conjugate: ops.conj, np.square: UFUNCS[np.square], np.reciprocal: UFUNCS[np.reciprocal],
    np.sqrt: ops.sqrt, np.exp: ops.exp, np.exp2: exp2, np.expm1: ops.expm1, np.log: ops.log,
    np.log2: _log_base(2), np.log10: _log_base(10), np.log1p: ops.log1p,
    np.sin: ops.sin, np.cos: ops.cos, np.tan: ops.tan, np.arcsin: ops.asin,
    np.arccos: ops.acos, np.arctan: ops.atan, np.sinh: ops.sinh, np.cosh: ops.cosh,
    np.tanh: ops.tanh, np.arcsinh: ops.asinh, np.arccosh: ops.acosh, np.arctanh: ops.atanh,
    np.isnan: isnan, np.isinf: isinf, np.isfinite: isfinite,
    np.equal: _compare(ops.eq), np.not_equal: _compare(ops.ne),
    np.logical_and: UFUNCS[np.logical_and], np.logical_or: UFUNCS[np.logical_or],
    np.logical_xor: UFUNCS[np.logical_xor], np.logical_not: UFUNCS[np.logical_not],
}


def lowering(ufunc, loop, nin):
    """The lowering for `ufunc` on these loop dtypes (complex ones from COMPLEX_UFUNCS)."""
    if not any(dt.is_complex(d) for d in loop[:nin]):
        return UFUNCS[ufunc]
    lower = COMPLEX_UFUNCS.get(ufunc)
    if lower is None:
        raise TypeError(f"lazyx.frontends.numpy: numpy.{ufunc.__name__} is not supported on "
                        f"complex arrays (loop {', '.join(loop)})")
    return lower


# ---------------------------------------------------------------- Array API functions

def real(node):
    return ops.real(node) if dt.is_complex(node.dtype) else node


def imag(node):
    return ops.imag(node) if dt.is_complex(node.dtype) else fill(0, node.dtype, node.shape)


def conj(node):
    return ops.conj(node) if dt.is_complex(node.dtype) else node


def angle(node, deg=False):
    """numpy.angle: atan2(imag, real) in the parts' float dtype (float64 for real ints)."""
    if not dt.is_complex(node.dtype):
        if not dt.is_float(node.dtype):
            node = ops.convert(node, dtype="float64")
        re, im = node, fill(0, node.dtype, node.shape)
    else:
        re, im = ops.real(node), ops.imag(node)
    out = ops.atan2(im, re)
    return ops.mul(out, const(180 / math.pi, out)) if deg else out

