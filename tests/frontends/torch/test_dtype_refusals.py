"""Element-wise ops that eager torch refuses for a dtype are refused at the call on lt.device.

XLA and torch's meta kernels compute `floor` of bools or `frac` of integers without complaint;
eager's CPU kernels raise. OpInfo says which dtypes each op supports on CPU: for every dtype
lazyx holds that an element-wise op does not support, its first sample must raise on lt.device
what it raises on CPU (frontends/torch/tensor.py, _probe_dtypes).
"""
import warnings

import pytest
import torch

import lazyx.frontends.torch as lt

pytest.importorskip("expecttest")  # torch.testing._internal needs it
from torch.testing._internal.common_methods_invocations import (  # noqa: E402
    binary_ufuncs, unary_ufuncs)

DTYPES = (torch.bool, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64)


def _cases():
    seen = set()
    for op in (*unary_ufuncs, *binary_ufuncs):
        if op.name in seen or op.name.startswith("_refs."):
            continue
        seen.add(op.name)
        supported = op.supported_dtypes("cpu")
        for dtype in DTYPES:
            if dtype not in supported:
                yield pytest.param(op, dtype, id=f"{op.name}-{str(dtype)[6:]}")


CASES = list(_cases())


def _call(op, sample, device):
    def move(x):
        return x.to(device) if isinstance(x, torch.Tensor) else x
    args = [move(a) for a in sample.args]
    kwargs = {k: move(v) for k, v in sample.kwargs.items()}
    return op.op(move(sample.input), *args, **kwargs)


def test_there_are_refusals_to_check():
    assert len(CASES) > 50  # (torch's OpInfo lists about 150 of them in 2.13)


@pytest.mark.parametrize("op, dtype", CASES)
def test_an_unsupported_dtype_is_refused_at_the_call(op, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            sample = next(iter(op.sample_inputs("cpu", dtype)), None)
        except (NotImplementedError, RuntimeError):  # (prelu's samples call uniform_)
            sample = None
        if sample is None:
            pytest.skip("OpInfo has no sample for this dtype")
        try:
            _call(op, sample, "cpu")
        except Exception as err:  # noqa: BLE001
            eager = err
        else:
            pytest.skip("eager torch runs it after all (OpInfo's table is conservative)")
        with pytest.raises(type(eager)):
            _call(op, sample, lt.device)


def test_a_supported_dtype_is_not_refused():
    for x in (torch.tensor([1.5, -2.0]), torch.tensor([3, -4]), torch.tensor([True, False])):
        lazy = x.to(lt.device)
        torch.testing.assert_close(torch.maximum(lazy, lazy).cpu(), x)
        torch.testing.assert_close((lazy * lazy).cpu(), x * x)
