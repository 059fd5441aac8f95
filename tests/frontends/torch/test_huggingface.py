"""Unmodified third-party model code: small HuggingFace GPT-2 and T5 models (random weights,
no download) train lazily with eager's losses, GPT-2's tied embedding staying tied."""
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


def test_t5_encoder_decoder_trains_like_eager():
    # T5's relative position buckets convert dtypes (.to(torch.long)) and then add in place:
    # the converted tensor must stay inside functionalization
    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                   num_heads=4, dropout_rate=0.0, decoder_start_token_id=0)
    model = transformers.T5ForConditionalGeneration(config)
    lazy = copy.deepcopy(model).to(lt.device)
    ids, labels = torch.randint(0, 64, (2, 10)), torch.randint(0, 64, (2, 6))
    lazy_ids, lazy_labels = ids.to(lt.device), labels.to(lt.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lazy_opt = torch.optim.AdamW(lazy.parameters(), lr=1e-3)
    lazyx.reset_metrics()
    for _ in range(3):
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        lazy_loss = lazy(input_ids=lazy_ids, labels=lazy_labels).loss
        lazy_loss.backward()
        lazy_opt.step()
        lazy_opt.zero_grad()
        lt.mark_step()
        torch.testing.assert_close(lazy_loss.item(), loss.item(), rtol=1e-4, atol=0)
    m = lazyx.metrics()
    assert m["fallbacks"] == 0, m["fallback_ops"]
    assert m["compiles"] <= 2, m
