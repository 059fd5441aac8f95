"""Upsampling as dense ops: nearest by whole factors as a broadcast, linear modes as one
product per axis with a weight matrix.

torch's decompositions gather with per-element indices and their backwards scatter-add, and
XLA:CPU runs both element by element: F.interpolate's step took 1.6x (nearest), 4.5x
(bilinear) and 17x (bilinear, align_corners) jax's program for the same math (measured). The
indices and weights depend only on the sizes, so they are made here on the host -- with
torch's own index helpers, so they are the decomposition's -- and the op becomes what XLA
does best: nearest by whole factors repeats each element, linear interpolation contracts
each axis with an (out, in) matrix holding the two weights of every output row, and each
backward is its forward's VJP (block sums; the transposed products). Anything else (a nearest
upsampling that is not a whole factor, a linear one in half precision, whose decomposition
rounds in that dtype) runs the decomposition as before.
"""
import numpy as np
import torch
from torch._decomp import decomposition_table
from torch._decomp import decompositions as _decomp

from ....core import autodiff, compose, ir, ops
from ..tensor import expand
from . import composites
from .table import aten, ir_dtype, lower, node_of


def _per_axis(scales, n):
    """The optional scales as one entry (None: from the sizes) per spatial axis."""
    return list(scales) + [None] * (n - len(scales))


def _nearest_factors(input_shape, output_size, scales, exact):
    """Per spatial axis the whole factor k with input index = output index // k, as torch's
    decomposition computes the indices; None when some axis is not such a repetition."""
    scales = _per_axis(scales, len(output_size))
    probe = torch.empty((1, 1, *input_shape[2:]))  # (only its sizes are read)
    indices = _decomp._compute_upsample_nearest_indices(probe, list(output_size), scales,
                                                        exact=exact)
    factors = []
    for index, size, out in zip(indices, input_shape[2:], output_size):
        if out % size:
            return None
        k = out // size
        if not np.array_equal(index.reshape(-1).numpy(), np.arange(out) // k):
            return None
        factors.append(k)
    return factors


def _nearest(forward, exact):
    decomposition = decomposition_table[forward]

    def lowering(out, x, output_size, *scales):
        factors = _nearest_factors(tuple(x.shape), output_size, list(scales), exact)
        if factors is None:
            return expand(decomposition, x, output_size, *scales)
        return compose.repeat_elements(node_of(x), (1, 1, *factors))
    return lowering


def _nearest_backward(forward, exact):
    general = composites.upsample_backward(forward)

    def lowering(out, grad_output, output_size, input_size, *scales):
        factors = _nearest_factors(tuple(input_size), output_size, list(scales), exact)
        if factors is None:
            return general(out, grad_output, output_size, input_size, *scales)
        return autodiff.linear_transpose(  # (each input element's block of it, summed)
            lambda x: compose.repeat_elements(x, (1, 1, *factors)), tuple(input_size),
            ir_dtype(grad_output.dtype), node_of(grad_output))
    return lowering


for _n in (1, 2, 3):
    for _prefix, _exact in (("upsample_nearest", False), ("_upsample_nearest_exact", True)):
        _forward = getattr(aten, f"{_prefix}{_n}d").default
        lower(_forward)(_nearest(_forward, _exact))
        lower(getattr(aten, f"{_prefix}{_n}d_backward").default)(
            _nearest_backward(_forward, _exact))


# ---------------------------------------------------------------- linear, bilinear, trilinear

_LINEAR_DTYPES = (torch.float32, torch.float64)


def _linear_weights(in_size, out_size, align_corners, scale, dtype):
    """The (out, in) matrix of one axis: row o holds 1 - alpha at the output's left source
    index and alpha at the next (clamped), computed in `dtype` as torch's decomposition does."""
    step = _decomp._compute_scale(in_size, out_size, align_corners, scale)
    at = torch.arange(out_size).to(dtype)
    source = _decomp._compute_source_index(step, at, align_corners).clamp(min=0.0)
    left = source.to(torch.int64)
    right = (left + 1).clamp(max=in_size - 1)
    alpha = (source - left).clamp(0.0, 1.0)
    weights = torch.zeros((out_size, in_size), dtype=dtype)
    rows = torch.arange(out_size)
    weights.index_put_((rows, left), 1 - alpha, accumulate=True)
    weights.index_put_((rows, right), alpha, accumulate=True)
    return weights.numpy()


def _interpolate(x, output_size, align_corners, scales):
    """x (N, C, *spatial) node interpolated to output_size: the last axis first, as torch."""
    n = x.ndim
    scales = _per_axis(scales, n - 2)
    for axis in reversed(range(2, n)):
        scale = scales[axis - 2]
        w = _linear_weights(x.shape[axis], output_size[axis - 2], align_corners, scale,
                            torch.float64 if x.dtype == "float64" else torch.float32)
        y = compose.tensordot(x, ir.constant(w, x.dtype), (axis,), (1,))  # axis moved last
        x = ops.transpose(y, permutation=tuple(range(axis)) + (n - 1,) + tuple(range(axis, n - 1)))
    return x


def _linear(forward):
    decomposition = decomposition_table[forward]

    def lowering(out, x, output_size, align_corners, *scales):
        if x.dtype not in _LINEAR_DTYPES:
            return expand(decomposition, x, output_size, align_corners, *scales)
        return _interpolate(node_of(x), tuple(output_size), align_corners, list(scales))
    return lowering


def _linear_backward(forward):
    general = composites.upsample_backward(forward)

    def lowering(out, grad_output, output_size, input_size, align_corners, *scales):
        if grad_output.dtype not in _LINEAR_DTYPES:
            return general(out, grad_output, output_size, input_size, align_corners, *scales)
        return autodiff.linear_transpose(
            lambda x: _interpolate(x, tuple(output_size), align_corners, list(scales)),
            tuple(input_size), ir_dtype(grad_output.dtype), node_of(grad_output))
    return lowering


for _name in ("upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d"):
    _forward = getattr(aten, _name).default
    lower(_forward)(_linear(_forward))
    lower(getattr(aten, _name + "_backward").default)(_linear_backward(_forward))
