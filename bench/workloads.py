"""The four workloads, defined once: shapes, data, initial weights and the op chains.

Every system builds its step from these NumPy arrays, so all of them start from the same
weights and see the same batch; the first losses they report can then be compared.
"""
import numpy as np

WORKLOADS = {
    "W1": "MLP training step (batch 64, 784-512-512-10, ReLU, cross-entropy, SGD)",
    "W2": "Transformer encoder block training step (d_model 256, 4 heads, ff 1024, "
          "seq 128, batch 8, pre-LN, MSE, SGD)",
    "W3": "50-op elementwise chain on 1024x1024 float32, then a sum (fusion)",
    "W4": "200 tiny elementwise ops on a 4x4 tensor, then a sum (per-op overhead)",
}
LR = 0.01

# W1
MLP_SIZES = (784, 512, 512, 10)
MLP_BATCH = 64

# W2
D_MODEL, HEADS, D_FF, SEQ, BATCH = 256, 4, 1024, 128, 8
LN_EPS = 1e-5
# Parameter order every system uses (pre-LN block: x + attn(ln1(x)), then h + ffn(ln2(h))).
BLOCK_PARAMS = ("ln1_g", "ln1_b", "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo",
                "ln2_g", "ln2_b", "w1", "b1", "w2", "b2")

# W3, W4: (op, constant) pairs. Ops: mul, add, sub (by a Python scalar), tanh, square (x * x).
# The cycles keep values bounded, so all systems agree to float32 rounding. No sin: XLA's CPU
# sin is ~13x slower than NumPy's, which would measure one transcendental instead of fusion.
W3_SHAPE = (1024, 1024)
W3_CHAIN = [("mul", 0.9), ("add", 0.1), ("square", None), ("sub", 0.5), ("tanh", None)] * 10
W4_SHAPE = (4, 4)
W4_CHAIN = [("add", 1.0), ("mul", 0.5), ("tanh", None), ("sub", 0.25)] * 50
assert len(W3_CHAIN) == 50 and len(W4_CHAIN) == 200

# Ops per step for per-op figures (the chain plus its final sum).
OPS_PER_STEP = {"W3": len(W3_CHAIN) + 1, "W4": len(W4_CHAIN) + 1}


def _rng(seed):
    return np.random.default_rng(seed)


def _glorot(rng, fan_in, fan_out):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(np.float32)


def mlp_data():
    """x (64, 784) float32, integer labels (64,), their one-hot (64, 10)."""
    rng = _rng(1)
    x = rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32)
    labels = rng.integers(0, MLP_SIZES[-1], size=MLP_BATCH).astype(np.int64)
    return x, labels, np.eye(MLP_SIZES[-1], dtype=np.float32)[labels]


def mlp_params():
    """[W1, b1, W2, b2, W3, b3] with W as (in, out): y = x @ W + b."""
    rng = _rng(2)
    params = []
    for fan_in, fan_out in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        params += [_glorot(rng, fan_in, fan_out), np.zeros(fan_out, np.float32)]
    return params


def block_data():
    """x (8, 128, 256) and the regression target of the same shape."""
    rng = _rng(3)
    x = rng.standard_normal((BATCH, SEQ, D_MODEL)).astype(np.float32)
    target = rng.standard_normal((BATCH, SEQ, D_MODEL)).astype(np.float32)
    return x, target


def block_params():
    """Dict name -> array in BLOCK_PARAMS order; matrices as (in, out)."""
    rng = _rng(4)
    shapes = {"w1": (D_MODEL, D_FF), "b1": (D_FF,), "w2": (D_FF, D_MODEL)}
    params = {}
    for name in BLOCK_PARAMS:
        shape = shapes.get(name, (D_MODEL, D_MODEL) if name.startswith("w") else (D_MODEL,))
        if name.endswith("_g"):
            params[name] = np.ones(shape, np.float32)
        elif len(shape) == 2:
            params[name] = _glorot(rng, *shape)
        else:
            params[name] = np.zeros(shape, np.float32)
    return params


def chain_input(workload):
    shape = W3_SHAPE if workload == "W3" else W4_SHAPE
    return _rng(5).uniform(-1, 1, size=shape).astype(np.float32)


def chain_of(workload):
    return W3_CHAIN if workload == "W3" else W4_CHAIN


def run_chain(x, chain, unary):
    """Apply `chain` to x; `unary` maps "tanh" to the framework's function. The scalar
    ops use Python operators, which every framework (and every lazyx frontend) overloads."""
    for op, c in chain:
        if op == "mul":
            x = x * c
        elif op == "add":
            x = x + c
        elif op == "sub":
            x = x - c
        elif op == "square":
            x = x * x
        else:
            x = unary[op](x)
    return x
