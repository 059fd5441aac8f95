"""LAZYX_LOOP_CUT with torch: a training loop with no barrier is cut as each iteration's first
call begins (the pieces are whole steps, as mark_step would make them), and a step that makes
many nodes in a few calls -- model(x), loss.backward() -- is no loop and runs whole."""
import numpy as np
import torch

import lazyx
import lazyx.frontends.torch as lt


def _set_loop_cut(monkeypatch, nodes):
    monkeypatch.setenv("LAZYX_LOOP_CUT", str(nodes))
    lazyx.sync()  # (the mark is read at each cut)


def _model(depth, width=9):
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers)


def test_a_deep_models_step_is_not_cut(monkeypatch):
    _set_loop_cut(monkeypatch, 200)
    model = _model(60).to(lt.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 9).to(lt.device)
    for _ in range(2):
        lazyx.reset_metrics()
        model(x).square().mean().backward()
        opt.step()
        opt.zero_grad()
        lazyx.sync()
        metrics = lazyx.metrics()
        assert metrics["nodes_traced"] > 1000
        assert metrics["sync_causes"] == {"explicit": 1}


def test_a_training_loop_with_no_barrier_is_cut_between_steps(monkeypatch):
    _set_loop_cut(monkeypatch, 150)
    eager, lazy = _model(3), _model(3).to(lt.device)
    data = torch.randn(30, 8, 9)
    for model, device in ((eager, "cpu"), (lazy, lt.device)):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        lazyx.reset_metrics()
        for batch in data:
            loss = model(batch.to(device)).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
        if device is lt.device:
            got = [p.detach().cpu() for p in model.parameters()]
            metrics = lazyx.metrics()
    for g, w in zip(got, eager.parameters()):
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-6)
    pieces = metrics["sync_causes"].get("node_cap", 0)
    assert pieces >= 5
    assert metrics["compiles"] <= 3  # the first piece, the repeated one, the last
