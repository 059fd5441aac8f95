"""lazyx.compile and the Python numbers a torch module's own code reads: an annealed
`self.temperature` or a `self.k` of a submodule, read in its forward, which the step only
calls. The step's code never spells them, and each replay computed the traced call's values
(silently: no miss, no warning) before host_state.read_numbers walked the module tree."""
import copy

import numpy as np
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


class _Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 3)
        self.temperature = 1.0
        self.k = 1

    def forward(self, x):
        return self.lin(x) * self.k / self.temperature


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.Tanh())
        self.head = _Head()

    def forward(self, x):
        return self.head(self.body(x))


def _step(model, opt, x):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    return loss


def _pair():
    torch.manual_seed(0)
    ref = _Net()
    lazy = copy.deepcopy(ref).to(lt.device)
    return (ref, torch.optim.SGD(ref.parameters(), lr=0.1)), \
        (lazy, torch.optim.SGD(lazy.parameters(), lr=0.1))


def _check(changes, steps=6):
    (ref, ref_opt), (lazy, lazy_opt) = _pair()
    compiled = lazyx.compile(_step)
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    for i in range(steps):
        for model in (ref, lazy):
            changes(model, i)
        want = _step(ref, ref_opt, x)
        got = compiled(lazy, lazy_opt, x.to(lt.device))
        assert got.item() == pytest.approx(want.item(), rel=1e-5), i
    for p, q in zip(lazy.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_an_annealed_float_a_submodule_reads_in_forward_is_a_number_of_each_call():
    lazyx.reset_metrics()

    def anneal(model, i):
        model.head.temperature = 1.0 + 0.5 * i

    _check(anneal)
    # a run-time parameter after its first change: replayed, not traced at each value
    assert lazyx.metrics()["replays"] >= 3


def test_an_int_a_submodule_reads_in_forward_traces_again_when_it_changes():
    def widen(model, i):
        model.head.k = 1 + i // 3

    _check(widen)


def test_a_number_the_training_loop_keeps_on_the_model_does_not_trace_again():
    # `model.global_step`, an int the module's code never spells: not part of the guard
    lazyx.reset_metrics()

    def count(model, i):
        model.global_step = i
        model.running_loss = 0.1 * i

    _check(count)
    assert lazyx.metrics()["replays"] >= 4
