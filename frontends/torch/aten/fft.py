"""torch.fft: the three aten kernels every torch.fft function (and stft) reaches.

torch names the transformed dims (the last one is halved by r2c and restored by c2r) and a
normalization mode: 0 none, 1 1/sqrt(n), 2 1/n. The IR's fft primitive transforms up to 3
trailing axes, its inverses scaled by 1/n; the lowerings move axes to the end and back, and
rescale to torch's mode.
"""
import math

from ....core import dtypes as dt
from ....core import ops
from .table import aten, const, lower, node_of


def _on_trailing(a, axes, transform):
    """`transform` applied with `axes` moved to the end (in that order), then moved back."""
    rest = [d for d in range(a.ndim) if d not in axes]
    perm = tuple(rest + list(axes))
    out = transform(ops.transpose(a, permutation=perm))
    return ops.transpose(out, permutation=tuple(perm.index(d) for d in range(a.ndim)))


def _c2c(a, axes, inverse):
    """Complex fft/ifft over `axes`, three at a time (a multi-axis DFT is separable)."""
    kind = "ifft" if inverse else "fft"
    for start in range(0, len(axes), 3):
        group = axes[start:start + 3]
        a = _on_trailing(a, group, lambda t, k=len(group): ops.fft(
            t, fft_type=kind, fft_lengths=t.shape[t.ndim - k:]))
    return a


def _scale(a, n, normalization, inverse):
    """torch's normalization mode applied to an IR result (whose inverses divided by n)."""
    factor = {0: 1.0, 1: 1.0 / math.sqrt(n), 2: 1.0 / n}[normalization]
    if inverse:
        factor *= n
    if factor == 1.0:
        return a
    parts = dt.real_part(a.dtype) if dt.is_complex(a.dtype) else a.dtype
    return ops.mul(a, ops.convert(const(factor, parts, a.shape), dtype=a.dtype))


def _axes(a, dim):
    return [d % a.ndim for d in dim]


@lower(aten._fft_c2c.default)
def _fft_c2c(out, x, dim, normalization, forward):
    a = node_of(x)
    axes = _axes(a, dim)
    if not axes:
        return a
    n = math.prod(a.shape[d] for d in axes)
    return _scale(_c2c(a, axes, inverse=not forward), n, normalization, inverse=not forward)


@lower(aten._fft_r2c.default)
def _fft_r2c(out, x, dim, normalization, onesided):
    a = node_of(x)
    axes = _axes(a, dim)
    n = math.prod(a.shape[d] for d in axes)
    if onesided:
        halved = _on_trailing(a, axes[-1:], lambda t: ops.fft(
            t, fft_type="rfft", fft_lengths=t.shape[-1:]))
        result = _c2c(halved, axes[:-1], inverse=False)
    else:
        result = _c2c(ops.complex_(a, const(0, a.dtype, a.shape)), axes, inverse=False)
    return _scale(result, n, normalization, inverse=False)


@lower(aten._fft_c2r.default)
def _fft_c2r(out, x, dim, normalization, last_dim_size):
    a = node_of(x)
    axes = _axes(a, dim)
    a = _c2c(a, axes[:-1], inverse=True)
    keep = last_dim_size // 2 + 1  # torch reads only the non-negative frequencies it needs

    def inverse_real(t):
        have = t.shape[-1]
        if have != keep:  # crop, or pad with zeros
            zero = ops.complex_(*[const(0, dt.real_part(t.dtype))] * 2)
            t = ops.pad(t, zero, padding_config=((0, 0, 0),) * (t.ndim - 1) + (
                (0, keep - have, 0),))
        return ops.fft(t, fft_type="irfft", fft_lengths=(last_dim_size,))

    result = _on_trailing(a, axes[-1:], inverse_real)
    n = math.prod(out.shape[d] for d in axes)
    return _scale(result, n, normalization, inverse=True)
