"""Recipes (frontends/torch/recipes.py): a call off the C routes is lowered by the Python
dispatcher once per signature, and stamped in C after. A stamped trace must be the Python
path's trace exactly -- graph hash, leaf order (one compile), source lines, values -- and a
call whose lowering is not a pure function of its key (random numbers, a changed default
dtype, -0.0 against 0.0) must never be stamped from another call's recipe."""
import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyx
import lazyx.frontends.torch as lt
from lazyx.core import ir
from lazyx.frontends.torch import recipes
from lazyx.frontends.torch import tensor as lazy_tensor

native = pytest.mark.skipif(ir.NATIVE_BASE is None, reason="the C core is not built here")

W = torch.linspace(-1, 1, 16).reshape(4, 4)
# ops the C routes do not take: each goes through the general dispatcher, then its recipe
OPS = {
    "view": lambda t, y, w: t.reshape(-1, 4).reshape(t.shape),  # a reshape of a reshape
    "transpose": lambda t, y, w: t.transpose(0, 1).contiguous().transpose(0, 1),
    "broadcast_add": lambda t, y, w: t + y,
    "alpha": lambda t, y, w: torch.add(t, y, alpha=0.5),
    "sum": lambda t, y, w: t.sum(-1, keepdim=True) * t,
    "softmax": lambda t, y, w: t.softmax(-1),
    "matmul": lambda t, y, w: t @ w,
    "layer_norm": lambda t, y, w: F.layer_norm(t, (4,)),
    "where": lambda t, y, w: torch.where(t > 0, t, 0.1 * t),
    "cat": lambda t, y, w: torch.cat([t, t * 2.0], -1)[..., 2:6],
    "pow": lambda t, y, w: t.abs() ** 1.5,
    "mean": lambda t, y, w: t - t.mean(),
    "clamp": lambda t, y, w: torch.clamp(t, min=-0.5, max=0.75),
}


def _run(names, x, y, w):
    out = x
    for name in names:
        out = OPS[name](out, y, w)
    return out


def _traces(names, fast, repeats=3):
    """The program traced `repeats` times (the first records, the next are stamped): each
    trace's graph hash, source lines and value."""
    lazy_tensor.use_fast_dispatch(fast)
    try:
        x = torch.linspace(-2, 2, 24).reshape(2, 3, 4).to(lt.device)
        y = torch.tensor([0.5, -1.0, 2.0, 0.25]).to(lt.device)
        w = W.to(lt.device)
        lazyx.sync()
        found = []
        for _ in range(repeats):
            out = _run(names, x, y, w)
            node = torch._from_functional_tensor(out)._lazyx_handle.node
            lines = [n.source for n in ir.topo_order([node]) if n.op != "data"]
            found.append((lazyx.graph_hash(out), lines, out.cpu()))
        return found
    finally:
        lazy_tensor.use_fast_dispatch(True)


@native
@settings(max_examples=40, deadline=None)
@given(names=st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=5))
def test_stamped_calls_trace_what_the_python_path_traces(names):
    python = _traces(names, fast=False, repeats=1)[0]
    eager = _run(names, torch.linspace(-2, 2, 24).reshape(2, 3, 4),
                 torch.tensor([0.5, -1.0, 2.0, 0.25]), W)
    for graph_hash, lines, value in _traces(names, fast=True):
        assert graph_hash == python[0]
        assert lines == python[1]
        assert torch.equal(value, python[2])  # one graph: one program, bit for bit
        if names.count("layer_norm") <= 1:  # (a sanity check only: with two, a layer norm
            # may normalize rows of nearly equal values, turning float32 ulps into anything;
            # and a product that cancels, sum-sum-sum-matmul, leaves ulps of its large terms)
            scale = max(1.0, float(eager.abs().max()))
            torch.testing.assert_close(value, eager, rtol=1e-3, atol=5e-3 * scale)


def _counting_dispatch(monkeypatch):
    calls = []
    slow = lazy_tensor.dispatch

    def counting(func, args, kwargs):
        if lazy_tensor._state.depth == 0:  # a user's call (not one inside an expansion)
            calls.append(str(func))
        return slow(func, args, kwargs)
    monkeypatch.setattr(lazy_tensor, "dispatch", counting)
    lazy_tensor.use_fast_dispatch(True)  # (re-made: it binds `dispatch` when installed)
    return calls


@native
def test_a_repeated_call_is_stamped_without_the_python_dispatcher(monkeypatch):
    calls = _counting_dispatch(monkeypatch)
    try:
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                    torch.nn.Linear(8, 2)).to(lt.device)
        x = torch.linspace(-1, 1, 12).reshape(3, 4).to(lt.device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
        losses = []
        for step in range(3):
            calls.clear()
            opt.zero_grad()
            loss = F.mse_loss(model(x), torch.zeros(3, 2, device=lt.device))
            loss.backward()
            opt.step()
            lt.mark_step()
            losses.append(loss.item())
            if step == 0:
                lowered = list(calls)
        assert "aten.addmm.default" in lowered and "aten.mse_loss.default" in lowered
        # (a factory; the loss's .item() after the barrier is a ready read, answered
        # before either dispatcher: tensor._ready_item)
        assert calls == ["aten.zeros.default"]
        assert losses[2] < losses[0]
        assert lazyx.metrics()["compiles"] >= 1
    finally:
        monkeypatch.undo()
        lazy_tensor.use_fast_dispatch(True)


@native
def test_a_stamped_step_compiles_once():
    x = torch.linspace(-1, 1, 12).reshape(3, 4).to(lt.device)
    y = torch.tensor([1.0, 2.0, 3.0, 4.0]).to(lt.device)
    lazyx.sync()
    lazyx.reset_metrics()
    want = (F.layer_norm(x.cpu() + y.cpu(), (4,)) @ W).softmax(-1).sum(0)
    for _ in range(4):
        out = (F.layer_norm(x + y, (4,)) @ W.to(lt.device)).softmax(-1).sum(0)
        lt.mark_step()
        torch.testing.assert_close(out.cpu(), want)
    assert lazyx.metrics()["compiles"] == 1  # the stamped traces key the same program


@native
def test_random_ops_are_never_stamped():
    def masks(fast):
        lazy_tensor.use_fast_dispatch(fast)
        try:
            torch.manual_seed(3)
            x = torch.ones(64, 4).to(lt.device)
            found = [F.dropout(x + 0.0, 0.5, training=True).cpu() for _ in range(4)]
            found += [torch.rand_like(x).cpu() for _ in range(2)]
            return found
        finally:
            lazy_tensor.use_fast_dispatch(True)
    fast, python = masks(True), masks(False)
    for a, b in zip(fast, python):
        assert torch.equal(a, b)  # the same draws as the Python path, call for call
    assert not torch.equal(fast[0], fast[1]) and not torch.equal(fast[4], fast[5])
    drawing = [key[0] for key, recipe in recipes.RECIPES.items() if recipe is not None and
               any(word in str(key[0]) for word in ("dropout", "rand", "bernoulli"))]
    assert drawing == []


@native
def test_negative_zero_is_not_zero_on_either_c_path():
    x = torch.arange(1.0, 7.0).reshape(2, 3).to(lt.device)
    for _ in range(2):  # (the second time from the recipes)
        assert not torch.signbit(torch.clamp(x, max=0.0).cpu()).any()
        assert torch.signbit(torch.clamp(x, max=-0.0).cpu()).all()
        assert not torch.signbit((x * 0.0).cpu()).any()  # the float route
        assert torch.signbit((x * -0.0).cpu()).all()
    assert any(recipe is not None and key[0] is torch.ops.aten.clamp.default
               for key, recipe in recipes.RECIPES.items())


@native
def test_the_default_dtype_is_part_of_the_key():
    xi = torch.arange(6).to(lt.device)
    before = torch.get_default_dtype()
    try:
        for dtype in (torch.float32, torch.float64, torch.float32):
            torch.set_default_dtype(dtype)
            for _ in range(2):
                got = xi * 0.5  # an int tensor: off the routes
                assert got.dtype == dtype
                torch.testing.assert_close(got.cpu(), torch.arange(6) * 0.5)
    finally:
        torch.set_default_dtype(before)


@native
def test_lazyx_compile_links_numbers_on_the_c_path():
    # while lazyx.compile traces, every number's param must reach its hooks (core/capture.py)
    # to be linked to the step's arguments: the C paths step aside, and a new lr replays
    def counts(fast):
        lazy_tensor.use_fast_dispatch(fast)
        try:
            x = torch.ones(3).to(lt.device)

            @lazyx.compile
            def step(x, lr):
                return torch.add(x * lr, torch.ones(1, device=lt.device), alpha=lr)

            before = lazyx.metrics()
            for lr in (0.3, 0.2, 1.7, 2.9, 0.7):  # (0.5 and integers are too common to link)
                np.testing.assert_allclose(step(x, lr).cpu().numpy(), [2 * lr] * 3, rtol=1e-6)
            after = lazyx.metrics()
            return after["replays"] - before["replays"], \
                after["replay_misses"] - before["replay_misses"]
        finally:
            lazy_tensor.use_fast_dispatch(True)
    replays, misses = counts(True)
    assert (replays, misses) == counts(False)
    assert replays >= 3 and misses == 0


@native
def test_the_node_cap_cut_before_a_stamp_leaves_no_old_graph(monkeypatch):
    monkeypatch.setenv("LAZYX_NODE_CAP", "30")
    lazyx.sync()  # (the cap is read at each cut)
    cuts = lazyx.metrics()["sync_causes"].get("node_cap", 0)
    x = torch.full((2, 3), 0.5).to(lt.device)
    y = torch.tensor([0.25, -0.5, 1.0]).to(lt.device)
    want = torch.full((2, 3), 0.5)
    for _ in range(60):
        x = torch.tanh(x + y) * 1.5  # broadcasting: off the routes
        want = torch.tanh(want + torch.tensor([0.25, -0.5, 1.0])) * 1.5
        node = torch._from_functional_tensor(x)._lazyx_handle.node
        assert len(ir.topo_order([node])) <= 60  # a cut leaves data leaves, not its graph
    assert lazyx.metrics()["sync_causes"].get("node_cap", 0) >= cuts + 3
    torch.testing.assert_close(x.cpu(), want)


@native
def test_a_new_interning_generation_drops_the_recipes():
    x = torch.linspace(-1, 1, 6).reshape(2, 3).to(lt.device)
    y = torch.tensor([1.0, 2.0, 3.0]).to(lt.device)
    for _ in range(2):
        torch.testing.assert_close((x + y).cpu(), x.cpu() + y.cpu())
    assert len(recipes.RECIPES) > 0
    ir.LOCALS_GENERATION[0] += 1  # (what emptying the interning table does)
    z = x - y.sum(0)
    assert len(recipes.RECIPES) <= 2  # emptied, then at most this call's sum and sub
    torch.testing.assert_close(z.cpu(), x.cpu() - 6.0)


def test_a_splat_of_an_operands_own_number_is_never_stamped():
    # x[:, 0] = v expands a lazy scalar holding v (a param): its splat copies v, which is in no
    # key, so a recipe made for one v must not stamp another's
    x = torch.zeros(3, 4).to(lt.device)
    for v in (-1.0, 7.0, 2.5, -1.0):
        x[:, 0] = v
        assert x.cpu()[:, 0].tolist() == [v] * 3
        s = torch.tensor(v).to(lt.device)
        assert (s.expand(2, 3) * 1.0).cpu().tolist() == [[v] * 3] * 2


@native
def test_a_value_check_still_runs_before_a_stamp(monkeypatch):
    # nll_loss checks its targets when their values are known (bounds.py): a stamped call
    # must raise torch's error for a bad target exactly as the general path does
    calls = _counting_dispatch(monkeypatch)
    try:
        x = torch.linspace(-1, 1, 12).reshape(4, 3)
        lazy_x = x.to(lt.device)
        good = torch.tensor([0, 1, 2, 1])
        for _ in range(2):
            calls.clear()
            got = F.nll_loss(lazy_x, good.to(lt.device))
        assert "aten.nll_loss_forward.default" not in calls  # (stamped the second time)
        torch.testing.assert_close(got.cpu(), F.nll_loss(x, good))
        bad = torch.tensor([0, 1, 3, 1])
        with pytest.raises(Exception) as eager:
            F.nll_loss(x, bad)
        with pytest.raises(type(eager.value), match="out of bounds"):
            F.nll_loss(lazy_x, bad.to(lt.device))
    finally:
        monkeypatch.undo()
        lazy_tensor.use_fast_dispatch(True)


@native
def test_a_call_whose_floats_keep_changing_stops_being_recorded(monkeypatch):
    # a new float is a new key: past FLOAT_VARIANT_LIMIT of them a call (its other arguments
    # the same) is no longer recorded -- each recording walks what the call made -- and it
    # still computes right; other shapes of the same op are still recorded
    monkeypatch.setattr(recipes, "FLOAT_VARIANT_LIMIT", 5)
    monkeypatch.setattr(recipes, "_FLOAT_VARIANTS", {})
    recipes.RECIPES.clear()  # (a cache: what earlier tests recorded is not counted here)
    x = torch.linspace(-1, 1, 6).reshape(2, 3).to(lt.device)
    y = torch.tensor([1.0, 2.0, 3.0]).to(lt.device)
    add = torch.ops.aten.add.Tensor
    for step in range(12):
        got = torch.add(x, y, alpha=0.1 * (step + 1))  # broadcasting, alpha=: off the routes
        torch.testing.assert_close(got.cpu(), x.cpu() + y.cpu() * (0.1 * (step + 1)))
    assert sum(1 for key in recipes.RECIPES if key[0] is add) == 5
    for n in range(3, 6):  # other shapes: variants of their own
        z = torch.ones(n, 3).to(lt.device)
        torch.testing.assert_close(torch.add(z, y, alpha=0.7).cpu(), z.cpu() + y.cpu() * 0.7)
    assert sum(1 for key in recipes.RECIPES if key[0] is add) == 8


@native
def test_an_optimizers_foreach_elements_are_stamped(monkeypatch):
    """torch picks the foreach path for optimizers on lt.device (it lists the device among
    its foreach devices). Each `_foreach_X` reaches the dispatcher whole; its element calls
    are made as a user's calls, so from the second step on they are stamped in C instead of
    going through the general path one element at a time (an element whose numbers change
    every step, such as Adam's step size, still takes it)."""
    general = []
    slow = lazy_tensor._dispatch

    def counting(func, args, kwargs, state):
        general.append(str(func))
        return slow(func, args, kwargs, state)
    monkeypatch.setattr(lazy_tensor, "_dispatch", counting)
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                    torch.nn.Linear(8, 2))
        lazy_model = copy.deepcopy(model).to(lt.device)
        x = torch.linspace(-1, 1, 12).reshape(3, 4)
        opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
                for m in (model, lazy_model)]
        assert opts[1].defaults["foreach"] is None  # torch's own default: foreach here
        for step in range(3):
            for m, opt, data in ((model, opts[0], x), (lazy_model, opts[1], x.to(lt.device))):
                opt.zero_grad()
                F.mse_loss(m(data), torch.zeros(3, 2, device=data.device)).backward()
                general.clear()
                opt.step()
            lt.mark_step()
        assert general and all(name.startswith("aten._foreach_") for name in general), general
        for p, q in zip(model.parameters(), lazy_model.parameters()):
            torch.testing.assert_close(q.cpu(), p.detach(), rtol=1e-6, atol=1e-7)
    finally:
        monkeypatch.undo()
