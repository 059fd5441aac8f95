"""lnp.fft: the Array API fft extension (numpy.fft's functions), lowered onto core's `fft`.

Multi-axis transforms are done one axis at a time (a DFT is separable), so any number of
axes works and the graph is the same whichever axes are named. As in NumPy 2, float32 and
complex64 inputs keep single precision; other real inputs compute in float64. `norm` is
NumPy's: "backward" (default: the inverse scales by 1/n), "ortho" (both by 1/sqrt(n)),
"forward" (the forward one by 1/n). The signatures are numpy.fft's (n, axis, norm, s, axes by
position or keyword; norm=None is "backward"), which accept every Array API call too; `out=`
runs NumPy's own transform (counted).
"""
import math

import numpy as np

from ...core import dtypes as dt
from ...core import ops
from ._base import LazyArray, wrap
from ._creation import asarray
from ._manipulation import roll
from ._promote import as_node, axis_index
from ._ufuncs import fill

_NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _real(node):
    if dt.is_complex(node.dtype):
        raise TypeError("lazyx.frontends.numpy.fft: this transform needs a real input "
                        f"(got {node.dtype})")
    return node if node.dtype in ("float32", "float64") else ops.convert(
        node, dtype="float32" if node.dtype == "float16" else "float64")


def _complex(node):
    if dt.is_complex(node.dtype):
        return node
    node = _real(node)
    return ops.complex_(node, fill(0, node.dtype, node.shape))


def _resize(node, axis, n):
    """node cut or zero-padded to length n along axis (NumPy's `n`/`s`)."""
    have = node.shape[axis]
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    if n == have:
        return node
    if n < have:
        limit = list(node.shape)
        limit[axis] = n
        return ops.slice_(node, start_indices=(0,) * node.ndim, limit_indices=tuple(limit))
    shape = list(node.shape)
    shape[axis] = n - have
    return ops.concatenate(node, fill(0, node.dtype, tuple(shape)), dimension=axis)


def _along(node, axis, fn):
    """fn applied with `axis` moved last (core transforms trailing axes), then moved back."""
    last = node.ndim - 1
    if axis == last:
        return fn(node)
    perm = tuple(i for i in range(node.ndim) if i != axis) + (axis,)
    out = fn(ops.transpose(node, permutation=perm))
    back = tuple(perm.index(i) for i in range(node.ndim))
    return ops.transpose(out, permutation=back)


def _scaled(node, n, norm, inverse):
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         f'"forward".')
    # core's inverse transforms already divide by n ("backward")
    factor = {("backward", False): 1, ("ortho", False): 1 / math.sqrt(n),
              ("forward", False): 1 / n, ("backward", True): 1,
              ("ortho", True): math.sqrt(n), ("forward", True): n}[norm, inverse]
    return node if factor == 1 else ops.mul(node, fill(factor, node.dtype, node.shape))


def _c2c(node, axis, n, norm, inverse):
    node = _resize(_complex(node), axis, node.shape[axis] if n is None else n)
    size = node.shape[axis]
    kind = "ifft" if inverse else "fft"
    out = _along(node, axis, lambda v: ops.fft(v, fft_type=kind, fft_lengths=(size,)))
    return _scaled(out, size, norm, inverse)


def _r2c(node, axis, n, norm):
    node = _resize(_real(node), axis, node.shape[axis] if n is None else n)
    size = node.shape[axis]
    out = _along(node, axis, lambda v: ops.fft(v, fft_type="rfft", fft_lengths=(size,)))
    return _scaled(out, size, norm, False)


def _c2r(node, axis, n, norm):
    node = _complex(node)
    n = 2 * (node.shape[axis] - 1) if n is None else n
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    node = _resize(node, axis, n // 2 + 1)
    out = _along(node, axis, lambda v: ops.fft(v, fft_type="irfft", fft_lengths=(n,)))
    return _scaled(out, n, norm, True)


def _numpy_out(kind, a, out, **kwargs):
    """numpy.fft's `out=`: NumPy's transform into it (counted), as a plain np.fft call does."""
    from ._fallback import run_eagerly
    fn = getattr(np.fft, kind)
    return run_eagerly(fn, f"numpy.fft.{kind}", (a,), dict(kwargs, out=out))


def _one(kind):
    def transform(a, n=None, axis=-1, norm=None, out=None):
        if out is not None:
            return _numpy_out(kind, a, out, n=n, axis=axis, norm=norm)
        norm = norm or "backward"
        node = as_node(a)
        ax = axis_index(axis, node.ndim)
        if kind in ("fft", "ifft"):
            return wrap(_c2c(node, ax, n, norm, kind == "ifft"))
        if kind == "rfft":
            return wrap(_r2c(node, ax, n, norm))
        if kind == "irfft":
            return wrap(_c2r(node, ax, n, norm))
        if kind == "hfft":  # NumPy's: irfft of the conjugate, with the norm's direction swapped
            return wrap(_c2r(ops.conj(_complex(node)), ax, n, _SWAP.get(norm, norm)))
        return wrap(ops.conj(_r2c(node, ax, n, _SWAP.get(norm, norm))))  # ihfft
    transform.__name__ = transform.__qualname__ = kind
    transform.__doc__ = f"numpy.fft.{kind}, traced lazily."
    return transform


fft, ifft, rfft, irfft, hfft, ihfft = (_one(k) for k in ("fft", "ifft", "rfft", "irfft",
                                                          "hfft", "ihfft"))


def _axes_and_sizes(node, s, axes):
    if axes is None:
        axes = tuple(range(node.ndim)) if s is None else tuple(range(node.ndim - len(s),
                                                                     node.ndim))
    axes = tuple(axis_index(a, node.ndim) for a in axes)
    if s is None:
        s = tuple(node.shape[a] for a in axes)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    return axes, tuple(node.shape[a] if d == -1 else d for a, d in zip(axes, s))


def _many(kind, default_axes=None):
    def transform(a, s=None, axes=default_axes, norm=None, out=None):
        if out is not None:
            return _numpy_out(kind, a, out, s=s, axes=axes, norm=norm)
        kind_n = kind if kind.endswith("n") else kind[:-1] + "n"  # fft2: fftn on two axes
        norm = norm or "backward"
        node = as_node(a)
        axes_, sizes = _axes_and_sizes(node, s, axes)
        if kind_n in ("fftn", "ifftn"):
            node = _complex(node)
            for ax, n in zip(axes_, sizes):
                node = _c2c(node, ax, n, norm, kind_n == "ifftn")
            return wrap(node)
        if not axes_:
            raise ValueError(f"{kind} needs at least one axis")
        if kind_n == "rfftn":  # the real transform on the last axis, complex ones on the rest
            node = _r2c(node, axes_[-1], sizes[-1], norm)
            for ax, n in zip(axes_[:-1], sizes[:-1]):
                node = _c2c(node, ax, n, norm, False)
            return wrap(node)
        if s is None or s[-1] == -1:  # the output's last length: 2 * (m - 1), as irfft's
            sizes = sizes[:-1] + (2 * (node.shape[axes_[-1]] - 1),)
        node = _complex(node)  # irfftn: complex inverses first, the real one last
        for ax, n in zip(axes_[:-1], sizes[:-1]):
            node = _c2c(node, ax, n, norm, True)
        return wrap(_c2r(node, axes_[-1], sizes[-1], norm))
    transform.__name__ = transform.__qualname__ = kind
    transform.__doc__ = f"numpy.fft.{kind}, traced lazily."
    return transform


fftn, ifftn, rfftn, irfftn = (_many(k) for k in ("fftn", "ifftn", "rfftn", "irfftn"))
fft2, ifft2, rfft2, irfft2 = (_many(k, (-2, -1)) for k in ("fft2", "ifft2", "rfft2", "irfft2"))


def fftfreq(n, d=1.0, device=None, *, dtype=None):
    if isinstance(d, LazyArray):  # a lazy spacing: NumPy's formula on it
        return fftfreq(n, 1.0, device, dtype=dtype) / d
    out = np.fft.fftfreq(n, d)
    return asarray(out if dtype is None else out.astype(dtype))


def rfftfreq(n, d=1.0, device=None, *, dtype=None):
    if isinstance(d, LazyArray):
        return rfftfreq(n, 1.0, device, dtype=dtype) / d
    out = np.fft.rfftfreq(n, d)
    return asarray(out if dtype is None else out.astype(dtype))


def _shift(x, axes, sign):
    node = as_node(x)
    if axes is None:
        axes = tuple(range(node.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    axes = tuple(axes)
    shifts = tuple(sign * (node.shape[axis_index(a, node.ndim)] // 2) for a in axes)
    return roll(wrap(node), shifts, axes) if axes else wrap(node)


def fftshift(x, axes=None):
    return _shift(x, axes, 1)


def ifftshift(x, axes=None):
    return _shift(x, axes, -1)


__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fft2", "ifft2", "rfft2", "irfft2",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def __getattr__(name):
    """numpy.fft's other public names (fft2, ifft2, rfft2, ...): NumPy's own, which come
    back to lazyx through __array_function__ when called with lazy arrays."""
    import numpy
    from ._forward import forward
    return forward(numpy.fft, __name__, name)
