"""Ops lowered by running torch's own decomposition on lazy tensors, then correcting where
the decomposition follows CUDA rather than the CPU kernels lazyx matches."""
import torch
from torch._decomp import decomposition_table

from ..tensor import expand, from_node
from .table import aten, const, ir_dtype, lower


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

