"""pytorch/examples' Transformer models (word_language_model, language_translation) give
nn.Transformer* a float causal mask; torch asks whether it is causal (a hint only) by reading
`(mask == causal).all()`. On lt.device that read cut every forward and made lazyx.compile
refuse the step; the mask is now used as given, with eager's numbers and no read."""
import copy

import pytest
import torch
import torch.nn as nn

import lazyx
import lazyx.frontends.torch as lt


def _causal(n):  # word_language_model's mask: log of a lower triangle of ones
    return torch.log(torch.tril(torch.ones(n, n)))


def _encoder():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


@pytest.mark.parametrize("mask_kind", ["causal", "other"])
def test_encoder_mask_gives_eager_numbers_without_a_host_read(mask_kind):
    enc = _encoder()
    x = torch.randn(5, 3, 16)
    mask = _causal(5) if mask_kind == "causal" else torch.log(torch.triu(torch.ones(5, 5)))
    want = enc(x, mask=mask)
    want.sum().backward()
    lazy = copy.deepcopy(enc).to(lt.device)
    lazyx.reset_metrics()
    got = lazy(x.to(lt.device), mask=mask.to(lt.device))
    got.sum().backward()
    lt.mark_step()
    m = lazyx.metrics()
    assert m["fallbacks"] == 0 and m["syncs"] == 1, (m["fallback_ops"], m["sync_causes"])
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
    for p, q in zip(enc.parameters(), lazy.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-4, atol=1e-5)


def test_user_hint_and_cpu_mask_keep_torchs_detection():
    """An explicit is_causal is passed on untouched; a CPU mask is torch's own business."""
    enc = _encoder()
    x, mask = torch.randn(4, 2, 16), _causal(4)
    lazy = copy.deepcopy(enc).to(lt.device)
    got = lazy(x.to(lt.device), mask=mask.to(lt.device), is_causal=True)
    torch.testing.assert_close(got.cpu(), enc(x, mask=mask, is_causal=True), rtol=1e-5, atol=1e-5)
    assert torch.nn.modules.transformer._detect_is_causal_mask(mask) is True


def _translator():
    torch.manual_seed(0)
    return nn.ModuleDict({"emb": nn.Embedding(20, 16), "t": nn.Transformer(
        16, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32, dropout=0.0),
        "ff": nn.Linear(16, 20)})


def _translation_step(model, opt, src, tgt, device):
    """language_translation's train step (masks made as its create_mask makes them)."""
    tgt_in = tgt[:-1]
    n = tgt_in.shape[0]
    tgt_mask = (torch.triu(torch.ones((n, n), device=device)) == 1).transpose(0, 1)
    tgt_mask = tgt_mask.float().masked_fill(tgt_mask == 0, float("-inf")).masked_fill(
        tgt_mask == 1, 0.0)
    src_mask = torch.zeros((src.shape[0], src.shape[0]), device=device).type(torch.bool)
    src_pad, tgt_pad = (src == 1).transpose(0, 1), (tgt_in == 1).transpose(0, 1)
    out = model["t"](model["emb"](src), model["emb"](tgt_in), src_mask, tgt_mask, None,
                     src_pad, tgt_pad, src_pad)
    logits = model["ff"](out)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 20), tgt[1:].reshape(-1),
                                       ignore_index=1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def test_translation_training_step_replays_under_lazyx_compile():
    model = _translator()
    lazy = copy.deepcopy(model).to(lt.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    lazy_opt = torch.optim.SGD(lazy.parameters(), lr=0.1)
    step = lazyx.compile(lambda s, t: _translation_step(lazy, lazy_opt, s, t, lt.device))
    torch.manual_seed(1)
    for _ in range(3):
        src, tgt = torch.randint(2, 20, (6, 2)), torch.randint(2, 20, (5, 2))
        src[-1, 0], tgt[-1, 1] = 1, 1  # padding
        want = _translation_step(model, opt, src, tgt, "cpu")
        got = step(src.to(lt.device), tgt.to(lt.device))  # raised CompileError before
        torch.testing.assert_close(got.cpu(), want.detach(), rtol=1e-5, atol=1e-5)
    assert lazyx.metrics()["fallbacks"] == 0
    for p, q in zip(model.parameters(), lazy.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-4, atol=1e-5)
