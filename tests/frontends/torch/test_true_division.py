"""`x / s` on lt.device is torch's correctly rounded quotient, bit for bit, on every backend.

XLA's algebraic simplifier made a division by a broadcast value a product with its
reciprocal: a third of `arange(1, 400) / 10.0` came back one ulp off torch's CPU result
(backends/xla.py, _exact_divisions). Also log2, log10 and exp2 at exact powers. (No sqrt case here: torch's own CPU sqrt is not correctly
rounded on every input -- 4 of these 399 float64 values differ from NumPy's -- while the lazy
one is; tests/frontends/numpy/test_ufuncs.py checks x / sqrt(y).)"""
import pytest
import torch

import lazyx.frontends.torch as lt


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_division_by_a_broadcast_value_is_torchs(dtype):
    x = torch.arange(1, 400, dtype=torch.float64).div(7.3).sub(20.0).to(dtype)
    y = x.abs().add(0.5).flip(0)
    cases = {
        "x / 10.0": lambda x, y: x / 10.0,
        "x / 0.1 floored": lambda x, y: torch.floor(x / 0.1),
        "x /= 3.0": lambda x, y: x.clone().div_(3.0),
        "x / y.max()": lambda x, y: x / y.max(),
        "rows": lambda x, y: x[:399].reshape(21, 19) / y[:21].reshape(21, 1),
        "(x / y) / 3.0": lambda x, y: (x / y) / 3.0,
    }
    lazy_x, lazy_y = x.to(lt.device), y.to(lt.device)
    for name, fn in cases.items():
        assert torch.equal(fn(lazy_x, lazy_y).cpu(), fn(x, y)), name


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_logs_and_exp2_are_exact_at_exact_powers(dtype):
    """torch.log2(2**k), torch.log10(10**k) and torch.exp2(k) are torch's exact answers
    (log(x) / log(b) gave 2.9999999999999996 for log10(1000); XLA's exp2(3.0) 7.999999999999998)."""
    k = torch.arange(-20, 21, dtype=dtype)
    tens = torch.tensor([10.0 ** i for i in range(11)], dtype=dtype)
    for fn, x in ((torch.log2, torch.exp2(k)), (torch.log10, tens), (torch.exp2, k)):
        assert torch.equal(fn(x.to(lt.device)).cpu(), fn(x)), fn.__name__
