"""A plain NumPy program on lazy arrays: its IR, its graph hash and its metrics.

    PYTHONPATH=.dev python examples/numpy_demo.py
"""
import numpy as np

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.backends.reference import ReferenceBackend
from lazyx.core import runtime


def softmax_layer(x, w, b, temperature):
    logits = (x @ w + b) / temperature            # ordinary NumPy code
    logits = logits - np.max(logits, axis=1, keepdims=True)
    e = np.exp(logits)
    return e / np.sum(e, axis=1, keepdims=True)


rng = np.random.default_rng(0)
x, w, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), np.zeros(2, np.float32)
lx, lw, lb = lnp.asarray(x), lnp.asarray(w), lnp.asarray(b)

p = softmax_layer(lx, lw, lb, 2.0)               # recorded, nothing runs yet
print("pending:", p.__lazyx_handle__.pending, " shape:", p.shape, " dtype:", p.dtype)
print("graph hash:", lazyx.graph_hash(p))
program, _ = runtime.linearize([p.__lazyx_handle__.node])
print("IR (leaves: " + ", ".join(f"{k} {s} {d}" for k, s, d in program.leaves) + ")")
print(ReferenceBackend().lowered_text(program))

lazyx.reset_metrics()
for t in (2.0, 1.0, 0.5):                         # a new temperature is a runtime parameter
    p = softmax_layer(lx, lw, lb, t)
    print(f"T={t}:", np.round(np.asarray(p)[0], 4))
assert np.allclose(np.asarray(p), softmax_layer(x, w, b, 0.5))
print(lazyx.metrics_report())
