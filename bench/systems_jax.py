"""jax.jit: the same math written directly against jax.numpy, one jitted step each.

This is the limit a lowering to XLA can approach: no tracing per step, one dispatch.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np

from . import workloads as wl

# lazyx asks XLA for full float32 matrix products (backends/xla.py: precision=HIGHEST), the
# math eager torch and NumPy do. On a GPU, jax's default runs them in TF32, a cheaper and
# different math; the baseline asks for lazyx's precision so both do the same work. (No
# change on a CPU, where float32 products are full float32 either way.)
jax.config.update("jax_default_matmul_precision", "highest")


def mlp_loss(params, x, onehot):
    h = x
    for i in range(0, len(params) - 2, 2):
        h = jax.nn.relu(h @ params[i] + params[i + 1])
    logits = h @ params[-2] + params[-1]
    lse = jax.nn.logsumexp(logits, axis=1)
    return jnp.mean(lse - jnp.sum(logits * onehot, axis=1))


def _layer_norm(x, g, b):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + wl.LN_EPS) * g + b


def block_forward(p, x):
    b, s, d = x.shape
    dh = d // wl.HEADS

    def heads(t):
        return t.reshape(b, s, wl.HEADS, dh).transpose(0, 2, 1, 3)

    a = _layer_norm(x, p["ln1_g"], p["ln1_b"])
    q, k, v = (heads(a @ p["w" + c] + p["b" + c]) for c in "qkv")
    scores = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(dh))
    ctx = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    h = x + ctx @ p["wo"] + p["bo"]
    f = jax.nn.relu(_layer_norm(h, p["ln2_g"], p["ln2_b"]) @ p["w1"] + p["b1"])
    return h + f @ p["w2"] + p["b2"]


def block_loss(p, x, target):
    diff = block_forward(p, x) - target
    return jnp.mean(diff * diff)


def _sgd_step(loss_fn):
    @jax.jit
    def step(params, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        return jax.tree_util.tree_map(lambda p, g: p - wl.LR * g, params, grads), loss
    return step


def jax_jit(workload):
    if workload in ("W1", "W2"):
        if workload == "W1":
            x, _, onehot = wl.mlp_data()
            params, batch, fn = wl.mlp_params(), (x, onehot), mlp_loss
        else:
            params, batch, fn = wl.block_params(), wl.block_data(), block_loss
        jitted = _sgd_step(fn)
        state = {"params": jax.tree_util.tree_map(jnp.asarray, params)}
        batch = tuple(jnp.asarray(a) for a in batch)

        def step():
            state["params"], loss = jitted(state["params"], *batch)
            return float(loss)  # blocks until the step is done
        return step
    chain = wl.chain_of(workload)
    unary = {"tanh": jnp.tanh}
    fn = jax.jit(lambda t: jnp.sum(wl.run_chain(t, chain, unary)))
    x = jnp.asarray(wl.chain_input(workload))
    return lambda: float(fn(x))


def reference_losses(workload, n=3):
    """The first n step values from a plain jax run (used by tests as an oracle)."""
    step = jax_jit(workload)
    return np.array([step() for _ in range(n)])


SYSTEMS = {"jax.jit": jax_jit}
