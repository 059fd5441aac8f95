"""torch.load(f, map_location=lt.device), as pytorch/examples' word_language_model/generate.py
loads the model main.py saved with torch.save(model, f): it raised "torch.lazyx.is_available()
is False". Checkpoints load onto lt.device with the saved values, ties and Parameters kept."""
import io

import pytest
import torch
import torch.nn as nn

import lazyx.frontends.torch as lt


def _saved(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


class _TiedLM(nn.Module):  # word_language_model's RNNModel with tie_weights, trimmed
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(11, 6)
        self.rnn = nn.LSTM(6, 6)
        self.decoder = nn.Linear(6, 11)
        self.decoder.weight = self.encoder.weight

    def forward(self, x):
        out, _ = self.rnn(self.encoder(x))
        return self.decoder(out)


@pytest.mark.parametrize("where", [lt.device, "lazyx", "lazyx:0"])
@pytest.mark.parametrize("saved_from", ["cpu", "lazyx"])
def test_state_dict_loads_onto_the_device(where, saved_from):
    torch.manual_seed(0)
    model = _TiedLM()
    want = {k: v.clone() for k, v in model.state_dict().items()}
    if saved_from == "lazyx":
        model.to(lt.device)
    loaded = torch.load(_saved(model.state_dict()), map_location=where)
    assert list(loaded) == list(want) and hasattr(loaded, "_metadata")
    for key, value in loaded.items():
        assert value.device == lt.device, key
        torch.testing.assert_close(value.cpu(), want[key], rtol=0, atol=0)
    fresh = _TiedLM().to(lt.device)
    fresh.load_state_dict(loaded)
    x = torch.randint(0, 11, (4, 2))
    torch.manual_seed(0)
    torch.testing.assert_close(fresh(x.to(lt.device)).cpu(), _TiedLM()(x), rtol=1e-5, atol=1e-5)


def test_whole_model_loads_onto_the_device_with_its_ties():
    torch.manual_seed(0)
    model = _TiedLM()
    x = torch.randint(0, 11, (4, 2))
    with torch.no_grad():
        want = model(x)
    loaded = torch.load(_saved(model.to(lt.device)), map_location=lt.device, weights_only=False)
    assert loaded.decoder.weight is loaded.encoder.weight
    assert all(isinstance(p, nn.Parameter) and p.device == lt.device and p.requires_grad
               for p in loaded.parameters())
    torch.testing.assert_close(loaded(x.to(lt.device)).cpu(), want, rtol=1e-5, atol=1e-5)


def test_containers_and_other_map_locations_are_torchs():
    t = torch.arange(6.0, requires_grad=True)
    loaded = torch.load(_saved({"a": [t, (t, 3)], "b": t}), map_location=lt.device)
    assert loaded["b"].device == lt.device and loaded["b"].requires_grad
    assert loaded["a"][0] is loaded["b"] and loaded["a"][1][0] is loaded["b"]
    assert loaded["a"][1][1] == 3
    assert torch.load(_saved(t), map_location="cpu").device.type == "cpu"
    with pytest.raises(RuntimeError):
        torch.load(_saved(t), map_location="nonsense")
