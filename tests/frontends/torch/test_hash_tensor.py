"""torch.hash_tensor is lowered (an xor reduction of the elements' 64-bit images, folded in
halves: the IR has no xor reduction) and gives eager's uint64 hashes for float (NaN and -0
included), half, integer, unsigned and bool inputs, over all dims or some, kept or not."""
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

_GEN = torch.Generator().manual_seed(5)
CASES = {
    "float32": torch.randn(3, 5, generator=_GEN),
    "specials": torch.tensor([[1.5, -2.0, 3.0], [0.0, -0.0, float("nan")]]),
    "float64-3d": torch.randn(2, 3, 7, generator=_GEN, dtype=torch.float64),
    "float16": torch.randn(5, generator=_GEN).half(),
    "bfloat16": torch.randn(5, generator=_GEN).bfloat16(),
    "int8": torch.randint(-100, 100, (4, 7), generator=_GEN, dtype=torch.int8),
    "int64": torch.randint(-2**40, 2**40, (3, 3), generator=_GEN),
    "uint8": torch.randint(0, 255, (6,), generator=_GEN, dtype=torch.uint8),
    "bool": torch.tensor([True, False, True]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(name):
    x = CASES[name]
    last = x.dim() - 1
    lazyx.reset_metrics()
    for kwargs in ({}, {"dim": last}, {"dim": (0,), "keepdim": True}, {"dim": sorted({0, last})}):
        want = torch.hash_tensor(x, **kwargs)
        got = torch.hash_tensor(x.to(lt.device), **kwargs).cpu()
        assert got.dtype == want.dtype == torch.uint64
        assert torch.equal(got, want), (kwargs, got, want)
    assert lazyx.metrics()["fallbacks"] == 0


def test_empty_input_without_dim_raises_as_eager():
    with pytest.raises(RuntimeError, match="Expected reduction dim"):
        torch.hash_tensor(torch.zeros(0).to(lt.device))
