"""NumPy systems: eager NumPy and lazyx through its numpy frontend.

NumPy has no autograd, so both training workloads carry hand-written backward passes. They
are written once against an Array API namespace `xp` (NumPy itself, or lazyx's lnp), so the
eager and the lazy run execute literally the same code.
"""
import math

import numpy as np

from . import workloads as wl
from .harness import NotAvailable, make_step


def _relu_grad(xp, pre, grad):
    return xp.where(pre > 0, grad, xp.zeros_like(grad))


def mlp_forward(xp, params, x, acts=None, pres=None):
    """Logits of the MLP; fills `acts`/`pres` (activations, pre-activations) for backprop."""
    h = x
    for i in range(0, len(params) - 2, 2):
        z = xp.matmul(h, params[i]) + params[i + 1]
        h = xp.maximum(z, xp.zeros_like(z))
        if acts is not None:
            pres.append(z)
            acts.append(h)
    return xp.matmul(h, params[-2]) + params[-1]


def mlp_step(xp, params, x, onehot, lr=wl.LR):
    """One SGD step of the MLP: (new params, loss). Also used by `lazyx demo`."""
    batch = x.shape[0]
    acts, pres = [x], []
    logits = mlp_forward(xp, params, x, acts, pres)
    m = xp.max(logits, axis=1, keepdims=True)
    e = xp.exp(logits - m)
    s = xp.sum(e, axis=1, keepdims=True)
    loss = xp.mean(xp.log(s) + m) - xp.sum(logits * onehot) / batch
    grad = (e / s - onehot) / batch
    grads = [None] * len(params)
    for layer in range(len(params) // 2 - 1, -1, -1):
        w = params[2 * layer]
        grads[2 * layer] = xp.matmul(acts[layer].T, grad)
        grads[2 * layer + 1] = xp.sum(grad, axis=0)
        if layer:
            grad = _relu_grad(xp, pres[layer - 1], xp.matmul(grad, w.T))
    return [p - lr * g for p, g in zip(params, grads)], loss


def _layer_norm(xp, x, g, b):
    mean = xp.mean(x, axis=-1, keepdims=True)
    xc = x - mean
    inv = 1.0 / xp.sqrt(xp.mean(xc * xc, axis=-1, keepdims=True) + wl.LN_EPS)
    xhat = xc * inv
    return xhat * g + b, (xhat, inv, g)


def _layer_norm_grad(xp, dy, cache):
    xhat, inv, g = cache
    dg, db = _sum_rows(xp, dy * xhat), _sum_rows(xp, dy)
    dxhat = dy * g
    dx = inv * (dxhat - xp.mean(dxhat, axis=-1, keepdims=True)
                - xhat * xp.mean(dxhat * xhat, axis=-1, keepdims=True))
    return dx, dg, db


def _rows(xp, t):
    return xp.reshape(t, (-1, t.shape[-1]))


def _sum_rows(xp, t):
    return xp.sum(_rows(xp, t), axis=0)


def _linear(xp, x, w, b):
    return xp.matmul(x, w) + b


def _linear_grad(xp, x, w, dy):
    """(dx, dw, db) of y = x @ w + b over a (B, S, in) input."""
    return xp.matmul(dy, w.T), xp.matmul(_rows(xp, x).T, _rows(xp, dy)), _sum_rows(xp, dy)


def block_step(xp, p, x, target):
    """One SGD step of the pre-LN encoder block: (new params, loss)."""
    loss, g = block_grads(xp, p, x, target)
    return {name: p[name] - wl.LR * g[name] for name in wl.BLOCK_PARAMS}, loss


def block_grads(xp, p, x, target):
    """(loss, {name: gradient}) of the pre-LN encoder block's MSE, by hand-written backprop."""
    b, s, d = x.shape
    dh = d // wl.HEADS
    scale = 1.0 / math.sqrt(dh)

    def heads(t):
        return xp.permute_dims(xp.reshape(t, (b, s, wl.HEADS, dh)), (0, 2, 1, 3))

    def merge(t):
        return xp.reshape(xp.permute_dims(t, (0, 2, 1, 3)), (b, s, d))

    def swap(t):
        return xp.permute_dims(t, (0, 1, 3, 2))

    # forward
    a, ln1 = _layer_norm(xp, x, p["ln1_g"], p["ln1_b"])
    q, k, v = (heads(_linear(xp, a, p["w" + c], p["b" + c])) for c in "qkv")
    scores = xp.matmul(q, swap(k)) * scale
    e = xp.exp(scores - xp.max(scores, axis=-1, keepdims=True))
    probs = e / xp.sum(e, axis=-1, keepdims=True)
    ctx = merge(xp.matmul(probs, v))
    h = x + _linear(xp, ctx, p["wo"], p["bo"])
    n, ln2 = _layer_norm(xp, h, p["ln2_g"], p["ln2_b"])
    z = _linear(xp, n, p["w1"], p["b1"])
    r = xp.maximum(z, xp.zeros_like(z))
    diff = h + _linear(xp, r, p["w2"], p["b2"]) - target
    loss = xp.mean(diff * diff)

    # backward
    g = {}
    dout = diff * (2.0 / (b * s * d))
    dr, g["w2"], g["b2"] = _linear_grad(xp, r, p["w2"], dout)
    dn, g["w1"], g["b1"] = _linear_grad(xp, n, p["w1"], _relu_grad(xp, z, dr))
    dh_ln, g["ln2_g"], g["ln2_b"] = _layer_norm_grad(xp, dn, ln2)
    dh_total = dout + dh_ln
    dctx, g["wo"], g["bo"] = _linear_grad(xp, ctx, p["wo"], dh_total)
    dctx = heads(dctx)
    dprobs = xp.matmul(dctx, swap(v))
    dv = xp.matmul(swap(probs), dctx)
    dscores = probs * (dprobs - xp.sum(dprobs * probs, axis=-1, keepdims=True)) * scale
    dq, dk = xp.matmul(dscores, k), xp.matmul(swap(dscores), q)
    da = None
    for c, dt in (("q", dq), ("k", dk), ("v", dv)):
        dpart, g["w" + c], g["b" + c] = _linear_grad(xp, a, p["w" + c], merge(dt))
        da = dpart if da is None else da + dpart
    _, g["ln1_g"], g["ln1_b"] = _layer_norm_grad(xp, da, ln1)
    return loss, g


def _build(workload, xp, barrier, lazy=False, compile_fn=None):
    if workload in ("W1", "W2"):
        if workload == "W1":
            x, _, onehot = wl.mlp_data()
            params, batch, step_fn = wl.mlp_params(), (x, onehot), mlp_step
            params = [xp.asarray(a) for a in params]
        else:
            params, batch, step_fn = wl.block_params(), wl.block_data(), block_step
            params = {k: xp.asarray(a) for k, a in params.items()}
        batch = tuple(xp.asarray(a) for a in batch)
        state = {"params": params}

        def train():
            state["params"], loss = step_fn(xp, state["params"], *batch)
            return loss
        if compile_fn is not None:
            train = compile_fn(train)
        return make_step(train, barrier, float, lazy, replay=compile_fn is not None)
    chain = wl.chain_of(workload)
    unary = {"tanh": xp.tanh}
    x = xp.asarray(wl.chain_input(workload))

    def fn(t):
        return xp.sum(wl.run_chain(t, chain, unary))
    if compile_fn is not None:
        fn = compile_fn(fn)
    return make_step(lambda: fn(x), barrier, float, lazy, wl.OPS_PER_STEP[workload],
                     replay=compile_fn is not None)


def numpy_eager(workload):
    return _build(workload, np, lambda: None)


def lazyx_numpy(workload):
    try:
        import lazyx
        import lazyx.frontends.numpy as lnp
    except ImportError as err:
        raise NotAvailable(f"lazyx numpy frontend not importable: {err}")
    return _build(workload, lnp, lazyx.sync, lazy=True)


def lazyx_numpy_compile(workload):
    try:
        import lazyx
        import lazyx.frontends.numpy as lnp
    except ImportError as err:
        raise NotAvailable(f"lazyx numpy frontend not importable: {err}")
    return _build(workload, lnp, lazyx.sync, lazy=True, compile_fn=lazyx.compile)


SYSTEMS = {"numpy-eager": numpy_eager, "lazyx-numpy": lazyx_numpy,
           "lazyx-numpy+compile": lazyx_numpy_compile}
