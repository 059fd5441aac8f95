"""lazyx.compile of a TF step that calls tf.random.set_seed(s) itself: TF restarts its op
seeds there, so each uncompiled call with seed s draws the same numbers; replays asked TF
for the pairs after the traced call's and drew new numbers each call, silently. Such a step
now runs lazily, warned, with the uncompiled numbers."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


def _step(x, seed):
    tf.random.set_seed(seed)
    return x + tf.random.uniform((2, 3))


def test_a_step_that_sets_tfs_seed_draws_the_uncompiled_numbers():
    def run(fn):
        x = ltf.constant(np.zeros((2, 3), np.float32))
        return [np.asarray(fn(x, seed)) for seed in (1, 1, 2, 1, 2)]
    with pytest.warns(RuntimeWarning, match="set_seed"):
        compiled = run(lazyx.compile(_step))
    for a, b in zip(compiled, run(_step)):
        np.testing.assert_array_equal(a, b)
