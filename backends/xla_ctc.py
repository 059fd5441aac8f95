"""CTC's alpha and beta recursions (core/ops.py ctc_loss, ctc_loss_backward) in jax: a
lax.scan over time (backwards for beta), each step vectorized over the batch and the 2S+1
extended label positions, in log space with ATen's guard (a max of -inf shifts by 0). The same
steps as the reference backend's (backends/reference_ctc.py)."""
import jax.numpy as jnp
from jax import lax


def _extended(log_probs, targets, target_lengths, blank):
    """(labels (N, W), their log-probabilities (T, N, W), skip, valid, L, impossible), as
    reference_ctc._extended."""
    n, s = targets.shape
    c = log_probs.shape[2]
    width = 2 * s + 1
    positions = jnp.arange(width)
    labels = jnp.full((n, width), blank, jnp.int32)
    labels = labels.at[:, 1::2].set(jnp.clip(targets, 0, c - 1).astype(jnp.int32))
    picked = jnp.take_along_axis(log_probs, labels[None], axis=2)
    skip = jnp.concatenate([jnp.zeros((n, min(2, width)), bool),
                            labels[:, 2:] != labels[:, :-2]], axis=1)
    length = jnp.maximum(target_lengths.astype(jnp.int32), 0)
    valid = positions[None] < 2 * length[:, None] + 1
    return labels, picked, skip, valid, length, length > s


def _log_add3(a, b, c):
    top = jnp.maximum(jnp.maximum(a, b), c)
    top = jnp.where(top == -jnp.inf, 0, top)
    return jnp.log(jnp.exp(a - top) + jnp.exp(b - top) + jnp.exp(c - top)) + top


def _shifted(x, k, fill=-jnp.inf):
    """x moved k positions along the last axis (right for k > 0), filled."""
    pad = jnp.full(x.shape[:-1] + (abs(k),), fill, x.dtype)
    if k > 0:
        return jnp.concatenate([pad, x[..., :-k]], axis=-1)
    return jnp.concatenate([x[..., -k:], pad], axis=-1)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, *, blank):
    t_max, n, _ = log_probs.shape
    _, picked, skip, valid, length, impossible = _extended(log_probs, targets, target_lengths,
                                                           blank)
    width = valid.shape[1]
    inputs = jnp.clip(input_lengths.astype(jnp.int32), 0, t_max)
    neg = jnp.array(-jnp.inf, log_probs.dtype)
    start = jnp.where(valid & (jnp.arange(width) < 2), picked[0], neg)

    def step(a, xs):
        t, row = xs
        moved = _log_add3(a, _shifted(a, 1), jnp.where(skip, _shifted(a, 2), neg)) + row
        a = jnp.where(t == 0, a, jnp.where(valid, moved, neg))
        return a, jnp.where((t < inputs)[:, None], a, neg)

    _, alpha = lax.scan(step, start, (jnp.arange(t_max), picked))  # (T, N, W)
    last = alpha[jnp.maximum(inputs - 1, 0), jnp.arange(n)]
    end = jnp.take_along_axis(last, jnp.minimum(2 * length, width - 1)[:, None], 1)[:, 0]
    before = jnp.take_along_axis(last, jnp.clip(2 * length - 1, 0, width - 1)[:, None], 1)[:, 0]
    before = jnp.where(length > 0, before, neg)
    top = jnp.maximum(end, before)
    top = jnp.where(top == -jnp.inf, 0, top)
    likelihood = jnp.log(jnp.exp(end - top) + jnp.exp(before - top)) + top
    empty = jnp.where(length == 0, jnp.zeros((), log_probs.dtype), neg)
    likelihood = jnp.where(inputs == 0, empty, jnp.where(impossible, neg, likelihood))
    return -likelihood, jnp.transpose(alpha, (1, 0, 2))


def ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha,
                      *, blank, zero_infinity):
    t_max, n, c = log_probs.shape
    labels, picked, skip, valid, length, impossible = _extended(log_probs, targets,
                                                                target_lengths, blank)
    width = valid.shape[1]
    inputs = jnp.clip(input_lengths.astype(jnp.int32), 0, t_max)
    neg = jnp.array(-jnp.inf, log_probs.dtype)
    positions = jnp.arange(width)[None]
    ends = valid & ((positions == 2 * length[:, None]) | (positions == 2 * length[:, None] - 1))
    skip_back = _shifted(skip, -2, False)  # s + 2 feeds s where s + 2 would feed from s

    def step(b, xs):
        t, row = xs
        moved = _log_add3(b, _shifted(b, -1), jnp.where(skip_back, _shifted(b, -2), neg))
        b = jnp.where((t == inputs - 1)[:, None], jnp.where(ends, row, neg),
                      jnp.where((t < inputs - 1)[:, None], moved + row, neg))
        b = jnp.where(valid, b, neg)
        return b, b

    _, beta = lax.scan(step, jnp.full((n, width), neg), (jnp.arange(t_max), picked),
                       reverse=True)
    both = jnp.transpose(log_alpha, (1, 0, 2)) + beta  # (T, N, W)
    both = jnp.where(valid & ~impossible[:, None], both, neg)
    top = jnp.max(both, axis=2, keepdims=True)
    top = jnp.where(top == -jnp.inf, 0, top)
    hot = (labels[:, :, None] == jnp.arange(c)).astype(log_probs.dtype)  # (N, W, C)
    summed = jnp.einsum("tnw,nwc->tnc", jnp.exp(both - top), hot,
                        precision=lax.Precision.HIGHEST)
    collected = jnp.log(summed) + top
    out = (jnp.exp(log_probs) - jnp.exp(collected + nll[None, :, None] - log_probs)) \
        * grad[None, :, None]
    live = (jnp.arange(t_max)[:, None] < inputs[None])[:, :, None]
    if zero_infinity:
        live = live & (nll != jnp.inf)[None, :, None]
    return jnp.where(live, out, jnp.zeros((), log_probs.dtype))
