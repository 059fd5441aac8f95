"""Ops that user-style code sent to eager CPU torch (a counted fallback), now lowered: cdist's
and pdist's gradients, bincount, linalg.lstsq, and the _assert_async of one_hot's
decomposition in a torch.compile graph. Each compared with eager CPU torch, with no fallback
counted."""
import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.torch as lt

P_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf]


def _fallbacks():
    return dict(lazyx.metrics()["fallback_ops"])


def _grads_match(fn, *xs, atol=1e-10):
    """fn(*xs).sum()'s gradients on lazy copies equal eager's, with no fallback, no NaN."""
    eager = [x.clone().requires_grad_() for x in xs]
    fn(*eager).sum().backward()
    lazy = [x.to(lt.device).requires_grad_() for x in xs]
    before = _fallbacks()
    value = fn(*lazy)
    value.sum().backward()
    got = [x.grad.cpu() for x in lazy]
    assert _fallbacks() == before
    torch.testing.assert_close(value.detach().cpu(), fn(*xs))
    for g, e in zip(got, eager):
        assert not g.isnan().any()
        torch.testing.assert_close(g, e.grad, atol=atol, rtol=1e-7)


def _with_ties(a, b):
    """Rows and coordinates in common: zero distances and zero differences, where torch's
    gradient formulas divide by zero unless guarded."""
    a, b = a.clone(), b.clone()
    b[..., 0, :] = a.flatten(0, -2)[0]
    a[..., -1, 0] = b.flatten()[-1]
    return a, b


@pytest.mark.parametrize("p", P_VALUES)
@given(batch=st.sampled_from([(), (2,), (2, 1)]), r1=st.integers(1, 4), r2=st.integers(1, 4),
       m=st.integers(1, 3), seed=st.integers(0, 100))
@settings(max_examples=6)
def test_cdist_backward_matches_eager(p, batch, r1, r2, m, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(batch + (r1, m), generator=g, dtype=torch.float64)
    b = torch.randn(batch[-1:] + (r2, m), generator=g, dtype=torch.float64)  # broadcast batch
    a, b = _with_ties(a, b)
    _grads_match(lambda x, y: torch.cdist(x, y, p=p), a, b)


@pytest.mark.parametrize("p", P_VALUES)
@given(n=st.integers(1, 5), m=st.integers(1, 3), seed=st.integers(0, 100))
@settings(max_examples=6)
def test_pdist_backward_matches_eager(p, n, m, seed):
    x = torch.randn(n, m, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    if n > 2:
        x[2] = x[0]  # a zero distance
        x[1, 0] = x[0, 0]  # a zero difference
    _grads_match(lambda t: F.pdist(t, p=p), x)


def test_distance_gradients_in_float32_and_weighted():
    # a non-uniform upstream gradient: each pair's grad must reach its own rows
    a, b = torch.randn(4, 3), torch.randn(6, 3)
    w = torch.randn(4, 6)
    _grads_match(lambda x, y: (torch.cdist(x, y) * w.to(x.device)), a, b, atol=1e-5)
    v = torch.randn(6)
    _grads_match(lambda x: F.pdist(x, p=1.5) * v.to(x.device), a, atol=1e-5)


# ---------------------------------------------------------------- bincount

WEIGHTS = [None, torch.float32, torch.float64, torch.float16, torch.int32, torch.bool]


@pytest.mark.parametrize("weights", WEIGHTS, ids=str)
@given(values=st.lists(st.integers(0, 9), max_size=12), minlength=st.integers(0, 12),
       dtype=st.sampled_from([torch.int64, torch.int32, torch.uint8]))
@settings(max_examples=8)
def test_bincount_matches_eager_with_one_counted_read(weights, values, minlength, dtype):
    x = torch.tensor(values, dtype=dtype)
    w = None if weights is None else torch.rand(len(values)).mul(4).to(weights)
    expected = torch.bincount(x, w, minlength)
    before, reads = _fallbacks(), lazyx.metrics()["sync_causes"].get("data_dependent", 0)
    got = torch.bincount(x.to(lt.device), None if w is None else w.to(lt.device), minlength)
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype)
    # the length's read (none for an empty input); the counts stay lazy
    assert lazyx.metrics()["sync_causes"].get("data_dependent", 0) == reads + bool(values)
    torch.testing.assert_close(got.cpu(), expected)
    assert _fallbacks() == before


@pytest.mark.parametrize("call", [
    lambda d: torch.bincount(torch.tensor([[1, 2]], device=d)),
    lambda d: torch.bincount(torch.tensor([1, -2], device=d)),
    lambda d: torch.bincount(torch.tensor(3, device=d)),
    lambda d: torch.bincount(torch.tensor([1.0, 2.0], device=d)),
    lambda d: torch.bincount(torch.tensor([True], device=d)),
    lambda d: torch.bincount(torch.tensor([1, 2], device=d), minlength=-1),
    lambda d: torch.bincount(torch.tensor([1, 2], device=d), torch.ones(3, device=d)),
    lambda d: torch.bincount(torch.tensor([1, 2], device=d), torch.ones(2, 1, device=d)),
])
def test_bincount_errors_are_torchs(call):
    with pytest.raises(Exception) as eager:
        call("cpu")
    before = _fallbacks()
    with pytest.raises(type(eager.value), match=f"^{eager.value.args[0]}$".replace(".", r"\.")):
        call(lt.device)
    assert _fallbacks() == before


def test_bincount_in_a_training_step():
    # class weights from label frequencies: a common use in a loss
    labels = torch.tensor([0, 2, 2, 1, 2])
    logits = torch.randn(5, 3)
    def step(y, z):
        freq = torch.bincount(y, minlength=3).clamp(min=1)
        return F.cross_entropy(z, y, weight=freq.sum() / freq.to(z.dtype))
    lazy_logits = logits.to(lt.device).requires_grad_()
    before = _fallbacks()
    loss = step(labels.to(lt.device), lazy_logits)
    loss.backward()
    eager_logits = logits.clone().requires_grad_()
    step(labels, eager_logits).backward()
    torch.testing.assert_close(loss.detach().cpu(), step(labels, logits))
    torch.testing.assert_close(lazy_logits.grad.cpu(), eager_logits.grad)
    assert _fallbacks() == before


# ---------------------------------------------------------------- one_hot, _assert_async

def _one_hot_step(model, opt, classes):
    def step(x, y):
        opt.zero_grad()
        target = (F.one_hot(y, classes) if classes else F.one_hot(y)).to(x.dtype)
        loss = ((model(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return step


@pytest.mark.parametrize("classes", [None, 3])
@pytest.mark.parametrize("how", ["lazy", "lazyx.compile", "torch.compile"])
def test_one_hot_in_a_training_step_without_fallback(classes, how):
    torch.manual_seed(0)
    x, y = torch.randn(5, 4), torch.tensor([0, 1, 2, 1, 2])
    eager_model = torch.nn.Linear(4, 3)
    model = torch.nn.Linear(4, 3).to(lt.device)
    model.load_state_dict(eager_model.state_dict())
    eager_step = _one_hot_step(eager_model, torch.optim.SGD(eager_model.parameters(), 0.1),
                               classes)
    step = _one_hot_step(model, torch.optim.SGD(model.parameters(), 0.1), classes)
    if how == "lazyx.compile":
        # one_hot without a class count reads it: a split step, replayed piece by piece
        step = lazyx.compile(step, on_observe="split" if classes is None else "raise")
    elif how == "torch.compile":
        step = torch.compile(step, backend=lt.dynamo_backend)
    before = _fallbacks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (lazyx.compile's note on the split)
        for _ in range(3):
            loss = step(x.to(lt.device), y.to(lt.device))
            torch.testing.assert_close(loss.detach().cpu(), eager_step(x, y).detach())
    assert _fallbacks() == before
    torch.testing.assert_close(model.weight.detach().cpu(), eager_model.weight.detach())


def test_one_hot_asserts_in_a_compiled_graph_are_not_a_fallback():
    # torch's one_hot decomposition (a torch.compile graph) asserts its class range with
    # aten._assert_async.msg, which ran on CPU torch, splitting the graph
    y = torch.tensor([0, 2, 1])
    fn = torch.compile(lambda t: F.one_hot(t, 4) * 2, backend=lt.dynamo_backend)
    before = _fallbacks()
    torch.testing.assert_close(fn(y.to(lt.device)).cpu(), F.one_hot(y, 4) * 2)
    torch.testing.assert_close(fn(y), F.one_hot(y, 4) * 2)
    assert _fallbacks() == before


def test_a_compiled_graph_with_cpu_inputs_raises_torchs_assert_error_at_each_call():
    """Its asserts' predicates are results of the program, checked after each call whose
    results come back to the CPU (the class range Inductor's graph checks too); lazy results
    are not read for it (docs/errors.md)."""
    fn = torch.compile(lambda t: F.one_hot(t, 4) * 2, backend=lt.dynamo_backend)
    bad = torch.tensor([0, 5, 1])
    with pytest.raises(RuntimeError) as eager_error:
        F.one_hot(bad, 4)
    for _ in range(2):
        with pytest.raises(RuntimeError, match=str(eager_error.value)):
            fn(bad)
    torch.testing.assert_close(fn(torch.tensor([3, 0])), F.one_hot(torch.tensor([3, 0]), 4) * 2)
    fn(bad.to(lt.device))  # (pending: not read, as the lazy path's one_hot)


@pytest.mark.parametrize("args", [(torch.tensor(False), "boom"), (torch.tensor([True, True]),),
                                  (torch.tensor(0.0),), (torch.tensor(True), "fine"),
                                  (torch.tensor(3),)])
def test_assert_async_on_known_values_is_torchs(args):
    try:
        torch._assert_async(*args)
        error = None
    except RuntimeError as err:
        error = err
    before = _fallbacks()
    lazy = (args[0].to(lt.device),) + args[1:]
    if error is None:
        torch._assert_async(*lazy)
    else:
        with pytest.raises(RuntimeError, match=f"^{error.args[0]}$"):
            torch._assert_async(*lazy)
    assert _fallbacks() == before


# ---------------------------------------------------------------- linalg.lstsq

@pytest.mark.parametrize("driver", [None, "gelsy", "gels", "gelsd", "gelss"])
@given(a_batch=st.sampled_from([(), (2,), (1,), (3, 1)]), m=st.integers(1, 6),
       n=st.integers(1, 6), k=st.sampled_from([None, 1, 3]), dtype=st.sampled_from(
           [torch.float32, torch.float64]), seed=st.integers(0, 100))
@settings(max_examples=8)
def test_lstsq_matches_eager(driver, a_batch, m, n, k, dtype, seed):
    # tall and wide, batched (B's batch broadcast against A's), a vector right-hand side
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(a_batch + (m, n), generator=g, dtype=dtype)
    b_batch = a_batch if k is None else tuple(reversed(a_batch))  # (3, 1) against (1, 3)
    B = torch.randn(b_batch + (m,) + (() if k is None else (k,)), generator=g, dtype=dtype)
    try:
        expected = torch.linalg.lstsq(A, B, driver=driver)
    except RuntimeError as error:  # batches that do not broadcast
        with pytest.raises(RuntimeError, match=str(error).split(":")[0]):
            torch.linalg.lstsq(A.to(lt.device), B.to(lt.device), driver=driver)
        return
    before = _fallbacks()
    got = torch.linalg.lstsq(A.to(lt.device), B.to(lt.device), driver=driver)
    assert _fallbacks() == before
    tol = 1e-3 if dtype == torch.float32 else 1e-8
    for field in ("solution", "residuals", "rank", "singular_values"):
        want, have = getattr(expected, field), getattr(got, field).cpu()
        assert (have.shape, have.dtype) == (want.shape, want.dtype), field
        torch.testing.assert_close(have, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("driver", ["gelsd", "gelss"])
@pytest.mark.parametrize("a_shape,b_shape,rcond", [
    ((6, 3), (6, 2), None), ((2, 6, 3), (2, 6), None), ((1, 6, 3), (2, 6, 2), -1.0),
    ((0, 6, 3), (0, 6, 2), None), ((6, 0), (6, 2), None), ((0, 3), (0, 2), None),
    ((3, 6), (3, 2), 0.3), ((6, 3), (6, 2), 0.5)])
@pytest.mark.parametrize("deficient", [False, True])
def test_lstsq_svd_drivers_residuals_only_at_full_rank(driver, a_shape, b_shape, rcond,
                                                       deficient):
    """gelsd and gelss give residuals only when m > n and every matrix has full rank: their
    shape depends on the rank found, read in one counted data-dependent sync."""
    g = torch.Generator().manual_seed(3)
    A = torch.randn(a_shape, generator=g, dtype=torch.float64)
    B = torch.randn(b_shape, generator=g, dtype=torch.float64)
    if deficient and A.shape[-1] > 2 and A.numel():
        A[..., -1] = A[..., -2]  # one rank down, in every matrix of the batch
    expected = torch.linalg.lstsq(A, B, rcond=rcond, driver=driver)
    before = _fallbacks()
    got = torch.linalg.lstsq(A.to(lt.device), B.to(lt.device), rcond=rcond, driver=driver)
    assert _fallbacks() == before
    for field in ("solution", "residuals", "rank", "singular_values"):
        want, have = getattr(expected, field), getattr(got, field).cpu()
        assert (have.shape, have.dtype) == (want.shape, want.dtype), field
        torch.testing.assert_close(have, want, rtol=1e-8, atol=1e-8)


def test_lstsq_one_rank_deficient_matrix_drops_the_batchs_residuals():
    A = torch.randn(3, 6, 3, dtype=torch.float64)
    A[1, :, 2] = A[1, :, 0]
    B = torch.randn(3, 6, 2, dtype=torch.float64)
    assert torch.linalg.lstsq(A, B, driver="gelsd").residuals.shape == (0,)
    lazyx.reset_metrics()
    got = torch.linalg.lstsq(A.to(lt.device), B.to(lt.device), driver="gelsd")
    assert got.residuals.shape == (0,) and got.rank.tolist() == [3, 2, 3]
    assert lazyx.metrics()["sync_causes"].get("data_dependent") == 1


def test_lstsq_rank_deficient_and_gradients():
    A, B = torch.randn(6, 3, dtype=torch.float64), torch.randn(6, 2, dtype=torch.float64)
    _grads_match(lambda a, b: torch.linalg.lstsq(a, b).solution, A, B)
    A[:, 2] = A[:, 1]  # rank 2: gelsy's minimum-norm solution
    expected = torch.linalg.lstsq(A, B)
    got = torch.linalg.lstsq(A.to(lt.device), B.to(lt.device))
    assert got.rank.item() == expected.rank.item() == 2
    torch.testing.assert_close(got.solution.cpu(), expected.solution)


@pytest.mark.parametrize("args,kwargs", [
    ((torch.randn(6, 3), torch.randn(6, 2)), {"driver": "foo"}),
    ((torch.randn(6, 3), torch.randn(6, 2, dtype=torch.float64)), {}),
    ((torch.randn(6, 3), torch.randn(5, 2)), {}),
    ((torch.ones(6, 3, dtype=torch.int64), torch.ones(6, 2, dtype=torch.int64)), {}),
    ((torch.randn(6, 3), torch.randn(4, 6, 2)), {}),
    ((torch.randn(6), torch.randn(6)), {}),
])
def test_lstsq_errors_are_torchs(args, kwargs):
    with pytest.raises(RuntimeError) as eager:
        torch.linalg.lstsq(*args, **kwargs)
    before = _fallbacks()
    with pytest.raises(RuntimeError) as lazy:
        torch.linalg.lstsq(*[a.to(lt.device) for a in args], **kwargs)
    assert str(lazy.value) == str(eager.value)
    assert _fallbacks() == before
