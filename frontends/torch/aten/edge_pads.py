"""F.pad's reflect and replicate modes (reflection_pad / replication_pad 1d-3d) as slices,
reversals and concatenates (compose.edge_pad, shared with TF's REFLECT), their backwards as
that forward's VJP. torch's decompositions gather (a 2d reflect pad: 11 gathers in forward and
backward, 3.2-3.6x jax's program on XLA:CPU), and replication_pad's backward has none: it ran
eagerly on the CPU, a sync and a fallback in every training step. A padding these do not
cover (negative, or a reflection as wide as its axis, which torch refuses) takes the
decomposition, or torch's own error."""
from ....core import autodiff, compose
from ..tensor import Unsupported
from .table import aten, ir_dtype, lower, node_of


def _pads(shape, padding, mode):
    """Per axis (lo, hi) from torch's padding (last axis first), or None where not covered."""
    k = len(padding) // 2
    if len(padding) != 2 * k or k > len(shape) or any(p < 0 for p in padding):
        return None
    pads = [(0, 0)] * len(shape)
    for i in range(k):
        axis = len(shape) - 1 - i
        lo, hi = padding[2 * i], padding[2 * i + 1]
        size = shape[axis]
        if (mode == "reflect" and (lo >= size or hi >= size)) or size == 0:
            return None
        pads[axis] = (lo, hi)
    return pads


def _forward(mode):
    def lowering(out, x, padding):
        pads = _pads(tuple(x.shape), list(padding), mode)
        if pads is None:
            raise Unsupported(f"{mode} padding {list(padding)} of shape {tuple(x.shape)}")
        return compose.edge_pad(node_of(x), pads, mode)
    return lowering


def _backward(mode):
    def lowering(out, grad_output, x, padding):
        pads = _pads(tuple(x.shape), list(padding), mode)
        if pads is None:
            raise Unsupported(f"{mode} padding {list(padding)} of shape {tuple(x.shape)}")
        return autodiff.linear_transpose(lambda t: compose.edge_pad(t, pads, mode),
                                         tuple(x.shape), ir_dtype(grad_output.dtype),
                                         node_of(grad_output))
    return lowering


for _n in (1, 2, 3):
    for _name, _mode in (("reflection_pad", "reflect"), ("replication_pad", "replicate")):
        lower(getattr(aten, f"{_name}{_n}d").default)(_forward(_mode))
        lower(getattr(aten, f"{_name}{_n}d_backward").default)(_backward(_mode))
