"""torch.gcd / torch.lcm are lowered and give torch's numbers, which differ from NumPy's where
abs() wraps: torch takes absolute values in the dtype first (gcd(-128, 6) is -2 in int8),
and its lcm multiplies in C++'s int for int8/int16 before truncating."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.torch as lt

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8]


def _check(a, b):
    lazyx.reset_metrics()
    for fn in (torch.gcd, torch.lcm):
        x, y = torch.from_numpy(a), torch.from_numpy(b)
        want = fn(x, y)
        got = fn(x.to(lt.device), y.to(lt.device)).cpu()
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, msg=f"{fn.__name__} {a.dtype}")
    assert lazyx.metrics()["fallbacks"] == 0


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_edges(dtype):
    info = np.iinfo(dtype)
    a = np.array([0, 0, 5, info.min, info.max, info.min, 79, 12, 7, info.max], dtype)
    b = np.array([0, 7, 0, 6, info.max, info.min, info.max - 50, 18, 1, 1], dtype)
    _check(a, b)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(lambda d: st.tuples(
    hnp.arrays(d, 12), hnp.arrays(d, 12))))
def test_random_operands(ab):
    _check(*ab)


def test_in_place():
    a = torch.arange(-6, 6, dtype=torch.int64)
    x = a.to(lt.device)
    x.gcd_(torch.tensor(4).to(lt.device))
    torch.testing.assert_close(x.cpu(), a.gcd(torch.tensor(4)))
