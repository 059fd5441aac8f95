"""Forward-mode AD and torch.func's transforms on lt.device against the CPU (jvp, jacfwd,
hessian, make_dual; linearize, make_fx, functionalize): the zero tangent of a constant is made
by aten::_efficientzerotensor, a factory that had no lazyx kernel (NotImplementedError), and
make_dual's storage check ran eagerly; make_fx's real-mode graph returned its first call's
result as a constant, and functionalize failed on an internal assert."""
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import hessian, jacfwd, jvp, linearize, vmap

import lazyx
import lazyx.frontends.torch as lt

_CASES = {
    "jvp": lambda W, x: jvp(lambda v: W @ v, (x,), (torch.ones_like(x),))[1],
    "jacfwd": lambda W, x: jacfwd(lambda v: torch.tanh(W @ v))(x),
    "hessian": lambda W, x: hessian(lambda v: (W @ v).pow(2).sum() + v.sin().sum())(x),
}


@pytest.mark.parametrize("name", list(_CASES))
def test_forward_mode_derivatives_match_the_cpu(name):
    torch.manual_seed(0)
    W, x = torch.randn(4, 3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    want = _CASES[name](W, x)
    lazyx.reset_metrics()
    got = _CASES[name](W.to(lt.device), x.to(lt.device))
    assert lazyx.metrics()["fallback_ops"] == {}
    torch.testing.assert_close(got.cpu(), want)


def test_make_dual_reads_no_value():
    import torch.autograd.forward_ad as fwAD
    x = torch.randn(5).to(lt.device)
    lazyx.sync()
    lazyx.reset_metrics()
    with fwAD.dual_level():
        y = torch.sin(fwAD.make_dual(x, torch.ones(5).to(lt.device)))
        tangent = fwAD.unpack_dual(y).tangent
    assert lazyx.metrics()["fallback_ops"] == {}
    torch.testing.assert_close(tangent.cpu(), torch.cos(x.cpu()))


def test_a_dual_written_into_a_plain_tensor_stays_lazy():
    # y[1] = dual makes y's zero tangent by aten._new_zeros_with_same_feature_meta
    import torch.autograd.forward_ad as fwAD

    def run(d):
        x, t = torch.arange(3.).to(d), torch.tensor([1., 2., 3.]).to(d)
        with fwAD.dual_level():
            y = torch.zeros(2, 3).to(d)
            y[1] = fwAD.make_dual(x, t)
            return [v.cpu() for v in fwAD.unpack_dual(y * 2)[:2]]
    want = run("cpu")
    lazyx.reset_metrics()
    got = run(lt.device)
    assert lazyx.metrics()["fallback_ops"] == {}
    torch.testing.assert_close(got, want)


_W = torch.tensor([[1., 2., 0.], [0., 1., -1.], [3., 0., 1.]])


def _reads(x, v):  # a closure tensor, two results
    return (_W.to(x.device) @ x).tanh() + v.exp(), x.sum()


def _writes(x, v):  # and an input written in place, through a view
    x.view(-1)[1:].mul_(3)
    return _reads(x, v)


def test_make_fx_and_linearize_trace_lazy_tensors():
    def run(d):
        x, v = torch.tensor([0.5, -1.0, 2.0]).to(d), torch.tensor([1., 2., 3.]).to(d)
        gm = make_fx(_writes)(x.clone(), v)
        x2 = torch.ones(3).to(d)
        graph_results = gm(x2, torch.zeros(3).to(d))
        # (not of _writes: eager torch's linearize const-folds an in-place op wrongly)
        primal, jvp_fn = linearize(_reads, x, v)
        return [t.cpu() for t in (*graph_results, x2, *primal, *jvp_fn(v, x))]
    torch.testing.assert_close(run(lt.device), run("cpu"))


def test_functionalize_runs_on_lazy_tensors():
    def f(a):
        a.view(-1)[1:].mul_(2)
        b = a.clone()
        b.add_(1)
        return b
    def run(d):
        x, y = torch.arange(6.).reshape(2, 3).to(d), torch.arange(6.).reshape(2, 3).to(d)
        # (torch.func's attribute at the call: lazyx's hook replaces it when it is imported)
        out = torch.func.functionalize(f, remove="mutations_and_views")(x)
        # (not of f: eager torch's vmap(functionalize) fails on its slice's end, INT64_MAX)
        batched = vmap(torch.func.functionalize(lambda a: a.mul_(3) + 1))(y)
        return [t.cpu() for t in (out, x, batched, y)]
    torch.testing.assert_close(run(lt.device), run("cpu"))
