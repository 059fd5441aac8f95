"""Convolution gradients on lazy tensors against eager CPU torch: grouped, depthwise,
transposed, dilated, strided (the IR's general conv VJP behind aten.convolution_backward)."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.torch as lt


def _grads(conv, x, lazy):
    conv = conv.to(lt.device) if lazy else conv
    x = (x.to(lt.device) if lazy else x.clone()).requires_grad_()
    y = conv(x)
    (y * torch.linspace(-1, 1, y.numel(), device=y.device).reshape(y.shape)).sum().backward()
    return [t.cpu() for t in (y, x.grad, conv.weight.grad)] + \
        ([conv.bias.grad.cpu()] if conv.bias is not None else [])


@settings(max_examples=12, deadline=None)
@given(dims=st.sampled_from([1, 2]), groups=st.sampled_from([1, 2, 4]),
       transposed=st.booleans(), stride=st.integers(1, 2), dilation=st.integers(1, 2),
       padding=st.integers(0, 2), bias=st.booleans(), seed=st.integers(0, 5))
def test_conv_gradients_match_eager(dims, groups, transposed, stride, dilation, padding, bias,
                                    seed):
    torch.manual_seed(seed)
    kind = {(1, False): torch.nn.Conv1d, (2, False): torch.nn.Conv2d,
            (1, True): torch.nn.ConvTranspose1d, (2, True): torch.nn.ConvTranspose2d}
    extra = {"output_padding": stride - 1} if transposed and stride > dilation else {}
    conv = kind[dims, transposed](4, 8, 3, stride=stride, padding=padding, dilation=dilation,
                                  groups=groups, bias=bias, **extra)
    x = torch.randn(2, 4, *(7,) * dims)
    want = _grads(conv, x, lazy=False)
    conv.zero_grad()
    lazyx.reset_metrics()
    got = _grads(conv, x, lazy=True)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert lazyx.metrics()["fallbacks"] == 0, lazyx.metrics()["fallback_ops"]


def test_depthwise_separable_block_trains_like_eager():
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Conv2d(6, 6, 3, padding=1, groups=6),
                                torch.nn.Conv2d(6, 4, 1), torch.nn.ReLU(),
                                torch.nn.ConvTranspose2d(4, 2, 2, stride=2))
    lazy = __import__("copy").deepcopy(block).to(lt.device)
    x = torch.randn(2, 6, 5, 5)
    opt, lazy_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (block, lazy))
    lazyx.reset_metrics()
    for _ in range(3):
        loss = block(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        lazy_loss = lazy(x.to(lt.device)).square().mean()
        lazy_loss.backward()
        lazy_opt.step()
        lazy_opt.zero_grad()
        lt.mark_step()
        torch.testing.assert_close(lazy_loss.item(), loss.item(), rtol=1e-5, atol=1e-6)
    assert lazyx.metrics()["fallbacks"] == 0
    assert lazyx.metrics()["compiles"] <= 2
