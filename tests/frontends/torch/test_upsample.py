"""F.interpolate's nearest and linear modes as dense ops (frontends/torch/aten/upsample.py):
eager torch's values and input gradients, no fallback, and no gather or scatter in the
programs where the op is a whole-factor repetition or a linear interpolation (XLA:CPU ran
those element by element: 1.6-17x jax's program for the same math)."""
import pytest
import torch
import torch.nn.functional as F

import lazyx
import lazyx.frontends.torch as lt

LINEAR = {1: "linear", 2: "bilinear", 3: "trilinear"}
SIZES = [("scale_factor", 2), ("scale_factor", 3), ("scale_factor", 1.5), ("scale_factor", 0.5),
         ("size", 5), ("size", 8)]


def _both(x, kwargs):
    """(eager output, eager input gradient, lazy output, lazy input gradient, lazy texts)."""
    want = F.interpolate(x.clone().requires_grad_(), **kwargs)
    cot = torch.randn_like(want)
    xe = x.clone().requires_grad_()
    F.interpolate(xe, **kwargs).backward(cot)
    lazyx.reset_metrics()
    xl = x.to(lt.device).requires_grad_()
    yl = F.interpolate(xl, **kwargs)
    yl.backward(cot.to(lt.device))
    texts = lazyx.ir_text(yl.detach()) + lazyx.ir_text(xl.grad)
    assert lazyx.metrics()["fallback_ops"] == {}
    return want.detach(), xe.grad, yl.detach().cpu(), xl.grad.cpu(), texts


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear", "linear-corners"])
@pytest.mark.parametrize("how", SIZES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_interpolate_matches_eager(dims, mode, how, dtype):
    torch.manual_seed(dims)
    x = torch.randn((2, 3) + (4,) * dims, dtype=dtype)
    kwargs = {how[0]: how[1] if how[0] == "scale_factor" else (how[1],) * dims}
    if mode.startswith("linear"):
        kwargs.update(mode=LINEAR[dims], align_corners=mode == "linear-corners")
    else:
        kwargs.update(mode=mode)
    want, want_grad, got, got_grad, texts = _both(x, kwargs)
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == torch.float32 else dict(rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(got, want, **tol)
    torch.testing.assert_close(got_grad, want_grad, **tol)
    whole = how in (("scale_factor", 2), ("scale_factor", 3), ("size", 8))
    if mode.startswith("linear") or (mode == "nearest" and whole):
        assert "= gather(" not in texts and "= scatter(" not in texts

