"""A torch.compile graph's call for CPU callers, planned once: one program, CPU tensors in
and out, on the calling thread.

CompiledGraph.__call__ serves every caller (lt.device tensors, eagerly run ops between
programs, asserts, random keys); for W4's one-input, one-output graph that generality made
a 33 us call of an 11 us XLA call, most of it deciding again what the first call had
decided (planned: 21-23 us). A plan fixes that at the first call that can use one: which
argument each XLA argument takes, the rest placed once, how each output comes back, and
what the call adds to lazyx.metrics(). A call that does not fit the plan (a lazy or
functional tensor, a dtype NumPy cannot hold) gets None back and takes the general path.
"""
import time

import numpy as np
import torch
from torch._C import TensorBase

from ...core import metrics, runtime
from . import dynamo  # (which imports this module first: its names are read at calls)

# torch's own Tensor.numpy, not the one lazyx patches in (hooks.py), whose extra checks the
# plan makes itself; force=True: a parameter's value without detach()'s new tensor
_numpy = TensorBase.numpy
_PLAIN = (torch.Tensor, torch.nn.Parameter)  # a lazy tensor's type is a subclass of neither

# How an output comes back (see _outputs)
_COPY, _LEND, _ARG, _VALUE = range(4)


class HostPlan:
    """Calls of a CompiledGraph whose only step is one program, with CPU tensors only."""
    __slots__ = ("run", "arguments", "fill", "tensor_args", "outputs", "reads_all",
                 "transfers")

    def __init__(self, run, arguments, fill, tensor_args, outputs, reads_all, transfers):
        self.run = run                  # XLA arguments -> results, on the calling thread
        self.arguments = arguments      # the XLA arguments, None where an input goes
        self.fill = fill                # [(argument position, input index)]
        self.tensor_args = tensor_args  # the inputs that are tensors
        self.outputs = outputs          # [(how, where, torch dtype)]
        # every result is read before the call returns, so waited for (as the caller may
        # write its inputs again afterwards: XLA borrowed their memory)
        self.reads_all = reads_all
        self.transfers = transfers      # (inputs, their bytes, results copied, their bytes)

    def __call__(self, args):
        host = {}
        for k in self.tensor_args:
            a = args[k]
            if type(a) not in _PLAIN or torch._is_functional_tensor(a) or \
                    a.dtype is torch.bfloat16:
                return None
            host[k] = _numpy(a, force=True)
        xla_args = self.arguments.copy()
        for position, k in self.fill:
            xla_args[position] = host[k]
        start = time.perf_counter()
        results = self.run(xla_args)
        if not self.reads_all:
            runtime.get_backend().wait(results)
        seconds = time.perf_counter() - start  # (the program's run, as the general call times)
        outputs = _outputs(self.outputs, results, args)
        metrics.record_host_call(seconds, *self.transfers)
        return outputs


def _outputs(plan, results, args):
    outputs = []
    for how, where, torch_dtype in plan:
        if how == _COPY:
            out = torch.from_numpy(np.array(results[where]))
        elif how == _LEND:  # (large: the general call's way costs nothing beside it)
            out = dynamo._to_cpu(results[where], torch_dtype, lend=True)  # (counted there)
        elif how == _ARG:
            out = args[where]
        else:
            out = where
        outputs.append(out)
    return tuple(outputs)


def make(graph, segment, exe, args):
    """A HostPlan for `graph` (one `segment`, run by `exe`, the backend's copy for host
    callers) as called with `args`, or None where the general path must serve it."""
    _FIXED, _INPUT, _SLOT = dynamo._FIXED, dynamo._INPUT, dynamo._SLOT
    if graph.asserts or segment.keys or not hasattr(exe, "arguments_plan"):
        return None
    arguments = exe.arguments_plan(dynamo._fixed(segment.leaves))
    if arguments is None:
        return None
    tensor_args = [k for k, a in enumerate(args) if isinstance(a, torch.Tensor)]
    if any(args[k].dtype is torch.bfloat16 for k in tensor_args):
        return None  # (NumPy holds no bfloat16: the general path moves the bits)
    fill = []
    for position, source in enumerate(arguments):
        if type(source) is not int:
            continue
        kind, slot = segment.leaves[source]
        if kind != _SLOT or slot not in tensor_args:
            return None
        arguments[position] = None
        fill.append((position, slot))
    result_of = {slot: r for r, slot in enumerate(segment.out_slots)}
    outputs, copied_bytes = [], 0
    lends = hasattr(runtime.get_backend(), "lend_to_host")
    for k, (kind, where, torch_dtype) in enumerate(graph.outputs):
        if torch_dtype is torch.bfloat16:
            return None
        if kind == _INPUT:
            outputs.append((_ARG, where, torch_dtype))
        elif kind == _FIXED:
            outputs.append((_VALUE, where, torch_dtype))
        elif where in result_of:
            lend = graph.lendable[k] and lends
            outputs.append((_LEND if lend else _COPY, result_of[where], torch_dtype))
            if not lend:
                copied_bytes += dynamo._nbytes(*graph.slot_types[where][:2])
        else:  # an input returned as a new tensor (x.clone()): the general path copies it
            return None
    in_bytes = sum(args[k].nbytes for k in tensor_args)
    read = [where for how, where, _ in outputs if how in (_COPY, _LEND)]
    reads_all = set(read) == set(range(len(segment.out_slots)))
    n_copied = sum(how == _COPY for how, _, _ in outputs)
    return HostPlan(exe.run, arguments, fill, tensor_args, outputs, reads_all,
                    (len(tensor_args), in_bytes, n_copied, copied_bytes))
