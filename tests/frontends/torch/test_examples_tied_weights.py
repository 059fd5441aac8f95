"""model.to(lt.device) keeps tied weights tied even when torch cannot swap the parameters in
place: a swap fails while a live autograd graph holds them (a CPU forward's output kept
before the move), and torch's fallback re-created each module's Parameters, so
word_language_model's decoder (tied to the embedding) then trained apart from it."""
import copy

import pytest
import torch
import torch.nn as nn

import lazyx.frontends.torch as lt


class _TiedLM(nn.Module):  # pytorch/examples word_language_model RNNModel(tie_weights=True)
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(13, 6)
        self.rnn = nn.LSTM(6, 6)
        self.decoder = nn.Linear(6, 13)
        self.decoder.weight = self.encoder.weight

    def forward(self, x):
        out, _ = self.rnn(self.encoder(x))
        return self.decoder(out).view(-1, 13)


def _train(model, x, y, steps=2):
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


def test_move_with_a_live_graph_keeps_ties_and_trains_as_eager():
    torch.manual_seed(0)
    model = _TiedLM()
    eager = copy.deepcopy(model)
    x, y = torch.randint(0, 13, (5, 2)), torch.randint(0, 13, (10,))
    alive = model(x)  # holds the parameters: torch cannot swap them
    stale = torch.optim.SGD(model.parameters(), lr=1.0)
    # (new Parameter objects: an optimizer made before the move would train nothing the
    # model uses, silently before this warning)
    with pytest.warns(RuntimeWarning, match="optimizer made before"):
        model.to(lt.device)
    assert all(p.device.type == "cpu" for p in stale.param_groups[0]["params"])
    assert model.decoder.weight is model.encoder.weight
    assert model.encoder.weight.device == lt.device
    _train(eager, x, y)
    _train(model, x.to(lt.device), y.to(lt.device))
    for (name, want), got in zip(eager.named_parameters(), model.parameters()):
        torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=1e-4, atol=1e-5,
                                   msg=name)
    assert alive.device.type == "cpu"
