"""Factories with no tensor operand whose torch kernels cannot build on the lazyx device:
`torch.range` (its out= kernel resizes the storage), `kaiser_window` (a DispatchStub with no
PrivateUse1 entry) and `triu_indices` / `tril_indices` (CPU and CUDA kernels only).
device.FACTORIES routes them here."""
import torch

from ....core import cephes, ops
from .table import Unsupported, aten, compute_dtype, const, host_data, lower, scalar


@lower(aten.range.default, aten.range.step)
def _range(out, start, end, step=1, **kwargs):
    """start, start + step, ... up to end inclusive (the count is torch's meta answer)."""
    n = out.shape[0]
    wide = "float64" if out.dtype.is_floating_point else "int64"
    counts = ops.iota(dtype=wide, shape=(n,), dimension=0)
    return ops.add(scalar(start, wide, (n,)), ops.mul(counts, scalar(step, wide, (n,))))


@lower(aten.kaiser_window.default, aten.kaiser_window.periodic, aten.kaiser_window.beta)
def _kaiser_window(out, window_length, periodic=True, beta=12.0, **kwargs):
    """torch's CPU kernel: I0(beta * sqrt(1 - ((k - a) / a)**2)) / I0(beta), a = (N - 1) / 2,
    over N = length (+ 1 when periodic, then the last point dropped), in opmath."""
    if not out.dtype.is_floating_point:
        raise Unsupported(f"kaiser_window of {out.dtype}")
    dtype = compute_dtype(out.dtype)
    shape = (window_length,)
    if window_length <= 1:
        return const(1, dtype, shape)
    n = window_length + 1 if periodic else window_length
    alpha = const((n - 1) / 2.0, dtype, shape)
    ratio = ops.div(ops.sub(ops.iota(dtype=dtype, shape=shape, dimension=0), alpha), alpha)
    beta = scalar(beta, dtype, shape)  # a run-time param: a new beta does not recompile
    root = ops.sqrt(ops.sub(const(1, dtype, shape), ops.mul(ratio, ratio)))
    return ops.div(cephes.i0(ops.mul(beta, root)), cephes.i0(beta))


def _indices(kernel):
    def lowering(out, row, col, offset=0, **kwargs):
        # the shape depends on the arguments only: the indices are made on the host, once,
        # and uploaded as data, as torch's own kernels compute them on the host side
        return host_data(kernel(row, col, offset, dtype=out.dtype))
    return lowering


lower(aten.triu_indices.default)(_indices(torch.triu_indices))
lower(aten.tril_indices.default)(_indices(torch.tril_indices))
