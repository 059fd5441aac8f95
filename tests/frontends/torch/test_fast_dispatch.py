"""The C dispatcher (frontends/torch/_native_dispatch.c) builds plain float arithmetic --
`x + 1.0`, `x * y`, `torch.tanh(x)` on float32/float64 operands of one shape -- without the
Python dispatcher, which stays the reference: the same program traced both ways must give
the same graph (hash), the same source lines, the same values, and eager torch's values.
Every call outside those routes (broadcasting, alpha=, bools, other dtypes, huge ints) takes
the Python path, checked here against eager torch too."""
import os
import re
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyx
import lazyx.frontends.torch as lt
from lazyx.core import ir, source
from lazyx.frontends.torch import tensor as lazy_tensor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import shared  # noqa: E402  (tests/shared.py)

native = pytest.mark.skipif(ir.NATIVE_BASE is None, reason="the C core is not built here")

BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
# (each well conditioned: |f'| <= 1, so the eager comparison below can bound its error by the
# chain's largest value; sin or exp of a large value would turn XLA's ulps into anything)
UNARY = {"tanh": torch.tanh, "gauss": lambda t: torch.exp(-t * t), "neg": torch.neg,
         "sigmoid": torch.sigmoid, "hypot1": lambda t: torch.sqrt(t * t + 1.0),
         "relu": torch.relu, "detach": lambda t: t.detach(), "clone": torch.clone,
         # t() of the 3-d shape is torch's error: the C route declines it, the general path
         # raises it (checked below); the program keeps to what every shape allows
         "t_t": lambda t: (t.t() * 2.0).t() if t.ndim <= 2 else t * 2.0}
NUMBERS = st.sampled_from([0.5, 1.5, -2.0, 0.1, 2.5, 3, -1, 4, 1])


@pytest.fixture
def python_dispatch():
    """Run the test's body with the Python dispatcher, and put the C one back after."""
    lazy_tensor.use_fast_dispatch(False)
    yield
    lazy_tensor.use_fast_dispatch(True)


def _program(steps, x, y, sizes=None):
    """A chain of routed ops: (kind, name, number or None) per step. `sizes` collects each
    step's largest magnitude."""
    out = x
    for kind, name, number in steps:
        if kind == "unary":
            out = UNARY[name](out)
        elif number is None:
            out = BINARY[name](out, y)
        else:
            out = BINARY[name](out, number)
        if sizes is not None:
            sizes.append(float(out.abs().max()))
    return out


def _traced(steps, x, y, fast):
    lazy_tensor.use_fast_dispatch(fast)
    try:
        lx, ly = x.to(lt.device), y.to(lt.device)
        out = _program(steps, lx, ly)
        handle = torch._from_functional_tensor(out)._lazyx_handle
        nodes = ir.topo_order([handle.node])
        sources = [n.source for n in nodes if n.op != "data"]
        return lazyx.graph_hash(out), sources, out.cpu()
    finally:
        lazy_tensor.use_fast_dispatch(True)


STEPS = st.lists(st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY)), st.none()),
    st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY)), st.one_of(st.none(), NUMBERS))),
    min_size=1, max_size=8)


@native
@settings(max_examples=60, deadline=None)
@given(steps=STEPS, shape=st.sampled_from([(), (3,), (2, 5), (2, 1, 4)]),
       dtype=st.sampled_from([torch.float32, torch.float64]), seed=st.integers(0, 2 ** 16))
def test_the_c_path_traces_what_the_python_path_traces(steps, shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.uniform(0.5, 2.0, shape)).to(dtype)
    y = torch.from_numpy(rng.uniform(0.5, 2.0, shape)).to(dtype)
    fast = _traced(steps, x, y, True)
    slow = _traced(steps, x, y, False)
    assert fast[0] == slow[0]  # one graph: same ops, operand order, params and dtypes
    assert fast[1] == slow[1] and all(s is not None and s[0] == __file__ for s in fast[1])
    torch.testing.assert_close(fast[2], slow[2], rtol=0, atol=0, equal_nan=True)
    # against eager torch in float64: each step adds at most a few ulps of its own size
    sizes = []
    eager = _program(steps, x.double(), y.double(), sizes)
    ulp = 2.0 ** -23 if dtype == torch.float32 else 2.0 ** -52
    torch.testing.assert_close(fast[2].double(), eager, rtol=0,
                               atol=16 * ulp * len(steps) * max(sizes + [1.0]))


@native
def test_the_c_path_is_in_place_and_takes_the_routed_calls(monkeypatch):
    dispatcher = lazy_tensor.LazyTensor.__dict__["__torch_dispatch__"].__func__
    assert type(dispatcher).__name__ == "FastDispatch"
    calls = []
    slow = lazy_tensor.dispatch

    def counting(func, args, kwargs):
        calls.append(str(func))
        return slow(func, args, kwargs)
    monkeypatch.setattr(lazy_tensor, "dispatch", counting)
    lazy_tensor.use_fast_dispatch(True)  # (re-made: it binds `dispatch` when installed)
    try:
        x = torch.ones(4, 4).to(lt.device)
        calls.clear()
        y = torch.tanh(x * 0.5 + x).t().detach() - 2
        assert calls == []  # every one of these six went the C way
        z = y + torch.ones(4).to(lt.device)  # broadcasting: the Python path
        assert any("add" in c for c in calls)
        torch.testing.assert_close(z.cpu(), torch.tanh(torch.ones(4, 4) * 1.5) - 1)
    finally:
        monkeypatch.undo()
        lazy_tensor.use_fast_dispatch(True)


CPU_CASES = [
    ("t of a 3-d tensor", lambda a, b: a.reshape(1, 2, 3).t()),
    ("clone with a memory format", lambda a, b: a.clone(memory_format=torch.contiguous_format)),
    ("broadcast", lambda a, b: a + b[0]),
    ("alpha", lambda a, b: torch.add(a, b, alpha=2)),
    ("bool number", lambda a, b: a * True),
    ("huge int", lambda a, b: a + 2 ** 60),
    ("int tensor", lambda a, b: a.to(torch.int32) * 3),
    ("int tensor true division", lambda a, b: a.to(torch.int64) / 2),
    ("float16", lambda a, b: a.half() * 0.5),
    ("mixed dtypes", lambda a, b: a + b.double()),
    ("rank 0 with a matrix", lambda a, b: a.sum() * b),
    ("division by zero", lambda a, b: a / 0),
    ("nan", lambda a, b: a - float("nan")),
    ("tanh of an int", lambda a, b: torch.tanh(a.to(torch.int32))),
]


@pytest.mark.parametrize("name,fn", CPU_CASES, ids=[c[0] for c in CPU_CASES])
def test_calls_outside_the_routes_follow_eager_torch(name, fn):
    a = torch.arange(6, dtype=torch.float32).reshape(2, 3) - 2.5
    b = torch.linspace(-1, 1, 6).reshape(2, 3)
    try:
        want = fn(a, b)
    except RuntimeError as error:  # torch's error, at the call, through the lazy device too
        with pytest.raises(type(error), match=re.escape(str(error)[:30])):
            fn(a.to(lt.device), b.to(lt.device))
        return
    got = fn(a.to(lt.device), b.to(lt.device))
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, equal_nan=True)


def test_the_node_cap_still_cuts_on_the_c_path(monkeypatch):
    monkeypatch.setenv("LAZYX_NODE_CAP", "40")
    lazyx.sync()  # (the cap is read at each cut)
    before = lazyx.metrics()["sync_causes"].get("node_cap", 0)
    x = torch.full((3,), 0.5).to(lt.device)
    want = torch.full((3,), 0.5)
    for _ in range(100):
        x = torch.tanh(x) * 1.5
        want = torch.tanh(want) * 1.5
    assert lazyx.metrics()["sync_causes"].get("node_cap", 0) >= before + 3
    torch.testing.assert_close(x.cpu(), want)


@native
def test_an_error_on_the_c_path_is_raised_at_the_call_and_leaves_no_state(monkeypatch):
    tanh = torch.ops.aten.tanh.default

    def refusing(node):
        raise ValueError("lazyx: refused")
    routes = dict(lazy_tensor.FAST_ROUTES)
    routes[tanh] = (1, refusing, lazy_tensor.LOWERINGS[tanh])
    monkeypatch.setattr(lazy_tensor, "FAST_ROUTES", routes)
    lazy_tensor.use_fast_dispatch(True)
    try:
        x = torch.ones(2, 2).to(lt.device)
        with pytest.raises(ValueError, match="lazyx: refused"):
            torch.tanh(x)
        assert source.CURRENT.depth == 0 and lazy_tensor._state.depth == 0
        torch.testing.assert_close((x * 2.0).cpu(), torch.full((2, 2), 2.0))
    finally:
        monkeypatch.undo()
        lazy_tensor.use_fast_dispatch(True)


@native
def test_number_params_of_the_c_path_follow_an_emptied_interning_table(monkeypatch):
    # the C path keeps each splat param's interned entry per (shape, dtype): once the table
    # is emptied (ir.LOCALS_GENERATION), a kept entry would name an id the table no longer has
    def param_of(shape, dtype):
        x = torch.ones(shape, dtype=dtype).to(lt.device)
        x * 0.5  # (the first call of a signature may take the Python path)
        out = torch._from_functional_tensor(x * 0.5)._lazyx_handle.node
        (param,) = [n for n in out.inputs if n.op == "param"]
        return param.local, param.hash, param.order

    def python_param_of(shape, dtype):
        lazy_tensor.use_fast_dispatch(False)
        try:
            return param_of(shape, dtype)
        finally:
            lazy_tensor.use_fast_dispatch(True)  # (a new C dispatcher: its table starts empty)
    expected = {dtype: python_param_of((2, 3), dtype) for dtype in (torch.float32, torch.float64)}
    # one entry per dtype and shape, not one per shape
    assert {dtype: param_of((2, 3), dtype) for dtype in expected} == expected
    before = param_of((2, 3), torch.float32)[0]
    shared.empty_the_interning_table(monkeypatch)
    after = param_of((2, 3), torch.float32)  # from the same C dispatcher as `before`
    assert after[0] != before and after[0] in {entry[0] for entry in ir._LOCALS.values()}
    assert after == python_param_of((2, 3), torch.float32)


def test_python_dispatch_alone_still_works(python_dispatch):
    assert type(lazy_tensor.LazyTensor.__dict__["__torch_dispatch__"].__func__).__name__ \
        == "function"
    x = torch.linspace(0, 1, 5).to(lt.device)
    torch.testing.assert_close((torch.exp(x) / 2 - x).cpu(),
                               torch.exp(torch.linspace(0, 1, 5)) / 2 - torch.linspace(0, 1, 5))


def test_threads_trace_their_own_lines_on_the_c_path():
    import threading
    results = {}

    def work(name):
        x = torch.ones(3).to(lt.device)
        y = x * 2.0  # the line recorded for the node
        results[name] = (torch._from_functional_tensor(y)._lazyx_handle.node.source, y.cpu())

    threads = [threading.Thread(target=work, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    for name in "ab":
        line, value = results[name]
        assert line[0] == __file__ and value.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("fast", [True, False])
def test_op_lines_stay_exact_past_the_line_cache(fast):
    """core/_native_lines.c remembers a frame's line by (code, instruction): 300 functions of
    two op lines each (more sites than its slots, so entries collide and are replaced), each
    called three times, must record each op's own line, on both dispatchers."""
    sites = 300
    source_text = "".join(f"def f{k}(x):\n    y = x * {k}.5\n" + "\n" * (k % 7) +
                          "    return y, y * 2.0\n" for k in range(sites))
    filename = os.path.join(os.path.dirname(__file__), "many_call_sites.py")  # (not on disk)
    namespace = {}
    exec(compile(source_text, filename, "exec"), namespace)
    lazy_tensor.use_fast_dispatch(fast)
    try:
        x = torch.ones(2).to(lt.device)
        for _ in range(3):
            for k in range(sites):
                fn = namespace[f"f{k}"]
                first = fn.__code__.co_firstlineno + 1
                lines = [torch._from_functional_tensor(t)._lazyx_handle.node.source[1]
                         for t in fn(x)]
                assert lines == [first, first + k % 7 + 1]
            lazyx.sync()
    finally:
        lazy_tensor.use_fast_dispatch(True)
