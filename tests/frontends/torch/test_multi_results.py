"""Factorizations and sorts with several outputs are one IR node each (core/ir.py): torch's
P, L, U = torch.linalg.lu(A) (likewise svd, qr, eigh, topk, sort) costs one factorization per
input -- counted on the reference interpreter, and one LAPACK (or cuSOLVER) custom call (or one
sort) in the StableHLO the XLA backend compiles -- and gradients through them match eager torch."""
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import lazyx.frontends.torch as lt
from lazyx.backends import reference
from lazyx.backends.reference_linalg import RUNS
from lazyx.core import runtime

# name: (torch call, IR op, what the StableHLO must contain once: lapack_* on a CPU,
# cusolver_* on a GPU)
CASES = {
    "lu": (torch.linalg.lu, "lu", r"custom_call @\w*getrf"),
    # (_ex: lu_factor checks `info`, now the LU's own, which is a sync)
    "lu_factor": (torch.linalg.lu_factor_ex, "lu", r"custom_call @\w*getrf"),
    "solve": (lambda a: (torch.linalg.solve_ex(a, a[..., :1])), "lu",
              r"custom_call @\w*getrf"),
    "svd": (lambda a: torch.linalg.svd(a, full_matrices=False), "svd",
            r"custom_call @\w*ges[dv]d"),
    "qr": (torch.linalg.qr, "qr", r"custom_call @\w*geqrf"),
    "eigh": (lambda a: torch.linalg.eigh(a + a.mT), "eigh", r"custom_call @\w*syevd"),
    "topk": (lambda a: torch.topk(a, 2, dim=-1), "sort_with_indices", r"stablehlo.sort"),
    "sort": (lambda a: torch.sort(a, dim=-2, descending=True), "sort_with_indices",
             r"stablehlo.sort"),
}


def _program(outs):
    return runtime.program_of(*[o for o in outs if o.device == lt.device])


@pytest.mark.parametrize("name", sorted(CASES))
def test_all_outputs_cost_one_factorization_on_both_backends(name):
    fn, op, pattern = CASES[name]
    a = torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(0))
    outs = fn(a.to(lt.device))
    program, leaves = _program(outs)
    assert sum(ins[0] == op for ins in program.instructions) == 1, program.instructions
    RUNS.clear()
    values = reference.ReferenceBackend().compile(program)([np.asarray(n.value) for n in leaves])
    assert RUNS == {op: 1}
    eager = fn(a)
    for got, want in zip(values, [o for o in eager if o is not None]):
        assert got.shape == tuple(want.shape)
    if name in ("lu", "lu_factor", "topk", "sort"):  # unique outputs: the same numbers
        for got, want in zip(values, eager):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
    pytest.importorskip("jax")
    from lazyx.backends.xla import XlaBackend
    text = XlaBackend().lowered_text(program)
    assert len(re.findall(pattern, text)) == 1, text


def _loss(name, a, w):
    """A scalar of every output of the factorization that does not depend on its sign
    conventions (singular / eigen vectors are unique up to sign only)."""
    if name == "svd":
        u, s, vh = torch.linalg.svd(a, full_matrices=False)
        return ((u * s[..., None, :]) @ vh * w).sum() + (s * s).sum()
    if name == "eigh":
        values, vectors = torch.linalg.eigh(a + a.mT)
        return (values * values).sum() + ((vectors * values[..., None, :]) @ vectors.mT * w).sum()
    if name == "qr":
        q, r = torch.linalg.qr(a)
        return (q @ q.mT * w).sum() + (r * r * w).sum()
    if name == "lu":
        p, lower, upper = torch.linalg.lu(a)
        return (lower * w).sum() + (upper * upper).sum() + (p * w).sum()
    values, _indices = torch.topk(a, 2, dim=-1)
    return (values * w[..., :2]).sum()


@settings(max_examples=6, deadline=None)
@given(name=st.sampled_from(["svd", "eigh", "qr", "lu", "topk"]), seed=st.integers(0, 2**16),
       batch=st.sampled_from([(), (2,)]))
def test_gradients_through_several_outputs_match_eager(name, seed, batch):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(*batch, 4, 4, generator=g, dtype=torch.float64)
    w = torch.randn(*batch, 4, 4, generator=g, dtype=torch.float64)
    eager = a.clone().requires_grad_()
    _loss(name, eager, w).backward()
    lazy = a.to(lt.device).requires_grad_()
    loss = _loss(name, lazy, w.to(lt.device))
    loss.backward()
    np.testing.assert_allclose(lazy.grad.cpu().numpy(), eager.grad.numpy(), rtol=1e-6, atol=1e-8)
