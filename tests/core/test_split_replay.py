"""lazyx.compile(fn, on_observe="split"): a step that reads scalars of values it computes
(`.item()`, `float()`, `bool()`, `print`) is replayed piece by piece -- each cut inside it a
program of its own, the values it read read back after that piece -- and its results equal
the uncompiled run's, whatever Python decided from what it read. What the guard cannot
follow (a float made a constant by Python) makes it run lazily instead, never wrongly."""
import math

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

RNG = np.random.default_rng(0)
XS = [RNG.standard_normal((4, 3)).astype(np.float32) * s
      for s in (1, 1, 1, 1, 4, 4, 1, 4, 1, 1)]


def run(step, compiled, xs=XS):
    """The step's results and state, uncompiled and compiled, call by call."""
    plain_w, comp_w = ({"w": lnp.asarray(np.ones((3, 2), np.float32))} for _ in range(2))
    for x in xs:
        want = step(plain_w, lnp.asarray(x))
        got = compiled(comp_w, lnp.asarray(x))
        for a, b in zip(want, got):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6)
            assert type(b) is type(a) or isinstance(a, lnp.LazyArray)
        np.testing.assert_allclose(np.asarray(comp_w["w"]), np.asarray(plain_w["w"]),
                                   rtol=1e-6)


def sgd(params, x, scale=1.0):
    w = params["w"]
    y = x @ w
    loss = (y * y).mean()
    params["w"] = w - 0.1 * scale * (x.T @ (2 * y) / y.size)
    return loss


def test_a_step_that_prints_and_returns_what_it_reads_replays():
    def step(params, x):
        loss = sgd(params, x)
        value = loss.item()                    # a float: its replays read it again
        print(f"loss {value:.3f}", round(value, 3))
        return loss, value * 2 + 1, round(value, 3)  # Python arithmetic on it is recomputed

    lazyx.reset_metrics()
    run(step, lazyx.compile(step, on_observe="split"))
    assert lazyx.metrics()["replays"] == len(XS) - 2  # (the second trace confirms the first)


def test_a_branch_on_a_read_value_takes_the_replayed_calls_branch():
    def step(params, x):
        loss = sgd(params, x)
        if loss.item() > 3.0:                  # a comparison: part of the guard
            params["w"] = params["w"] * 0.5
        if bool((params["w"] > 0).all()):      # a bool read: guarded by value
            params["w"] = params["w"] + 0.01
        return (loss,)

    lazyx.reset_metrics()
    run(step, lazyx.compile(step, on_observe="split"))
    metrics = lazyx.metrics()
    assert metrics["replays"] >= 3 and metrics["replay_misses"] >= 1


def test_a_constant_python_computes_from_a_read_value_runs_lazily_instead():
    def step(params, x):
        loss = sgd(params, x)
        scale = 1 / math.sqrt(loss.item() + 1)   # math.sqrt takes the plain float
        params["w"] = params["w"] * scale
        return (loss,)

    with pytest.warns(RuntimeWarning, match="depends on a value it reads"):
        run(step, lazyx.compile(step, on_observe="split"))


def test_a_plain_float_read_is_guarded_and_a_step_missing_each_time_stops_replaying():
    def step(params, x):
        loss = sgd(params, x)
        return loss, float(loss) * 2           # float(): a plain float, guarded by value

    with pytest.warns(RuntimeWarning, match="no traced variant read in 4 calls"):
        run(step, lazyx.compile(step, on_observe="split"))


def test_an_int_read_changing_each_call_stops_replaying_after_a_few_misses():
    def step(params, x):
        loss = sgd(params, x)
        positive = int((x > 0).sum())          # an int: guarded by value
        return loss, positive

    xs = [np.full((4, 3), k % 2 - 0.5, np.float32) * (1 + k) for k in range(10)]
    xs = [x * RNG.standard_normal(x.shape).astype(np.float32) for x in xs]
    compiled = lazyx.compile(step, on_observe="split")
    with pytest.warns(RuntimeWarning, match="no traced variant read in 4 calls"):
        run(step, compiled, xs)
    assert compiled.split  # lazily, from the fourth replay that read another value


def test_random_draws_of_a_split_step_are_the_uncompiled_runs():
    def make():
        rng = lnp.random.default_rng(3)

        def step(params, x):
            keep = rng.random(x.shape) > 0.3
            loss = sgd(params, lnp.where(keep, x, 0.0))
            if loss.item() > 1.0:
                params["w"] = params["w"] + rng.standard_normal((3, 2)) * 0.01
            return loss, rng.standard_normal(2)
        return step

    run(make(), lazyx.compile(make(), on_observe="split"))


def test_reading_a_whole_array_inside_the_step_runs_it_lazily():
    def step(params, x):
        loss = sgd(params, x)
        host = np.asarray(params["w"])          # an array: its uses cannot be followed
        params["w"] = params["w"] + float(host.sum()) * 0.0
        return (loss,)

    compiled = lazyx.compile(step, on_observe="split")
    with pytest.warns(RuntimeWarning, match="runs lazily from now on"):
        run(step, compiled)
    assert compiled.split
