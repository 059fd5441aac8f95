"""F.ctc_loss on lt.device with its lengths as CPU tensors, the usual call (CUDA and cuDNN
take them so): ATen's composite kernel, seeing a tensor subclass, divided the lazy loss by the
CPU lengths and the device check refused it. Compared with CPU torch, values and gradients."""
import pytest
import torch

import lazyx.frontends.torch as lt

LENGTHS = {
    "cpu": lambda n, m: (n, m),
    "device": lambda n, m: (n.to(lt.device), m.to(lt.device)),
    "mixed": lambda n, m: (n, m.to(lt.device)),
    "int32": lambda n, m: (n.int(), m.int()),
    "lists": lambda n, m: (n.tolist(), m.tolist()),
}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("lengths", sorted(LENGTHS))
def test_ctc_loss_matches_cpu_torch(lengths, reduction):
    torch.manual_seed(0)
    logits = torch.randn(7, 3, 5)
    targets = torch.tensor([[1, 2, 3], [1, 1, 0], [4, 2, 2]])
    n, m = torch.tensor([7, 5, 4]), torch.tensor([3, 2, 1])

    def loss(x, t, n, m):
        out = torch.nn.functional.ctc_loss(x.log_softmax(-1), t, n, m, reduction=reduction)
        out.sum().backward()
        return out

    x = logits.clone().requires_grad_()
    want = loss(x, targets, n, m)
    lazy = logits.clone().to(lt.device).requires_grad_()
    got = loss(lazy, targets.to(lt.device), *LENGTHS[lengths](n, m))
    torch.testing.assert_close(got.cpu(), want)
    torch.testing.assert_close(lazy.grad.cpu(), x.grad)


def test_float_lengths_get_torchs_error():
    x = torch.randn(4, 1, 3).log_softmax(-1)
    args = (torch.tensor([[1]]), torch.tensor([4.0]), torch.tensor([1.0]))
    with pytest.raises(RuntimeError, match="input_lengths must be integral"):
        torch.nn.functional.ctc_loss(x, *args)
    with pytest.raises(RuntimeError, match="input_lengths must be integral"):
        torch.nn.functional.ctc_loss(x.to(lt.device), args[0].to(lt.device), *args[1:])
