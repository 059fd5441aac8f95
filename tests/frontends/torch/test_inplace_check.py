"""torch's check of an in-place op runs once per signature (frontends/torch/inplace_check.py),
and every error it raises is still raised at the call, whatever passed before."""
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import lazyx
import lazyx.frontends.torch as lt
from lazyx.frontends.torch import inplace_check

ADD_ = torch.ops.aten.add_.Tensor


@pytest.fixture
def counted(monkeypatch):
    """Calls of torch's own Meta function per op, with no signature remembered yet."""
    calls = {}
    monkeypatch.setattr(inplace_check, "_PASSED", set())
    for op, original in list(inplace_check.ORIGINALS.items()):
        def count(*args, _op=op, _original=original, **kwargs):
            calls[_op] = calls.get(_op, 0) + 1
            return _original(*args, **kwargs)
        monkeypatch.setitem(inplace_check.ORIGINALS, op, count)
    return calls


def test_the_hot_optimizer_ops_are_wrapped_and_views_are_not():
    wrapped = set(inplace_check.ORIGINALS)
    aten = torch.ops.aten
    for op in (aten.add_.Tensor, aten.mul_.Tensor, aten.mul_.Scalar, aten.addcmul_.default,
               aten.addcdiv_.default, aten.lerp_.Scalar, aten.div_.Tensor, aten.sqrt_.default):
        assert op in wrapped, op
    for op in (aten.unsqueeze_.default, aten.t_.default, aten.resize_.default,
               aten.copy_.default, aten.normal_.default):
        assert op not in wrapped, op
    assert all(torch.Tag.pointwise in op.tags for op in wrapped)


def test_a_repeated_signature_is_checked_once(counted):
    p = torch.randn(4, 3).to(lt.device)
    g = torch.randn(4, 3).to(lt.device)
    expected = p.cpu()
    for _ in range(5):
        p.add_(g, alpha=-0.1)
        expected.add_(g.cpu(), alpha=-0.1)
    assert counted.get(ADD_) == 1
    row = torch.randn(3)
    p.add_(row.to(lt.device))  # a new shape: a new signature, checked
    expected.add_(row)
    assert counted[ADD_] == 2
    p.add_(g, alpha=0.5)  # another float alpha: the same signature (floats count by type)
    expected.add_(g.cpu(), alpha=0.5)
    assert counted[ADD_] == 2
    lt.mark_step()
    torch.testing.assert_close(p.cpu(), expected)


def _raises_like_eager(source, setup):
    """`source` raises on CPU torch, and raises the same type on lt.device after `setup` (the
    same op with a signature that passes) ran there."""
    def run(device):
        env = dict(torch=torch, T=lambda v, **k: torch.tensor(v, device=device, **k))
        exec(setup, env)
        exec(source, env)
    with pytest.raises(Exception) as eager:
        run("cpu")
    with pytest.raises(type(eager.value)):
        run(lt.device)


@pytest.mark.parametrize("setup,source", [
    ("T([1., 2, 3]).add_(T([1., 2, 3]))", "T([1., 2, 3]).add_(T([[1., 2, 3], [4, 5, 6]]))"),
    ("T([1, 2]).add_(1)", "T([1, 2]).add_(1.5)"),
    ("T([1, 2]).mul_(T([3, 4]))", "T([1, 2]).mul_(T([3., 4]))"),
    ("T([2, 3]).pow_(2)", "T([2, 3]).pow_(-1)"),
    ("T([1., 2]).addcmul_(T([1., 2]), T([1., 2]), value=0.5)",
     "T([1., 2]).addcmul_(T([[1., 2], [3, 4]]), T([1., 2]), value=0.5)"),
    ("T([1., 2]).lerp_(T([3., 4]), 0.5)", "T([1., 2]).lerp_(T([3, 4]), 0.5)"),
    ("T([4, 6]).div_(2, rounding_mode='floor')", "T([4, 6]).div_(2)"),
    ("T([1., 2]).clamp_(0.5, 1.5)", "T([1, 2]).clamp_(0.5, 1.5)"),
    ("T([True, False]).mul_(T([True, True]))", "T([True, False]).mul_(T([1, 2], dtype=torch.int32))"),
])
def test_errors_are_raised_after_the_same_op_passed(setup, source, counted):
    _raises_like_eager(source, setup)


def test_symbolic_sizes_are_checked_by_torch(counted):
    def f(a, b):
        a = a.clone()
        a.add_(b)
        return a
    make_fx(f, tracing_mode="symbolic")(torch.ones(3, 4), torch.ones(4))
    with pytest.raises(RuntimeError, match="broadcast"):
        make_fx(f, tracing_mode="symbolic")(torch.ones(4), torch.ones(3, 4))
    assert not any(key[0] is ADD_ for key in inplace_check._PASSED)  # nothing symbolic kept


@pytest.mark.parametrize("source", [
    "T([1, 2], dtype=torch.int32).add_(T(5))",  # a 0-d int64 operand does not promote
    "T([True, False]).mul_(T([True, True]))",
    "T([1., 2]).mul_(T([1, 2]))",
])
def test_the_cast_check_passes_what_eager_passes(source):
    def run(device):
        return eval(source, dict(torch=torch, T=lambda v, **k: torch.tensor(v, device=device, **k)))
    expected = run("cpu")
    got = run(lt.device).cpu()
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected)


def _same_outcome(call, *args):
    """call on CPU tensors and on lazy copies: the same values and dtype with no fallback,
    or the same error."""
    try:
        want = call(*[a.clone() for a in args])
    except Exception as error:  # noqa: BLE001 -- eager's error is the expected one
        with pytest.raises(type(error)) as got:
            call(*[a.to(lt.device) for a in args])
        assert str(got.value) == str(error)
        return
    lazyx.reset_metrics()
    got = call(*[a.to(lt.device) for a in args])
    assert lazyx.metrics()["fallback_ops"] == {}
    assert got.dtype == want.dtype
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("call", [
    lambda x, s: x << s, lambda x, s: x >> s, lambda x, s: x.__ilshift__(s),
    lambda x, s: x.__irshift__(s.long()), lambda x, s: torch.bitwise_left_shift(x, s),
    lambda x, s: x << 2, lambda x, s: x.__irshift__(1)])
@pytest.mark.parametrize("shift_dtype", [torch.bool, torch.int64, torch.uint8])
def test_shifts_by_a_bool_or_int_tensor_are_lowered_as_eager_computes_them(call, shift_dtype):
    """`x << s` (aten.__lshift__) has a lowering, and a shift by a bool tensor works where it
    works on CPU: torch's Meta kernel for `<<=` refuses a bool shift that its CPU kernel
    accepts, so a refusal by the Meta kernel that the CPU kernel does not share is not
    raised. (`x >>= bool_tensor` still raises the Meta kernel's error: torch's decomposition
    of `__irshift__` asks that kernel itself.)"""
    x = torch.tensor([[1, -2, 7], [300, 5, -9]])
    _same_outcome(call, x, torch.tensor([True, False, True]).to(shift_dtype))


@pytest.mark.parametrize("x", [torch.ones(2), torch.ones(2, dtype=torch.bool)])
def test_a_shift_of_a_float_or_bool_tensor_does_what_eager_does(x):
    _same_outcome(lambda a: a << 1, x)
    _same_outcome(lambda a: a >> a, x)
