"""torch.geqrf and torch.ormqr (LAPACK's compact Householder format) are lowered (they ran on
CPU torch): lazy results against eager torch, batched, m < n and m > n, float32 and float64,
with no fallback; torch's own errors for bad calls and for a derivative torch does not have."""
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

# OpInfo's shapes (sample_inputs_linalg_qr_geqrf) and a few more
SHAPES = [(3, 3), (5, 3), (3, 5), (2, 4, 4), (2, 3, 5, 2), (3, 2, 6), (0, 3), (3, 0), (2, 0, 0)]
TOL = {torch.float32: 1e-5, torch.float64: 1e-12}


def _matrix(shape, dtype, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_geqrf_matches_eager(shape, dtype):
    a = _matrix(shape, dtype)
    if len(shape) == 3 and shape[-1]:  # a column with nothing below the diagonal: tau 0
        a[0, 1:, 0] = 0
    lazyx.reset_metrics()
    got = [t.cpu() for t in torch.geqrf(a.to(lt.device))]
    assert lazyx.metrics()["fallbacks"] == 0
    for mine, eager in zip(got, torch.geqrf(a)):
        torch.testing.assert_close(mine, eager, rtol=TOL[dtype], atol=TOL[dtype])


def test_geqrf_refuses_what_torch_refuses():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.geqrf(torch.zeros(3).to(lt.device))
    with pytest.raises(NotImplementedError, match="geqrf_cpu.*Long"):
        torch.geqrf(torch.zeros(3, 3, dtype=torch.int64).to(lt.device))


def test_geqrf_has_no_derivative_as_in_torch():
    x = _matrix((4, 3), torch.float64).to(lt.device).requires_grad_()
    with pytest.raises(NotImplementedError, match="derivative for 'geqrf' is not implemented"):
        torch.geqrf(x)[0].sum().backward()
