"""In-place ops whose operands' dtypes differ, on lt.device against eager CPU torch.

Mixed precision writes these all the time (`half_param.mul_(float32_scale)`,
`bf16.addcmul_(f32, f32)`): eager computes in the promoted dtype and casts back into `self`, or
raises at the call when the promoted dtype cannot be cast to `self`'s. Functionalization casts
the functional op's result back through `_to_copy`, which must then hand it a raw tensor (a
`half.mul_(float32)` once failed on torch's internal assert there).
"""
import pytest
import torch
from hypothesis import given, settings, strategies as st

import lazyx.frontends.torch as lt

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64,
          torch.int32, torch.int64, torch.uint8, torch.bool]

OPS = {
    "add_": lambda a, b: a.add_(b, alpha=2),
    "sub_": lambda a, b: a.sub_(b),
    "mul_": lambda a, b: a.mul_(b),
    "div_": lambda a, b: a.div_(b),
    "copy_": lambda a, b: a.copy_(b),
    "addcmul_": lambda a, b: a.addcmul_(b, b, value=0.5),
    "clamp_": lambda a, b: a.clamp_(min=b),
    "lerp_": lambda a, b: a.lerp_(b, 0.25),
    "setitem": lambda a, b: a.__setitem__(slice(1, 3), b[:2]),
    "index_put_": lambda a, b: a.index_put_((torch.tensor([0, 2], device=a.device),), b[:2]),
    "out=": lambda a, b: torch.mul(b, b, out=a),
    "view.mul_": lambda a, b: a[::2].mul_(b[:2]),
}
# eager's own wording is part of the contract for the ops functionalization checks through our
# cast check (frontends/torch/inplace_check.py); the others raise torch's Meta messages
SAME_MESSAGE = {"add_", "sub_", "mul_"}


def make(dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(4, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(4, generator=g) * 3).to(dtype)
    low = 0 if dtype == torch.uint8 else -5
    return torch.randint(low, 6, (4,), generator=g, dtype=dtype)


def outcome(op, self_dtype, other_dtype, device):
    a, b = make(self_dtype, 0).to(device), make(other_dtype, 1).to(device)
    try:
        OPS[op](a, b)
        return a.cpu()
    except Exception as err:  # noqa: BLE001  (the error is the outcome being compared)
        return err


def assert_like_eager(op, self_dtype, other_dtype):
    eager = outcome(op, self_dtype, other_dtype, "cpu")
    lazy = outcome(op, self_dtype, other_dtype, lt.device)
    if isinstance(eager, Exception):
        assert isinstance(lazy, type(eager)), (eager, lazy)
        if op in SAME_MESSAGE:
            assert str(lazy) == str(eager)
        return
    assert not isinstance(lazy, Exception), lazy
    assert lazy.dtype == eager.dtype == self_dtype
    torch.testing.assert_close(lazy, eager, equal_nan=True, rtol=0, atol=0) \
        if not eager.dtype.is_floating_point else \
        torch.testing.assert_close(lazy, eager, equal_nan=True)


@pytest.mark.parametrize("self_dtype, other_dtype", [
    (torch.float16, torch.float32), (torch.bfloat16, torch.float32),
    (torch.float16, torch.float64), (torch.float32, torch.float64)])
@pytest.mark.parametrize("op", ["mul_", "add_", "addcmul_", "copy_", "out=", "view.mul_"])
def test_lower_precision_self_takes_a_wider_operand(op, self_dtype, other_dtype):
    assert_like_eager(op, self_dtype, other_dtype)


def test_the_cast_result_keeps_composing():
    """The half tensor written through the cast is an ordinary functional tensor afterwards."""
    for device in ("cpu", lt.device):
        h = make(torch.float16, 0).to(device)
        h.mul_(make(torch.float32, 1).to(device))
        h.add_(1)
        view = h[1:]
        view.mul_(2)
        result = (h.float() * 3).sum()
        if device == "cpu":
            expected = (h, result)
        else:
            torch.testing.assert_close(h.cpu(), expected[0])
            torch.testing.assert_close(result.cpu(), expected[1])


def test_a_cast_eager_refuses_raises_eagers_error_at_the_call():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Int"):
        make(torch.int32, 0).to(lt.device).add_(make(torch.float32, 1).to(lt.device))


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(sorted(OPS)), self_dtype=st.sampled_from(DTYPES),
       other_dtype=st.sampled_from(DTYPES))
def test_any_pair_of_dtypes_matches_eager(op, self_dtype, other_dtype):
    assert_like_eager(op, self_dtype, other_dtype)
