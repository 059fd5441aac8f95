"""Independent threads never interfere (issue 18): each runs its own NumPy training loop with
its own barriers; every thread's numbers equal the single-threaded run's."""
import os
import sys

import numpy as np

import lazyx
import lazyx.frontends.numpy as lnp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import shared  # noqa: E402  (tests/shared.py)

STEPS, THREADS = 500, 4


def train(seed, lazy):
    xp = lnp if lazy else np
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((16, 8)).astype(np.float32)
    w = xp.asarray(rng.standard_normal((8, 4)).astype(np.float32) * 0.1)
    acc = xp.asarray(np.zeros(4, np.float32))
    x = xp.asarray(X)
    for i in range(STEPS):
        h = np.tanh(x @ w)
        acc = acc + h.sum(0) * 0.01
        w = w - (0.001 * (i % 3 + 1)) * (x.T @ (1 - h * h))
        if lazy:
            lazyx.sync()
    return np.asarray(w), np.asarray(acc)


def test_four_threads_train_as_if_alone():
    results = shared.run_in_threads(lambda t: train(t, lazy=True), THREADS)
    for t in range(THREADS):
        want_w, want_acc = train(t, lazy=False)
        np.testing.assert_allclose(results[t][0], want_w, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(results[t][1], want_acc, rtol=1e-4, atol=1e-5)
