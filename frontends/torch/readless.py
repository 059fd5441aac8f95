"""torch.combinations, torch.cov and torch.corrcoef on the lazyx device, without the host
reads of ATen's kernels.

These are CompositeImplicitAutograd ops: ATen decomposes them in C++ before lazyx's
dispatcher sees them, and the decompositions read lazy values on the host (counted
"data_dependent" syncs) that the results do not need:

  combinations   selects from an r-dimensional index grid with a triangular mask, one
                 masked_select per column, each reading its count: r reads. The indices
                 depend on len(x), r and with_replacement only, so they are made on the host,
                 as triu_indices' are (aten/factories.py), and x is indexed by them.
  cov            reads `norm_factor <= 0` to warn and zero the factor. Without weights the
                 factor is N - correction, known from the shape: no read. With weights torch
                 raises for negative weights and for weights summing to zero, and warns for
                 a factor <= 0, from their values: one read answers all of them (ATen reads
                 each), and the factor is zeroed lazily, so the graph does not depend on it.
  corrcoef       ATen's composite calls cov through the dispatcher, which reaches cov here.

The kernels are registered for the device's autograd key (device.py), as recurrent.py's
are: they follow ATen's (aten/src/ATen/native/Correlation.cpp, Itertools.cpp) with torch ops
on the lazy tensors, so autograd records those ops and the gradients are eager torch's. An
argument torch rejects from its shape or dtype goes to ATen's own kernel, which raises its
error (after the reads it makes first, on the way to an error only).
"""
import functools
import itertools
import math
import warnings

import numpy as np
import torch

from ...core import runtime
from .aten.data_dependent import CAUSE

aten = torch.ops.aten


@functools.lru_cache(maxsize=64)
def _combination_indices(n, r, with_replacement):
    """(k, r) int64 positions of the r-combinations of range(n), in torch's order (row-major
    over its index grid, that is, lexicographic): itertools' order. A NumPy array (a cached
    tensor made under one torch.compile trace would be that trace's fake tensor)."""
    if with_replacement:
        pick, k = itertools.combinations_with_replacement, math.comb(n + r - 1, r)
    else:
        pick, k = itertools.combinations, math.comb(n, r)
    flat = np.fromiter(itertools.chain.from_iterable(pick(range(n), r)), np.int64, k * r)
    return flat.reshape(k, r)


def combinations(x, r=2, with_replacement=False):
    if x.dim() != 1 or r < 0 or not isinstance(x.shape[0], int):
        # torch's errors; or a symbolic length (torch.compile's dynamic shapes): its grid
        return aten.combinations.default.decompose(x, r, with_replacement)
    if r == 0:
        return x.new_empty(0)  # torch's: an empty vector, not (0, 0), and no grad_fn
    return x[torch.tensor(_combination_indices(x.shape[0], r, with_replacement), device=x.device)]


_NO_DEGREES = ("cov(): degrees of freedom is <= 0. Correction should be strictly less than "
               "the number of observations.")


def _warn_no_degrees():
    # stacklevel 3: the frame that called torch.cov / corrcoef (the C++ between is not a frame)
    warnings.warn(_NO_DEGREES, UserWarning, stacklevel=3)


def _well_formed(x, fweights, aweights):
    """Whether ATen's shape and dtype checks pass (its other checks need values)."""
    observations = x.shape[-1] if x.dim() else 1

    def fits(w, kind):
        return w is None or (w.dim() <= 1 and w.numel() == observations and kind(w.dtype))

    def integral(d):
        return not (d.is_floating_point or d.is_complex or d == torch.bool)

    return x.dim() <= 2 and x.dtype != torch.bool and fits(fweights, integral) \
        and fits(aweights, lambda d: d.is_floating_point)


def _read_flags(flags):
    """The bools of `flags`, in one counted data-dependent read."""
    flags = flags.detach()
    try:
        handle = flags.__lazyx_handle__
    except AttributeError:  # not a lazyx value (a fake tensor under torch.compile): torch's
        return flags.tolist()  # own read, as ATen's is_scalar_tensor_true would
    return runtime.to_host(handle, cause=CAUSE).tolist()


def _check_weights(fweights, aweights, w_sum, factor, observations):
    """ATen's value checks of the weights, from one read, raising its errors in its order;
    then whether the factor is <= 0 (ATen warns)."""
    checks = []
    with torch.no_grad():
        for weights, kind in ((fweights, "fweights"), (aweights, "aweights")):
            if weights is not None and observations:  # (the min of nothing is an error)
                checks.append((weights.min() < 0, f"cov(): {kind} cannot be negative"))
        checks.append((w_sum == 0, "cov(): weights sum to zero, can't be normalized"))
        if isinstance(factor, torch.Tensor):
            checks.append((factor <= 0, None))
        flags = _read_flags(torch.stack([flag for flag, _ in checks]))
    for failed, (_, error) in zip(flags, checks):
        if failed and error:
            raise RuntimeError(error)
    return not isinstance(factor, torch.Tensor) or flags[-1]


def _weighted_factor(w, w_sum, correction, fweights, aweights, observations):
    """ATen's normalization factor with weights: a tensor, or 0 where ATen's is a constant."""
    if correction == 0:
        return w_sum
    if aweights is None:
        return w_sum - correction
    if fweights is None and observations == 1 and correction == 1:
        return 0  # ATen's corner case for NumPy's result (rounding made it nonzero)
    return w_sum - correction * (w * aweights).sum() / w_sum


def _centered(rows, avg, fweights, aweights):
    if rows.shape[1] == 1 and (fweights is None) != (aweights is None):
        # ATen's corner case: one observation, one kind of weights -- the weighted average is
        # the input, so it zeroes the input (through `self`, which it thereby overwrites; this
        # leaves the caller's tensor alone) and promotes integers to float, as in - avg would
        zeros = torch.zeros_like(rows)
        return zeros if zeros.is_floating_point() or zeros.is_complex() else zeros.float()
    return rows - avg.unsqueeze(1)


def _normalized(rows, centered, w, factor):
    c = torch.mm(centered, (centered if w is None else centered * w).t().conj())
    if c.is_complex() and 1 in rows.shape:
        # ATen's: the product of a vector with its conjugate is real; a rounding residue in
        # the imaginary part divided by a zero factor gave inf where NumPy gives nan
        c = torch.complex(c.real, torch.zeros_like(c.real))
    return torch.true_divide(c, factor).squeeze()


def cov(x, correction=1, fweights=None, aweights=None):
    if not _well_formed(x, fweights, aweights):
        return aten.cov.default.decompose(x, correction=correction, fweights=fweights,
                                          aweights=aweights)
    rows = x.view(1, -1) if x.dim() < 2 else x  # (variables, observations)
    observations = rows.shape[1]
    w = fweights if aweights is None else aweights if fweights is None else fweights * aweights
    if w is None:
        factor = observations - correction  # known from the shape: no read
        if factor <= 0:
            _warn_no_degrees()
            factor = 0
        return _normalized(rows, _centered(rows, rows.sum(1) / observations, None, None), None,
                           factor)
    w_sum = w.sum()
    factor = _weighted_factor(w, w_sum, correction, fweights, aweights, observations)
    if _check_weights(fweights, aweights, w_sum, factor, observations):
        _warn_no_degrees()
    if isinstance(factor, torch.Tensor):  # zeroed as ATen's, in the graph (not by the read)
        factor = torch.where(factor <= 0, 0, factor)
    avg = (rows * w).sum(1) / w_sum
    return _normalized(rows, _centered(rows, avg, fweights, aweights), w, factor)


def register(lib):
    """Register on `lib` (a torch.library.Library for aten IMPL, kept alive by the caller)."""
    lib.impl("combinations", combinations, "AutogradPrivateUse1")
    lib.impl("cov", cov, "AutogradPrivateUse1")
