"""torch.linalg.ldl_factor(_ex) and ldl_solve are lowered (they ran on CPU torch): LAPACK's
Bunch-Kaufman pivots, its compact LD and info, and the solves, against eager torch on
OpInfo's shapes, float32 and float64, with no fallback."""
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

TOL = {torch.float32: 1e-5, torch.float64: 1e-12}


def _symmetric(shape, dtype, seed=0):
    a = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    a = a + a.mT
    if a.dim() == 3 and a.shape[0] >= 2 and a.shape[-1] >= 2:
        a[1] -= torch.diag(torch.diagonal(a[1]))  # no diagonal: 2x2 pivots
        if a.shape[0] >= 3:
            a[2, :, 0] = a[2, 0, :] = 0  # a zero column: info 1
    return a


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(5, 5), (2, 5, 5), (3, 6, 6), (0, 0), (0, 2, 2), (3, 1, 1)],
                         ids=str)
@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_factor_ex_matches_eager(shape, dtype, hermitian):
    a = _symmetric(shape, dtype)
    lazyx.reset_metrics()
    got = [t.cpu() for t in torch.linalg.ldl_factor_ex(a.to(lt.device), hermitian=hermitian)]
    assert lazyx.metrics()["fallbacks"] == 0
    want = torch.linalg.ldl_factor_ex(a, hermitian=hermitian)
    torch.testing.assert_close(got[0], want[0], rtol=TOL[dtype], atol=TOL[dtype])
    assert torch.equal(got[1], want[1]) and torch.equal(got[2], want[2])  # pivots, info


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("b_shape", [(5, 5), (2, 5, 3), (5, 0)], ids=str)
def test_ldl_solve_matches_eager(b_shape, dtype):
    ld, pivots = torch.linalg.ldl_factor(_symmetric((2, 5, 5), dtype))
    b = torch.randn(b_shape, generator=torch.Generator().manual_seed(1), dtype=dtype)
    lazyx.reset_metrics()
    got = torch.linalg.ldl_solve(*(t.to(lt.device) for t in (ld, pivots, b))).cpu()
    assert lazyx.metrics()["fallbacks"] == 0
    torch.testing.assert_close(got, torch.linalg.ldl_solve(ld, pivots, b),
                               rtol=10 * TOL[dtype], atol=10 * TOL[dtype])


def test_ldl_factor_raises_torchs_error_for_a_singular_matrix():
    with pytest.raises(RuntimeError) as eager:
        torch.linalg.ldl_factor(torch.zeros(3, 3))
    with pytest.raises(RuntimeError) as lazy:
        torch.linalg.ldl_factor(torch.zeros(3, 3).to(lt.device))
    assert str(lazy.value) == str(eager.value)


def test_ldl_factor_has_no_derivative_as_in_torch():
    for device in ("cpu", lt.device):
        x = _symmetric((4, 4), torch.float64).to(device).requires_grad_()
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is "
                                               "not implemented"):
            torch.linalg.ldl_factor(x)[0].sum().backward()
