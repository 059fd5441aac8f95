"""lazyx.compile's results for NumPy steps returning a copy of an argument or of state
(`x.copy()`, `x.reshape(x.shape)`, `x[...]`, `np.concatenate([x])`): each replay returns
this call's value. Such a result holds the argument's node unchanged, and was returned as
the traced call's array at every replay, silently."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp


@pytest.mark.parametrize("copy", [
    lambda x: x.copy(), lambda x: x.reshape(x.shape), lambda x: x[...],
    lambda x: lnp.concatenate([x]), lambda x: x.astype(np.float64),
], ids=["copy", "reshape", "ellipsis", "concatenate", "astype"])
def test_a_copy_of_an_argument_returned_is_this_calls_value(copy):
    run = lazyx.compile(lambda x: (copy(x), x * 2))
    lazyx.reset_metrics()
    for k in range(4):
        x = np.full((2, 3), float(k))
        same, double = run(lnp.asarray(x))
        np.testing.assert_array_equal(np.asarray(same), x)
        np.testing.assert_array_equal(np.asarray(double), x * 2)
    assert lazyx.metrics()["replays"] >= 2


def test_a_copy_of_state_taken_before_the_step_updates_it_is_this_calls_value():
    state = {"w": lnp.zeros(3)}

    def step(x):
        old = state["w"].copy()
        state["w"] += x
        return old
    run = lazyx.compile(step)
    lazyx.reset_metrics()
    got = [np.asarray(run(lnp.ones(3))) for _ in range(5)]
    assert lazyx.metrics()["replays"] >= 3
    for k, old in enumerate(got):
        np.testing.assert_array_equal(old, np.full(3, float(k)))


def test_state_and_arguments_assigned_an_argument_are_written_at_each_replay():
    """`buf[...] = x` gives buf x's node itself: found among no outputs, it was never
    written by a replay, and kept the traced call's value."""
    state = {"buf": lnp.zeros(3)}

    def step(x, out):
        state["buf"][...] = x
        out[...] = x
        return x * 2
    run = lazyx.compile(step)
    lazyx.reset_metrics()
    for k in range(4):
        out = lnp.zeros(3)
        run(lnp.asarray(np.full(3, float(k))), out)
        np.testing.assert_array_equal(np.asarray(state["buf"]), np.full(3, float(k)))
        np.testing.assert_array_equal(np.asarray(out), np.full(3, float(k)))
    assert lazyx.metrics()["replays"] >= 2
