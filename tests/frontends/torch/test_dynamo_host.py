"""torch.compile(backend="lazyx") called with CPU tensors: the planned call
(frontends/torch/dynamo_host.py) against eager torch, against the general call it stands in
for (the same numbers and the same lazyx.metrics()), and the calls it must hand back."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.torch as lt
from lazyx.frontends.torch import dynamo


pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # (conftest.py)


def _compile(fn):
    return torch.compile(fn, backend=lt.dynamo_backend, dynamic=False)


def _graphs(monkeypatch):
    """Every CompiledGraph called, in order of first call."""
    seen = []
    call = dynamo.CompiledGraph.__call__

    def spy(self, args):
        if self not in seen:
            seen.append(self)
        return call(self, args)
    monkeypatch.setattr(dynamo.CompiledGraph, "__call__", spy)
    return seen


def _planned(graphs):
    return [bool(g.host_plan) for g in graphs]


def _counters(m):
    keys = ("executions", "transfers_to_device", "bytes_to_device", "transfers_to_host",
            "bytes_to_host", "execute_count", "syncs", "fallbacks")
    return {k: m[k] for k in keys}


def _fn(t, u):
    # several outputs: computed ones, a view of one, an input returned as it is
    s = torch.tanh(t) * 2 + u
    return s, (t * u).sum(), t, s.flatten()[:1]


def _run_both_ways(fn, calls, monkeypatch):
    """fn compiled and called with each of `calls` (argument tuples), once through the planned
    call and once through the general call: (results, metrics counters, which graphs were
    planned) each way."""
    out = {}
    for way in ("planned", "general"):
        torch._dynamo.reset()
        lazyx.reset_metrics()
        compiled = _compile(fn)
        with monkeypatch.context() as mp:
            graphs = _graphs(mp)
            if way == "general":
                mp.setattr(dynamo.dynamo_host, "make", lambda *a: None)
            results = [compiled(*args) for args in calls]
        out[way] = (results, _counters(lazyx.metrics()), _planned(graphs))
    return out


def _inline_backend():
    backend = lazyx.core.runtime.get_backend()
    device = getattr(backend, "device", None)
    return device is not None and device.platform == "cpu"


@settings(max_examples=10, deadline=None)
@given(dtype=st.sampled_from([torch.float32, torch.float64, torch.int32, torch.int64,
                              torch.bool]),
       shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2**16))
def test_planned_calls_match_eager_and_the_general_call(dtype, shape, seed):
    gen = torch.Generator().manual_seed(seed)
    if dtype is torch.bool:
        def fn(t, u):
            return t & ~u, (t | u).sum(), t
        calls = [tuple(torch.rand(shape, generator=gen) > 0.5 for _ in range(2))
                 for _ in range(5)]
    else:
        fn = _fn if dtype.is_floating_point else (lambda t, u: (t * 3 - u, (t * u).sum(), t))
        calls = [tuple((torch.randn(shape, generator=gen) * 5).to(dtype) for _ in range(2))
                 for _ in range(5)]
    with pytest.MonkeyPatch.context() as mp:
        both = _run_both_ways(fn, calls, mp)
    planned, general = both["planned"], both["general"]
    # the first two calls take the general path (compile, then the plan is made)
    assert planned[2] == ([True] if _inline_backend() else [False]), planned[2]
    assert general[2] == [False]
    assert planned[1] == general[1], (planned[1], general[1])
    for args, got, other in zip(calls, planned[0], general[0]):
        want = fn(*args)
        for g, o, w in zip(got, other, want):
            assert g.device.type == "cpu" and g.dtype == w.dtype and g.shape == w.shape
            torch.testing.assert_close(g, o, rtol=0, atol=0)
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_planned_results_are_the_callers_own():
    """Writing an input after a call, or a result, changes no other result."""
    x = torch.randn(300, 300)  # a large result: lent through DLPack, not copied
    compiled = _compile(lambda t: (torch.sin(t) + 1, t * 2))
    results = [compiled(x) for _ in range(4)]
    want = (torch.sin(x) + 1, x * 2)
    x.fill_(float("nan"))
    results[-1][0].fill_(0.0)
    for got in results[:-1]:
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
    assert results[-1][1].data_ptr() != results[-2][1].data_ptr()


def test_large_results_count_as_the_general_call_counts_them(monkeypatch):
    """Results lent through DLPack (from 128 KiB) beside small copied ones: the same numbers
    and the same transfers in lazyx.metrics() either way."""
    gen = torch.Generator().manual_seed(0)
    calls = [(torch.randn(300, 300, generator=gen),) for _ in range(4)]
    fn = (lambda t: (torch.sin(t) + 1, t.sum(0)))
    both = _run_both_ways(fn, calls, monkeypatch)
    planned, general = both["planned"], both["general"]
    assert planned[2] == ([True] if _inline_backend() else [False]), planned[2]
    assert planned[1] == general[1], (planned[1], general[1])
    for got, other in zip(planned[0], general[0]):
        for g, o in zip(got, other):
            torch.testing.assert_close(g, o, rtol=0, atol=0)


def test_a_lazy_input_after_planned_calls_takes_the_general_path(monkeypatch):
    """A planned graph given an lt.device tensor (as AOTAutograd hands one over) declines it,
    and the general path computes the same numbers."""
    fn = (lambda t: torch.exp(t) - 1)
    compiled = _compile(fn)
    x = torch.randn(3, 4)
    graphs = _graphs(monkeypatch)
    for _ in range(3):
        compiled(x)
    graph = graphs[0]
    if not graph.host_plan:
        pytest.skip("no calling-thread executable on this backend (no plan to leave)")
    assert graph.host_plan([x.to(lt.device)]) is None
    (got,) = graph([x.to(lt.device)])
    if torch._is_functional_tensor(got):
        got = torch._from_functional_tensor(got)
    torch.testing.assert_close(got.cpu(), fn(x))


def test_bfloat16_inputs_are_served_by_the_general_path(monkeypatch):
    """NumPy holds no bfloat16: the planned call declines and the general path moves the
    bits, with the same results as eager."""
    graphs = _graphs(monkeypatch)
    x = torch.randn(4, 4).to(torch.bfloat16)
    compiled = _compile(lambda t: (t.float() * 2).sum())
    for _ in range(4):
        torch.testing.assert_close(compiled(x), (x.float() * 2).sum())
    assert len(graphs) == 1 and _planned(graphs) == [False]


def test_a_graph_with_an_assert_or_a_random_op_is_not_planned(monkeypatch):
    graphs = _graphs(monkeypatch)
    labels = torch.tensor([0, 2, 1])
    one_hot = _compile(lambda t: torch.nn.functional.one_hot(t, 3).sum(0))
    noisy = _compile(lambda t: t + torch.rand(t.shape))
    x = torch.zeros(5)
    for _ in range(3):
        torch.testing.assert_close(one_hot(labels), torch.ones(3, dtype=torch.int64))
        r = noisy(x)
        assert ((r >= 0) & (r < 1)).all()
    assert len(graphs) == 2 and _planned(graphs) == [False, False]
