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
        if KIND == "bag":  # a fallback in backward only: embedding_bag's, scale_grad_by_freq
            bags = F.embedding_bag(torch.tensor([1, 2, 2, 5], device=x.device), loc.weight.T,
                                   torch.tensor([0, 2], device=x.device),
                                   scale_grad_by_freq=True)
            xs = x + theta.sum() + bags.sum()
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
for kind in ("bag", "hook"):
    step, x, y, _, _ = setup(kind, D)
    try:
        lazyx.compile(step)(x, y)
        res[kind] = None
    except lazyx.CompileError as e:
        res[kind] = str(e)
print(json.dumps(res))
""")
    for kind in ("bag", "hook"):
        assert out[kind] is not None and "observes a value at" in out[kind], out
        assert "<string>:" in out[kind]  # the user's line (the child's code is "<string>")



# ------------------------------------------------ 2. index_select / index_add, 0-d index

def _both(fn):
    """fn(device) on CPU and on lt.device: the results, or the exception types."""
    out = []
    for dev in ("cpu", D):
        try:
            r = fn(dev)
            out.append([t.cpu() if isinstance(t, torch.Tensor) else t for t in r])
        except Exception as e:  # noqa: BLE001 -- compared with eager's
            out.append(type(e))
    return out


def test_index_select_with_a_0d_index_has_eager_gradients():
    def run(dev):
        x = torch.arange(12.).view(4, 3).to(dev).requires_grad_()
        y = x.index_select(0, torch.tensor(2, device=dev))
        (y * torch.arange(3.).to(dev)).sum().backward()
        return y, x.grad
    eager, lazy = _both(run)
    for e, g in zip(eager, lazy):
        torch.testing.assert_close(g, e)


@pytest.mark.parametrize("case", [
    ((4, 3), 0, [2], (1, 3), 1),          # a 0-d index, given below as torch.tensor(2)
    ((4, 3), 0, [3, 0, 3, 1], (4, 3), 1),  # repeats accumulate
    ((2, 5, 3), 1, [4, 1], (2, 2, 3), 2.5),
    ((2, 5, 3), -1, [0, 0, 2], (2, 5, 3), -1),
    ((5,), 0, [1], (), 1),                # eager refuses a 0-d source here
    ((), 0, [0], (), 3),
])
def test_index_add_matches_eager(case):
    shape, dim, index, src_shape, alpha = case
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g)
    src = torch.randn(src_shape, generator=g)
    idx = torch.tensor(index[0]) if src_shape in ((1, 3), ()) else torch.tensor(index)
    for dtype in (torch.float32, torch.int64):
        a, s = (x, src) if dtype.is_floating_point else ((x * 10).long(), (src * 10).long())
        al = alpha if dtype.is_floating_point or isinstance(alpha, int) else 2
        eager, lazy = _both(lambda dev: [a.to(dev).index_add(dim, idx.to(dev), s.to(dev),
                                                             alpha=al)])
        if isinstance(eager, type):
            assert lazy is eager
        else:
            torch.testing.assert_close(lazy, eager)


def test_index_add_refuses_what_eager_refuses():
    def run(dev):  # 1 index against 3 source rows
        return [torch.zeros(4, 3, device=dev).index_add(0, torch.tensor(2, device=dev),
                                                        torch.ones(3, device=dev))]
    eager, lazy = _both(run)
    assert eager is RuntimeError and lazy is RuntimeError


def test_adaptive_log_softmax_with_one_target_in_a_tail_cluster_trains():
    # row_indices = mask.nonzero().squeeze() is 0-d when one target falls in a tail cluster
    def run(dev):
        torch.manual_seed(0)
        asm = nn.AdaptiveLogSoftmaxWithLoss(16, 10, cutoffs=[4, 7]).to(dev)
        h = torch.randn(5, 16).to(dev).requires_grad_()
        target = torch.tensor([0, 1, 5, 2, 3]).to(dev)  # one target (5) in the first tail
        out = asm(h, target)
        out.loss.backward()
        return [out.loss.detach(), h.grad, asm.tail[0][1].weight.grad]
    eager, lazy = _both(run)
    torch.testing.assert_close(lazy, eager, rtol=1e-4, atol=1e-5)


# ------------------------------------------------ 3. parametrizations added on the device

class _Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


@pytest.mark.parametrize("foreach", [False, True])
def test_parametrizations_registered_after_to_device_train_as_eager(foreach):
    import torch.nn.utils.parametrize as P
    from torch.nn.utils.parametrizations import orthogonal, spectral_norm, weight_norm

    def run(dev):
        torch.manual_seed(0)  # all made first: spectral_norm draws on the device below
        sym, conv, sn, orth = (m.to(dev) for m in (nn.Linear(4, 4), nn.Conv1d(3, 4, 3),
                                                   nn.Linear(4, 4), nn.Linear(4, 4)))
        P.register_parametrization(sym, "weight", _Symmetric())  # no right_inverse
        conv = weight_norm(conv)                                  # right_inverse: (g, v)
        sn = spectral_norm(sn)                                    # right_inverse: itself
        orth = orthogonal(orth)                                   # right_inverse: new
        with torch.no_grad():  # power iteration's start vectors: lt.device draws other numbers
            sn.parametrizations.weight[0]._u.copy_(torch.tensor([.5, -.5, .5, .5]))
            sn.parametrizations.weight[0]._v.copy_(torch.tensor([.5, .5, -.5, .5]))
        params = [*sym.parameters(), *conv.parameters(), *sn.parameters(), *orth.parameters()]
        opt = torch.optim.Adam(params, lr=0.01, foreach=foreach)
        x = torch.linspace(-1, 1, 24).view(1, 3, 8).to(dev)
        for _ in range(2):
            loss = orth(sn(sym(conv(x).mean(-1)))).square().sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        P.remove_parametrizations(sym, "weight")  # leave_parametrized: a set_ again
        P.remove_parametrizations(conv, "weight")
        return [loss.detach(), sym.weight.detach(), conv.weight.detach(),
                sn.weight.detach(), orth.weight.detach()]
    eager, lazy = _both(run)
    assert not isinstance(lazy, type), lazy
    torch.testing.assert_close(lazy, eager, rtol=1e-4, atol=1e-5)


# ------------------------------------------------ 4. torch.compile: a buffer made and written

def test_torch_compile_on_lazy_inputs_writes_into_a_tensor_it_made():
    def aggregate(x, src, dst):  # GNN message passing: scatter into a fresh buffer
        return torch.zeros(x.shape[0], x.shape[1], device=x.device).index_add_(0, dst,
                                                                               x[src] * 2)

    def add_into(x):
        return torch.zeros(x.shape, device=x.device).add_(x).sum()

    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 3, generator=g)
    src, dst = torch.tensor([0, 1, 2, 4]), torch.tensor([1, 1, 3, 0])
    for fn, args in ((aggregate, (x, src, dst)), (add_into, (x,))):
        torch._dynamo.reset()
        got = torch.compile(fn, backend=lt.dynamo_backend)(*[a.to(D) for a in args])
        assert got.device == D
        torch.testing.assert_close(got.cpu(), fn(*args))


# ------------------------------------------------ 5. pack_padded_sequence's lengths

def _outcome(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 -- compared with eager's
        return type(e)


def test_pack_padded_sequence_reads_lengths_on_the_device():
    from torch.nn.utils.rnn import pack_padded_sequence

    def run(dev, lengths, compiled=None):
        torch.manual_seed(0)
        rnn = nn.GRU(4, 5, batch_first=True)
        x = torch.randn(3, 5, 4)
        rnn.to(dev)

        def f(x, lens):
            out, h = rnn(pack_padded_sequence(x, lens, batch_first=True,
                                              enforce_sorted=lengths.dim() != 1))
            return [out.data, out.batch_sizes, h]
        if compiled:
            f = lazyx.compile(f, on_observe=compiled)
        return [t.cpu() for t in f(x.to(dev), lengths.to(dev))]

    for lengths in (torch.tensor([5, 3, 2]), torch.tensor([2, 5, 4]), torch.tensor([[5, 3, 2]])):
        eager = _outcome(lambda: run("cpu", lengths))
        lazy = _outcome(lambda: run(D, lengths))  # lengths on lt.device: RecursionError
        if isinstance(eager, type):
            assert lazy is eager  # torch's own error for 2-d lengths
            continue
        torch.testing.assert_close(lazy, eager, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(run(D, lengths, "split"), eager, rtol=1e-4, atol=1e-5)
    with pytest.raises(lazyx.CompileError, match="observes a value at"):
        run(D, torch.tensor([5, 3, 2]), "raise")


# ------------------------------------------------ 6. who read a value inside a compiled step

def test_compile_error_names_torchs_own_code_that_read_a_value(monkeypatch):
    torch.manual_seed(0)
    x, y = torch.randn(5, 4).to(D), torch.tensor([0, 1, 1, 0, 1]).to(D)

    m = nn.Linear(4, 2).to(D)
    opt = torch.optim.Adam(m.parameters())  # not fused: GradScaler reads found_inf
    scaler = torch.amp.GradScaler("lazyx")

    def amp_step(x, y):
        with torch.autocast("lazyx", dtype=torch.float16):
            loss = F.cross_entropy(m(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    bn = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3, momentum=None)).to(D)

    def bn_step(x):
        return bn(x).sum()

    enc = nn.Linear(4, 4).to(D)

    def vae_step(x, validate_args=True):  # (it validates its scale: `scale > 0` on the host)
        mu, log_var = enc(x).chunk(2, dim=1)
        scale = (0.5 * log_var).exp()
        return torch.distributions.Normal(mu, scale, validate_args=validate_args).rsample().sum()

    monkeypatch.setattr(torch.distributions.Distribution, "_validate_args", True)  # (below)
    for step, asker, advice in ((amp_step, "GradScaler._maybe_opt_step", "fused=True"),
                                (bn_step, "_BatchNorm.forward", "momentum"),
                                (vae_step, "Distribution.__init__", "validate_args=False")):
        with pytest.raises(lazyx.CompileError) as err:
            lazyx.compile(step)(*((x, y) if step is amp_step else (x,)))
        message = str(err.value)
        assert asker in message and advice in message, message
        assert "no lowering" not in message, message
    # the advice works: without validation the step replays
    vae = lazyx.compile(vae_step)
    lazyx.reset_metrics()
    for _ in range(3):
        with torch.no_grad():
            vae(x, validate_args=False)
    assert lazyx.metrics()["replays"] >= 1


def test_a_distribution_validating_by_default_replays_as_under_torch_compile(monkeypatch):
    """torch.compile turns torch.distributions' validation off (process-wide, at its first
    call); lazyx.compile while it traces a step, so a VAE's step replays. The uncompiled run
    still validates, as does the process after the trace."""
    # (on, as in a fresh process: a torch.compile test in this process turned it off)
    monkeypatch.setattr(torch.distributions.Distribution, "_validate_args", True)
    torch.manual_seed(0)
    enc, dec = nn.Linear(6, 4).to(D), nn.Linear(2, 6).to(D)
    opt = torch.optim.SGD([*enc.parameters(), *dec.parameters()], lr=0.1)
    x = torch.randn(8, 6)

    def step(x):
        opt.zero_grad()
        mu, log_var = enc(x).chunk(2, dim=1)
        q = torch.distributions.Normal(mu, (0.5 * log_var).exp())
        prior = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(mu))
        loss = F.mse_loss(dec(q.rsample()), x) + \
            torch.distributions.kl_divergence(q, prior).sum(1).mean()
        loss.backward()
        opt.step()
        return loss.detach()

    compiled = lazyx.compile(step)
    lazyx.reset_metrics()
    torch.manual_seed(1)
    losses = [compiled(x.to(D)).item() for _ in range(4)]
    assert lazyx.metrics()["replays"] >= 2
    assert torch.distributions.Distribution._validate_args  # (put back after the trace)
    assert all(a > b for a, b in zip(losses, losses[1:])), losses  # (it trains)
    with pytest.raises(ValueError, match="scale"):  # the uncompiled run still validates
        torch.distributions.Normal(torch.zeros(2).to(D), -torch.ones(2).to(D))
