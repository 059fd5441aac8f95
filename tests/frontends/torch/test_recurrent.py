"""nn.LSTM / nn.GRU / their cells on lazy tensors: forward and training against eager CPU.
(ATen's non-CPU route for these is a CUDA-only fused kernel; lazyx registers its own.)"""
import copy

import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

LAYERS = {
    "lstm": lambda: torch.nn.LSTM(5, 7, num_layers=2, batch_first=True),
    "lstm-bidirectional-proj": lambda: torch.nn.LSTM(5, 7, bidirectional=True, proj_size=3),
    "gru": lambda: torch.nn.GRU(5, 7, batch_first=True, bidirectional=True),
    "gru-2-layers": lambda: torch.nn.GRU(5, 7, num_layers=2, bias=False),
    "rnn-tanh": lambda: torch.nn.RNN(5, 7, num_layers=2),
    "lstm-cell": lambda: torch.nn.LSTMCell(5, 7),
    "gru-cell": lambda: torch.nn.GRUCell(5, 7, bias=False),
}


def _output(layer, x):
    out = layer(x)
    while isinstance(out, tuple):  # (output, (h, c)) / (output, h) / (h, c)
        out = out[0]
    return out


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_trains_like_eager(name):
    torch.manual_seed(0)
    layer = LAYERS[name]()
    lazy = copy.deepcopy(layer).to(lt.device)
    x = torch.randn(3, 5) if "cell" in name else torch.randn(4, 3, 5)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    lazy_opt = torch.optim.SGD(lazy.parameters(), lr=0.1)
    lazyx.reset_metrics()
    for _ in range(3):
        loss = _output(layer, x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        lazy_loss = _output(lazy, x.to(lt.device)).square().mean()
        lazy_loss.backward()
        lazy_opt.step()
        lazy_opt.zero_grad()
        lt.mark_step()
        torch.testing.assert_close(lazy_loss.item(), loss.item(), rtol=1e-5, atol=1e-6)
    for p, q in zip(layer.parameters(), lazy.parameters()):
        torch.testing.assert_close(q.cpu(), p.detach(), rtol=1e-5, atol=1e-6)
    assert lazyx.metrics()["fallbacks"] == 0, lazyx.metrics()["fallback_ops"]


@pytest.mark.parametrize("batch_first", [False, True])
def test_packed_sequences_train_like_eager(batch_first):
    torch.manual_seed(1)
    layer = torch.nn.LSTM(4, 6, batch_first=batch_first)
    lazy = copy.deepcopy(layer).to(lt.device)
    x = torch.randn(3, 5, 4) if batch_first else torch.randn(5, 3, 4)
    lengths = torch.tensor([3, 5, 2])  # unsorted: pack sorts (enforce_sorted=False)
    h0, c0 = torch.randn(1, 3, 6), torch.randn(1, 3, 6)

    def run(module, x, h0, c0):
        x = x.clone().requires_grad_()
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                                         enforce_sorted=False)
        out, (h, c) = module(packed, (h0, c0))
        padded, sizes = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first)
        (padded.square().sum() + h.sum() + c.sum()).backward()
        return padded, sizes, h, c, x.grad, module.weight_hh_l0.grad

    want = run(layer, x, h0, c0)
    lazyx.reset_metrics()
    got = run(lazy, x.to(lt.device), h0.to(lt.device), c0.to(lt.device))
    torch.testing.assert_close(got[1], want[1])  # lengths stay CPU data, as torch needs
    for a, b in zip(got[:1] + got[2:], want[:1] + want[2:]):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-5, atol=1e-5)
    # the layers run lazily; torch's pad_packed_sequence reads the (device) unsorted indices
    # with .cpu() to reorder the CPU lengths: a read by torch's code, counted (issue 15)
    asked = {"torch.nn.utils.rnn.pad_packed_sequence": 1}
    assert lazyx.metrics()["fallback_ops"] == asked, lazyx.metrics()["fallback_ops"]


def test_bad_lengths_raise_torchs_error():
    x = torch.randn(4, 2, 3, device=lt.device)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor([2, 4]))
