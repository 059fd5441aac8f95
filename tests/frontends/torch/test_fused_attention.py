"""nn.MultiheadAttention and nn.TransformerEncoder(Layer) in eval mode without gradients,
where torch takes its fused inference kernels: on lt.device the same numbers as eager CPU
torch, no fallback (frontends/torch/fused_attention.py). They ran on CPU torch, a sync per
layer, and an encoder given a padding mask crashed on nested tensors."""
import copy

import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


def _pair(module):
    torch.manual_seed(0)
    cpu = module.eval()
    return cpu, copy.deepcopy(cpu).to(lt.device)


def _no_fallbacks():
    return not lazyx.metrics()["fallback_ops"]


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_multihead_attention_fast_path(need_weights, masked):
    torch.manual_seed(0)
    cpu, lazy = _pair(torch.nn.MultiheadAttention(16, 4, batch_first=True))
    x = torch.randn(3, 5, 16)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]]) \
        if masked else None
    lazyx.reset_metrics()
    with torch.no_grad():
        want = cpu(x, x, x, key_padding_mask=padding, need_weights=need_weights)
        lx = x.to(lt.device)
        got = lazy(lx, lx, lx, need_weights=need_weights,
                   key_padding_mask=None if padding is None else padding.to(lt.device))
    torch.testing.assert_close(got[0].cpu(), want[0], rtol=1e-5, atol=1e-5)
    assert (got[1] is None) == (want[1] is None)
    if want[1] is not None:
        torch.testing.assert_close(got[1].cpu(), want[1], rtol=1e-5, atol=1e-6)
    assert _no_fallbacks(), lazyx.metrics()["fallback_ops"]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_fast_path(norm_first, activation):
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation=activation,
                                             batch_first=True, norm_first=norm_first)
    cpu, lazy = _pair(torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False))
    torch.manual_seed(1)
    x = torch.randn(3, 5, 16)
    lazyx.reset_metrics()
    with torch.no_grad():
        torch.testing.assert_close(lazy(x.to(lt.device)).cpu(), cpu(x), rtol=1e-5, atol=1e-5)
    assert _no_fallbacks(), lazyx.metrics()["fallback_ops"]


def test_encoder_with_a_padding_mask_keeps_its_padded_batch():
    """Eager's nested-tensor path zeroes the padded positions; lazyx keeps the padded batch
    (as training mode and torch.compile do): the positions that count are eager's."""
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    cpu, lazy = _pair(torch.nn.TransformerEncoder(layer, 2))
    torch.manual_seed(2)
    x = torch.randn(3, 5, 16)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    lazyx.reset_metrics()
    with torch.no_grad():
        want = cpu(x, src_key_padding_mask=padding)
        got = lazy(x.to(lt.device), src_key_padding_mask=padding.to(lt.device)).cpu()
    kept = ~padding
    torch.testing.assert_close(got[kept], want[kept], rtol=1e-5, atol=1e-5)
    assert _no_fallbacks(), lazyx.metrics()["fallback_ops"]
    assert lazyx.metrics()["syncs"] <= 1  # the read of the result only
