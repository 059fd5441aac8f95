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


# OpInfo's ormqr samples (sample_inputs_ormqr): these batches and sizes, both sides, Q and Q^T
# (each batch in one dtype: every case is a compile on XLA)
ORMQR_CASES = [(batch, m, n, dtype) for batch, dtype in [((), torch.float32), ((2,), torch.float64),
                                                          ((2, 1), torch.float32),
                                                          ((0,), torch.float64)]
               for m, n in [(5, 5), (5, 2), (2, 5), (5, 0), (0, 5)]]


@pytest.mark.parametrize("batch,m,n,dtype", ORMQR_CASES, ids=str)
def test_ormqr_matches_eager(batch, m, n, dtype):
    reflectors, tau = torch.geqrf(_matrix(batch + (m, n), dtype))
    for left in (True, False):
        for transpose in (False, True):
            other = _matrix(batch + ((m, 3) if left else (3, m)), dtype, seed=1)
            lazyx.reset_metrics()
            got = torch.ormqr(*(t.to(lt.device) for t in (reflectors, tau, other)),
                              left=left, transpose=transpose).cpu()
            assert lazyx.metrics()["fallbacks"] == 0
            want = torch.ormqr(reflectors, tau, other, left=left, transpose=transpose)
            torch.testing.assert_close(got, want, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("left,transpose", [(True, False), (False, True)])
def test_ormqr_gradients_match_eager(left, transpose):
    """torch differentiates ormqr with respect to all three arguments; so does lazy, through
    the lowered ops its backward formula calls."""
    reflectors, tau = torch.geqrf(_matrix((2, 5, 3), torch.float64))
    other = _matrix((2, 5, 4) if left else (2, 4, 5), torch.float64, seed=1)
    weights = _matrix(other.shape, torch.float64, seed=2)
    grads = []
    for device in ("cpu", lt.device):
        inputs = [t.detach().to(device).requires_grad_() for t in (reflectors, tau, other)]
        lazyx.reset_metrics()
        torch.ormqr(*inputs, left=left, transpose=transpose).mul(weights.to(device)).sum() \
            .backward()
        grads.append([t.grad.cpu() for t in inputs])
    assert lazyx.metrics()["fallbacks"] == 0
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_ormqr_refuses_what_torch_refuses():
    reflectors, tau = (t.to(lt.device) for t in torch.geqrf(_matrix((2, 5, 3), torch.float32)))
    with pytest.raises(RuntimeError, match="batch dimensions of other"):
        torch.ormqr(reflectors, tau, torch.zeros(1, 5, 4).to(lt.device))
