"""Independent threads never interfere (issue 18): each runs its own TF training loop with its
own ltf.sync(); every thread's numbers equal the single-threaded eager run's."""
import os
import sys

import numpy as np
import tensorflow as tf

import lazyx.frontends.tf as ltf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import shared  # noqa: E402  (tests/shared.py)

STEPS, THREADS = 500, 4


def train(seed, lazy):
    rng = np.random.default_rng(seed)
    make = ltf.constant if lazy else tf.constant
    x = make(rng.standard_normal((16, 8)).astype(np.float32))
    w = make(rng.standard_normal((8, 4)).astype(np.float32) * 0.1)
    for i in range(STEPS):
        h = tf.tanh(tf.matmul(x, w))
        w = w - (0.001 * (i % 3 + 1)) * tf.matmul(tf.transpose(x), 1 - h * h)
        if lazy:
            ltf.sync()
    return np.asarray(w)


def test_four_threads_train_as_if_alone():
    results = shared.run_in_threads(lambda t: train(t, lazy=True), THREADS)
    for t in range(THREADS):
        np.testing.assert_allclose(results[t], train(t, lazy=False), rtol=1e-4, atol=1e-5)
