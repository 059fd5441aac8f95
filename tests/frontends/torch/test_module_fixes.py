"""nn-module bugs that torch's ModuleInfo suite (scripts/moduleinfo_report.py) found on
lt.device, each compared with eager CPU torch."""
import pytest
import torch
import torch.nn.functional as F

import lazyx
import lazyx.frontends.torch as lt


def _fallbacks():
    return dict(lazyx.metrics()["fallback_ops"])


def _same_grads(fn, x):
    """fn(x).sum()'s value and gradient on lt.device equal eager's, NaNs where eager's are."""
    eager = x.clone().requires_grad_()
    expected = fn(eager)
    expected.sum().backward()
    lazy = x.to(lt.device).requires_grad_()
    before = _fallbacks()
    got = fn(lazy)
    got.sum().backward()
    torch.testing.assert_close(got.detach().cpu(), expected.detach(), equal_nan=True)
    torch.testing.assert_close(lazy.grad.cpu(), eager.grad, equal_nan=True)
    assert _fallbacks() == before


def test_relu_passes_the_grad_of_a_nan():
    # torch's threshold_backward zeroes where x <= threshold: NaN is not, so its grad passes
    # (lazyx kept x > threshold, which dropped it: LPPool's grads lost their NaNs)
    x = torch.tensor([float("nan"), -1.0, 0.0, 2.0])
    _same_grads(torch.relu, x)
    _same_grads(lambda t: F.threshold(t, 0.5, 7.0), x)


def test_lp_pool_with_a_fractional_norm_of_negative_inputs():
    x = torch.randn(2, 3, 7, generator=torch.Generator().manual_seed(0))
    _same_grads(lambda t: F.lp_pool1d(t, 1.5, 2), x)
    _same_grads(lambda t: F.lp_pool2d(t, 1.5, 2), x)


@pytest.mark.parametrize("shape", [(7,), (4, 7), ()], ids=["1d", "2d", "0d"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_multilabel_margin_loss_and_its_grad(shape, reduction):
    # torch's decomposition (which lazyx ran) adds terms for the slots after a -1 and gives
    # a 1-D input's "none" shape (1,); its backward fell back to CPU torch
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen)
    target = torch.randint(-1, shape[-1] if shape else 1, shape, generator=gen)
    if shape == (4, 7):
        target[0] = torch.tensor([3, 0, -1, 1, 2, 2, 5])  # labels after the -1 are ignored
        target[1] = torch.tensor([1, 1, 4, -1, 0, 0, 0])  # a repeated label counts twice
    _same_grads(lambda t: F.multilabel_margin_loss(t, target.to(t.device), reduction=reduction),
                x)


@pytest.mark.parametrize("shrink", [F.hardshrink, F.softshrink], ids=["hard", "soft"])
@pytest.mark.parametrize("lambd", [0.5, 0.0, 1.25])
def test_shrink_grads_are_lowered(shrink, lambd):
    # their backwards ran on CPU torch; the bounds +-lambd themselves get a zero grad
    x = torch.tensor([float("nan"), -2.0, -1.25, -0.5, 0.0, 0.3, 0.5, 1.25, 3.0])
    _same_grads(lambda t: shrink(t, lambd), x)


@pytest.mark.skipif(not hasattr(torch.nn, "LinearCrossEntropyOptions"), reason="torch < 2.13")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("extras", ["plain", "bias_weight_ignored_rows"])
def test_chunked_linear_cross_entropy_is_lowered(reduction, extras):
    # F.linear_cross_entropy with `options` runs torch 2.13's chunked custom ops, whose Python
    # kernels ran on CPU torch; the mean/sum op returns the grads its forward computed
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(8, 5, generator=gen), torch.randn(4, 5, generator=gen)
    target = torch.randint(0, 4, (8,), generator=gen)
    kwargs = {"reduction": reduction, "options": torch.nn.LinearCrossEntropyOptions()}
    if extras != "plain":
        target[2] = target[5] = -100  # the default ignore_index
        kwargs.update(linear_bias=torch.randn(4, generator=gen),
                      weight=torch.rand(4, generator=gen) + 0.5)

    def run(device):
        xs, ws = x.clone().to(device).requires_grad_(), w.clone().to(device).requires_grad_()
        extra = {k: (v.clone().to(device).requires_grad_() if k == "linear_bias"
                     else v.to(device))
                 if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        loss = F.linear_cross_entropy(xs, ws, target.to(device), **extra)
        loss.sum().backward()
        grads = [xs.grad, ws.grad] + ([extra["linear_bias"].grad] if "linear_bias" in extra
                                      else [])
        return [t.detach().cpu() for t in [loss, *grads]]

    expected = run("cpu")
    before = _fallbacks()
    got = run(lt.device)
    assert _fallbacks() == before
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dims,shape,kernel,size", [
    (2, (2, 3, 9, 11), (2, 3), (5, 4)),
    (2, (3, 7, 6), 2, (1, 5)),              # unbatched; a single output row
    (3, (2, 2, 6, 7, 5), (2, 3, 2), (3, 4, 2)),
    (3, (2, 5, 6, 4), 2, (2, 3, 2)),        # unbatched
], ids=["2d", "2d-unbatched", "3d", "3d-unbatched"])
def test_fractional_max_pool_with_given_samples(dims, shape, kernel, size):
    # aten.fractional_max_pool2d/3d and their backwards ran on CPU torch
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen)
    samples = torch.rand(shape[0] if len(shape) == dims + 2 else 1, shape[-dims - 1], dims,
                         generator=gen)
    pool = F.fractional_max_pool2d if dims == 2 else F.fractional_max_pool3d

    def run(t):
        return pool(t, kernel, output_size=size, return_indices=True,
                    _random_samples=samples.to(t.device))

    _, expected_indices = run(x)
    _same_grads(lambda t: run(t)[0], x)
    torch.testing.assert_close(run(x.to(lt.device))[1].cpu(), expected_indices)
