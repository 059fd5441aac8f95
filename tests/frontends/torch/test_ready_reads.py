"""`x.item()` of a value already computed (a loss read after the barrier, a replayed step's
result) is answered by tensor._ready_item before the general dispatcher, from the C
dispatcher or the Python one. It must give what the general path gives: eager torch's number
and type, the same metrics, a cut for a pending value, a counted fallback when torch's own code
asks, and a remembered read while a lazyx.compile step traces."""
import numpy as np
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt
from lazyx.core import ir, runtime
from lazyx.frontends.torch import tensor as lazy_tensor

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int8, torch.uint8, torch.bool, torch.complex64]
PATHS = ["c", "python"]


@pytest.fixture(params=PATHS)
def path(request):
    if request.param == "c" and ir.NATIVE_BASE is None:
        pytest.skip("the C core is not built here")
    lazy_tensor.use_fast_dispatch(request.param == "c")
    yield request.param
    lazy_tensor.use_fast_dispatch(True)


def _general_only(monkeypatch):
    monkeypatch.setattr(lazy_tensor, "READY_READS", {})
    lazy_tensor.use_fast_dispatch(lazy_tensor._NATIVE is not None)  # (the C one holds the dict)


def _sample(dtype, seed):
    values = np.random.default_rng(seed).normal(size=(3,)) * 50
    return torch.tensor(values).to(dtype)


def _read(eager, ready):
    """(number, metrics delta) of `.item()` of eager's [1] on the lazy device."""
    x = eager.to(lt.device)[1].clone()  # pending: computed by the read, or by the barrier first
    if ready:
        lt.mark_step()
    lazyx.reset_metrics()
    value = x.item()
    m = lazyx.metrics()
    return value, {k: m[k] for k in ("syncs", "executions", "transfers_to_host",
                                     "bytes_to_host", "fallbacks")}, dict(m["sync_causes"])


@pytest.mark.parametrize("ready", [True, False], ids=["ready", "pending"])
@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d)[6:] for d in DTYPES])
def test_item_matches_eager_and_the_general_path(path, dtype, ready, monkeypatch):
    eager = _sample(dtype, seed=len(str(dtype)))
    expected = eager[1].item()
    value, counts, causes = _read(eager, ready)
    assert type(value) is type(expected) and value == expected
    _general_only(monkeypatch)
    assert _read(eager, ready) == (value, counts, causes)


def test_float_int_and_bool_of_a_ready_value(path):
    eager = torch.tensor([2.75, -1.0, 0.0])
    x = eager.to(lt.device) + 0
    lt.mark_step()
    assert float(x[0]) == 2.75 and int(x[0]) == 2 and bool(x[1]) and not bool(x[2])
    assert x.sum().item() == eager.sum().item()


def test_a_ready_value_read_by_torchs_own_code_is_a_counted_fallback(path, monkeypatch):
    x = torch.tensor([1.5, 2.5]).to(lt.device)[1] * 2
    lt.mark_step()
    monkeypatch.setattr(lazy_tensor, "framework_request", lambda: "torch.somewhere.asks")
    runtime._warned_fallbacks.discard("torch.somewhere.asks")  # (warned once per process)
    lazyx.reset_metrics()
    with pytest.warns(RuntimeWarning, match="torch.somewhere.asks"):
        assert x.item() == 5.0
    assert lazyx.metrics()["fallback_ops"] == {"torch.somewhere.asks": 1}


def test_a_ready_value_read_inside_a_compiled_step_is_still_an_observation(path):
    x = torch.tensor(3.0).to(lt.device)
    lt.mark_step()

    @lazyx.compile
    def step(t):
        return t * t.item()  # (t is an argument: computed before the step, read inside it)

    with pytest.raises(lazyx.CompileError, match="observes a value"):
        step(x)


def test_a_compiled_steps_result_is_read_ready(path):
    x = torch.tensor([0.5, -1.25, 2.0]).to(lt.device)

    @lazyx.compile
    def step(t):
        return (torch.tanh(t) * 3 + 1).sum()

    expected = (torch.tanh(x.cpu()) * 3 + 1).sum().item()
    for _ in range(3):
        out = step(x)
        lt.mark_step()
        assert out.item() == pytest.approx(expected, rel=1e-6)
    assert lazyx.metrics()["replays"] >= 2
