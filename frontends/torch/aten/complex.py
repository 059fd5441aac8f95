"""Complex numbers: building and taking apart (complex, polar, view_as_real/complex, real,
imag), conjugation (torch's lazy conj bit reaches us as _conj / resolve_conj) and angle.
abs, isinf and isfinite of complex values are with their real twins in elementwise.py."""
import math

from ....core import dtypes as dt
from ....core import compose, ops
from .elementwise import torch_sign
from .shapes import _both
from .table import aten, bcast, const, ir_dtype, is_complex, is_float, lower, node_of, operands


def _parts(out, *xs):
    """The inputs as the float dtype of the complex result's parts, broadcast to its shape."""
    parts = dt.real_part(ir_dtype(out.dtype))
    return [bcast(node_of(x, parts), tuple(out.shape)) for x in xs]


@lower(aten.complex.default)
def _complex(out, real, imag):
    return ops.complex_(*_parts(out, real, imag))


@lower(aten.polar.default)
def _polar(out, radius, angle):
    r, t = _parts(out, radius, angle)
    return ops.complex_(ops.mul(r, ops.cos(t)), ops.mul(r, ops.sin(t)))


@lower(*_both("view_as_real"))
def _view_as_real(out, x):
    a = node_of(x)
    return compose.stack([ops.real(a), ops.imag(a)], axis=a.ndim)


@lower(*_both("view_as_complex"))
def _view_as_complex(out, x):
    a = node_of(x)
    last = a.ndim - 1
    re, im = (ops.reshape(compose.slice_axis(a, last, k, k + 1), new_sizes=a.shape[:last])
              for k in (0, 1))
    return ops.complex_(re, im)


@lower(aten.real.default)
def _real(out, x):
    a = node_of(x)
    return ops.real(a) if is_complex(a) else a


@lower(aten.imag.default)
def _imag(out, x):
    return ops.imag(node_of(x))


def _conjugate(out, x):
    a = node_of(x)
    return ops.conj(a) if is_complex(a) else a


lower(*_both("_conj"), aten.conj_physical.default, aten._conj_physical.default)(_conjugate)


@lower(aten.resolve_conj.default, aten.resolve_neg.default)
def _resolved(out, x):
    return node_of(x)  # a lazy value holds its conjugation already applied


@lower(aten.angle.default)
def _angle(out, x):
    a = node_of(x)
    if is_complex(a):
        return ops.atan2(ops.imag(a), ops.real(a))
    (a,) = operands(out, x)
    if not is_float(a):
        raise AssertionError("torch's angle of an integer computes in float")
    zero, pi = const(0, a.dtype, a.shape), const(math.pi, a.dtype, a.shape)
    angle = ops.select(ops.lt(a, zero), pi, zero)
    return ops.select(ops.ne(a, a), a, angle)  # NaN stays NaN


@lower(aten.sgn.default)
def _sgn(out, x):
    (a,) = operands(out, x)
    return ops.sign(a) if is_complex(a) else torch_sign(a)
