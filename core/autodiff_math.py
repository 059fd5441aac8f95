"""VJP rules of the element-wise math ops (trigonometric, hyperbolic, special functions, atan2,
rem), of sort, of the complex ops (abs, real, imag, conj, complex) and of the Fourier
transforms.

Formulas and their values at the domain's edges are JAX's (inf where the derivative is, NaN
for atan2 at the origin). Complex values follow JAX's convention, the linear transpose without
conjugation (sin's cotangent is g * cos(z) for complex z too): real(z) sends back g + 0j,
imag(z) -ig, abs(z) g * conj(z) / |z| (0 at 0). Registered into autodiff.VJP when
core/autodiff.py is imported.
"""
import math

import numpy as np

from . import dtypes as dt
from . import ir, ops
from .autodiff import _along_axis_indices, _full, rule, zeros_like


def _one_plus_square(x):
    return ops.add(_full(1, x), ops.mul(x, x))


def _one_minus_square(x):
    return ops.sub(_full(1, x), ops.mul(x, x))


# ---------------------------------------------------------------- trigonometric, hyperbolic

@rule("tan")
def _tan(n, g):
    return (ops.mul(g, _one_plus_square(n)),)


@rule("asin")
def _asin(n, g):
    return (ops.mul(g, ops.rsqrt(_one_minus_square(n.inputs[0]))),)


@rule("acos")
def _acos(n, g):
    return (ops.neg(ops.mul(g, ops.rsqrt(_one_minus_square(n.inputs[0])))),)


@rule("atan")
def _atan(n, g):
    return (ops.div(g, _one_plus_square(n.inputs[0])),)


@rule("sinh")
def _sinh(n, g):
    return (ops.mul(g, ops.cosh(n.inputs[0])),)


@rule("cosh")
def _cosh(n, g):
    return (ops.mul(g, ops.sinh(n.inputs[0])),)


@rule("asinh")
def _asinh(n, g):
    return (ops.mul(g, ops.rsqrt(_one_plus_square(n.inputs[0]))),)


@rule("acosh")
def _acosh(n, g):
    x = n.inputs[0]  # (x - 1)(x + 1), not x*x - 1: exact near x = 1
    one = _full(1, x)
    return (ops.mul(g, ops.rsqrt(ops.mul(ops.sub(x, one), ops.add(x, one)))),)


@rule("atanh")
def _atanh(n, g):
    x = n.inputs[0]
    one = _full(1, x)
    return (ops.div(g, ops.mul(ops.sub(one, x), ops.add(one, x))),)


@rule("atan2")
def _atan2(n, g):
    y, x = n.inputs  # atan2(y, x) = atan(y / x)
    scaled = ops.div(g, ops.add(ops.mul(x, x), ops.mul(y, y)))
    return ops.mul(scaled, x), ops.neg(ops.mul(scaled, y))


@rule("rem")
def _rem(n, g):
    # x = q * y + rem(x, y), q = trunc(x / y) (C fmod); q taken from the op's own result, so it
    # is the integer the op removed even where x / y rounds across an integer
    x, y = n.inputs
    q = ops.round(ops.div(ops.sub(x, n), y))
    return g, ops.neg(ops.mul(g, q))


# ---------------------------------------------------------------- special functions

@rule("erf_inv")
def _erf_inv(n, g):
    return (ops.mul(g, ops.mul(_full(math.sqrt(math.pi) / 2, n), ops.exp(ops.mul(n, n)))),)


@rule("lgamma")
def _lgamma(n, g):
    return (ops.mul(g, ops.digamma(n.inputs[0])),)


@rule("igamma", "igammac")
def _igamma(n, g):
    """dP/dx = x**(a - 1) exp(-x) / Gamma(a) (JAX's formula, in logs); dQ = -dP."""
    a, x = n.inputs
    log_density = ops.sub(ops.sub(ops.mul(ops.sub(a, _full(1, a)), ops.log(x)), x),
                          ops.lgamma(a))
    da, dx = ops.igamma_grad_a(a, x), ops.exp(log_density)
    if n.op == "igammac":
        da, dx = ops.neg(da), ops.neg(dx)
    return ops.mul(g, da), ops.mul(g, dx)


@rule("zeta")
def _zeta(n, g):
    """d/dq zeta(x, q) = -x zeta(x + 1, q); none in x (as TF, which registers only this one)."""
    x, q = n.inputs
    return None, ops.mul(g, ops.neg(ops.mul(x, ops.zeta(ops.add(x, _full(1, x)), q))))


@rule("betainc")
def _betainc(n, g):
    """d/dx I_x(a, b) = x**(a-1) (1-x)**(b-1) / B(a, b), in logs (a zero power's log term is
    0, TF's xlogy/xlog1py); none in a and b (TF registers only this one)."""
    a, b, x = n.inputs
    one = _full(1, x)

    def x_log(c, log_y):  # c * log_y, 0 where c is 0
        return ops.select(ops.eq(c, _full(0, c)), _full(0, c), ops.mul(c, log_y))
    log_beta = ops.sub(ops.add(ops.lgamma(a), ops.lgamma(b)), ops.lgamma(ops.add(a, b)))
    log_density = ops.sub(ops.add(x_log(ops.sub(b, one), ops.log1p(ops.neg(x))),
                                  x_log(ops.sub(a, one), ops.log(x))), log_beta)
    return None, None, ops.mul(g, ops.exp(log_density))


@rule("digamma")
def _digamma(n, g):
    return (ops.mul(g, _trigamma(n.inputs[0])),)


_SHIFT = 10  # psi1(z) = sum_{k < 10} 1 / (z + k)^2 + psi1(z + 10), the last one asymptotic
# psi1(w) ~ 1/w + 1/(2 w^2) + sum_k B_2k / w^(2k+1): the Bernoulli numbers B_2 .. B_14
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def _trigamma(x):
    """polygamma(1, x) from existing primitives (the IR has no polygamma): for x < 1/2 the
    reflection psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x), then ten steps of the recurrence
    up to w >= 10.5, where the asymptotic series above is within 1e-16 relative. sin^2 has
    period 1: it is taken of x - round(x) (exact), so poles stay sharp far from 0."""
    reflect = ops.lt(x, _full(0.5, x))
    one = _full(1, x)
    z = ops.select(reflect, ops.sub(one, x), x)
    total = zeros_like(x)
    for k in range(_SHIFT):
        inv = ops.div(one, ops.add(z, _full(k, x)))
        total = ops.add(total, ops.mul(inv, inv))
    inv = ops.div(one, ops.add(z, _full(_SHIFT, x)))
    u = ops.mul(inv, inv)
    series = _full(_BERNOULLI[-1], x)
    for b in reversed(_BERNOULLI[:-1]):
        series = ops.add(ops.mul(series, u), _full(b, x))
    tail = ops.add(inv, ops.mul(u, ops.add(_full(0.5, x), ops.mul(inv, series))))
    psi1 = ops.add(total, tail)
    s = ops.sin(ops.mul(_full(math.pi, x), ops.sub(x, ops.round(x))))
    mirrored = ops.sub(ops.div(_full(math.pi ** 2, x), ops.mul(s, s)), psi1)
    return ops.select(reflect, mirrored, psi1)


# ---------------------------------------------------------------- sort

@rule("sort")
def _sort(n, g):
    # the permutation the stable sort applied is argsort's (the same stable order): each
    # cotangent goes back to the place its value came from
    x = n.inputs[0]
    axis = n.attrs["axis"]
    order = ops.argsort(x, axis=axis, descending=n.attrs["descending"])
    return (ops.scatter(zeros_like(x), _along_axis_indices(order, axis), g, mode="add"),)


# ---------------------------------------------------------------- complex values

@rule("abs")
def _abs(n, g):
    x = n.inputs[0]
    if not dt.is_complex(x.dtype):
        return (ops.mul(g, ops.sign(x)),)
    # sign(z) = z / |z|, 0 at 0 (ops.sign): JAX's g * conj(z) / |z| with |z| = 0 giving 0
    return (ops.mul(ops.convert(g, dtype=x.dtype), ops.conj(ops.sign(x))),)


@rule("real")
def _real(n, g):
    return (ops.convert(g, dtype=n.inputs[0].dtype),)


@rule("imag")
def _imag(n, g):
    return (ops.complex_(zeros_like(g), ops.neg(g)),)


@rule("conj")
def _conj(n, g):
    return (ops.conj(g),)


@rule("complex")
def _complex(n, g):
    return ops.real(g), ops.neg(ops.imag(g))


# ---------------------------------------------------------------- Fourier transforms

@rule("fft")
def _fft(n, g):
    """The linear transpose, as JAX's (no conjugation, see the module docstring): the DFT
    matrix is symmetric, so fft and ifft send g through themselves; rfft (a real input made
    complex, a full fft, the first n//2+1 frequencies kept) sends back the real part of the
    fft of g zero-padded to n; irfft sends back rfft(g), its inner frequencies (which stand
    for two) doubled, over prod(fft_lengths), conjugated (irfft is linear over the reals
    only: JAX conjugates there, and TF's tape bridge conjugates back, see tape_bridge.py)."""
    kind, lengths = n.attrs["fft_type"], n.attrs["fft_lengths"]
    if kind in ("fft", "ifft"):
        return (ops.fft(g, fft_type=kind, fft_lengths=lengths),)
    last = g.ndim - 1
    if kind == "rfft":
        config = [(0, 0, 0)] * last + [(0, lengths[-1] - g.shape[-1], 0)]
        padded = ops.pad(g, ir.constant(0, g.dtype), padding_config=config)
        return (ops.real(ops.fft(padded, fft_type="fft", fft_lengths=lengths)),)
    x = ops.fft(g, fft_type="rfft", fft_lengths=lengths)
    m, odd = x.shape[-1], lengths[-1] % 2
    weights = np.array([1.0] + [2.0] * (m - 2 + odd) + [1.0] * (1 - odd)) / math.prod(lengths)
    scale = ops.broadcast_in_dim(ir.constant(weights, x.dtype), shape=x.shape,
                                 broadcast_dimensions=(last,))
    return (ops.conj(ops.mul(x, scale)),)
