"""tf.space_to_batch_nd and tf.batch_to_space_nd (and the tf.space_to_batch / tf.batch_to_space
forms that call them), lowered: the layout moves behind a dilated ("atrous") convolution
(tf.nn.atrous_conv2d, tf.nn.with_space_to_batch), which fell back to TF on both sides of the
convolution. Known block shapes, paddings and crops only; what TF refuses (a block that does
not divide the padded size, a negative padding, a crop larger than the dimension) runs TF's op
for its error."""
import math

import tensorflow as tf

from ...core import ir, ops
from .lowering import Reject, operand_nodes, static_ints
from .registry import lower
from .tensor import wrap


def _blocks(x, block_shape, pairs):
    """(block sizes, [(before, after)] per spatial axis) as Python ints, or Reject."""
    block = static_ints(block_shape)
    flat = static_ints(pairs)
    if not isinstance(block, list) or not block or not isinstance(flat, list) or \
            len(flat) != 2 * len(block) or x.ndim < len(block) + 1 or \
            any(b < 1 for b in block) or any(p < 0 for p in flat):
        raise Reject()
    return block, [(flat[2 * i], flat[2 * i + 1]) for i in range(len(block))]


@lower(tf.space_to_batch_nd, "input")
def space_to_batch_nd(input, block_shape, paddings):  # noqa: A002 - TF's names
    """Pad the spatial axes, split each into (size / block, block), move the block factors in
    front of the batch and fold them into it: [batch * prod(block), padded / block, rest]."""
    (x,) = operand_nodes(input)
    block, pads = _blocks(x, block_shape, paddings)
    m = len(block)
    spatial = [x.shape[1 + i] + lo + hi for i, (lo, hi) in enumerate(pads)]
    if any(s % b for s, b in zip(spatial, block)):
        raise Reject()
    if any(pads[i] != (0, 0) for i in range(m)):
        config = [(0, 0, 0)] + [(lo, hi, 0) for lo, hi in pads] + [(0, 0, 0)] * (x.ndim - 1 - m)
        x = ops.pad(x, ir.constant(0, x.dtype), padding_config=config)
    rest = x.shape[1 + m:]
    split = (x.shape[0],) + sum(((s // b, b) for s, b in zip(spatial, block)), ()) + rest
    y = ops.reshape(x, new_sizes=split)
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + \
        list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    y = ops.transpose(y, permutation=order)
    out = (x.shape[0] * math.prod(block),) + tuple(s // b for s, b in zip(spatial, block)) + rest
    return wrap(ops.reshape(y, new_sizes=out), input)


@lower(tf.compat.v1.batch_to_space_nd, "input")
def batch_to_space_nd(input, block_shape, crops):  # noqa: A002 - TF's names
    """space_to_batch_nd undone: unfold the block factors from the batch, interleave each with
    its spatial axis, then crop."""
    (x,) = operand_nodes(input)
    block, cuts = _blocks(x, block_shape, crops)
    m, total = len(block), math.prod(block)
    if x.shape[0] % total:
        raise Reject()
    batch, inner, rest = x.shape[0] // total, x.shape[1:1 + m], x.shape[1 + m:]
    full = [i * b for i, b in zip(inner, block)]
    if any(lo + hi > f for (lo, hi), f in zip(cuts, full)):
        raise Reject()
    y = ops.reshape(x, new_sizes=tuple(block) + (batch,) + inner + rest)
    order = [m] + sum(([m + 1 + i, i] for i in range(m)), []) + \
        list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = ops.reshape(ops.transpose(y, permutation=order),
                    new_sizes=(batch,) + tuple(full) + rest)
    if any(c != (0, 0) for c in cuts):
        starts = [0] + [lo for lo, _ in cuts] + [0] * len(rest)
        limits = [batch] + [f - hi for (_, hi), f in zip(cuts, full)] + list(rest)
        y = ops.slice_(y, start_indices=starts, limit_indices=limits)
    return wrap(y, input)
