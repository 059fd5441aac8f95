"""PyTorch systems: eager, torch.compile (Inductor, and lazyx as its Dynamo backend), torch._lazy
(TorchScript backend), and lazyx through its torch frontend. One model definition serves all
five; only the device, the compiler and the barrier differ."""
import math

import torch
import torch.nn.functional as F
from torch import nn

from . import workloads as wl
from .harness import NotAvailable, make_step


def _owned(array):
    """A tensor torch allocated, holding `array`'s values, as a torch program's data would be.
    (torch.from_numpy shares NumPy's buffer, aligned to 16 bytes: XLA:CPU copies a host buffer
    below 64-byte alignment at every call, 0.3-0.5 ms of torch.compile(lazyx)'s W3 step, where
    jax.jit's input is its own array. Torch's allocator aligns to 64.)"""
    return torch.from_numpy(array).clone()


def _linear(weight_in_out, bias):
    lin = nn.Linear(*weight_in_out.shape)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(weight_in_out.T.copy()))
        lin.bias.copy_(torch.from_numpy(bias))
    return lin


class MLP(nn.Module):
    def __init__(self, params):
        super().__init__()
        w1, b1, w2, b2, w3, b3 = params
        self.net = nn.Sequential(_linear(w1, b1), nn.ReLU(), _linear(w2, b2), nn.ReLU(),
                                 _linear(w3, b3))

    def forward(self, x):
        return self.net(x)


class EncoderBlock(nn.Module):
    """Pre-LN encoder block written out, so every framework computes the same math."""

    def __init__(self, p):
        super().__init__()
        self.ln1, self.ln2 = (nn.LayerNorm(wl.D_MODEL, eps=wl.LN_EPS) for _ in range(2))
        with torch.no_grad():
            for ln, name in ((self.ln1, "ln1"), (self.ln2, "ln2")):
                ln.weight.copy_(torch.from_numpy(p[name + "_g"]))
                ln.bias.copy_(torch.from_numpy(p[name + "_b"]))
        self.q, self.k, self.v, self.o = (_linear(p["w" + c], p["b" + c]) for c in "qkvo")
        self.ff1, self.ff2 = _linear(p["w1"], p["b1"]), _linear(p["w2"], p["b2"])

    def forward(self, x):
        b, s, d = x.shape
        dh = d // wl.HEADS

        def heads(t):
            return t.reshape(b, s, wl.HEADS, dh).transpose(1, 2)

        a = self.ln1(x)
        q, k, v = heads(self.q(a)), heads(self.k(a)), heads(self.v(a))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        h = x + self.o(ctx)
        return h + self.ff2(F.relu(self.ff1(self.ln2(h))))


def _mse(out, target):
    diff = out - target
    return (diff * diff).mean()


def _training(workload, device, barrier, compile_fn=None, lazy=False, step_compile=None):
    if workload == "W1":
        model = MLP(wl.mlp_params())
        x, labels, _ = wl.mlp_data()
        inputs = (_owned(x), _owned(labels))
        loss_of_model = F.cross_entropy
    else:
        model = EncoderBlock(wl.block_params())
        inputs = tuple(_owned(a) for a in wl.block_data())
        loss_of_model = _mse
    model = model.to(device)
    inputs = tuple(t.to(device) for t in inputs)
    # foreach=False: the same per-parameter update on every device (CPU eager uses it anyway).
    opt = torch.optim.SGD(model.parameters(), lr=wl.LR, foreach=False)

    def loss_fn(x, y):
        return loss_of_model(model(x), y)

    if compile_fn is not None:
        loss_fn = compile_fn(loss_fn)

    def train():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(*inputs)
        loss.backward()
        opt.step()
        return loss
    if step_compile is not None:  # the whole step, backward and optimizer included
        train = step_compile(train)
    return make_step(train, barrier, _read, lazy, replay=step_compile is not None)


def _chain(workload, device, barrier, compile_fn=None, lazy=False, step_compile=None):
    x = _owned(wl.chain_input(workload)).to(device)
    chain = wl.chain_of(workload)
    unary = {"tanh": torch.tanh}

    def fn(t):
        return wl.run_chain(t, chain, unary).sum()

    if compile_fn is not None:
        fn = compile_fn(fn)
    if step_compile is not None:
        fn = step_compile(fn)
    return make_step(lambda: fn(x), barrier, _read, lazy, wl.OPS_PER_STEP[workload],
                     replay=step_compile is not None)


def _read(t):
    return t.item()


def _build(workload, device, barrier, compile_fn=None, lazy=False, step_compile=None):
    if workload in ("W1", "W2"):
        return _training(workload, device, barrier, compile_fn, lazy, step_compile)
    return _chain(workload, device, barrier, compile_fn, lazy, step_compile)


def _nothing():
    pass


def torch_eager(workload):
    return _build(workload, "cpu", _nothing)


def torch_compile(workload):
    import shutil
    if shutil.which("gcc") is None and shutil.which("g++") is None:
        raise NotAvailable("inductor needs a C++ compiler (none on PATH)")
    torch._dynamo.reset()
    return _build(workload, "cpu", _nothing, compile_fn=torch.compile)


_lazy_ready = []


def torch_lazy(workload):
    if not _lazy_ready:  # the backend registers itself once per process
        try:
            from torch._lazy import ts_backend
            ts_backend.init()
        except Exception as err:  # the TorchScript backend is not built into every torch
            raise NotAvailable(f"torch._lazy TorchScript backend: {type(err).__name__}: {err}")
        _lazy_ready.append(True)

    from torch import _lazy

    def barrier():
        _lazy.mark_step()
        _lazy.wait_device_ops()
    return _build(workload, "lazy", barrier)


def lazyx_torch(workload):
    try:
        import lazyx.frontends.torch as lt
    except ImportError as err:
        raise NotAvailable(f"lazyx torch frontend not importable: {err}")
    return _build(workload, lt.device, lt.mark_step, lazy=True)


def lazyx_torch_compile(workload):
    try:
        import lazyx
        import lazyx.frontends.torch as lt
    except ImportError as err:
        raise NotAvailable(f"lazyx torch frontend not importable: {err}")
    return _build(workload, lt.device, lt.mark_step, lazy=True, step_compile=lazyx.compile)


def torch_compile_lazyx(workload):
    """torch.compile with lazyx as the Dynamo backend: CPU tensors in and out, each captured
    graph (forward, backward) compiled once by XLA through lazyx. torch.compile's defaults, as
    the Inductor row uses them (dynamic=False would patch Dynamo's config at every call)."""
    try:
        import lazyx.frontends.torch as lt
    except ImportError as err:
        raise NotAvailable(f"lazyx torch frontend not importable: {err}")
    torch._dynamo.reset()
    return _build(workload, "cpu", _nothing,
                  compile_fn=lambda fn: torch.compile(fn, backend=lt.dynamo_backend))


SYSTEMS = {"torch-eager": torch_eager, "torch.compile": torch_compile,
           "torch.compile(lazyx)": torch_compile_lazyx,
           "torch._lazy": torch_lazy, "lazyx-torch": lazyx_torch,
           "lazyx-torch+compile": lazyx_torch_compile}
