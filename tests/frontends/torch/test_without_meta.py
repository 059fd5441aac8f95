"""Lowered ops that torch has no meta kernel for. The dispatcher took the meta kernel's
NotImplementedError for a data-dependent shape, so each direct call (and each backward that
autograd sends them) ran on CPU torch after reading its inputs back: a `data_dependent` sync,
its lowering never reached. Their shapes follow from the inputs' shapes, so CPU torch on zeros
now gives them once per signature. Each op is compared with eager CPU torch and must read
nothing back from the device."""
import re

import pytest
import torch
import torch.nn.functional as F

import lazyx
import lazyx.frontends.torch as lt
from lazyx.frontends.torch.tensor import LOWERINGS, SPECIAL, _has_meta_kernel

aten = torch.ops.aten


def _lazy(x):
    """A pending lazy copy (computed, not a data leaf): reading it back would be a sync."""
    return x.to(lt.device) * 1


def _without_reads(fn):
    """fn()'s result, asserting that tracing it read nothing back and fell back on nothing."""
    lt.mark_step()
    lazyx.reset_metrics()
    out = fn()
    m = lazyx.metrics()
    assert (m["syncs"], m["transfers_to_host"], m["fallbacks"]) == (0, 0, 0), \
        (m["sync_causes"], m["fallback_ops"])
    return out


def _cpu(out):
    return [o.cpu() for o in out] if isinstance(out, (tuple, list)) else out.cpu()


torch.manual_seed(0)
_X, _TARGET = torch.randn(4, 5, dtype=torch.float64), torch.tensor([0, 2, 4, 1])
_WEIGHT = torch.rand(5, dtype=torch.float64)
_ALPHA = torch.rand(6, 3, dtype=torch.float64) * 5 + 0.1
_SAMPLE = torch._standard_gamma(_ALPHA)
_POINTS = torch.randn(30, 2, dtype=torch.float64)
_EDGES = [torch.linspace(-2, 2, 4, dtype=torch.float64), torch.tensor([-3., -1, 0, 0.5, 3],
                                                                      dtype=torch.float64)]

_MULTI_TARGET = torch.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [4, -1, 0, 0, 0],
                              [-1, 1, 2, 3, 4]])
_IS_TARGET = aten.multilabel_margin_loss_forward(_X, _MULTI_TARGET, 1)[1]
_VOLUME = torch.randn(1, 2, 5, 5, 5, dtype=torch.float64)
_POOLED, _POOL_INDICES = aten.fractional_max_pool3d(_VOLUME, [2, 2, 2], [3, 3, 3],
                                                    torch.rand(1, 2, 3, dtype=torch.float64))
_POOL_GRAD = torch.rand_like(_POOLED)

# op -> its direct call on a device ("cpu" or lt.device)
DIRECT = {
    aten.multilabel_margin_loss_backward.default:
        lambda to: aten.multilabel_margin_loss_backward(
            to(torch.tensor(0.3, dtype=torch.float64)), to(_X), to(_MULTI_TARGET), 1,
            to(_IS_TARGET)),
    aten.fractional_max_pool3d_backward.default:
        lambda to: aten.fractional_max_pool3d_backward(
            to(_POOL_GRAD), to(_VOLUME), [2, 2, 2], [3, 3, 3],
            to(_POOL_INDICES)),
    aten._standard_gamma_grad.default:
        lambda to: aten._standard_gamma_grad(to(_ALPHA), to(_SAMPLE)),
    aten.multi_margin_loss_backward.default:
        lambda to: aten.multi_margin_loss_backward(to(torch.tensor(0.7, dtype=torch.float64)),
                                                   to(_X), _TARGET.to(lt.device)
                                                   if to is _lazy else _TARGET, 2, 0.5,
                                                   to(_WEIGHT), 1),
    aten._histogramdd_bin_edges.default:
        lambda to: aten._histogramdd_bin_edges(to(_POINTS), [3, 4], range=[-1., 1., -2., 2.]),
    aten._histogramdd_from_bin_cts.default:
        lambda to: aten._histogramdd_from_bin_cts(to(_POINTS), [3, 4],
                                                  weight=to(_POINTS[:, 0].abs()), density=True),
    aten._histogramdd_from_bin_tensors.default:
        lambda to: aten._histogramdd_from_bin_tensors(to(_POINTS), [to(e) for e in _EDGES]),
}
RANDOM = {aten._sample_dirichlet.default}


def test_every_lowered_op_without_meta_kernel_is_covered():
    """A new lowering of an op torch has no meta kernel for gets a case here."""
    missing = {op for op in LOWERINGS if op not in SPECIAL and not _has_meta_kernel(op)}
    assert missing == set(DIRECT) | RANDOM


@pytest.mark.parametrize("op", list(DIRECT), ids=str)
def test_direct_call_is_lowered(op):
    want = DIRECT[op](lambda x: x)
    got = _cpu(_without_reads(lambda: DIRECT[op](_lazy)))
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_sample_dirichlet_is_lowered():
    """Random (lazyx's draws are its own): rows on the simplex, and CPU torch's generator
    untouched by the shape replay."""
    state = torch.get_rng_state()
    got = _without_reads(lambda: aten._sample_dirichlet(_lazy(_ALPHA))).cpu()
    assert torch.equal(torch.get_rng_state(), state)
    assert got.dtype == _ALPHA.dtype and got.shape == _ALPHA.shape and (got > 0).all()
    torch.testing.assert_close(got.sum(-1), torch.ones(6, dtype=torch.float64))


def test_histogramdd_is_lowered():
    """torch.histogramdd runs on the bin-edge and count ops."""
    want = torch.histogramdd(_POINTS, [3, 4], density=True)
    got = _without_reads(lambda: torch.histogramdd(_lazy(_POINTS), [3, 4], density=True))
    torch.testing.assert_close(got.hist.cpu(), want.hist)
    torch.testing.assert_close(_cpu(got.bin_edges), list(want.bin_edges))


@pytest.mark.parametrize("p,reduction", [(1, "mean"), (2, "sum"), (1, "none")])
def test_multi_margin_loss_gradient(p, reduction):
    def grad(x, target, w):
        x = x.detach().requires_grad_()
        loss = F.multi_margin_loss(x, target, p=p, margin=0.7, weight=w, reduction=reduction)
        (loss * torch.arange(loss.numel(), dtype=loss.dtype).reshape(loss.shape).to(x.device)
         .cos()).sum().backward()
        return x.grad

    got = _without_reads(lambda: grad(_lazy(_X), _TARGET.to(lt.device), _lazy(_WEIGHT)))
    torch.testing.assert_close(got.cpu(), grad(_X, _TARGET, _WEIGHT), rtol=1e-10, atol=1e-12)


def test_standard_gamma_gradient():
    """_standard_gamma's backward is _standard_gamma_grad at lazyx's own samples."""
    alpha = _lazy(_ALPHA).requires_grad_()
    sample = _without_reads(lambda: torch._standard_gamma(alpha))
    _without_reads(lambda: sample.sum().backward())
    want = torch._standard_gamma_grad(_ALPHA, sample.detach().cpu())
    torch.testing.assert_close(alpha.grad.cpu(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda to: aten._standard_gamma_grad(to(torch.ones(3)), to(torch.ones(4))),
    lambda to: aten._standard_gamma_grad(to(torch.ones(3, dtype=torch.long)),
                                         to(torch.ones(3, dtype=torch.long))),
    lambda to: aten._histogramdd_bin_edges(to(torch.ones(10, 2)), [3]),
    lambda to: aten._sample_dirichlet(to(torch.ones(3, dtype=torch.long))),
], ids=["shapes", "gamma-dtype", "bins", "dirichlet-dtype"])
def test_bad_calls_raise_eagers_error(call):
    with pytest.raises(Exception) as eager:
        call(lambda x: x)
    args = []
    lt.mark_step()
    lazyx.reset_metrics()
    with pytest.raises(type(eager.value), match=re.escape(str(eager.value))):
        call(lambda x: args.append(_lazy(x)) or args[-1])
    m = lazyx.metrics()
    assert (m["syncs"], m["transfers_to_host"], m["fallbacks"]) == (0, 0, 0), m["sync_causes"]
