"""Recurrent layers on the lazyx device.

ATen's LSTM/GRU cells take a fused-kernel route (`_thnn_fused_lstm_cell`, ...) for every
non-CPU device, PrivateUse1 included, and those kernels exist only for CUDA: nn.LSTM and
nn.GRU on lt.device would fail. The kernels here, registered for the device's autograd key
(so autograd records the plain ops they call), compute the layers from linear, sigmoid and
tanh: torch's own decompositions for the whole layers, the cell formulas for the cells.
Packing a padded batch is the same kind of CPU-only kernel; it becomes slices and a concat.
"""
import torch
import torch.nn.functional as F
from torch._decomp import decomposition_table

from ...core import runtime
from . import tensor

aten = torch.ops.aten


def _lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    h, c = hx
    gates = F.linear(input, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    cy = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * cy.tanh(), cy


def _gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    i_r, i_z, i_n = F.linear(input, w_ih, b_ih).chunk(3, 1)
    h_r, h_z, h_n = F.linear(hx, w_hh, b_hh).chunk(3, 1)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (hx - n)  # (1 - z) * n + z * hx


def _host_lengths(lengths):
    """torch requires pack_padded_sequence's lengths on the CPU (CUDA refuses others: "'lengths'
    argument should be a 1D CPU int64 tensor"), and batch_sizes, a shape, depends on their
    values. Lengths on lt.device are read: a counted data_dependent sync (as nonzero's), and
    under lazyx.compile a CompileError naming the line (pass them as a Python list, or
    on_observe='split'). torch's own kernel called with them dispatched back here: a
    RecursionError."""
    host = runtime.to_host(lengths.__lazyx_handle__, cause="data_dependent")
    return torch.from_numpy(host.copy())  # (torch's CPU kernel below checks rank and dtype)


def _pack_padded_sequence(input, lengths, batch_first):
    """Time-major rows of the sequences still running at each step. batch_sizes is plain CPU
    data, as PackedSequence requires: computed by torch's CPU kernel on zeros of the input's
    leading shape, which also raises torch's errors for bad lengths (lengths live on the
    CPU, so this never syncs)."""
    if tensor.on_device(lengths):
        lengths = _host_lengths(lengths)
    if batch_first:
        input = input.transpose(0, 1)
    _, batch_sizes = aten._pack_padded_sequence(torch.zeros(input.shape[:2]), lengths, False)
    data = torch.cat([input[t, :size] for t, size in enumerate(batch_sizes.tolist())])
    return data, batch_sizes


KERNELS = {
    "_pack_padded_sequence": _pack_padded_sequence,
    "lstm.input": decomposition_table[aten.lstm.input],
    "lstm.data": decomposition_table[aten.lstm.data],
    "gru.input": decomposition_table[aten.gru.input],
    "gru.data": decomposition_table[aten.gru.data],
    "lstm_cell": _lstm_cell,
    "gru_cell": _gru_cell,
}


def register(lib):
    """Register on `lib` (a torch.library.Library for aten IMPL, kept alive by the caller)."""
    for name, kernel in KERNELS.items():
        lib.impl(name, kernel, "AutogradPrivateUse1")
