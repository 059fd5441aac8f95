"""Unmodified third-party model code: a small HuggingFace GPT-2 (random weights, no
download) trains lazily with eager's losses, its tied embedding staying tied."""
import copy
import warnings

import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

transformers = pytest.importorskip("transformers")


def test_gpt2_trains_like_eager():
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2,
                                     n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     bos_token_id=0, eos_token_id=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.GPT2LMHeadModel(config)
    lazy = copy.deepcopy(model).to(lt.device)
    assert lazy.lm_head.weight is lazy.transformer.wte.weight
    ids = torch.randint(0, 64, (2, 12))
    lazy_ids = ids.to(lt.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lazy_opt = torch.optim.AdamW(lazy.parameters(), lr=1e-3)
    lazyx.reset_metrics()
    for _ in range(4):
        opt.zero_grad()
        loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        lazy_opt.zero_grad()
        lazy_loss = lazy(lazy_ids, labels=lazy_ids).loss
        lazy_loss.backward()
        lazy_opt.step()
        lt.mark_step()
        torch.testing.assert_close(lazy_loss.item(), loss.item(), rtol=1e-4, atol=0)
    m = lazyx.metrics()
    assert m["fallbacks"] == 0, m["fallback_ops"]
    assert m["compiles"] <= 2, m
