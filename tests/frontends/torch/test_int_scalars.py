"""A Python int operand that does not fit an integer tensor's dtype: torch wraps it, two's
complement (`int8_tensor + 300` adds 44; `uint8_tensor < -1` compares with 255), where the
lazy run raised NumPy's OverflowError; a fill value that does not fit is torch's RuntimeError
(it was NumPy's OverflowError)."""
import pytest
import torch

import lazyx.frontends.torch as lt

_CASES = {
    "int8 + 300": (torch.int8, lambda t: t + 300),
    "int8 - 200": (torch.int8, lambda t: t - 200),
    "300 - uint8": (torch.uint8, lambda t: 300 - t),
    "int16 * 70000": (torch.int16, lambda t: t * 70000),
    "int32 * 2**40": (torch.int32, lambda t: t * 2 ** 40),
    "int64 + 2**63": (torch.int64, lambda t: t + 2 ** 63),
    "uint8 // -2": (torch.uint8, lambda t: t // -2),
    "uint8 < -1": (torch.uint8, lambda t: t < -1),
    "uint8 < 300": (torch.uint8, lambda t: t < 300),
    "int8 % 300": (torch.int8, lambda t: t % 300),
    "uint8 += 300": (torch.uint8, lambda t: t.clone().add_(300)),
    "int16.fill_(70000)": (torch.int16, lambda t: t.clone().fill_(70000)),
    "full_like(int8, 300)": (torch.int8, lambda t: torch.full_like(t, 300)),
    "full_like(int8, 100)": (torch.int8, lambda t: torch.full_like(t, 100)),
    "int8 + 2**70": (torch.int8, lambda t: t + 2 ** 70),
}


def _outcome(fn, t):
    try:
        return fn(t).cpu().tolist()
    except Exception as err:  # compared by type
        return type(err)


@pytest.mark.parametrize("name", list(_CASES))
def test_an_int_operand_out_of_the_dtypes_range_is_torchs(name):
    dtype, fn = _CASES[name]
    t = torch.tensor([1, 2, 250 if dtype == torch.uint8 else 100], dtype=dtype)
    assert _outcome(fn, t.to(lt.device)) == _outcome(fn, t)
