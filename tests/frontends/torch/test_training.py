"""Training on lazy tensors matches eager, and a repeated step is one cached program."""
import copy
import os
import sys

import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import shared  # noqa: E402  (tests/shared.py)

OPTIMIZERS = {
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
    "rmsprop_centered": lambda p: torch.optim.RMSprop(p, lr=1e-2, centered=True, momentum=0.5),
    "nadam": lambda p: torch.optim.NAdam(p, lr=1e-2),
    "radam": lambda p: torch.optim.RAdam(p, lr=1e-2),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-2),
    "adamax": lambda p: torch.optim.Adamax(p, lr=1e-2),
    "adadelta": lambda p: torch.optim.Adadelta(p),
}


def _train(model, loss_fn, x, y, make_opt, steps, compare_parameters=True):
    lazy_model = copy.deepcopy(model).to(lt.device)
    opt, lazy_opt = make_opt(model.parameters()), make_opt(lazy_model.parameters())
    lx, ly = x.to(lt.device), y.to(lt.device)
    lazyx.reset_metrics()
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        lazy_opt.zero_grad()
        lazy_loss = loss_fn(lazy_model(lx), ly)
        lazy_loss.backward()
        lazy_opt.step()
        lt.mark_step()
        torch.testing.assert_close(lazy_loss.item(), loss.item(), rtol=1e-4, atol=0)
    # Adam divides by sqrt(v): a gradient that is ~0 in both may round to opposite signs,
    # so parameters are compared loosely; the losses above carry the 1e-4 claim.
    for p, q in zip(model.parameters(), lazy_model.parameters()):
        if compare_parameters:
            torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-2, atol=2e-2)
    return lazyx.metrics()


def test_rprop_trains_like_eager_one_program_per_step():
    # Rprop's foreach path copies gradients with torch._foreach_copy_ (functionalized to
    # _foreach_copy, which has no torch.copy: it crashed until 2026-11-28). Rprop moves each
    # weight by a whole step size in the direction of its gradient's sign: a gradient of 1e-9
    # that rounds to the other sign (the reference backend sums in another order: gradients
    # differ by 3e-8) moves its weight by that step, 0.15 after 17 steps. So the losses carry
    # the claim here, not the weights.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    m = _train(model, torch.nn.CrossEntropyLoss(), x, y, lambda p: torch.optim.Rprop(p, lr=1e-2),
               8, compare_parameters=False)  # (few steps: fewer gradients near zero)
    _one_program_per_step(m, 8)


def test_asgd_trains_like_eager():
    # torch's ASGD reads its eta and mu with .item() per parameter (optimizer._get_value): syncs
    # of torch's own, so only the numbers are claimed here
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    _train(model, torch.nn.CrossEntropyLoss(), x, y, lambda p: torch.optim.ASGD(p, lr=1e-2), 5)


def _one_program_per_step(m, steps):
    # step 1 creates optimizer state (a different graph); every later step hits the cache
    assert m["fallbacks"] == 0, m["fallback_ops"]
    assert m["compiles"] <= 2 and m["cache_hits"] >= steps - 2, m
    assert m["sync_causes"] == {"explicit": steps}, m["sync_causes"]


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_mlp_trains_like_eager(opt):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 16),
                                torch.nn.SiLU(), torch.nn.Linear(16, 4))
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    _one_program_per_step(_train(model, torch.nn.CrossEntropyLoss(), x, y, OPTIMIZERS[opt], 20), 20)


def test_transformer_encoder_trains_like_eager():
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0,
                                             batch_first=True)
    x, y = torch.randn(4, 6, 16), torch.randn(4, 6, 16)
    _one_program_per_step(_train(model, torch.nn.MSELoss(), x, y, OPTIMIZERS["adam"], 20), 20)


class _Layers(torch.nn.Module):
    """The other layers people use, in one model: conv, batch norm, embedding, attention."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 8)
        self.conv1 = torch.nn.Conv1d(8, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(1, 2, 3, stride=2, padding=1)
        self.bn = torch.nn.BatchNorm1d(8)
        self.ln = torch.nn.LayerNorm(8)
        self.attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        self.head = torch.nn.Linear(8 + 2 * 3 * 4, 3)

    def forward(self, tokens):
        h = self.embed(tokens)                                  # (B, L, 8)
        h = self.bn(self.conv1(h.transpose(1, 2))).transpose(1, 2)
        h = self.ln(h + self.attn(h, h, h, need_weights=False)[0])
        img = self.conv2(h.reshape(-1, 1, 6, 8))                # (B, 2, 3, 4)
        q = torch.nn.functional.scaled_dot_product_attention(h, h, h, is_causal=True)
        feats = torch.cat([q.mean(1), img.flatten(1)], dim=1)
        return torch.softmax(self.head(feats), -1)


def test_conv_batchnorm_embedding_attention_train_like_eager():
    torch.manual_seed(0)
    tokens = torch.randint(0, 10, (4, 6))
    target = torch.rand(4, 3)
    m = _train(_Layers(), torch.nn.functional.mse_loss, tokens, target,
               OPTIMIZERS["sgd_momentum"], 4)
    assert m["fallbacks"] == 0, m["fallback_ops"]


def test_dropout_is_reproducible_under_manual_seed():
    x = torch.ones(1000, device=lt.device)
    torch.manual_seed(7)
    a = torch.nn.functional.dropout(x, 0.3).cpu()
    torch.manual_seed(7)
    b = torch.nn.functional.dropout(x, 0.3).cpu()
    torch.testing.assert_close(a, b)
    kept = (a != 0).float().mean().item()
    assert 0.6 < kept < 0.8
    torch.testing.assert_close(a[a != 0], torch.full_like(a[a != 0], 1 / 0.7))


@pytest.mark.usefixtures("no_mesh_yet")  # tests/conftest.py
@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("compiled", [False, True], ids=["lazy", "lazyx.compile"])
def test_linear_gradients_are_results_once_and_read_right(set_to_none, compiled):
    # A Linear weight's .grad is t() of an mm result that functionalization keeps as the view's
    # base: the step's program computes the gradient once (no base, no transposed copy), and
    # the base is made from it only when read -- zero_grad(set_to_none=False) zeroes the
    # gradients in place, which reads it in the next step.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    lazy_model = copy.deepcopy(model).to(lt.device)
    x, y = torch.randn(5, 8), torch.randint(0, 4, (5,))
    lx, ly = x.to(lt.device), y.to(lt.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    lazy_opt = torch.optim.SGD(lazy_model.parameters(), lr=0.1)

    def step(m, o, a, b):
        o.zero_grad(set_to_none=set_to_none)
        loss = torch.nn.functional.cross_entropy(m(a), b)
        loss.backward()
        o.step()
        return loss

    lazy_step = lazyx.compile(step) if compiled else step
    with shared.ProgramResults() as outputs:
        for _ in range(4):
            loss = step(model, opt, x, y)
            lazy_loss = lazy_step(lazy_model, lazy_opt, lx, ly)
            lt.mark_step()
            torch.testing.assert_close(lazy_loss.item(), loss.item(), rtol=1e-5, atol=0)
            for p, q in zip(model.parameters(), lazy_model.parameters()):
                torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-5, atol=1e-6)
                torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-5, atol=1e-6)
    # the loss, 4 parameters and 4 gradients; before, each weight's and bias's gradient base too
    # (a compiled step's program is its entry's: its trace compiles without a plain cut)
    if compiled:
        outputs.counts += [len(entry.program.outputs) for bucket in lazy_step.entries.values()
                           for entry in bucket if entry.program is not None]
    assert outputs.counts and max(outputs.counts) <= 9, outputs.counts
