"""Bugs from the fifth round of PyTorch user reports, each checked against eager CPU torch."""
import warnings

import pytest
import torch
import torch.nn as nn

import lazyx
import lazyx.frontends.torch as lt

D = lt.device


def _both(fn, *inputs):
    """fn on CPU tensors and on their lazy copies: (eager result, lazy result)."""
    return fn(*[t.clone() for t in inputs]), fn(*[t.clone().to(D) for t in inputs])


def _same(eager, lazy):
    if isinstance(eager, (list, tuple)):
        assert len(eager) == len(lazy)
        for e, z in zip(eager, lazy):
            _same(e, z)
    elif isinstance(eager, torch.Tensor):
        assert lazy.device == D
        torch.testing.assert_close(lazy.cpu(), eager)
    else:
        assert eager == lazy


# ------------------------------------------------ 1. views of outside tensors in inference_mode

VIEWS = {
    "slice_sum": lambda x: x[1:3].sum(),
    "t": lambda x: x.t() * 1,
    "view": lambda x: x.view(12),
    "transpose": lambda x: x.transpose(0, 1),
    "reshape_flatten": lambda x: (x.reshape(12), x.flatten()),
    "matmul_T": lambda x: x @ x.T,
    "select_unsqueeze": lambda x: x[1].unsqueeze(0) + x[0:1],
    "chunk": lambda x: x.chunk(2, dim=1),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_of_a_tensor_made_before_inference_mode(name):
    def run(x):
        with torch.inference_mode():
            out = VIEWS[name](x)
        flat = out if isinstance(out, tuple) else (out,)
        return out, [(t.is_inference(), t.requires_grad) for t in flat]
    x = torch.randn(4, 3)
    (eager, eager_kinds), (lazy, lazy_kinds) = _both(run, x)
    _same(eager, lazy)
    assert lazy_kinds == eager_kinds  # a view of a normal tensor is normal, a new one is not


def test_writes_through_views_inside_inference_mode_reach_the_base():
    def run(cache, v):
        with torch.inference_mode():
            cache[1:3] = v          # a KV-cache write
            cache[0].fill_(2)
            cache[:, 1] += 1
            read = cache[1:3].sum()
        return cache * 1, read, cache.is_inference()
    _same(*_both(run, torch.zeros(4, 3), torch.randn(2, 3)))


def test_tensors_made_inside_inference_mode_are_inference_tensors():
    def run(x):
        with torch.inference_mode():
            y = x * 2
            y[0] = 5           # a write into an inference tensor, inside the block
            z = y.view(12)     # a view of an inference tensor
            y.add_(x)
            kinds = (y.is_inference(), z.is_inference(), y.requires_grad)
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
            y.add_(1)
        return y, z, kinds
    _same(*_both(run, torch.randn(4, 3)))


class _Tiny(nn.Module):
    """GPT's learned positions (self.pos[:, :T]), MNIST's x.view(-1, 784), and a
    Llama-style KV cache written under @torch.inference_mode()."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, 8, 16))
        self.fc = nn.Linear(16, 16)
        self.register_buffer("cache", torch.zeros(2, 8, 16))

    @torch.inference_mode()
    def forward(self, x, start):
        T = x.shape[1]
        h = self.fc(x + self.pos[:, :T])
        self.cache[:, start:start + T] = h
        return self.cache[:, :start + T].reshape(2, -1).sum(-1)


def test_a_module_under_inference_mode_decorator_matches_eager():
    torch.manual_seed(0)
    model = _Tiny()
    lazy_model = _Tiny().to(D)
    lazy_model.load_state_dict(model.state_dict())
    x = torch.randn(2, 3, 16)
    for start in (0, 3):
        _same(model(x, start), lazy_model(x.to(D), start))
    _same(model.cache, lazy_model.cache)
    mnist = nn.Sequential(nn.Linear(784, 10))
    lazy_mnist = nn.Sequential(nn.Linear(784, 10)).to(D)
    lazy_mnist.load_state_dict(mnist.state_dict())
    images = torch.randn(2, 1, 28, 28)
    lazy_images = images.to(D)
    with torch.inference_mode():
        _same(mnist(images.view(-1, 784)), lazy_mnist(lazy_images.view(-1, 784)))


def test_a_users_item_inside_inference_mode_is_an_item_sync_not_a_fallback():
    x = torch.randn(4, 3)
    lazy = x.to(D)
    lt.mark_step()
    lazyx.reset_metrics()
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("error")  # no "torch's own code ... reads a lazy value"
        got = ((lazy * 2).sum().item(), lazy[1:3].sum().item())
    with torch.inference_mode():
        want = ((x * 2).sum().item(), x[1:3].sum().item())
    assert got == pytest.approx(want, rel=1e-6)
    m = lazyx.metrics()
    assert m["fallback_ops"] == {}
    assert m["sync_causes"] == {"item": 2}


# ------------------------------------------------ 2. torch.compile of an LSTM under no_grad

@pytest.mark.parametrize("on_device", [False, True])
def test_compiled_lstm_under_no_grad_matches_eager(on_device):
    # the fallback op mkldnn_rnn_layer returns an undefined (None) workspace without grad
    with torch._dynamo.config.patch(allow_rnn=True):
        _compiled_lstm(on_device)
    torch._dynamo.reset()


def _compiled_lstm(on_device):
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True)
    x = torch.randn(2, 5, 4)
    with torch.no_grad():
        want = lstm(x)
        model = lstm
        if on_device:
            model = nn.LSTM(4, 6, num_layers=2, batch_first=True).to(D)
            model.load_state_dict(lstm.state_dict())
        got = torch.compile(lambda t: model(t), backend="lazyx")(x.to(D) if on_device else x)
    out, (h, c) = got
    for g, w in ((out, want[0]), (h, want[1][0]), (c, want[1][1])):
        torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-5)


# ------------------------------------------------ 3. factories torch cannot build on lt.device

FACTORIES = {
    "triu_indices": [(4, 4, 1), (3, 5, -1), (5, 3, 2), (0, 0, 0), (3, 3)],
    "tril_indices": [(3, 5, -1), (4, 4, 1), (2, 6, 3), (3, 3)],
    "kaiser_window": [(6,), (7, False), (5, True, 5.0), (8, False, 0.5), (1,), (0,)],
    "range": [(0, 3), (0, 3, 0.5), (-2.5, 4.0, 1.5), (5, 1, -1)],
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
@pytest.mark.parametrize("dtype", [None, torch.float64, torch.int32])
def test_factories_on_the_lazy_device_match_eager(name, dtype):
    fn = getattr(torch, name)
    for args in FACTORIES[name]:
        if dtype == torch.int32 and any(isinstance(a, float) for a in args):
            continue  # (eager's own integer range with a step cast to 0 dies of SIGFPE)
        kwargs = {} if dtype is None else {"dtype": dtype}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch.range is deprecated
            try:
                want = fn(*args, **kwargs)
            except RuntimeError as err:  # (an integer window): the same error at the call
                with pytest.raises(RuntimeError, match=str(err)[:40].replace("(", ".")):
                    fn(*args, **kwargs, device=D)
                continue
            got = fn(*args, **kwargs, device=D)
        assert got.device == D and got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got.cpu(), want, rtol=2e-6, atol=1e-6)


# ------------------------------------------------ 4. a sort's int64 indices, when unused

@pytest.mark.parametrize("fn", [lambda x: x.sort().values, torch.msort,
                                lambda x: x.topk(2).values,
                                lambda x: x.sort(descending=True, stable=True)[0]])
def test_values_of_a_sort_compute_without_a_jax_truncation_warning(fn):
    # the indices are an int64 result of the same node: x64 must be on for its program
    x = torch.tensor([1.0, -2.0, 0.5, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        got = fn(x.to(D)).cpu()
    torch.testing.assert_close(got, fn(x))


# ------------------------------------------------ 6. randperm on the device

def test_randperm_on_the_device_is_a_lazy_uniform_permutation():
    # lazyx's own keyed stream, as every random op: not CPU torch's numbers, so the contract
    # (a permutation of torch's dtype, new each call, repeated by a seed) and the distribution
    torch.manual_seed(5)
    lazyx.reset_metrics()
    draws = [torch.randperm(6, device=D) for _ in range(600)]
    assert lazyx.metrics()["fallback_ops"] == {}
    draws = torch.stack([d.cpu() for d in draws])
    assert draws.dtype == torch.int64
    assert torch.equal(draws.sort(dim=1).values, torch.arange(6).expand(600, 6))
    first = torch.bincount(draws[:, 0], minlength=6).double() / 600
    assert (first - 1 / 6).abs().max() < 0.07
    torch.manual_seed(5)
    assert torch.equal(torch.randperm(6, device=D).cpu(), draws[0])
    for dtype in (torch.int32, torch.float32):
        got = torch.randperm(4, device=D, dtype=dtype).cpu()
        assert got.dtype == dtype and sorted(got.tolist()) == [0, 1, 2, 3]
    assert torch.randperm(0, device=D).cpu().shape == torch.randperm(0).shape


def test_a_mixup_step_with_randperm_compiles_and_replays():
    def step(x, lam):
        perm = torch.randperm(x.shape[0], device=x.device)
        return lam * x + (1 - lam) * x[perm], perm
    run = lazyx.compile(step)
    x = torch.randn(8, 3)
    lazyx.reset_metrics()
    perms = []
    for lam in (0.3, 0.6, 0.9):
        mixed, perm = run(x.to(D), lam)
        perm = perm.cpu()
        perms.append(perm.tolist())
        torch.testing.assert_close(mixed.cpu(), step_with(x, lam, perm))
    assert lazyx.metrics()["replays"] >= 1
    assert len({tuple(p) for p in perms}) > 1  # each replay draws a new permutation


def step_with(x, lam, perm):
    return lam * x + (1 - lam) * x[perm]
