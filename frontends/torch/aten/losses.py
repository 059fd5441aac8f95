"""Losses lowered whole. torch's own decompositions of these (torch._decomp) expand into ten
to fifteen aten calls each, every one a trip through the dispatcher; cross-entropy is in
nearly every training step, so its two halves are lowered here directly.

The class of each row is picked with a one-hot mask (iota == target) rather than a gather:
the same numbers, no index arithmetic, and XLA fuses it with the reduction. An ignored row
(target == ignore_index) weighs 0, as in torch. Like any lazy system, lazyx cannot raise
torch's "Target n is out of bounds" (it depends on the values): such a row picks nothing.
"""
import torch

from ....core import ops
from .table import Unsupported, aten, compute_dtype, const, lower, node_of

_MEAN, _SUM = 1, 2  # torch's Reduction enum: 0 none, 1 mean, 2 sum


def _rows(a, target):
    """(N, C) logits with (N,) targets, or (C,) with a () target; anything else: torch."""
    t = node_of(target)
    if not (a.ndim == 2 and t.shape == a.shape[:1]) and not (a.ndim == 1 and t.ndim == 0):
        raise Unsupported("nll_loss shapes")
    return t


def _hot(t, shape, ignore_index):
    """(mask of each row's target class, mask of the rows that count)."""
    channel = len(shape) - 1
    valid = ops.ne(t, const(ignore_index, t.dtype, t.shape))
    rows = tuple(range(channel))  # target axes in the (N, C) layout
    classes = ops.iota(dtype=t.dtype, shape=shape, dimension=channel)
    picked = ops.eq(classes, ops.broadcast_in_dim(t, shape=shape, broadcast_dimensions=rows))
    hot = ops.and_(picked, ops.broadcast_in_dim(valid, shape=shape, broadcast_dimensions=rows))
    return hot, valid


def _class_weights(weight, dtype, shape):
    w = node_of(weight, dtype)
    return ops.broadcast_in_dim(w, shape=shape, broadcast_dimensions=(len(shape) - 1,))


def _pick(hot, values):
    """Each row's value at its target class (0 for ignored rows)."""
    zero = const(0, values.dtype, values.shape)
    return ops.reduce_sum(ops.select(hot, values, zero), axes=(values.ndim - 1,))


def _all(x):
    return ops.reduce_sum(x, axes=tuple(range(x.ndim))) if x.ndim else x


@lower(aten.nll_loss_forward.default)
def _nll_loss_forward(out, x, target, weight, reduction, ignore_index):
    dtype = compute_dtype(out[0].dtype)
    a = node_of(x, dtype)
    t = _rows(a, target)
    hot, valid = _hot(t, a.shape, ignore_index)
    if weight is not None:
        w = _class_weights(weight, dtype, a.shape)
        a = ops.mul(a, w)  # torch weighs the log-probabilities, then picks
    loss = ops.neg(_pick(hot, a))
    loss = ops.select(valid, loss, const(0, dtype, loss.shape))  # +0 for ignored rows
    if reduction not in (_MEAN, _SUM) and a.ndim > 1:
        return loss, const(0, dtype, ())
    if weight is not None:
        total = _all(_pick(hot, w))
    else:  # torch counts the rows in int64, then converts
        total = ops.convert(_all(ops.convert(valid, dtype="int64")), dtype=dtype)
    if reduction == _SUM:
        loss = _all(loss)
    elif reduction == _MEAN:
        loss = ops.div(_all(loss), total)
    return loss, total


@lower(aten.nll_loss_backward.default)
def _nll_loss_backward(out, grad, x, target, weight, reduction, ignore_index, total_weight):
    dtype = compute_dtype(out.dtype)
    a = node_of(x, dtype)
    t = _rows(a, target)
    g = node_of(grad, dtype)
    if reduction == _MEAN:
        g = ops.div(g, node_of(total_weight, dtype))
    if g.ndim > 1 or (g.ndim == 1 and g.shape != a.shape[:1]):
        raise Unsupported("nll_loss_backward grad shape")
    g = ops.broadcast_in_dim(g, shape=a.shape, broadcast_dimensions=tuple(range(g.ndim)))
    if weight is not None:
        g = ops.mul(g, _class_weights(weight, dtype, a.shape))
    hot, _ = _hot(t, a.shape, ignore_index)
    return ops.select(hot, ops.neg(g), const(0, dtype, a.shape))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=_MEAN,
             zero_infinity=False):
    """F.ctc_loss with lengths as CPU tensors, registered for the device's autograd key
    (device.py). The usual call passes them so (CUDA takes them, and so does cuDNN); ATen's
    composite kernel sees a tensor subclass among the arguments and keeps the lengths as
    tensors, then divides the lazy loss by a CPU one, which the device check refuses. CPU
    lengths move to the device, as run-time values (aten/ctc.py: new lengths, same program),
    once torch has checked them as eager does (its meta kernel reads a list's values)."""
    lengths = (input_lengths, target_lengths)
    on_cpu = [isinstance(x, torch.Tensor) and x.device.type == "cpu" for x in lengths]
    # (a tracer's fake tensor has no values to read: it moves to the device like a lazy one)
    if all(type(x) is torch.Tensor and cpu and x.dim() == 1 for x, cpu in zip(lengths, on_cpu)) \
            and all(not x.is_floating_point() and not x.is_complex() for x in lengths) and \
            log_probs.dim() == 3 and isinstance(targets, torch.Tensor):
        aten._ctc_loss.default(torch.empty(log_probs.shape, dtype=log_probs.dtype, device="meta"),
                               torch.empty(targets.shape, dtype=torch.long, device="meta"),
                               input_lengths.tolist(), target_lengths.tolist(), blank)
    if any(on_cpu):
        input_lengths, target_lengths = (x.to(log_probs.device) if cpu else x
                                         for x, cpu in zip(lengths, on_cpu))
    return aten.ctc_loss.Tensor.decompose(log_probs, targets, input_lengths, target_lengths,
                                          blank, reduction, zero_infinity)
