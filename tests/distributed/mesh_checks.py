"""Checks shared by the multi-device tests."""
import numpy as np

import lazyx


def assert_laid_out(tensor, spec, mesh):
    """On XLA, realized data lies on the mesh as `spec` (() = replicated there); the reference
    backend keeps one whole copy, so there is nothing to check."""
    if lazyx.backend() != "xla":
        return
    sharding = lazyx.distributed.sharding_of(tensor)
    assert sharding is not None, "the value left the mesh"
    assert sharding.mesh == mesh.spec, (sharding, mesh)
    assert sharding == lazyx.distributed.Sharding(mesh.spec, spec), sharding


def mlp_data(seed=0):
    """Inputs, targets and the two weights of the NumPy MLP (float64)."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((32, 6)), rng.standard_normal((32, 3))
    return x, y, rng.standard_normal((6, 16)) * 0.3, rng.standard_normal((16, 3)) * 0.3


def numpy_mlp_steps(xp, x, y, w1, w2, steps, lr=0.1, sync=False):
    """Full-batch gradient descent on a tanh MLP written against namespace `xp` (numpy or
    lazyx's); returns (losses, w1, w2)."""
    losses = []
    for _ in range(steps):
        h = xp.tanh(x @ w1)
        err = h @ w2 - y
        losses.append(float((err ** 2).mean()))
        g_out = 2 * err / err.size
        g_w2 = h.T @ g_out
        g_h = (g_out @ w2.T) * (1 - h * h)
        w1 = w1 - lr * (x.T @ g_h)
        w2 = w2 - lr * g_w2
        if sync:
            lazyx.sync()
    return np.array(losses), w1, w2
