"""Model parallel: a transformer block with Megatron-style weights on a 2-D mesh (batch on
"data", heads and MLP hidden units on "model": column-parallel q/k/v and fc1, row-parallel
output projection and fc2) computes eager's forward, gradients and update; the dumped,
partitioned HLO holds the per-device shards and the collectives XLA inserted."""
import copy
import glob
import os
import re

import numpy as np
import pytest

import lazyx
from lazyx.core import dump
from mesh_checks import assert_laid_out

torch = pytest.importorskip("torch")
import lazyx.frontends.torch as lt  # noqa: E402

D, HEADS, HIDDEN, BATCH, SEQ = 32, 4, 128, 4, 8
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.q, self.k, self.v = (torch.nn.Linear(D, D) for _ in range(3))
        self.proj = torch.nn.Linear(D, D)
        self.fc1, self.fc2 = torch.nn.Linear(D, HIDDEN), torch.nn.Linear(HIDDEN, D)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.ln1(x)
        q, k, v = (f(h).view(b, t, HEADS, D // HEADS).transpose(1, 2)
                   for f in (self.q, self.k, self.v))
        att = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, D))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


# torch's Linear weight is (out, in): column-parallel splits rows, row-parallel columns
MEGATRON = {"q.*": ("model",), "k.*": ("model",), "v.*": ("model",), "fc1.*": ("model",),
            "proj.weight": (None, "model"), "fc2.weight": (None, "model")}


def collective_counts(hlo):
    """{collective: occurrences} in an HLO module's text (async pairs counted once)."""
    return {c: len(re.findall(rf"= [^=]*? {c}(?:-start)?\(", hlo)) for c in COLLECTIVES}


def test_megatron_block_matches_eager_and_dumps_collectives(tmp_path):
    mesh = lazyx.distributed.mesh((2, 4), ("data", "model"))
    torch.manual_seed(0)
    model = Block()
    x, target = torch.randn(BATCH, SEQ, D), torch.randn(BATCH, SEQ, D)
    lazy = copy.deepcopy(model).to(lt.device)
    applied = lt.shard_parameters(lazy, mesh, MEGATRON)
    assert applied["fc1.weight"] == ("model",) and applied["ln1.weight"] == ()
    lx = lt.mark_sharding(x.to(lt.device), mesh, ("data", None, None))
    ly = lt.mark_sharding(target.to(lt.device), mesh, ("data", None, None))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    lazy_opt = torch.optim.SGD(lazy.parameters(), lr=0.1, momentum=0.9)
    dumper = dump.Dumper(str(tmp_path)).start()
    try:
        for _ in range(3):
            for net, o, inp, tgt in ((model, opt, x, target), (lazy, lazy_opt, lx, ly)):
                o.zero_grad()
                loss = torch.nn.functional.mse_loss(net(inp), tgt)
                loss.backward()
                o.step()
                if net is lazy:
                    lt.mark_step()
                    torch.testing.assert_close(loss.item(), eager, rtol=1e-5, atol=1e-6)
                else:
                    eager = loss.item()
    finally:
        dumper.stop()
    for (name, p), q in zip(model.named_parameters(), lazy.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-4, atol=1e-5, msg=name)
    assert_laid_out(lazy.fc1.weight, ("model",), mesh)
    assert_laid_out(lazy_opt.state[lazy.fc2.weight]["momentum_buffer"], (None, "model"), mesh)
    if lazyx.backend() != "xla":
        return
    # the training step's program: the largest compiled module
    hlo_files = sorted(glob.glob(os.path.join(tmp_path, "*.hlo.txt")), key=os.path.getsize)
    hlo = open(hlo_files[-1]).read()
    counts = collective_counts(hlo)
    assert counts["all-reduce"] > 0, counts      # row-parallel outputs, data-parallel grads
    # each device holds a quarter of fc1's rows: 128/4 x 32 as a parameter of the program
    assert re.search(r"f32\[32,32\]\{[0-9,]*\} parameter", hlo), hlo[:2000]
    ir = open(hlo_files[-1].replace(".hlo.txt", ".ir.txt")).read()
    assert "sharding=(model) on mesh(data=2, model=4)" in ir
