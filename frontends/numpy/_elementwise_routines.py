"""NumPy's element-wise routines that are Python functions, not ufuncs -- nan_to_num, i0, sinc,
fix, isposinf, isneginf, unwrap -- lowered. NumPy's own versions start with `asanyarray(x)`,
a host read of a lazy operand (a counted fallback and a mid-step sync); these follow NumPy's
steps with NumPy calls on lazy arrays, which dispatch back to lazyx. Arguments NumPy would
refuse, and the rare forms (out=, complex where NumPy's answer is an error) run NumPy's own
version, so its errors are the ones raised."""
import math

import numpy as np

from ...core import cephes, ops
from ._base import LazyArray, wrap
from ._fallback import run_eagerly
from ._promote import as_lazy, assign


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    a = as_lazy(x)
    if a.dtype.kind not in "fc":  # nothing to replace: x itself, or a copy as NumPy makes
        return np.copy(a) if copy or not isinstance(x, LazyArray) else x
    if any(isinstance(v, LazyArray) for v in (nan, posinf, neginf)):
        return run_eagerly(np.nan_to_num, "numpy.nan_to_num", (x,), dict(
            copy=copy, nan=nan, posinf=posinf, neginf=neginf))
    info = np.finfo(a.real.dtype)
    high = info.max if posinf is None else posinf
    low = info.min if neginf is None else neginf

    def clean(d):
        d = np.where(np.isnan(d), nan, d)
        d = np.where(np.isposinf(d), high, d)
        return np.where(np.isneginf(d), low, d)
    if a.dtype.kind == "c":
        result = wrap(ops.complex_(clean(a.real)._node, clean(a.imag)._node))
    else:
        result = clean(a)
    if not copy and isinstance(x, LazyArray):  # NumPy writes into x and returns it
        assign(x, result)
        return x
    return result


def i0(x):
    """NumPy's Cephes Chebyshev series (core/cephes.py), in x's precision; integers in float64."""
    a = as_lazy(x)
    if a.dtype.kind == "c":  # NumPy's TypeError
        return run_eagerly(np.i0, "numpy.i0", (x,), {})
    if a.dtype.kind != "f":
        a = a.astype(np.float64)
    return wrap(cephes.i0(a._node))


def sinc(x):
    a = as_lazy(x)
    y = math.pi * np.where(a == 0, 1.0e-20, a)
    return np.sin(y) / y


def fix(x, out=None):
    if out is not None:
        return run_eagerly(np.fix, "numpy.fix", (x,), dict(out=out))
    a = as_lazy(x)
    return np.where(a >= 0, np.floor(a), np.ceil(a))


def _signed_infinity(name, negative):
    def fn(x, out=None):
        a = as_lazy(x)
        if out is not None or a.dtype.kind == "c":  # (complex: NumPy's TypeError)
            return run_eagerly(getattr(np, name), f"numpy.{name}", (x,), dict(out=out))
        sign = np.signbit(a)
        return np.logical_and(np.isinf(a), sign if negative else np.logical_not(sign))
    fn.__name__ = name
    return fn


isposinf = _signed_infinity("isposinf", negative=False)
isneginf = _signed_infinity("isneginf", negative=True)


def unwrap(p, discont=None, axis=-1, *, period=2 * math.pi):
    a = as_lazy(p)
    if a.ndim == 0 or np.ndim(period) or (discont is not None and np.ndim(discont)) or \
            a.dtype.kind == "c" or isinstance(period, LazyArray) or \
            isinstance(discont, LazyArray):
        return run_eagerly(np.unwrap, "numpy.unwrap", (p,), dict(
            discont=discont, axis=axis, period=period))  # NumPy's errors, array periods
    axis = axis % a.ndim  # (NumPy's IndexError for a bad axis comes from diff below)
    dd = np.diff(a, axis=axis)
    if discont is None:
        discont = period / 2
    later = (slice(None),) * axis + (slice(1, None),)
    first = (slice(None),) * axis + (slice(0, 1),)
    dtype = np.result_type(dd, period)
    if np.issubdtype(dtype, np.integer):
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    ddmod = np.mod(dd - low, period) + low
    if ambiguous:
        ddmod = np.where((ddmod == low) & (dd > 0), high, ddmod)
    correct = np.where(np.abs(dd) < discont, 0, ddmod - dd)
    rest = (a[later] + np.cumsum(correct, axis=axis)).astype(dtype)
    return np.concatenate([a[first].astype(dtype), rest], axis=axis)


FUNCTIONS = {np.nan_to_num: nan_to_num, np.i0: i0, np.sinc: sinc, np.fix: fix,
             np.isposinf: isposinf, np.isneginf: isneginf, np.unwrap: unwrap}
