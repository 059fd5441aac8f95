"""torch.cond on lt.device tensors (pytorch/tutorials' control-flow tutorial): eager torch's
values and gradients. torch raised "There was no rule registered for HOP cond and subclass
LazyTensor"; the rule (hooks.py) reads the predicate and runs the branch it picks."""
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


def _true(x, y):
    return x.sin() * y


def _false(x, y):
    return x.cos() + y


@pytest.mark.parametrize("shift", [0.0, -5.0])
def test_cond_picks_eagers_branch_with_its_gradients(shift):
    def f(x, y):
        return torch.cond(x.sum() + shift > 0, _true, _false, (x, y))
    x = torch.tensor([0.5, -0.25, 1.0], requires_grad=True)
    y = torch.tensor([2.0, 3.0, -1.0])
    want = f(x, y)
    (want_grad,) = torch.autograd.grad(want.sum(), x)
    lx = x.detach().to(lt.device).requires_grad_()
    lazyx.sync()
    lazyx.reset_metrics()
    got = f(lx, y.to(lt.device))
    assert lazyx.metrics()["sync_causes"] == {"data_dependent": 1}  # the predicate only
    got.sum().backward()
    torch.testing.assert_close(got.cpu(), want.detach())
    torch.testing.assert_close(lx.grad.cpu(), want_grad)


def test_cond_with_a_python_predicate_reads_nothing():
    x = torch.tensor([0.5, -0.25, 1.0])
    lazyx.sync()
    lazyx.reset_metrics()
    got = torch.cond(False, _true, _false, (x.to(lt.device), x.to(lt.device)))
    assert lazyx.metrics()["syncs"] == 0
    torch.testing.assert_close(got.cpu(), _false(x, x))
