"""Decompositions run below functionalization, on raw lazy tensors that share no storage: a
write through a view made there would be lost. The dispatcher must notice and run the op on
CPU torch (a counted fallback) instead of returning a silently wrong value."""
import pytest
import torch
from torch._decomp import decomposition_table

import lazyx
import lazyx.frontends.torch as lt

_lib = torch.library.Library("lazyx_test", "DEF")
_lib.define("double_front(Tensor x) -> Tensor")
_lib.define("scaled_copy(Tensor x) -> Tensor")


def _double_front_cpu(x):
    out = x.clone()
    out[: x.shape[0] // 2] *= 2
    return out


def _double_front_by_view_writes(x):
    # the way torch's own decompositions fill a result: through narrow() views of it
    out = torch.zeros_like(x)
    half = x.shape[0] // 2
    out.narrow(0, 0, half).copy_(x.narrow(0, 0, half) * 2)
    out.narrow(0, half, x.shape[0] - half).copy_(x.narrow(0, half, x.shape[0] - half))
    return out


def _scaled_copy(x):
    out = torch.zeros_like(x)
    out.copy_(x * 3)  # a write into a fresh tensor, not a view: stays lazy
    return out


_lib.impl("double_front", _double_front_cpu, "CPU")
_lib.impl("scaled_copy", lambda x: x * 3, "CPU")
for _name in ("double_front", "scaled_copy"):
    _lib.impl(_name, lambda x: torch.empty_like(x), "Meta")


@pytest.fixture
def decompositions():
    ops = torch.ops.lazyx_test
    decomposition_table[ops.double_front.default] = _double_front_by_view_writes
    decomposition_table[ops.scaled_copy.default] = _scaled_copy
    yield ops
    del decomposition_table[ops.double_front.default]
    del decomposition_table[ops.scaled_copy.default]


def test_write_through_a_view_in_a_decomposition_is_not_lost(decompositions):
    x = torch.arange(6.0)
    lazyx.reset_metrics()
    got = decompositions.double_front(x.to(lt.device)).cpu()
    torch.testing.assert_close(got, _double_front_cpu(x))
    assert lazyx.metrics()["fallback_ops"] == {"lazyx_test.double_front.default": 1}


def test_in_place_write_without_views_stays_lazy(decompositions):
    x = torch.arange(6.0)
    lazyx.reset_metrics()
    got = decompositions.scaled_copy(x.to(lt.device)).cpu()
    torch.testing.assert_close(got, x * 3)
    assert lazyx.metrics()["fallbacks"] == 0


def test_instance_norm_running_stats_stay_lazy():
    # instance_norm's batch-norm decomposition writes running stats in place (not views)
    x, mean, var = torch.randn(2, 3, 4), torch.zeros(3), torch.ones(3)
    lazy_mean, lazy_var = mean.to(lt.device), var.to(lt.device)
    want = torch.nn.functional.instance_norm(x, mean, var, use_input_stats=True)  # updates
    lazyx.reset_metrics()
    got = torch.nn.functional.instance_norm(x.to(lt.device), lazy_mean, lazy_var,
                                            use_input_stats=True)
    torch.testing.assert_close(got.cpu(), want)
    torch.testing.assert_close(lazy_mean.cpu(), mean)
    torch.testing.assert_close(lazy_var.cpu(), var)
    assert lazyx.metrics()["fallbacks"] == 0
