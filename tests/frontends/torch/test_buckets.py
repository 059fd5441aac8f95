"""lt.pad_to_bucket: padding a varying length to a few sizes keeps a HF GPT-2 loop at one
compiled program per bucket, and masking keeps its losses those of eager on unpadded batches."""
import copy
import warnings

import numpy as np
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_pad_to_bucket_matches_torch_pad_on_host_and_lazy(dtype, dim):
    x = torch.arange(2 * 5 * 3).reshape(2, 5, 3).to(dtype)
    padded, mask = lt.pad_to_bucket(x, dim, buckets=(4, 8))
    size = x.shape[dim]
    target = 4 if size <= 4 else 8
    widths = [0, 0] * (x.ndim - 1 - dim % x.ndim) + [0, target - size]
    expected = torch.nn.functional.pad(x.to(torch.float32), widths).to(dtype)
    torch.testing.assert_close(padded, expected)
    torch.testing.assert_close(mask, torch.nn.functional.pad(torch.ones(x.shape), widths) > 0)
    lazy_padded, lazy_mask = lazyx.pad_to_bucket(x.to(lt.device), dim, buckets=(4, 8))
    assert lt.is_lazy(lazy_padded) and lt.is_lazy(lazy_mask)
    torch.testing.assert_close(lazy_padded.cpu(), expected)
    torch.testing.assert_close(lazy_mask.cpu(), mask)


def test_pad_to_bucket_value_and_errors():
    padded, _ = lt.pad_to_bucket(torch.zeros(3), value=-100)
    assert padded.tolist() == [0, 0, 0, -100]
    with pytest.raises(ValueError, match="exceeds the largest bucket 4"):
        lt.pad_to_bucket(torch.zeros(2, 5), 1, buckets=(2, 4))


transformers = pytest.importorskip("transformers")

LENGTHS = (17, 40, 29, 64, 90, 128, 111)  # buckets 32, 64, 128: three programs


def test_gpt2_with_varying_lengths_compiles_once_per_bucket_and_trains_like_eager():
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=64, n_positions=128, n_embd=32, n_layer=2,
                                     n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     bos_token_id=0, eos_token_id=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # eager attention: HF's sdpa path reads the mask's values to decide whether it can
        # skip it (a sync per step, and another program for a batch that needs no padding)
        config._attn_implementation = "eager"
        model = transformers.GPT2LMHeadModel(config)
    lazy = copy.deepcopy(model).to(lt.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    lazy_opt = torch.optim.SGD(lazy.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    lazyx.reset_metrics()
    for length in LENGTHS:
        ids = torch.from_numpy(rng.integers(1, 64, (2, length)))
        opt.zero_grad()
        eager_loss = model(input_ids=ids, labels=ids).loss
        eager_loss.backward()
        opt.step()

        padded, mask = lt.pad_to_bucket(ids, 1, buckets=(32, 64, 128))
        labels = padded.masked_fill(~mask, -100)  # padding is not predicted
        lazy_opt.zero_grad()
        loss = lazy(input_ids=padded.to(lt.device), attention_mask=mask.long().to(lt.device),
                    labels=labels.to(lt.device)).loss
        loss.backward()
        lazy_opt.step()
        lt.mark_step()
        torch.testing.assert_close(loss.item(), eager_loss.item(), rtol=1e-4, atol=1e-5)
    m = lazyx.metrics()
    assert m["fallbacks"] == 0, m["fallback_ops"]
    assert m["compiles"] <= 4, m["compile_sources"]
    for p, q in zip(model.parameters(), lazy.parameters()):
        torch.testing.assert_close(q.cpu(), p.detach(), rtol=1e-3, atol=1e-4)
