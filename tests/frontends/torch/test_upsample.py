"""F.interpolate's gradients (the upsample_*_backward ops, lowered as the IR's VJP of torch's
own decomposition of the forward) against eager CPU torch, on hypothesis-drawn shapes and
sizes, with no CPU fallback: a UNet or FPN decoder trains in one program."""
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.torch as lt

MODES = {1: ["nearest", "nearest-exact", "linear"], 2: ["nearest", "nearest-exact", "bilinear",
                                                        "bicubic"],
         3: ["nearest", "nearest-exact", "trilinear"]}


def _grads_match(x, **kwargs):
    x = x.requires_grad_()
    y = F.interpolate(x, **kwargs)
    cotangent = torch.randn(y.shape)
    y.backward(cotangent)
    lazy_x = x.detach().to(lt.device).requires_grad_()
    before = lazyx.metrics()["fallbacks"]
    lazy_y = F.interpolate(lazy_x, **kwargs)
    lazy_y.backward(cotangent.to(lt.device))
    lt.mark_step()
    assert lazyx.metrics()["fallbacks"] == before, lazyx.metrics()["fallback_ops"]
    torch.testing.assert_close(lazy_y.cpu(), y.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(lazy_x.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_interpolate_gradients_match_eager(data):
    nsp = data.draw(st.sampled_from([1, 2, 3]))
    mode = data.draw(st.sampled_from(MODES[nsp]))
    sizes = [data.draw(st.integers(2, 6)) for _ in range(nsp)]
    x = torch.randn([data.draw(st.integers(1, 2)), 2] + sizes)
    kwargs = {"mode": mode}
    if data.draw(st.booleans()):
        kwargs["size"] = [data.draw(st.integers(1, 9)) for _ in range(nsp)]
    else:
        kwargs["scale_factor"] = data.draw(st.sampled_from([0.5, 1.5, 2.0, 3.0]))
    if mode in ("linear", "bilinear", "bicubic", "trilinear"):
        kwargs["align_corners"] = data.draw(st.booleans())
    _grads_match(x, **kwargs)


@pytest.mark.parametrize("kwargs", [
    {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": False},
    {"scale_factor": 0.5, "mode": "nearest"}, {"size": (7, 11), "mode": "nearest-exact"}])
def test_interpolate_gradients_with_scales_passed_on(kwargs):
    _grads_match(torch.randn(2, 3, 5, 6), **kwargs)
