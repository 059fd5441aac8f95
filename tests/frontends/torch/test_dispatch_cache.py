"""The per-op fast path: torch's meta result is memoized per signature, expansions per op,
backward runs on the caller's thread, and losses and softmax backwards are lowered whole.

A memo must never answer for a call it has not seen: the same op with other shapes, dtypes,
scalar types or attributes gets its own meta result, checked here against eager torch.
"""
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyx
import lazyx.frontends.torch as lt
from lazyx.frontends.torch import tensor as lazy_tensor

DTYPES = (torch.float32, torch.float64, torch.int32, torch.int64, torch.bool)


def _lazy(t):
    return t.to(lt.device)


def _same(lazy, eager):
    assert lazy.shape == eager.shape and lazy.dtype == eager.dtype
    torch.testing.assert_close(lazy.cpu(), eager, equal_nan=True)


def _tensor(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    values = np.asarray(rng.standard_normal(shape) * 3)
    return torch.from_numpy(values).to(dtype)


shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
scalars = st.sampled_from([2, 2.5, True, -1])


@settings(max_examples=40, deadline=None)
@given(shape=shapes, trailing=st.booleans(), dtype=st.sampled_from(DTYPES),
       other=st.sampled_from(DTYPES), scalar=scalars, seed=st.integers(0, 2 ** 16))
def test_binary_ops_follow_torch_for_every_signature(shape, trailing, dtype, other, scalar,
                                                     seed):
    """Same op, varying shapes (broadcast or not), dtypes and scalar types: each result has
    torch's shape, dtype and values, however many signatures the cache already holds."""
    x = _tensor(shape, dtype, seed)
    y = _tensor(shape[-1:] if trailing else shape, other, seed + 1)
    for fn in (torch.add, torch.mul, torch.maximum):
        if dtype == torch.bool and other == torch.bool and fn is torch.add:
            continue
        _same(fn(_lazy(x), _lazy(y)), fn(x, y))
        _same(torch.mul(_lazy(x), scalar), torch.mul(x, scalar))


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       keepdim=st.booleans(), dim=st.integers(-3, 2), dtype=st.sampled_from(DTYPES[:4]),
       seed=st.integers(0, 2 ** 16))
def test_reductions_follow_torch_for_every_attribute(shape, keepdim, dim, dtype, seed):
    x = _tensor(shape, dtype, seed)
    dim = dim % len(shape)
    _same(torch.sum(_lazy(x), dim=dim, keepdim=keepdim), torch.sum(x, dim=dim, keepdim=keepdim))
    _same(torch.amax(_lazy(x), dim=dim, keepdim=keepdim),
          torch.amax(x, dim=dim, keepdim=keepdim))
    _same(_lazy(x).transpose(0, dim), x.transpose(0, dim))


def test_python_scalar_type_is_part_of_the_signature():
    """1, 1.0 and True are equal (and hash equal) in Python but promote differently."""
    x = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    for scalar in (1, 1.0, True, 1, 1.0):
        _same(_lazy(x) + scalar, x + scalar)
    b = torch.tensor([True, False])
    for scalar in (True, 1, 1.0):
        _same(_lazy(b) * scalar, b * scalar)


def test_view_sizes_are_part_of_the_signature():
    x = torch.arange(24, dtype=torch.float32)
    for sizes in ((4, 6), (6, 4), (2, 3, 4), (24,), (4, 6)):
        _same(_lazy(x).view(sizes) * 2, x.view(sizes) * 2)


def test_errors_are_not_memoized():
    """A bad call raises torch's error each time; a good call of the same op still works."""
    x, y = _lazy(torch.ones(2, 3)), _lazy(torch.ones(4, 5))
    for _ in range(2):
        with pytest.raises(RuntimeError, match="size of tensor a"):
            x + y
        _same(x + x, torch.full((2, 3), 2.0))


def test_meta_results_are_memoized():
    calls = []
    real = torch.ops.aten.add.Tensor

    x = _lazy(torch.ones(3, 2))
    x + 1.0  # the signature is now known
    before = len(lazy_tensor._meta_cache)
    for _ in range(5):
        calls.append(x + 1.0)
    assert len(lazy_tensor._meta_cache) == before  # hits: no new entry, no meta call
    _same(calls[-1], torch.full((3, 2), 2.0))
    assert id(real) in {key[0] for key in lazy_tensor._meta_cache}  # (ops keyed by id)


def test_an_op_routed_before_its_tables_changed_is_routed_again(monkeypatch):
    # an op's route (its value check, special handler and lowering) is looked up once; an
    # entry registered later (an aten module imported late) must still be found
    x = _lazy(torch.tensor([1.0, -2.0]))
    _same(-x, torch.tensor([-1.0, 2.0]))  # routed to neg's lowering
    seen = []

    def special(t):
        seen.append(t.shape)
        return t  # (a stand-in: neg answered by its input)
    monkeypatch.setitem(lazy_tensor.SPECIAL, torch.ops.aten.neg.default, special)
    _same(-x, torch.tensor([1.0, -2.0]))
    assert seen == [torch.Size([2])]
    monkeypatch.undo()
    _same(-x, torch.tensor([-1.0, 2.0]))  # and back to the lowering once it is gone


def test_backward_runs_on_the_calling_thread():
    """The autograd engine would run a device's backward on a thread of its own; lazyx's
    traces and pending handles are per thread, so the gradients must be made here."""
    threads = set()
    original = lazy_tensor._dispatch

    def spy(*args):
        threads.add(threading.get_ident())
        return original(*args)

    model = torch.nn.Linear(4, 3).to(lt.device)
    lazy_tensor._dispatch = spy
    try:
        model(_lazy(torch.ones(2, 4))).sum().backward()
    finally:
        lazy_tensor._dispatch = original
    assert threads == {threading.get_ident()}
    lazyx.sync()  # a barrier in this thread runs the gradients
    assert not model.weight.grad.__lazyx_handle__.pending


def test_a_repeated_training_step_walks_no_graph():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 3)).to(lt.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = _lazy(torch.randn(5, 8)), _lazy(torch.tensor([0, 2, 1, 1, 0]))
    walked = []
    for _ in range(4):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        lt.mark_step()
        walked.append(lazyx.metrics()["nodes_walked"])
    assert walked[-1] == walked[1]  # steps 3 and 4 hit the cache by their keys alone


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("batched", [True, False])
def test_cross_entropy_and_its_gradient_match_eager(reduction, weighted, batched):
    torch.manual_seed(1)
    x = torch.randn(6, 5, dtype=torch.float64) if batched else torch.randn(5, dtype=torch.float64)
    target = torch.tensor([0, 4, -100, 2, 2, 1]) if batched else torch.tensor(3)
    weight = torch.rand(5, dtype=torch.float64) if weighted else None
    lx = _lazy(x).requires_grad_()
    x.requires_grad_()
    before = dict(lazyx.metrics()["fallback_ops"])
    for inp, t, w in ((x, target, weight), (lx, _lazy(target),
                                            None if weight is None else _lazy(weight))):
        loss = F.cross_entropy(inp, t, weight=w, reduction=reduction)
        (loss * torch.linspace(1, 2, loss.numel(), dtype=loss.dtype, device=loss.device)
         .reshape(loss.shape)).sum().backward()
    _same(lx.grad, x.grad)
    assert lazyx.metrics()["fallback_ops"] == before


@pytest.mark.parametrize("fn", [torch.softmax, torch.log_softmax])
@pytest.mark.parametrize("shape,dim", [((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((), 0)])
def test_softmax_gradients_match_eager(fn, shape, dim):
    torch.manual_seed(2)
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(shape, dtype=torch.float64)
    (fn(x, dim) * weights).sum().backward()
    lx = _lazy(x.detach()).requires_grad_()
    (fn(lx, dim) * _lazy(weights)).sum().backward()
    _same(lx.grad, x.grad)


@pytest.mark.parametrize("shape,normalized,affine", [((2, 3, 4), (4,), True),
                                                     ((2, 3, 4), (3, 4), True),
                                                     ((5, 4), (4,), False), ((4,), (4,), True)])
def test_layer_norm_gradients_match_eager(shape, normalized, affine):
    torch.manual_seed(3)
    ln = torch.nn.LayerNorm(normalized, elementwise_affine=affine, dtype=torch.float64)
    if affine:
        with torch.no_grad():
            ln.weight.normal_()
            ln.bias.normal_()
    lazy_ln = torch.nn.LayerNorm(normalized, elementwise_affine=affine, dtype=torch.float64)
    lazy_ln.load_state_dict(ln.state_dict())
    lazy_ln = lazy_ln.to(lt.device)
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(shape, dtype=torch.float64)
    (ln(x) * weights).sum().backward()
    lx = _lazy(x.detach()).requires_grad_()
    before = dict(lazyx.metrics()["fallback_ops"])
    (lazy_ln(lx) * _lazy(weights)).sum().backward()
    _same(lx.grad, x.grad)
    if affine:
        _same(lazy_ln.weight.grad, ln.weight.grad)
        _same(lazy_ln.bias.grad, ln.bias.grad)
    assert lazyx.metrics()["fallback_ops"] == before
