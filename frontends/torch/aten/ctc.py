"""aten._ctc_loss and _ctc_loss_backward on the IR's ctc_loss / ctc_loss_backward primitives
(the alpha and beta recursions of ATen's CPU kernels, core/ops.py); they ran on CPU torch
mid-step. F.ctc_loss's composite (zero_infinity, the reduction) runs above them as in eager.

Targets reach the primitives padded, (N, S): ATen's 2-D targets as they are, its 1-D
concatenation cut into rows at the lengths' running sums, in the program. The list overload
knows its lengths, so S is their max and log_alpha has torch's shape; the tensor overload
(lengths as device tensors: also F.ctc_loss's usual call with CPU lengths, losses.py) keeps
them as run-time values, so a batch with new lengths does not recompile: S is the targets'
width, for 1-D targets at most T (a longer target is impossible anyway: nll inf). Its
log_alpha's last axis is then 2S+1 where torch's is 2 max(L)+1; only backward reads it.
float32 is computed in float64, whose rounding is closer to torch's float32 loops."""
import torch

from ....core import compose, ops
from ..tensor import SPECIAL, LazyTensor, eager, from_node
from .table import aten, const, host_data, lower, node_of


def _lengths(lengths):
    if isinstance(lengths, (list, tuple)):  # the list overload: values known, kept run-time
        return host_data(torch.tensor(lengths, dtype=torch.int64))
    node = node_of(lengths)  # (an unbatched call's are 0-d: ATen reads them as one value)
    return ops.reshape(node, new_sizes=(node.size,)) if node.ndim == 0 else node


def _padded(targets, target_lengths, n, width):
    """(N, width) targets: a 2-D batch's first columns, or rows cut from the 1-D
    concatenation at the lengths' running sums (what lies past a row's length is unread)."""
    t = node_of(targets)
    if t.ndim == 2:
        return ops.slice_(t, start_indices=(0, 0), limit_indices=(n, width))
    if t.shape[0] == 0 or width == 0:
        return const(0, t.dtype, (n, width))
    lengths = ops.convert(target_lengths, dtype="int64")
    starts = ops.sub(ops.cumsum(lengths, axis=0), lengths)  # each row's offset
    at = ops.add(ops.broadcast_in_dim(starts, shape=(n, width), broadcast_dimensions=(0,)),
                 ops.iota(dtype="int64", shape=(n, width), dimension=1))
    at = ops.clamp(const(0, "int64", ()), at, const(t.shape[0] - 1, "int64", ()))
    flat = compose.take_along_axis(t, ops.reshape(at, new_sizes=(n * width,)), 0)
    return ops.reshape(flat, new_sizes=(n, width))


def _wide(x):
    return ops.convert(x, dtype="float64") if x.dtype != "float64" else x


def _operands(log_probs, targets, input_lengths, target_lengths, width):
    lp = node_of(log_probs)
    n = lp.shape[1]
    lengths = _lengths(target_lengths)
    return (_wide(lp), _padded(targets, lengths, n, width), _lengths(input_lengths), lengths)


@lower(aten._ctc_loss.default)
def _ctc_loss_lists(out, log_probs, targets, input_lengths, target_lengths, blank=0,
                    zero_infinity=False):
    # torch's meta kernel checked the lengths (values it sees here) and sized log_alpha
    width = out[1].shape[2] // 2
    nll, alpha = ops.ctc_loss(*_operands(log_probs, targets, input_lengths, target_lengths,
                                         width), blank=blank)
    dtype = node_of(log_probs).dtype
    return ops.convert(nll, dtype=dtype), ops.convert(alpha, dtype=dtype)


def _lowerable(log_probs, targets, *lengths):
    """Whether the call is one the tensor overloads lower: lazy float log_probs (T, N, C),
    integer targets (N, S) or (sum L,), integer lengths (N,) (or (), N = 1: unbatched).
    Anything else runs on CPU torch, which raises its own error for a bad call."""
    if not isinstance(log_probs, LazyTensor) or log_probs.dtype not in (torch.float32,
                                                                        torch.float64):
        return False
    if log_probs.dim() != 3 or targets.dim() not in (1, 2) or targets.is_floating_point():
        return False
    n = log_probs.shape[1]
    if targets.dim() == 2 and targets.shape[0] != n:
        return False
    return all(isinstance(x, torch.Tensor) and x.dim() <= 1 and x.numel() == n and
               not x.is_floating_point() and not x.is_complex() for x in lengths) and \
        not targets.is_complex()


def _tensor_width(log_probs, targets):
    return targets.shape[1] if targets.dim() == 2 else min(targets.shape[0], log_probs.shape[0])


def _ctc_loss_tensors(log_probs, targets, input_lengths, target_lengths, blank=0,
                      zero_infinity=False):
    if not _lowerable(log_probs, targets, input_lengths, target_lengths) or \
            not 0 <= blank < log_probs.shape[2]:
        return eager(aten._ctc_loss.Tensor, (log_probs, targets, input_lengths, target_lengths,
                                             blank, zero_infinity), {}, cause="fallback")
    width = _tensor_width(log_probs, targets)
    nll, alpha = ops.ctc_loss(*_operands(log_probs, targets, input_lengths, target_lengths,
                                         width), blank=blank)
    dtype = node_of(log_probs).dtype
    return (from_node(ops.convert(nll, dtype=dtype), log_probs.dtype),
            from_node(ops.convert(alpha, dtype=dtype), log_probs.dtype))


def _ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha,
                       blank, zero_infinity=False):
    args = (grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha, blank,
            zero_infinity)
    lists = isinstance(input_lengths, (list, tuple))
    lengths = () if lists else (input_lengths, target_lengths)
    width = log_alpha.shape[-1] // 2  # the forward's padding (see the module's docstring)
    if not _lowerable(log_probs, targets, *lengths) or not 0 <= blank < log_probs.shape[2] or \
            not grad.shape == nll.shape == log_probs.shape[1:2] or log_alpha.dim() != 3 or \
            targets.dim() == 2 and width > targets.shape[1]:
        op = aten._ctc_loss_backward.default if lists else aten._ctc_loss_backward.Tensor
        return eager(op, args, {}, cause="fallback")
    lp, padded, inputs, lengths = _operands(log_probs, targets, input_lengths, target_lengths,
                                            width)
    g = ops.ctc_loss_backward(_wide(node_of(grad)), lp, padded, inputs, lengths,
                              _wide(node_of(nll)), _wide(node_of(log_alpha)), blank=blank,
                              zero_infinity=zero_infinity)
    return from_node(ops.convert(g, dtype=node_of(log_probs).dtype), log_probs.dtype)


# no meta kernels (log_alpha's width would be a value), so they take the special route
SPECIAL.update({aten._ctc_loss.Tensor: _ctc_loss_tensors,
                aten._ctc_loss_backward.Tensor: _ctc_loss_backward,
                aten._ctc_loss_backward.default: _ctc_loss_backward})
