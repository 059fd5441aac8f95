"""lazyx.compile of a NumPy step returning an array NumPy makes on the host from the call's
numbers (`lnp.linspace(lo, hi, 4)`) while those numbers also reach the program (a clip):
the confirming trace compared the program and its parameters only, and every replay
returned the first call's linspace, silently. Such a result is checked like a host result:
one that changes keeps the step lazy, warned."""
import warnings

import numpy as np

import lazyx
import lazyx.frontends.numpy as lnp


def _step(x, lo, hi):
    return lnp.clip(x, lo, hi), lnp.linspace(lo, hi, 4)


def test_a_host_made_array_from_the_calls_numbers_is_this_calls():
    run = lazyx.compile(_step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for k in range(5):
            lo, hi = -0.5 * k, 0.5 * k + 1
            clipped, grid = run(lnp.asarray(np.array([-9.0, 9.0])), lo, hi)
            np.testing.assert_array_equal(np.asarray(grid), np.linspace(lo, hi, 4))
            np.testing.assert_array_equal(np.asarray(clipped), [lo, hi])


def test_a_host_made_constant_result_still_replays():
    run = lazyx.compile(lambda x: (x * 2, lnp.linspace(0.0, 1.0, 3)))
    lazyx.reset_metrics()
    for k in range(5):
        double, grid = run(lnp.asarray(np.full(2, float(k))))
        np.testing.assert_array_equal(np.asarray(grid), [0.0, 0.5, 1.0])
        np.testing.assert_array_equal(np.asarray(double), [2.0 * k] * 2)
    assert lazyx.metrics()["replays"] >= 2
