"""torch.autocast on the lazy device, and non-reentrant activation checkpointing (whose
recomputation re-enters the forward's autocast state), against the same code on CPU."""
import copy

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import lazyx.frontends.torch as lt


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                               torch.nn.Linear(16, 4))


def _step(model, device, dtype):
    model = copy.deepcopy(model).to(device)
    torch.manual_seed(1)
    x, y = torch.randn(6, 8), torch.randint(0, 4, (6,))
    kind = "cpu" if device == "cpu" else "lazyx"
    with torch.autocast(device_type=kind, dtype=dtype):
        hidden = model[0](x.to(device))
        out = model(x.to(device))
        loss = torch.nn.functional.cross_entropy(out, y.to(device))
    loss.backward()
    return hidden, out, loss, [p.grad for p in model.parameters()]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_matches_cpu_autocast(dtype):
    model = _model()
    want = _step(model, "cpu", dtype)
    got = _step(model, lt.device, dtype)
    assert got[0].dtype == dtype and got[1].dtype == dtype  # linear: the autocast dtype
    assert got[2].dtype == torch.float32                     # a loss: float32
    for g, w in zip(got[:3], want[:3]):
        torch.testing.assert_close(g.detach().cpu().float(), w.detach().float(),
                                   rtol=1e-2, atol=1e-2)
    for g, w in zip(got[3], want[3]):
        assert g.dtype == torch.float32  # float32 parameters get float32 gradients
        torch.testing.assert_close(g.cpu(), w, rtol=1e-2, atol=1e-2)


def test_autocast_follows_the_gpu_policy_and_leaves_other_ops_alone():
    x = torch.randn(4, 4, device=lt.device)
    with torch.autocast(device_type="lazyx", dtype=torch.bfloat16):
        product = x @ x
        assert product.dtype == torch.bfloat16
        assert product.softmax(-1).dtype == torch.float32      # float32 list, as on CUDA
        assert (product + 1).dtype == torch.bfloat16           # falls through
        assert (x * 2).dtype == torch.float32
    assert (x @ x).dtype == torch.float32                      # off outside the context


@pytest.mark.parametrize("autocast", [False, True])
def test_non_reentrant_checkpoint_matches_cpu(autocast):
    # its recomputation enters the forward's autocast state for the device: this used to
    # raise inside torch's autograd engine and end the process (std::terminate)
    def grads(device):
        torch.manual_seed(0)
        x = torch.randn(4, 3).to(device).requires_grad_()
        w = torch.randn(3, 3).to(device).requires_grad_()
        kind = "cpu" if device == "cpu" else "lazyx"
        with torch.autocast(device_type=kind, dtype=torch.bfloat16, enabled=autocast):
            y = checkpoint(lambda a: (a @ w).relu().float().sum(-1), x, use_reentrant=False)
        return torch.autograd.grad(y.sum(), [x, w])
    for g, w in zip(grads(lt.device), grads("cpu")):
        torch.testing.assert_close(g.cpu(), w, rtol=1e-2, atol=1e-2)
