"""lazyx.compile of a NumPy step that makes or reseeds its generator
(`lnp.random.default_rng(seed)`, `lnp.random.seed(s)` inside the step): each call draws what
the uncompiled call draws. Replays used to draw on from the traced generator's counter: other
numbers at each call."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp


def _fresh(x, seed):
    return x + lnp.random.default_rng(seed).standard_normal(x.shape)


def _legacy(x, seed):
    lnp.random.seed(seed)
    return x + lnp.random.rand(*x.shape)


@pytest.mark.parametrize("step", [_fresh, _legacy], ids=["default_rng", "seed"])
def test_a_step_that_seeds_its_generator_draws_the_uncompiled_numbers(step):
    def run(fn):
        lnp.random.seed(0)
        x = lnp.asarray(np.zeros((3, 4), np.float32))
        out = [np.asarray(fn(x, seed)) for seed in (1, 1, 2, 1, 2, 2)]
        return out + [np.asarray(lnp.random.rand(2))]  # where it left the global stream
    lazyx.reset_metrics()
    compiled = run(lazyx.compile(step))
    assert lazyx.metrics()["replays"] >= 3
    for a, b in zip(compiled, run(step)):
        np.testing.assert_array_equal(a, b)
