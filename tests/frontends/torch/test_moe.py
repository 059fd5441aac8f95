"""Mixture-of-experts on lt.device: histc of integers (as CUDA counts them; transformers'
MoE passes int32 off cpu/mps)."""
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

I32 = torch.int32


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int16, torch.int8,
                                   torch.uint8])
def test_histc_of_integers_counts_like_the_float_histogram(dtype):
    # CUDA bins integers in exact integer arithmetic; on these small integers that is CPU
    # torch's float histogram, in the input's dtype (CPU torch refuses integer histc)
    gen = torch.Generator().manual_seed(0)
    low = 0 if dtype == torch.uint8 else -25
    lazyx.reset_metrics()
    # (bins, min, max): edges hit exactly, values outside, min == max (the data's range),
    # one bin, and a fractional range (truncated to integers, as CUDA converts it)
    for bins, lo, hi in [(4, 0, 3), (5, -3, 7), (7, 0, 0), (10, -20, 20), (1, 0, 5),
                         (6, 1.7, 8.9), (3, 2, 2)]:
        x = torch.randint(low, 25, (37,), generator=gen).to(dtype)
        if (lo, hi) == (2, 2):  # every value equal: the range is widened by 1 each way
            x = torch.full((5,), 2, dtype=dtype)
        want = torch.histc(x.float(), bins=bins, min=int(lo), max=int(hi)).to(dtype)
        got = torch.histc(x.to(lt.device), bins=bins, min=lo, max=hi)
        assert got.dtype == dtype
        assert torch.equal(got.cpu(), want), (bins, lo, hi)
    assert lazyx.metrics()["fallbacks"] == 0, lazyx.metrics()["fallback_ops"]
