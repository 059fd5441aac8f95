"""The ctc_loss and ctc_loss_backward primitives on both backends against a brute-force oracle:
every path of C classes over I steps, collapsed (repeats merged, blanks dropped) and compared
with the target, so the likelihood is a plain sum and the gradient's occupancy a plain count.
Rows cover repeated labels (which need a blank between them), an impossible alignment, an
empty target, no input, a target longer than the padded width, and a blank that is not 0."""
import itertools

import numpy as np
import pytest

from backend_harness import check, leaf
from lazyx.core import ops

T, C = 5, 3


def _collapse(path, blank):
    merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
    return [c for c in merged if c != blank]


def _oracle(lp, targets, inputs, lengths, blank):
    """(nll (N,), occupancy (T, N, C): the posterior share of paths with class c at step t)."""
    n = lp.shape[1]
    nll, occupancy = np.zeros(n), np.zeros(lp.shape)
    for b in range(n):
        want = list(targets[b, :lengths[b]]) if lengths[b] <= targets.shape[1] else None
        total = 0.0
        for path in itertools.product(range(C), repeat=int(inputs[b])):
            if want is not None and _collapse(path, blank) == want:
                p = np.exp(sum(lp[t, b, c] for t, c in enumerate(path)))
                total += p
                for t, c in enumerate(path):
                    occupancy[t, b, c] += p
        nll[b] = -np.log(total) if total else np.inf
        occupancy[:, b] /= total if total else np.nan
    return nll, occupancy


# rows: (target, input length, target length)
ROWS = [([1, 2, 1], 5, 3), ([1, 1, 0], 4, 2), ([2, 2, 2], 4, 3), ([0, 0, 0], 3, 0),
        ([1, 2, 0], 0, 2), ([1, 0, 0], 0, 0), ([2, 1, 2], 5, 4), ([2, 0, 1], 2, 1)]


@pytest.mark.parametrize("dtype,blank", [("float32", 0), ("float64", 2)])
def test_ctc_loss_and_backward_match_the_brute_force_oracle(dtype, blank):
    rng = np.random.default_rng(blank)
    logits = rng.standard_normal((T, len(ROWS), C))
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    targets = np.array([r[0] for r in ROWS])
    if blank:  # the same alignments, with the blank moved
        targets = np.where(targets == blank, 0, targets)
    inputs = np.array([r[1] for r in ROWS])
    lengths = np.array([r[2] for r in ROWS])
    nll, occupancy = _oracle(lp, targets, inputs, lengths, blank)
    assert np.isinf(nll[[2, 4, 6]]).all() and np.isfinite(nll[[0, 1, 3, 5, 7]]).all()
    grad = rng.uniform(0.5, 2, len(ROWS))
    live = np.arange(T)[:, None, None] < inputs[None, :, None]
    want = np.where(live, (np.exp(lp) - occupancy) * grad[None, :, None], 0)
    args = [leaf(lp.astype(dtype)), leaf(targets, "int64"), leaf(inputs, "int32"),
            leaf(lengths, "int64")]
    loss, alpha = ops.ctc_loss(*args, blank=blank)
    g = leaf(grad.astype(dtype))
    backward = [ops.ctc_loss_backward(g, *args, loss, alpha, blank=blank, zero_infinity=zero)
                for zero in (False, True)]
    tol = 1e-5 if dtype == "float32" else 1e-12
    got = check([loss, *backward], [nll, want, np.where(np.isinf(nll)[None, :, None], 0, want)],
                rtol=tol, atol=tol, names=["nll", "grad", "grad zero_infinity"])
    assert got[1].dtype == dtype and np.isnan(got[1][:4, 2]).all()  # ATen's NaN when impossible


def test_ctc_shape_and_dtype_errors_name_the_op():
    lp = leaf(np.zeros((4, 2, 3), np.float32))
    targets, lengths = leaf(np.zeros((2, 2), np.int64)), leaf(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="ctc_loss: needs targets"):
        ops.ctc_loss(lp, leaf(np.zeros((3, 2), np.int64)), lengths, lengths, blank=0)
    with pytest.raises(ValueError, match="blank must be an int in"):
        ops.ctc_loss(lp, targets, lengths, lengths, blank=3)
    with pytest.raises(TypeError, match="must be integer arrays"):
        ops.ctc_loss(lp, leaf(np.zeros((2, 2), np.float32)), lengths, lengths, blank=0)
    nll, alpha = ops.ctc_loss(lp, targets, lengths, lengths, blank=0)
    assert alpha.shape == (2, 4, 5) and nll.shape == (2,)
    with pytest.raises(TypeError, match="share one dtype"):
        ops.ctc_loss_backward(leaf(np.ones(2)), lp, targets, lengths, lengths, nll, alpha,
                              blank=0)
