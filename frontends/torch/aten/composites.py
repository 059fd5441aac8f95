"""Ops lowered by running torch's own decomposition on lazy tensors: batch norm, corrected
where the decomposition follows CUDA rather than the CPU kernels lazyx matches; the
upsampling (bicubic here; the general case of nearest and linear modes, for
aten/upsample.py), grid sampler and multi-margin loss backwards, as the VJP of their forward's
decomposition; the multi-label margin loss, whose torch decomposition is wrong (below)."""
import torch
from torch._decomp import decomposition_table

from ....core import autodiff, ops
from ..tensor import expand, from_node
from .table import aten, const, ir_dtype, lower, node_of


def _batch_norm_on_cpu_terms(func, training_of):
    decomposition = decomposition_table[func]

    def lowering(out, *args, **kwargs):
        results = list(expand(decomposition, *args, **kwargs))
        if not training_of(args, kwargs):
            # CPU returns empty saved mean / invstd when not training; CUDA and torch's meta
            # kernel (hence `out`) give the running stats' shape. Returned as tensors, not
            # nodes, so the dispatcher does not hold them to the meta shape.
            for i in (1, 2):
                results[i] = from_node(const(0, ir_dtype(out[i].dtype), (0,)), out[i].dtype)
        return tuple(results)
    return lowering


def _training_arg(position):
    return lambda args, kwargs: args[position] if len(args) > position else kwargs["training"]


lower(aten.native_batch_norm.default)(
    _batch_norm_on_cpu_terms(aten.native_batch_norm.default, _training_arg(5)))
lower(aten._native_batch_norm_legit.default)(
    _batch_norm_on_cpu_terms(aten._native_batch_norm_legit.default, _training_arg(5)))
lower(aten._native_batch_norm_legit_no_training.default)(
    _batch_norm_on_cpu_terms(aten._native_batch_norm_legit_no_training.default,
                             lambda args, kwargs: False))
lower(aten._native_batch_norm_legit_functional.default)(
    _batch_norm_on_cpu_terms(aten._native_batch_norm_legit_functional.default, _training_arg(5)))
lower(aten._native_batch_norm_legit.no_stats)(
    _batch_norm_on_cpu_terms(aten._native_batch_norm_legit.no_stats, _training_arg(3)))


def upsample_backward(forward):
    """An upsampling is linear in its input: its input gradient is the IR's VJP of torch's own
    decomposition of the forward, taken at any input of the input's shape (zeros). The
    backward's arguments are the forward's with `input_size` after `output_size`."""
    decomposition = decomposition_table[forward]

    def lowering(out, grad_output, output_size, input_size, *rest):
        return autodiff.linear_transpose(
            lambda x: node_of(expand(decomposition, from_node(x, grad_output.dtype),
                                     output_size, *rest)),
            tuple(input_size), ir_dtype(grad_output.dtype), node_of(grad_output))
    return lowering


# (nearest and linear modes: aten/upsample.py, which falls back to this where it must)
lower(aten.upsample_bicubic2d_backward.default)(
    upsample_backward(aten.upsample_bicubic2d.default))


def _backward_through(forward, wrt_count):
    """The backward of a forward with a decomposition, as the IR's VJP of that decomposition
    at the forward's own inputs. Those go in as stop_gradient stand-ins, so a gradient stops
    at them: an input computed from another (an STN's grid from its image) would otherwise
    send one's gradient on into the other."""
    decomposition = decomposition_table[forward] \
        if isinstance(forward, torch._ops.OpOverload) else forward  # (or our own function)

    def vjp(grad_output, inputs, rest, wanted=None):
        wanted = [True] * wrt_count if wanted is None else list(wanted)
        stand_ins = [ops.stop_gradient(node_of(x)) for x in inputs]
        y = node_of(expand(decomposition, *(from_node(s, x.dtype)
                                            for s, x in zip(stand_ins, inputs)), *rest))
        picked = [s for s, keep in zip(stand_ins, wanted) if keep]
        grads = iter(autodiff.vjp([y], [node_of(grad_output, y.dtype)], picked) if picked else [])
        return tuple(next(grads) if keep else None for keep in wanted)
    return vjp


_grid_sampler_2d_vjp = _backward_through(aten.grid_sampler_2d.default, 2)


@lower(aten.grid_sampler_2d_backward.default)
def _grid_sampler_2d_backward(out, grad_output, x, grid, interpolation_mode, padding_mode,
                              align_corners, output_mask):
    # (torch's kernel and the decomposition both give a zero grid gradient for "nearest")
    return _grid_sampler_2d_vjp(grad_output, (x, grid),
                                (interpolation_mode, padding_mode, align_corners), output_mask)


_multi_margin_loss_vjp = _backward_through(aten.multi_margin_loss.default, 1)


@lower(aten.multi_margin_loss_backward.default)
def _multi_margin_loss_backward(out, grad_output, x, target, p, margin, weight=None,
                                reduction=1):
    return _multi_margin_loss_vjp(grad_output, (x,), (target, p, margin, weight, reduction))[0]


def _multilabel_margin_loss(x, target, reduction):
    """torch's CPU kernel: per sample, the labels before the first -1 are targets, and each
    target label j (a repeated label counts again) adds max(0, 1 - x[j] + x[i]) for every
    non-target class i, the sum divided by the class count. torch 2.13's decomposition is
    wrong on both counts it has: it adds terms for the slots after the -1 (gathering x[0]),
    and a 1-D input with reduction "none" gives shape (1,), not ()."""
    dim = x.shape[-1] if x.dim() else 1
    rows, labels = x.reshape(-1, dim), target.reshape(-1, dim)
    classes = torch.arange(dim, device=x.device)
    end = torch.where(labels == -1, classes, dim).amin(-1, keepdim=True)
    used = classes < end                                          # (batch, slot)
    label = torch.where(used, labels, 0)
    picked = (label.unsqueeze(-1) == classes) & used.unsqueeze(-1)  # (batch, slot, class)
    is_target = picked.any(1)                                     # (batch, class)
    z = (1 - rows.gather(1, label).unsqueeze(-1) + rows.unsqueeze(1)).clamp_min(0)
    z = torch.where(used.unsqueeze(-1) & ~is_target.unsqueeze(1), z, 0)
    loss = z.sum((1, 2)) / dim
    if reduction == 1:
        loss = loss.mean()
    elif reduction == 2:
        loss = loss.sum()
    else:
        loss = loss.reshape(x.shape[:-1] if x.dim() else ())
    return loss, is_target.to(x.dtype).reshape(target.shape)


@lower(aten.multilabel_margin_loss_forward.default)
def _multilabel_margin_loss_forward(out, x, target, reduction):
    return tuple(expand(_multilabel_margin_loss, x, target, reduction))


_multilabel_margin_loss_vjp = _backward_through(
    lambda x, target, reduction: _multilabel_margin_loss(x, target, reduction)[0], 1)


@lower(aten.multilabel_margin_loss_backward.default)
def _multilabel_margin_loss_backward(out, grad_output, x, target, reduction, is_target):
    return _multilabel_margin_loss_vjp(grad_output, (x,), (target, reduction))[0]
