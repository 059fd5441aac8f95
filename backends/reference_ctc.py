"""CTC's alpha and beta recursions (core/ops.py ctc_loss, ctc_loss_backward) for the reference
interpreter: a loop over time, each step vectorized over the batch and the 2S+1 extended label
positions, in log space with ATen's guard (a max of -inf shifts by 0, never -inf - -inf). The
arithmetic is the operands' dtype, as ATen's CPU kernels do theirs."""
import numpy as np


def _extended(log_probs, targets, target_lengths, blank):
    """(labels (N, W): blank, t1, blank, t2, ..., blank; the label log-probabilities (T, N, W);
    skip (N, W): whether s - 2 feeds s (a label unlike the one two back); valid (N, W):
    s < 2L + 1; L, clipped at 0; impossible (N,): L > S)."""
    n, s = targets.shape
    c = log_probs.shape[2]
    labels = np.full((n, 2 * s + 1), blank, np.int64)
    labels[:, 1::2] = np.clip(targets, 0, c - 1)
    picked = np.take_along_axis(log_probs, labels[None], axis=2)
    skip = np.zeros(labels.shape, bool)
    skip[:, 2:] = labels[:, 2:] != labels[:, :-2]
    length = np.maximum(np.asarray(target_lengths, np.int64), 0)
    valid = np.arange(2 * s + 1)[None] < 2 * length[:, None] + 1
    return labels, picked, skip, valid, length, length > s


def _log_add3(a, b, c):
    top = np.maximum(np.maximum(a, b), c)
    top = np.where(top == -np.inf, 0, top)
    return np.log(np.exp(a - top) + np.exp(b - top) + np.exp(c - top)) + top


def _shifted(x, k, fill=-np.inf):
    """x moved k positions along the last axis (right for k > 0), filled."""
    out = np.full_like(x, fill)
    if k > 0:
        out[..., k:] = x[..., :-k]
    else:
        out[..., :k] = x[..., -k:]
    return out


def ctc_loss(log_probs, targets, input_lengths, target_lengths, *, blank):
    lp = np.asarray(log_probs)
    t_max, n, _ = lp.shape
    _, picked, skip, valid, length, impossible = _extended(lp, targets, target_lengths, blank)
    inputs = np.clip(np.asarray(input_lengths, np.int64), 0, t_max)
    neg = lp.dtype.type(-np.inf)
    alpha = np.full((t_max, n, valid.shape[1]), neg, lp.dtype)
    a = np.where(valid & (np.arange(valid.shape[1]) < 2), picked[0], neg)  # eq. (6)'s start
    for t in range(t_max):
        if t:
            a = _log_add3(a, _shifted(a, 1), np.where(skip, _shifted(a, 2), neg)) + picked[t]
            a = np.where(valid, a, neg)
        alpha[t] = np.where((t < inputs)[:, None], a, neg)
    last = alpha[np.maximum(inputs - 1, 0), np.arange(n)]  # (N, W): each row's last step
    end = np.take_along_axis(last, np.minimum(2 * length, valid.shape[1] - 1)[:, None], 1)[:, 0]
    before = np.take_along_axis(last, np.clip(2 * length - 1, 0, valid.shape[1] - 1)[:, None],
                                1)[:, 0]
    before = np.where(length > 0, before, neg)
    top = np.maximum(end, before)
    top = np.where(top == -np.inf, 0, top)
    likelihood = np.log(np.exp(end - top) + np.exp(before - top)) + top
    empty = np.where(length == 0, lp.dtype.type(0), neg)  # no input: only "" is possible
    likelihood = np.where(inputs == 0, empty, np.where(impossible, neg, likelihood))
    return -likelihood, np.transpose(alpha, (1, 0, 2))


def ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha,
                      *, blank, zero_infinity):
    lp = np.asarray(log_probs)
    t_max, n, c = lp.shape
    labels, picked, skip, valid, length, impossible = _extended(lp, targets, target_lengths,
                                                                 blank)
    width = valid.shape[1]
    inputs = np.clip(np.asarray(input_lengths, np.int64), 0, t_max)
    neg = lp.dtype.type(-np.inf)
    positions = np.arange(width)[None]
    ends = valid & ((positions == 2 * length[:, None]) | (positions == 2 * length[:, None] - 1))
    skip_back = _shifted(skip, -2, False)  # s + 2 feeds s where s + 2 would feed from s
    beta = np.full((t_max, n, width), neg, lp.dtype)
    b = np.full((n, width), neg, lp.dtype)
    for t in range(t_max - 1, -1, -1):
        step = _log_add3(b, _shifted(b, -1), np.where(skip_back, _shifted(b, -2), neg))
        b = np.where((t == inputs - 1)[:, None], np.where(ends, picked[t], neg),
                     np.where((t < inputs - 1)[:, None], step + picked[t], neg))
        b = np.where(valid, b, neg)
        beta[t] = b
    both = np.transpose(np.asarray(log_alpha), (1, 0, 2)) + beta  # (T, N, W)
    both = np.where(valid & ~impossible[:, None], both, neg)
    # log of sum over the positions s that carry class c: shifted by each step's max, then
    # summed per class as a product with the labels' one-hot matrix
    top = both.max(axis=2, keepdims=True)
    top = np.where(top == -np.inf, 0, top)
    hot = (labels[:, :, None] == np.arange(c)).astype(lp.dtype)  # (N, W, C)
    summed = np.matmul(np.exp(both - top).transpose(1, 0, 2), hot).transpose(1, 0, 2)
    with np.errstate(divide="ignore"):
        collected = np.log(summed) + top
    nll = np.asarray(nll)
    scale = np.asarray(grad)[None, :, None]
    out = (np.exp(lp) - np.exp(collected + nll[None, :, None] - lp)) * scale
    live = (np.arange(t_max)[:, None] < inputs[None])[:, :, None]
    if zero_infinity:
        live = live & (nll != np.inf)[None, :, None]
    return np.where(live, out, lp.dtype.type(0))
