"""LAPACK's Bunch-Kaufman LDL^T (dsytf2, lower) and its solve (dsytrs) in jax: jax has no
sytrf, so the steps are a lax.while_loop whose step (one column or two) the pivot choice
decides, on one matrix (vmapped over the batch). Each step reads the lower triangle
only, as LAPACK does, so the choices -- comparisons of computed values -- are the reference
backend's (backends/reference_linalg.py) and LAPACK's."""
import jax
import jax.numpy as jnp
from jax import lax

_BUNCH_KAUFMAN = (1 + 17 ** 0.5) / 8


def _largest(values, mask):
    """(first index of the largest masked |value|, that |value|; 0 if none is masked)."""
    scores = jnp.where(mask, jnp.abs(values), -1.0)
    i = jnp.argmax(scores)
    return i, jnp.maximum(scores[i], 0.0)


def _sytf2(a):
    n = a.shape[-1]
    idx = jnp.arange(n)

    def step(state):
        a, pivots, info, k = state
        a = jnp.where(idx[:, None] >= idx[None, :], a, a.T)  # the lower triangle, mirrored
        diagonal = jnp.abs(a[k, k])
        imax, colmax = _largest(a[:, k], idx > k)
        zero = (jnp.maximum(diagonal, colmax) == 0) | jnp.isnan(diagonal)
        _, left = _largest(a[imax], (idx >= k) & (idx < imax))
        _, below = _largest(a[:, imax], idx > imax)
        rowmax = jnp.maximum(left, below)
        keep = (diagonal >= _BUNCH_KAUFMAN * colmax) | \
            (diagonal >= _BUNCH_KAUFMAN * colmax * (colmax / rowmax))
        two = ~zero & ~keep & ~(jnp.abs(a[imax, imax]) >= _BUNCH_KAUFMAN * rowmax)
        pivot = jnp.where(zero | keep, k, imax)
        kk = k + two.astype(k.dtype)
        # rows and columns kk and pivot swapped in the trailing part (kept symmetric)
        perm = jnp.where(idx == kk, pivot, jnp.where(idx == pivot, kk, idx))
        trailing = (idx[:, None] >= k) & (idx[None, :] >= k)
        a = jnp.where(trailing, a[perm][:, perm], a)
        one = ~zero & ~two
        # a 1x1 pivot: the trailing part minus x x^T / d, the column scaled by 1 / d
        x = jnp.where(idx > k, a[:, k], 0.0)
        d11 = 1 / a[k, k]
        updated1 = a - d11 * jnp.outer(x, x)
        updated1 = jnp.where(idx[None, :] == k, jnp.where(idx > k, x * d11, a[:, k])[:, None],
                             updated1)
        # a 2x2 pivot (rows k, k+1): the trailing part minus [x y] D^-1 [x y]^T
        k1 = jnp.minimum(k + 1, n - 1)
        d21 = a[k1, k]
        d11, d22 = a[k1, k1] / d21, a[k, k] / d21
        d21 = 1 / (d11 * d22 - 1) / d21
        rest = idx > k + 1
        x, y = jnp.where(rest, a[:, k], 0.0), jnp.where(rest, a[:, k1], 0.0)
        wk, wkp1 = d21 * (d11 * x - y), d21 * (d22 * y - x)
        updated2 = a - jnp.outer(x, wk) - jnp.outer(y, wkp1)
        updated2 = jnp.where((idx[None, :] == k) & rest[:, None], wk[:, None], updated2)
        updated2 = jnp.where((idx[None, :] == k1) & rest[:, None], wkp1[:, None], updated2)
        a = jnp.where(one, updated1, jnp.where(two, updated2, a))
        code = jnp.where(two, -(pivot + 1), pivot + 1).astype(jnp.int32)
        pivots = jnp.where((idx == k) | (two & (idx == k1)), code, pivots)
        info = jnp.where((info == 0) & zero, (k + 1).astype(jnp.int32), info)
        return a, pivots, info, k + 1 + two.astype(k.dtype)

    state = (a, jnp.zeros(n, jnp.int32), jnp.int32(0), jnp.int32(0))
    a, pivots, info, _ = lax.while_loop(lambda s: s[3] < n, step, state)
    return jnp.tril(a), pivots, info


def _sytrs(ld, pivots, b):
    n = ld.shape[-1]
    idx = jnp.arange(n)

    def swap(b, i, j):
        perm = jnp.where(idx == i, j, jnp.where(idx == j, i, idx))
        return b[perm]

    def forward(state):  # L D y = P b
        b, k = state
        two = pivots[k] < 0
        k1 = jnp.minimum(k + 1, n - 1)
        p = jnp.abs(pivots[k]) - 1
        b = swap(b, jnp.where(two, k1, k), p)
        x = jnp.where(idx > k, ld[:, k], 0.0)
        one_b = b - jnp.outer(x, b[k])
        one_b = jnp.where((idx == k)[:, None], one_b / ld[k, k], one_b)
        rest = idx > k + 1
        two_b = b - jnp.outer(jnp.where(rest, ld[:, k], 0.0), b[k]) \
            - jnp.outer(jnp.where(rest, ld[:, k1], 0.0), b[k1])
        off = ld[k1, k]
        first, second = ld[k, k] / off, ld[k1, k1] / off
        denominator = first * second - 1
        u, v = b[k] / off, b[k1] / off
        two_b = jnp.where((idx == k)[:, None], ((second * u - v) / denominator)[None], two_b)
        two_b = jnp.where((idx == k1)[:, None], ((first * v - u) / denominator)[None], two_b)
        return jnp.where(two, two_b, one_b), k + 1 + two.astype(k.dtype)

    def backward(state):  # L^T P^T x = y
        b, k = state
        two = pivots[k] < 0
        below = jnp.where((idx > k)[:, None], b, 0.0)
        b = b.at[k].add(-jnp.where(idx > k, ld[:, k], 0.0) @ below)
        k0 = jnp.maximum(k - 1, 0)
        b = jnp.where(two, b.at[k0].add(-jnp.where(idx > k, ld[:, k0], 0.0) @ below), b)
        b = swap(b, k, jnp.abs(pivots[k]) - 1)
        return b, k - 1 - two.astype(k.dtype)

    b, _ = lax.while_loop(lambda s: s[1] < n, forward, (b, jnp.int32(0)))
    b, _ = lax.while_loop(lambda s: s[1] >= 0, backward, (b, jnp.int32(n - 1)))
    return b


def _batched(fn, arrays, core_dims):
    """fn over the leading batch dimensions (flattened, vmapped)."""
    batch = arrays[0].shape[:arrays[0].ndim - core_dims[0]]
    flat = [x.reshape((-1,) + x.shape[x.ndim - d:]) for x, d in zip(arrays, core_dims)]
    results = jax.vmap(fn)(*flat)
    return tuple(r.reshape(batch + r.shape[1:]) for r in results) \
        if isinstance(results, tuple) else results.reshape(batch + results.shape[1:])


def ldl(x):
    return _batched(_sytf2, [x], [2])


def ldl_solve(ld, pivots, b):
    return _batched(_sytrs, [ld, pivots, b], [2, 1, 2])
