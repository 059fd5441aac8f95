"""x[bool_mask] = row, where the row requires a gradient (HF Wav2Vec2's SpecAugment writes its
learned mask embedding so): the same values and gradients as eager torch, with no sync and
one program whatever the mask's count. torch's own backward gathered the gradient by the
mask, a shape of the count: a sync at every step and a compile for every new count."""
import copy

import numpy as np
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


def _mask(step, shape):
    rng = np.random.default_rng(step)
    return torch.from_numpy(rng.random(shape) < 0.15 * (1 + step % 3))


@pytest.mark.parametrize("row_shape", [(8,), (1, 8), ()])
def test_a_masked_row_write_trains_without_a_sync(row_shape):
    torch.manual_seed(0)
    embed_cpu = torch.nn.Parameter(torch.randn(row_shape))
    embed = torch.nn.Parameter(embed_cpu.detach().clone().to(lt.device))
    weight_cpu = torch.nn.Parameter(torch.randn(8, 8))
    weight = torch.nn.Parameter(weight_cpu.detach().clone().to(lt.device))
    counts = []
    for step in range(5):
        inputs = torch.randn(2, 10, 8, generator=torch.Generator().manual_seed(step))
        mask = _mask(step, (2, 10))
        for p in (embed_cpu, embed, weight_cpu, weight):
            p.grad = None
        hidden = inputs @ weight_cpu
        hidden[mask] = embed_cpu
        hidden.tanh().pow(2).sum().backward()
        before = lazyx.metrics()
        lazy_hidden = inputs.to(lt.device) @ weight
        lazy_hidden[mask.to(lt.device)] = embed
        lazy_hidden.tanh().pow(2).sum().backward()
        lt.mark_step()
        after = lazyx.metrics()
        torch.testing.assert_close(embed.grad.cpu(), embed_cpu.grad, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(weight.grad.cpu(), weight_cpu.grad, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(lazy_hidden.detach().cpu(), hidden.detach(), rtol=1e-6,
                                   atol=1e-6)
        assert after["syncs"] - before["syncs"] == 1  # the barrier alone
        counts.append(int(mask.sum()))
        if step:
            assert after["compiles"] == before["compiles"]
    assert len(set(counts)) > 2  # (the counts did change)


def test_other_writes_are_torchs_own():
    x = torch.zeros(3, 4, device=lt.device)
    mask = torch.tensor([True, False, True], device=lt.device)
    x[mask] = torch.arange(8.0).reshape(2, 4).to(lt.device)  # a value per picked row
    x[torch.tensor([[True, False, False, False]] * 3, device=lt.device)] = 5.0
    expected = torch.zeros(3, 4)
    expected[torch.tensor([True, False, True])] = torch.arange(8.0).reshape(2, 4)
    expected[torch.tensor([[True, False, False, False]] * 3)] = 5.0
    torch.testing.assert_close(x.cpu(), expected)
    leaf = torch.zeros(3, 4, device=lt.device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf[mask] = torch.ones(4, device=lt.device, requires_grad=True)


def test_a_module_with_0d_parameters_and_buffers_compiles_its_step_once():
    """A 0-d CPU tensor moved to the device (BatchNorm's num_batches_tracked, a learned
    temperature) is device data from the start: as a run-time scalar it became data only
    after the first step wrote it, and the second step compiled again."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8),
                                torch.nn.Linear(8, 1))
    temperature = torch.nn.Parameter(torch.tensor(2.5))
    lazy_model = copy.deepcopy(model).to(lt.device)
    lazy_temperature = torch.nn.Parameter(temperature.detach().clone().to(lt.device))
    eager_opt = torch.optim.SGD([*model.parameters(), temperature], lr=0.1)
    lazy_opt = torch.optim.SGD([*lazy_model.parameters(), lazy_temperature], lr=0.1)
    compiles = []
    for step in range(4):
        x = torch.randn(16, 4, generator=torch.Generator().manual_seed(step))
        for m, t, opt, inputs in ((model, temperature, eager_opt, x),
                                  (lazy_model, lazy_temperature, lazy_opt, x.to(lt.device))):
            opt.zero_grad()
            (m(inputs) * t).pow(2).mean().backward()
            opt.step()
        lt.mark_step()
        compiles.append(lazyx.metrics()["compiles"])
    assert compiles[1:] == [compiles[0]] * 3
    for name, value in model.state_dict().items():
        torch.testing.assert_close(lazy_model.state_dict()[name].cpu(), value, rtol=1e-5,
                                   atol=1e-6)
    torch.testing.assert_close(lazy_temperature.detach().cpu(), temperature.detach())
