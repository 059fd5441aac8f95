"""Forward-mode AD on lt.device (torch.func.jvp, jacfwd, hessian, make_dual) against the CPU:
the zero tangent of a constant is made by aten::_efficientzerotensor, a factory that had no
lazyx kernel (NotImplementedError), and make_dual's storage check ran eagerly."""
import pytest
import torch
from torch.func import hessian, jacfwd, jvp

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
