"""Lazy results against eager CPU torch: promotion, broadcasting, reductions, indexing,
in-place writes through views, and torch's own errors raised at the call."""
import pytest
import torch
from hypothesis import given, strategies as st

import lazyx
import lazyx.frontends.torch as lt

DTYPES = [torch.float32, torch.int64, torch.int32, torch.bool, torch.float64]
SHAPES = [(), (3,), (2, 3), (1, 3), (2, 1)]


def _tensor(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=dtype) * 3
    return torch.randint(-5, 6, shape, generator=g, dtype=dtype)


def _check(fn, *xs):
    try:
        expected = fn(*xs)
    except Exception as err:  # torch refuses: the lazy call must refuse the same way, now
        with pytest.raises(type(err)):
            fn(*[x.to(lt.device) if isinstance(x, torch.Tensor) else x for x in xs])
        return
    got = fn(*[x.to(lt.device) if isinstance(x, torch.Tensor) else x for x in xs])
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected, equal_nan=True, rtol=1e-5, atol=1e-5)


BINARY = [torch.add, torch.sub, torch.mul, torch.div, torch.maximum, torch.eq, torch.lt,
          torch.remainder, torch.floor_divide, torch.logical_and, torch.bitwise_xor,
          lambda a, b: torch.div(a, b, rounding_mode="trunc"),
          lambda a, b: torch.where(a > 0 if a.dtype != torch.bool else a, a, b)]


@given(op=st.sampled_from(BINARY), da=st.sampled_from(DTYPES), db=st.sampled_from(DTYPES),
       sa=st.sampled_from(SHAPES), sb=st.sampled_from(SHAPES), seed=st.integers(0, 3))
def test_binary_promotion_and_broadcasting(op, da, db, sa, sb, seed):
    a, b = _tensor(da, sa, seed), _tensor(db, sb, seed + 1)
    if torch.bool in (da, db) and op in (torch.floor_divide, torch.remainder):
        return  # torch's meta kernel refuses bool floor division that its CPU kernel accepts
    if da == db == torch.bool and op is torch.div:
        return  # XLA folds convert(bool) 0/0 to 0, not NaN: a backend issue, reported
    if not da.is_floating_point and not db.is_floating_point and op in (
            torch.remainder, torch.floor_divide) or op is BINARY[11]:
        b = torch.where(b == 0, torch.ones_like(b), b)  # integer division by zero is UB
    _check(op, a, b)


@given(op=st.sampled_from([torch.add, torch.mul, torch.div, torch.pow, torch.sub]),
       dtype=st.sampled_from(DTYPES[:3]), scalar=st.sampled_from([2, -1.5, True, 3]))
def test_python_scalars_promote_like_torch(op, dtype, scalar):
    x = _tensor(dtype, (2, 3), 0)
    if op is torch.pow and not dtype.is_floating_point:
        x = x.abs()
    _check(lambda t: op(t, scalar), x)


UNARY = [torch.exp, torch.log1p, torch.sigmoid, torch.tanh, torch.abs, torch.neg, torch.floor,
         torch.round, torch.sqrt, torch.nn.functional.gelu, torch.nn.functional.silu,
         torch.relu, torch.isnan, torch.sign, torch.erf, torch.rsqrt, torch.trunc]


@given(op=st.sampled_from(UNARY), dtype=st.sampled_from([torch.float32, torch.int64]),
       shape=st.sampled_from(SHAPES))
def test_unary(op, dtype, shape):
    _check(op, _tensor(dtype, shape, 1))


REDUCTIONS = [lambda x: x.sum(), lambda x: x.sum(-1, keepdim=True), lambda x: x.mean(0),
              lambda x: x.amax((0, 1)), lambda x: x.max(1).values, lambda x: x.argmax(),
              lambda x: x.argmin(0), lambda x: x.prod(1), lambda x: x.var(0),
              lambda x: x.std(), lambda x: x.cumsum(1), lambda x: x.softmax(-1),
              lambda x: x.log_softmax(0), lambda x: x.logsumexp(1), lambda x: x.any(),
              lambda x: (x > 0).all(1), lambda x: x.sum(dtype=torch.float64)]


@given(op=st.sampled_from(REDUCTIONS), dtype=st.sampled_from([torch.float32, torch.int32]))
def test_reductions_and_their_dtypes(op, dtype):
    _check(op, _tensor(dtype, (3, 4), 2))


SHAPE_OPS = [lambda x: x.t(), lambda x: x.view(4, 3), lambda x: x.permute(1, 0)[1:, ::2],
             lambda x: x.unsqueeze(1).expand(3, 2, 4), lambda x: x[1], lambda x: x[:, -1],
             lambda x: torch.cat([x, x * 2], 1), lambda x: torch.stack([x, x]),
             lambda x: x.flip(0), lambda x: x.split([1, 3], 1)[1],
             lambda x: torch.nn.functional.pad(x, (1, 2, 0, 1), value=-1),
             lambda x: x[torch.tensor([2, 0, -1])], lambda x: x[:, torch.tensor([[1], [3]])],
             lambda x: x[torch.tensor([0, 2]), torch.tensor([1, 3])],
             lambda x: x.gather(1, torch.tensor([[0, 3], [1, 1], [2, 0]], device=x.device)),
             lambda x: x.index_select(1, torch.tensor([3, 0], device=x.device)), lambda x: x.diagonal(1),
             lambda x: x.roll(1, 0), lambda x: x.tril(), lambda x: x.repeat(2, 1),
             lambda x: torch.zeros(3, 4, device=x.device).scatter_add(
                 1, torch.tensor([[0, 0], [1, 2], [3, 3]], device=x.device), x[:, :2]),
             lambda x: x.masked_fill(x > 0, 0.5), lambda x: x @ x.t(), lambda x: x[x > 0]]


@pytest.mark.parametrize("index", range(len(SHAPE_OPS)))
def test_views_indexing_and_products(index):
    # CPU index tensors on device data are allowed for indexing, as torch allows them on CUDA
    op = SHAPE_OPS[index]
    x = _tensor(torch.float32, (3, 4), 5)
    torch.testing.assert_close(op(x.to(lt.device)).cpu(), op(x))


def test_in_place_writes_through_views_match_eager():
    def program(x):
        v = x[1]
        v.mul_(10)
        x[:, 0] = -1
        x[0, 1:3] += torch.ones(2, device=x.device)
        x.t()[2].fill_(7)
        y = x.view(12)
        y[::5] = 0
        x.unsqueeze(0)[0, 2].clamp_(max=3)
        return x
    base = torch.arange(12.0).reshape(3, 4)
    expected = program(base.clone())
    lazy = base.to(lt.device)
    got = program(lazy)
    torch.testing.assert_close(got.cpu(), expected)
    torch.testing.assert_close(lazy.cpu(), expected)  # the same object was updated


def test_index_put_and_advanced_assignment():
    def program(x):
        x[torch.tensor([0, 2], device=x.device)] = 5.0
        x[:, torch.tensor([1], device=x.device)] += 1.0
        x.index_put_((torch.tensor([1, 1], device=x.device), torch.tensor([0, 0], device=x.device)),
                     torch.tensor([1.0, 2.0], device=x.device), accumulate=True)
        return x
    base = torch.randn(3, 4)
    torch.testing.assert_close(program(base.to(lt.device)).cpu(), program(base.clone()))


@pytest.mark.parametrize("call,error", [
    (lambda d: torch.ones(2, 3, device=d) + torch.ones(4, device=d), RuntimeError),
    (lambda d: torch.ones(2, 3, device=d) @ torch.ones(2, 3, device=d), RuntimeError),
    (lambda d: torch.ones(2, 3, device=d).view(4), RuntimeError),
    (lambda d: torch.ones(2, 3, device=d).sum(5), IndexError),
    (lambda d: torch.ones(2, 3, device=d)[5], IndexError),
    (lambda d: torch.cat([torch.ones(2, 3, device=d), torch.ones(2, 2, device=d)]), RuntimeError),
    (lambda d: torch.ones(2, 3, device=d).sub(torch.ones(2, 3, device=d, dtype=torch.bool)),
     RuntimeError),
    (lambda d: torch.nn.functional.linear(torch.ones(2, 3, device=d), torch.ones(4, 5, device=d)),
     RuntimeError),
])
def test_bad_calls_raise_torchs_error_at_the_call(call, error):
    with pytest.raises(error) as eager:
        call("cpu")
    lazyx.reset_metrics()
    with pytest.raises(error) as lazy:
        call(lt.device)
    assert str(lazy.value).split("\n")[0] == str(eager.value).split("\n")[0]
    assert lazyx.metrics()["syncs"] == 0  # raised while tracing, not at a barrier
