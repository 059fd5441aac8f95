"""Checkpoints of lazy models: torch.save / torch.load / pickle / copy.deepcopy of lazyx
tensors and modules, compared with the same model trained on CPU."""
import copy
import io
import pickle

import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def _trained(device, steps=3):
    model = _model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(3)
    for _ in range(steps):
        x = torch.randn(4, 6, generator=g).to(device)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return model, opt


def _saved(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def test_a_lazy_state_dict_saves_the_trained_values_and_loads_back_on_the_device():
    want, _ = _trained("cpu")
    model, opt = _trained(lt.device)  # no barrier: the last step is still pending
    lazyx.reset_metrics()
    buffer = _saved({"model": model.state_dict(), "opt": opt.state_dict()})
    assert lazyx.metrics()["fallback_ops"] == {}  # the user asked: an observation
    loaded = torch.load(buffer)
    for name, value in want.state_dict().items():
        got = loaded["model"][name]
        assert got.device.type == "lazyx"
        torch.testing.assert_close(got.cpu(), value)
    momentum = loaded["opt"]["state"][0]["momentum_buffer"]
    assert momentum.device.type == "lazyx"


def test_map_location_cpu_loads_plain_cpu_tensors():
    model, _ = _trained(lt.device)
    loaded = torch.load(_saved(model.state_dict()), map_location="cpu")
    fresh = _model()
    fresh.load_state_dict(loaded)  # a CPU model takes the lazy model's checkpoint
    for got, value in zip(fresh.parameters(), model.parameters()):
        assert got.device.type == "cpu"
        torch.testing.assert_close(got, value.cpu())


def test_a_cpu_checkpoint_loads_into_a_lazy_model_and_training_continues():
    cpu_model, _ = _trained("cpu", steps=2)
    lazy_model = _model().to(lt.device)
    lazy_model.load_state_dict(torch.load(_saved(cpu_model.state_dict())))
    x = torch.randn(5, 6)
    torch.testing.assert_close(lazy_model(x.to(lt.device)).cpu(), cpu_model(x))


def test_pickle_and_deepcopy_keep_values_and_requires_grad():
    model, _ = _trained(lt.device)
    for clone in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        for got, value in zip(clone.parameters(), model.parameters()):
            assert isinstance(got, torch.nn.Parameter) and got.requires_grad
            assert got.device.type == "lazyx"
            torch.testing.assert_close(got.cpu(), value.cpu())
    t = torch.arange(6.0, device=lt.device) * 2
    torch.testing.assert_close(pickle.loads(pickle.dumps(t)).cpu(), torch.arange(6.0) * 2)


def test_skip_data_refuses_lazy_tensors_as_torch_does_for_storage_less_devices():
    from torch.serialization import skip_data
    with skip_data(), pytest.raises(RuntimeError, match="skip_data"):
        torch.save(torch.ones(2, device=lt.device), io.BytesIO())
