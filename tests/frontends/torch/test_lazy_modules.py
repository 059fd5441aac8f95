"""torch's lazy modules (nn.LazyLinear, LazyConv2d, LazyBatchNorm2d: d2l builds every model
from them) moved to lt.device before their first forward, as a GPU user moves them: the
uninitialized parameters and buffers stay uninitialized, on the device, and the first
forward materializes them there. The move raised ("Can't access the shape of an
uninitialized parameter"), and torch's swap would have made them plain 0-element
Parameters."""
import copy

import pytest
import torch
import torch.nn as nn

import lazyx
import lazyx.frontends.torch as lt


def _net():
    return nn.Sequential(nn.LazyConv2d(4, kernel_size=3, padding=1), nn.LazyBatchNorm2d(),
                         nn.ReLU(), nn.Flatten(), nn.LazyLinear(3))


def _uninitialized(model):
    return [n for n, t in [*model.named_parameters(), *model.named_buffers()]
            if nn.parameter.is_lazy(t)]


@pytest.mark.parametrize("dtype", [None, torch.float64])
def test_a_lazy_module_moved_before_its_first_forward_trains_on_the_device(dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 5, dtype=dtype or torch.float32)
    model = _net()
    names = _uninitialized(model)
    assert names  # weights, biases and the batch norm's running statistics
    moved = model.to(lt.device) if dtype is None else model.to(lt.device, dtype)
    assert moved is model and _uninitialized(model) == names
    for name, t in [*model.named_parameters(), *model.named_buffers()]:
        assert t.device == lt.device, name
        if t.is_floating_point():
            assert t.dtype == (dtype or torch.float32), name
    out = model(x.to(lt.device))
    assert _uninitialized(model) == [] and out.shape == (2, 3)

    # the materialized model, copied to the CPU, computes what it computed on the device
    reference = copy.deepcopy(model).cpu()
    torch.testing.assert_close(out.cpu(), reference(x), rtol=1e-5, atol=1e-6)
    # (that forward moved the reference's running statistics once more)
    reference.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.1)
    for m, o, inputs in ((model, opt, x.to(lt.device)), (reference, opt_ref, x)):
        o.zero_grad()
        m(inputs).square().mean().backward()
        o.step()
    lazyx.sync()
    for (name, a), (_, b) in zip(model.state_dict().items(), reference.state_dict().items()):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-5, atol=1e-6, msg=name)


def test_moved_back_before_a_forward_the_parameters_stay_uninitialized():
    model = _net().to(lt.device).cpu()
    assert _uninitialized(model) and all(
        t.device.type == "cpu" for t in [*model.parameters(), *model.buffers()])
    assert model(torch.randn(1, 3, 4, 4)).shape == (1, 3)
    assert set(model.state_dict()) == set(_materialized_keys())


def _materialized_keys():
    model = _net()
    model(torch.randn(1, 3, 4, 4))
    return model.state_dict().keys()
