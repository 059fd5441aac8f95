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


def test_deepcopy_of_a_model_with_buffers_copies_them_as_eager_torch_does():
    """BatchNorm's running statistics are plain tensors, not Parameters: torch's deepcopy of a
    plain lazyx tensor took its storage route and crashed the process (a model copied for an
    EMA or a teacher)."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6))
    x = torch.randn(8, 4)
    lazy = copy.deepcopy(net).to(lt.device)
    net(x).sum().backward()
    lazy(x.to(lt.device)).sum().backward()  # no barrier: the running stats are still pending
    copied, want = copy.deepcopy(lazy), copy.deepcopy(net)
    for (name, got), value in zip(copied.state_dict().items(), want.state_dict().values()):
        assert got.device.type == "lazyx", name
        torch.testing.assert_close(got.cpu(), value, rtol=1e-5, atol=1e-6)
    copied[1].running_mean.add_(1.0)  # the copy is its own: the original keeps its values
    torch.testing.assert_close(lazy[1].running_mean.cpu(), net[1].running_mean, rtol=1e-5,
                               atol=1e-6)


def test_deepcopy_of_a_lazy_tensor_keeps_grad_attributes_and_sharing_like_eager():
    def made(device):
        t = torch.arange(6.0).reshape(2, 3).to(device).requires_grad_()
        (t * t).sum().backward()
        t.note = {"scale": torch.ones(2).to(device)}
        return t
    for device in ("cpu", lt.device):
        t = made(device)
        a, b = copy.deepcopy([t, t])
        assert a is b and a is not t  # one copy per tensor, as the memo says
        assert a.requires_grad and a.is_leaf and a.device.type == torch.device(device).type
        torch.testing.assert_close(a.detach().cpu(), t.detach().cpu())
        torch.testing.assert_close(a.grad.cpu(), 2 * t.detach().cpu())
        assert a.note["scale"] is not t.note["scale"] and a.note["scale"].device == t.device
        with pytest.raises(RuntimeError, match="graph leaves"):  # torch's own refusal
            copy.deepcopy(t * 2)


def test_a_lazy_models_state_dict_loads_into_a_cpu_model():
    """load_state_dict copies each value into the CPU model's parameters (param.copy_):
    torch's functionalization refused to write a plain tensor from a lazy one (an internal
    assert); the lazy values are read across, as a CUDA checkpoint loads into a CPU model."""
    want, _ = _trained("cpu")
    model, _ = _trained(lt.device)  # the last step still pending
    fresh = _model()
    fresh.load_state_dict(model.state_dict())
    for got, value in zip(fresh.state_dict().values(), want.state_dict().values()):
        assert got.device.type == "cpu"
        torch.testing.assert_close(got, value)


def test_cpu_tensors_written_from_lazy_ones_read_them_like_eager_cuda():
    x = torch.rand(2, 3, generator=torch.Generator().manual_seed(0))
    lazy = (x.to(lt.device) * 2)  # pending
    into = torch.zeros(2, 3)
    into.copy_(lazy)
    torch.testing.assert_close(into, x * 2)
    into = torch.zeros(2, 3)
    into[0] = lazy[1]
    into[:, 1:] += 1  # plain CPU writes still go their own way
    torch.testing.assert_close(into, torch.stack([x[1] * 2 + torch.tensor([0., 1, 1]),
                                                  torch.tensor([0., 1, 1])]))
    w = torch.ones(3, device=lt.device, requires_grad=True)
    into = torch.zeros(3)
    into.copy_(w * 3)  # differentiable, as copy_ from a CUDA tensor is
    into.sum().backward()
    torch.testing.assert_close(w.grad.cpu(), torch.full((3,), 3.0))


def test_skip_data_refuses_lazy_tensors_as_torch_does_for_storage_less_devices():
    from torch.serialization import skip_data
    with skip_data(), pytest.raises(RuntimeError, match="skip_data"):
        torch.save(torch.ones(2, device=lt.device), io.BytesIO())


def test_safetensors_and_hf_save_pretrained_save_a_lazy_model(tmp_path):
    """HF's save_pretrained asks safetensors for each storage's data pointer (its tied-weight
    check), which raised "invalid python storage" for lazyx tensors. A lazy GPT-2 saves, its
    tied embedding stays one tensor, and it loads back with the lazy model's logits."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50,
                                     n_positions=16)
    model = transformers.GPT2LMHeadModel(config).to(lt.device).eval()
    model.save_pretrained(tmp_path)
    back = transformers.GPT2LMHeadModel.from_pretrained(tmp_path)
    assert back.lm_head.weight.data_ptr() == back.transformer.wte.weight.data_ptr()
    ids = torch.randint(0, 50, (1, 6))
    torch.testing.assert_close(back(ids).logits, model(ids.to(lt.device)).logits.cpu())
    a = torch.ones(3, device=lt.device)
    assert a.untyped_storage().data_ptr() == a[1:].untyped_storage().data_ptr() != 0
    assert a.untyped_storage().data_ptr() != torch.ones(3, device=lt.device).untyped_storage() \
        .data_ptr()


@pytest.mark.parametrize("capturable", [False, True])
def test_an_optimizer_resumed_onto_the_device_keeps_its_step_counters_off_it(capturable):
    # nanoGPT's resume: the checkpoint mapped to the device, then optimizer.load_state_dict.
    # torch leaves non-capturable `step` counters where the checkpoint put them; on lt.device
    # AdamW read each with .item() at every later step (a sync per parameter per step)
    def resumed(device):
        model = _model().to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=0.05,
                                capturable=capturable and device != "cpu")
        g = torch.Generator().manual_seed(5)
        batches = [torch.randn(4, 6, generator=g).to(device) for _ in range(4)]

        def step(x):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
            if device != "cpu":
                lt.mark_step()
        step(batches[0])
        buf = io.BytesIO()
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
        buf.seek(0)
        ckpt = torch.load(buf, map_location=device)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        lazyx.reset_metrics()
        for x in batches[1:]:
            step(x)
        return model, opt, lazyx.metrics()
    model, opt, metrics = resumed(lt.device)
    steps = [s["step"] for s in opt.state.values()]
    assert all(s.device == (lt.device if capturable else torch.device("cpu")) for s in steps)
    assert metrics["fallback_ops"] == {} and metrics["sync_causes"].get("fallback", 0) == 0
    want, want_opt, _ = resumed("cpu")  # (capturable's own arithmetic differs in ulps)
    for a, b in zip(model.parameters(), want.parameters()):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-5)
    assert [float(s) for s in steps] == [float(s["step"]) for s in want_opt.state.values()]
