"""F.pad's reflect and replicate modes (frontends/torch/aten/edge_pads.py): eager torch's
values and input gradients, no gather in either program, and no fallback -- replicate's
backward used to run eagerly on the CPU at every step."""
import pytest
import torch
import torch.nn.functional as F

import lazyx
import lazyx.frontends.torch as lt

CASES = [((2, 3, 5), (1, 2)), ((3, 5), (0, 4)), ((2, 3, 5, 6), (1, 2, 2, 1)),
         ((3, 4, 4), (3, 0, 1, 3)), ((1, 2, 4, 5, 6), (1, 1, 2, 0, 1, 3))]


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape,pad", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_edge_pads_match_eager(mode, shape, pad, dtype):
    torch.manual_seed(len(shape))
    x = torch.randn(shape, dtype=dtype)
    xe = x.clone().requires_grad_()
    want = F.pad(xe, pad, mode=mode)
    cot = torch.randn_like(want)
    want.backward(cot)
    lazyx.reset_metrics()
    xl = x.to(lt.device).requires_grad_()
    got = F.pad(xl, pad, mode=mode)
    got.backward(cot.to(lt.device))
    texts = lazyx.ir_text(got.detach()) + lazyx.ir_text(xl.grad)
    assert "= gather(" not in texts and lazyx.metrics()["fallback_ops"] == {}
    assert torch.equal(got.detach().cpu(), want.detach())
    tol = 1e-6 if dtype == torch.float32 else 1e-14
    torch.testing.assert_close(xl.grad.cpu(), xe.grad, rtol=tol, atol=tol)


def test_integer_reflection_and_torchs_error():
    x = torch.arange(24).reshape(2, 3, 4)
    assert torch.equal(F.pad(x.to(lt.device), (2, 3), mode="reflect").cpu(),
                       F.pad(x, (2, 3), mode="reflect"))
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(x.to(lt.device).float(), (4, 0), mode="reflect").cpu()
