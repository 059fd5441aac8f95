"""np.cross, np.kron, np.gradient, np.vdot and np.correlate, lowered: NumPy's own versions
are Python that starts with `asarray(a)`, a host read of a lazy operand (a counted fallback
and a mid-step sync). These follow NumPy's steps with NumPy calls on lazy arrays, which
dispatch back to lazyx."""
import numpy as np

from ._fallback import run_eagerly
from ._promote import as_lazy


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    x, y = as_lazy(a), as_lazy(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    if x.ndim < 1 or y.ndim < 1 or x.dtype.kind == "c" or y.dtype.kind == "c":
        return run_eagerly(np.cross, "numpy.cross", (a, b), dict(
            axisa=axisa, axisb=axisb, axisc=axisc))  # NumPy's errors, complex vectors
    x, y = np.moveaxis(x, axisa, -1), np.moveaxis(y, axisb, -1)
    if x.shape[-1] != 3 or y.shape[-1] != 3:  # 2-vectors: deprecated in NumPy 2; its path
        return run_eagerly(np.cross, "numpy.cross", (a, b), dict(
            axisa=axisa, axisb=axisb, axisc=axisc))
    dtype = np.promote_types(x.dtype, y.dtype)
    x, y = x.astype(dtype), y.astype(dtype)
    a0, a1, a2 = x[..., 0], x[..., 1], x[..., 2]
    b0, b1, b2 = y[..., 0], y[..., 1], y[..., 2]
    product = np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return np.moveaxis(product, -1, axisc)


def kron(a, b):
    y = as_lazy(b)
    x = as_lazy(a)
    while x.ndim < y.ndim:  # NumPy's array(a, ndmin=b.ndim)
        x = x[None]
    nda, ndb = x.ndim, y.ndim
    if nda == 0 or ndb == 0:
        return np.multiply(x, y)
    nd = max(nda, ndb)
    x_shape = (1,) * max(0, ndb - nda) + x.shape
    y_shape = (1,) * max(0, nda - ndb) + y.shape
    x = np.expand_dims(x, tuple(range(ndb - nda)))
    y = np.expand_dims(y, tuple(range(nda - ndb)))
    x = np.expand_dims(x, tuple(range(1, nd * 2, 2)))
    y = np.expand_dims(y, tuple(range(0, nd * 2, 2)))
    return np.multiply(x, y).reshape(tuple(p * q for p, q in zip(x_shape, y_shape)))


def vdot(a, b, /):
    x, y = as_lazy(a).reshape(-1), as_lazy(b).reshape(-1)
    if x.shape[0] != y.shape[0]:
        raise ValueError("vectors have different lengths")
    return np.dot(np.conjugate(x) if x.dtype.kind == "c" else x, y)


def correlate(a, v, mode="valid"):
    """NumPy's correlate: convolve with v reversed and conjugated; for a v longer than a, NumPy
    correlates the other way round and reverses (and conjugates) the result, which moves the
    'same' window (checked against NumPy for all length pairs up to 6)."""
    x, w = as_lazy(a), as_lazy(v)
    if w.ndim != 1 or x.ndim != 1:
        return run_eagerly(np.correlate, "numpy.correlate", (a, v), dict(mode=mode))
    swapped = w.shape[0] > x.shape[0]
    if swapped:
        x, w = w, x
    w = w[::-1]
    out = np.convolve(x, np.conjugate(w) if w.dtype.kind == "c" else w, mode)
    if swapped:
        out = out[::-1]
        out = np.conjugate(out) if out.dtype.kind == "c" else out
    return out


def _lazy_operands(fn):
    """fn for calls with a lazy operand; NumPy's own for matrices (np.matrix results)."""
    def call(a, b, *args, **kwargs):
        if isinstance(a, np.matrix) or isinstance(b, np.matrix):
            return run_eagerly(getattr(np, fn.__name__), f"numpy.{fn.__name__}", (a, b), kwargs)
        return fn(a, b, *args, **kwargs)
    return call


def gradient(f, *varargs, axis=None, edge_order=1):
    """np.gradient with scalar spacings (NumPy's formulas: central differences inside,
    one-sided ones of `edge_order` at the ends); coordinate arrays fall back."""
    x = as_lazy(f)
    axes = tuple(range(x.ndim)) if axis is None else \
        tuple(a % x.ndim for a in np.atleast_1d(axis).tolist())
    spacing = list(varargs) if len(varargs) > 1 else list(varargs) * len(axes) if varargs \
        else [1.0] * len(axes)
    if len(spacing) != len(axes) or any(np.ndim(h) for h in spacing) or \
            edge_order not in (1, 2) or x.dtype.kind not in "biuf" or \
            any(x.shape[a] < edge_order + 1 for a in axes):
        return run_eagerly(np.gradient, "numpy.gradient", (f, *varargs),
                           dict(axis=axis, edge_order=edge_order))  # NumPy's own (or error)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    outs = []
    for a, h in zip(axes, spacing):
        def at(start, stop=None):
            return x[(slice(None),) * a + (slice(start, stop),)]
        inner = (at(2) - at(None, -2)) / (2. * h)
        if edge_order == 1:
            first = (at(1, 2) - at(0, 1)) / h
            last = (at(-1) - at(-2, -1)) / h
        else:
            first = -1.5 / h * at(0, 1) + 2. / h * at(1, 2) + -0.5 / h * at(2, 3)
            last = 0.5 / h * at(-3, -2) + -2. / h * at(-2, -1) + 1.5 / h * at(-1)
        outs.append(np.concatenate([first, inner, last], axis=a).astype(x.dtype))
    return outs[0] if len(outs) == 1 else tuple(outs)


FUNCTIONS = {np.cross: _lazy_operands(cross), np.kron: _lazy_operands(kron),
             np.gradient: gradient, np.vdot: vdot, np.correlate: correlate}
