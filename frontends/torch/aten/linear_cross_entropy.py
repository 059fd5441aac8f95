"""torch 2.13's chunked linear cross-entropy (nn.LinearCrossEntropyLoss / F.linear_cross_entropy
given `options`): two custom ops, `torch_nn::_linear_cross_entropy_batch_chunked` (mean or sum:
the loss and, computed in the forward, the gradients its backward only scales) and its
`_no_reduction` twin (per-row losses; its backward, torch's Python, runs on lazy tensors). Their
kernels are Python with no device dispatch, so lazyx ran them on CPU torch. Chunking bounds a
GPU's memory for the (N, C) logits; XLA plans memory itself, so here they are the plain linear
and cross-entropy, the gradients the IR's VJP of that."""
import torch

from ....core import autodiff, ops
from ..tensor import expand, from_node
from .table import const, ir_dtype, lower, node_of

try:  # registers the ops (torch imports this module only when the chunked path first runs)
    import torch.nn.modules.linear_cross_entropy  # noqa: F401
    _OPS = torch.ops.torch_nn
    _CHUNKED = _OPS._linear_cross_entropy_batch_chunked.default
    _NO_REDUCTION = _OPS._linear_cross_entropy_batch_chunked_no_reduction.default
except (ImportError, AttributeError):  # torch before 2.13
    _CHUNKED = _NO_REDUCTION = None


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}  # torch's Reduction enum


def _loss(x, linear_weight, target, linear_bias, weight, reduction, ignore_index):
    """(N, in) rows (F.linear_cross_entropy made a single row a batch of one), (N,) targets;
    aten's ops, not F.cross_entropy: below autograd its composite would run torch._refs'
    nll_loss, which indexes by the raw targets (ignore_index -100 out of range)."""
    aten = torch.ops.aten
    logits = aten.linear(x, linear_weight, linear_bias)
    return aten.nll_loss_forward(aten._log_softmax(logits, 1, False), target, weight,
                                 _REDUCTIONS[reduction], ignore_index)[0]


if _CHUNKED is not None:
    @lower(_CHUNKED)
    def _linear_cross_entropy_chunked(out, x, linear_weight, target, linear_bias, weight,
                                      reduction, ignore_index, label_smoothing,
                                      batch_chunk_size, acc_policy, acc_dtype,
                                      allow_retain_graph, *wanted):
        # (label_smoothing is 0 and reduction mean or sum: F.linear_cross_entropy takes the
        # chunked path only then)
        params = (x, linear_weight, linear_bias)
        stand_ins = [None if p is None else ops.stop_gradient(node_of(p)) for p in params]
        lazy = [None if s is None else from_node(s, p.dtype) for p, s in zip(params, stand_ins)]
        loss = node_of(expand(_loss, lazy[0], lazy[1], target, lazy[2], weight, reduction,
                              ignore_index))
        picked = [s for s, want in zip(stand_ins, wanted) if s is not None and want]
        grads = iter(autodiff.vjp([loss], [const(1, loss.dtype, loss.shape)], picked)
                     if picked else [])
        results = [loss]
        for s, want, shape in zip(stand_ins, wanted, (o.shape for o in out[1:])):
            grad = next(grads) if s is not None and want else None
            results.append(grad if grad is not None
                           else const(0, ir_dtype(out[0].dtype), tuple(shape)))
        return tuple(results)

    @lower(_NO_REDUCTION)
    def _linear_cross_entropy_chunked_rows(out, x, linear_weight, target, linear_bias, weight,
                                           ignore_index, *chunking):
        return node_of(expand(_loss, x, linear_weight, target, linear_bias, weight, "none",
                              ignore_index))
