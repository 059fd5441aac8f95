"""Varying sequence lengths without a compile per length: a small HF GPT-2 trained lazily on
40 batches whose lengths vary between 17 and 128, padded to three buckets (32, 64, 128) with
lt.pad_to_bucket, next to eager PyTorch on the unpadded batches.

    python docs/bucketing_gpt2.py            # prints both losses per step and the compile count
    LAZYX_DEBUG=1 python docs/bucketing_gpt2.py --no-buckets 6   # without buckets, 6 batches

Right padding and a causal model: a real token never attends to the padding after it, the
attention mask keeps padding out of the padded positions' own rows, and labels of -100 keep it
out of the loss -- so the padded lazy loss is the eager loss of the unpadded batch.
"""
import copy
import sys
import time
import warnings

import numpy as np
import torch
import transformers

import lazyx
import lazyx.frontends.torch as lt

BUCKETS = (32, 64, 128)


def main(use_buckets=True, batches=40):
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=256, n_positions=128, n_embd=64, n_layer=2,
                                     n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     bos_token_id=0, eos_token_id=0)
    # HF's default "sdpa" attention reads the mask's values to decide whether it may skip it:
    # a sync in every step, and a second program for batches that happen to need no padding
    config._attn_implementation = "eager"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.GPT2LMHeadModel(config)
    lazy = copy.deepcopy(model).to(lt.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lazy_opt = torch.optim.AdamW(lazy.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    worst, start = 0.0, time.perf_counter()
    for step in range(batches):
        length = int(rng.integers(17, 129))
        ids = torch.from_numpy(rng.integers(0, 256, (4, length)))

        opt.zero_grad()                                   # eager, unpadded
        eager = model(input_ids=ids, labels=ids).loss
        eager.backward()
        opt.step()

        if use_buckets:                                   # lazy, padded to a bucket
            ids, mask = lt.pad_to_bucket(ids, dim=1, buckets=BUCKETS)
            labels = ids.masked_fill(~mask, -100)         # padding is not predicted
            batch = {"input_ids": ids, "attention_mask": mask.long(), "labels": labels}
        else:
            batch = {"input_ids": ids, "labels": ids}
        lazy_opt.zero_grad()
        loss = lazy(**{k: v.to(lt.device) for k, v in batch.items()}).loss
        loss.backward()
        lazy_opt.step()
        lt.mark_step()
        worst = max(worst, abs(loss.item() - eager.item()) / abs(eager.item()))
        print(f"step {step:2d}  length {length:3d} (padded {ids.shape[1]:3d})  eager {eager.item():.5f}  "
              f"lazy {loss.item():.5f}")
    m = lazyx.metrics()
    print(f"{batches} batches in {time.perf_counter() - start:.1f} s: {m['compiles']} compiles "
          f"({m['compile_seconds_total']:.1f} s), largest relative loss difference {worst:.1e}")
    return m["compiles"], worst


if __name__ == "__main__":
    counts = [int(a) for a in sys.argv[1:] if a.isdigit()]
    main(use_buckets="--no-buckets" not in sys.argv[1:], batches=counts[0] if counts else 40)
