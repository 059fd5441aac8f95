"""Bugs from the third round of PyTorch user exploration, each checked against eager CPU torch.

Cases that used to kill the process (std::terminate inside the autograd engine) run in a
child process, so a regression fails the test instead of the whole run.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import lazyx
import lazyx.frontends.torch as lt

D = lt.device


def _child(code):
    """Run `code` in a fresh interpreter (same backend); its last stdout line is JSON."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OMP_NUM_THREADS="1")
    prelude = ("import json, warnings; warnings.filterwarnings('ignore')\n"
               "import torch, torch.nn as nn, torch.nn.functional as F\n"
               "import lazyx, lazyx.frontends.torch as lt\nD = lt.device\n")
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------ 1. an error raised during backward

def test_an_error_raised_in_a_backward_hook_reaches_the_caller():
    # eager: the hook's ValueError comes out of backward(); on lt.device the process died
    out = _child("""
        res = {}
        for dev in ("cpu", D):
            w = torch.ones(3).to(dev).requires_grad_()
            def hook(g):
                raise ValueError("bad gradient")
            h = w.register_hook(hook)
            try:
                (w * 2).sum().backward()
                res[str(dev)] = "no error"
            except ValueError as e:
                res[str(dev)] = "ValueError: " + str(e)
            h.remove()
            (w * 3).sum().backward()  # the engine still works afterwards
            res[str(dev) + " grad"] = w.grad.cpu().tolist()
        print(json.dumps(res))
    """)
    assert out["cpu"] == out["lazyx:0"] == "ValueError: bad gradient"
    assert out["cpu grad"] == out["lazyx:0 grad"] == [3.0, 3.0, 3.0]


_STEP = """
def setup(KIND, D):
    torch.manual_seed(0)
    loc = nn.Linear(64, 6).to(D); head = nn.Linear(64, 3).to(D)
    opt = torch.optim.SGD([*loc.parameters(), *head.parameters()], lr=0.1)
    norms = []
    if KIND == "hook":
        head.weight.register_hook(lambda g: norms.append(g.norm().item()) or g)
    def step(x, y):
        theta = loc(x.flatten(1)).view(-1, 2, 3) + torch.tensor(
            [[1., 0, 0], [0, 1, 0]], device=x.device)
        if KIND == "stn":  # grid_sampler_2d_backward has no lowering: a fallback in backward
            xs = F.grid_sample(x, F.affine_grid(theta, x.shape, align_corners=False),
                               align_corners=False)
        else:
            xs = x + theta.sum()
        loss = F.cross_entropy(head(xs.flatten(1)), y)
        opt.zero_grad(); loss.backward(); opt.step(); return loss
    torch.manual_seed(1)
    x = torch.randn(4, 1, 8, 8).to(D); y = torch.tensor([0, 1, 2, 1]).to(D)
    return step, x, y, norms, head
"""


def test_lazyx_compile_refuses_a_read_in_backward_with_a_compile_error():
    out = _child(_STEP + """
res = {}
for kind in ("stn", "hook"):
    step, x, y, _, _ = setup(kind, D)
    try:
        lazyx.compile(step)(x, y)
        res[kind] = None
    except lazyx.CompileError as e:
        res[kind] = str(e)
print(json.dumps(res))
""")
    for kind in ("stn", "hook"):
        assert out[kind] is not None and "observes a value at" in out[kind], out
        assert "<string>:" in out[kind]  # the user's line (the child's code is "<string>")

