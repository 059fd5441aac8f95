"""nn-module bugs that torch's ModuleInfo suite (scripts/moduleinfo_report.py) found on
lt.device, each compared with eager CPU torch."""
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

