"""Calls that write into a lazy tensor passed as `out=` (or into an argument an op updates in
place) leave the values eager torch leaves there: factories functionalization runs for an
out= call (nn.init.eye_ is torch.eye(..., out=weight)), and ops run on CPU torch, whose
writes come back to the lazy argument."""
import pytest
import torch
from torch import nn

import lazyx.frontends.torch as lt


def _both(make):
    """make(device) -> tensor, run eagerly on CPU and lazily; the lazy result on the CPU."""
    torch.manual_seed(0)
    eager = make("cpu")
    torch.manual_seed(0)
    lazy = make(lt.device)
    assert lazy.device.type == "lazyx"
    return eager, lazy.cpu()


@pytest.mark.parametrize("make", [
    lambda d: torch.arange(5, out=torch.empty(5, device=d)),
    lambda d: torch.arange(1, 10, 2, out=torch.empty(5, dtype=torch.long, device=d)),
    lambda d: torch.zeros(2, 3, out=torch.ones(2, 3, device=d)),
    lambda d: torch.ones(4, out=torch.zeros(4, dtype=torch.int32, device=d)),
    lambda d: torch.eye(3, 4, out=torch.empty(3, 4, device=d)),
    lambda d: torch.full((2, 2), 7.5, out=torch.empty(2, 2, device=d)),
    lambda d: torch.linspace(0, 1, 6, out=torch.empty(6, device=d)),
], ids=["arange", "arange-long", "zeros", "ones-int", "eye", "full", "linspace"])
def test_factories_into_an_out_tensor(make):
    eager, lazy = _both(make)
    assert lazy.dtype == eager.dtype
    torch.testing.assert_close(lazy, eager)


def test_eye_init_of_a_parameter_on_the_device():
    lin = nn.Linear(3, 3).to(lt.device)
    out = nn.init.eye_(lin.weight)
    assert out is lin.weight and lin.weight.requires_grad
    torch.testing.assert_close(lin.weight.detach().cpu(), torch.eye(3))
    x = torch.randn(2, 3)
    torch.testing.assert_close(lin(x.to(lt.device)).detach().cpu(),
                               x + lin.bias.detach().cpu())


def test_an_out_op_run_on_cpu_torch_writes_its_lazy_argument():
    """randperm(generator=g, out=) has no lowering (a user's CPU generator: plain randperm is
    lowered, from lazyx's own stream): CPU torch runs it, from the same generator state as
    eager, and the permutation lands in the lazy tensor (it was lost: zeros)."""
    def make(d):
        out = torch.zeros(6, dtype=torch.long, device=d)
        returned = torch.randperm(6, generator=torch.Generator().manual_seed(3), out=out)
        assert returned is out
        return out
    eager, lazy = _both(make)
    torch.testing.assert_close(lazy, eager)
    assert sorted(lazy.tolist()) == list(range(6))


def test_tensors_made_from_data_stay_users_tensors():
    """torch.tensor / torch.as_tensor allocate with functionalization excluded as its own
    out= calls do, but for the user: they stay wrapped, and in-place ops mixing them with
    other lazy tensors work (ASGD keeps its eta and mu so: it hit an INTERNAL ASSERT)."""
    made = [torch.as_tensor(0.01, device=lt.device), torch.tensor([1.0, 2.0], device=lt.device),
            torch.as_tensor([3, 4], device=lt.device)]
    assert all(torch._is_functional_tensor(t) for t in made)

    def train(device):
        torch.manual_seed(0)
        model = nn.Linear(3, 2).to(device)
        opt = torch.optim.ASGD(model.parameters(), lr=0.05, t0=1)
        x = torch.randn(4, 3).to(device)
        losses = []
        for _ in range(4):
            loss = model(x).pow(2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, model.weight.detach().cpu()
    (eager_losses, eager_w), (lazy_losses, lazy_w) = train("cpu"), train(lt.device)
    torch.testing.assert_close(lazy_losses, eager_losses)
    torch.testing.assert_close(lazy_w, eager_w)
