"""lazyx.compile's lean replay (core/replay._replay_lean): a step that is a function of its
arguments -- no state found or written back, no random streams, pieces or effects -- replays
through a shorter path than the general one. Both must give the same results, metrics and
structures: each call here is checked against NumPy and against the general path (the same
entry forced off the lean one), through the NumPy frontend."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.core import replay


def _entries(step):
    return [e for es in step.entries.values() for e in es]


def _chain(x, y, scale):
    z = np.tanh(x * scale + y) - 0.25
    return {"z": z, "sum": z.sum(), "x": x, "pair": (z.mean(), "tag", 3), "scale2": scale * 2}


def _want(x, y, scale):
    z = np.tanh(x * scale + y) - 0.25
    return z, z.sum(), z.mean()


def _check(got, x, y, scale):
    z, total, mean = _want(x, y, scale)
    np.testing.assert_allclose(np.asarray(got["z"]), z, rtol=1e-6)
    np.testing.assert_allclose(float(got["sum"]), total, rtol=1e-6)
    np.testing.assert_allclose(float(got["pair"][0]), mean, rtol=1e-6)
    assert got["pair"][1:] == ("tag", 3)
    assert got["scale2"] == scale * 2


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(-2, 2), min_size=3, max_size=3),
       st.sampled_from([(2,), (3, 2), (1, 4, 2)]))
def test_a_function_of_its_arguments_replays_lean_as_the_general_path_does(scales, shape):
    rng = np.random.default_rng(len(shape))
    step = lazyx.compile(_chain)
    calls = []
    for scale in [0.5, 1.5] + scales:
        x, y = rng.standard_normal(shape), rng.standard_normal(shape)
        lx, ly = lnp.asarray(x), lnp.asarray(y)
        got = step(lx, ly, scale)
        _check(got, x, y, scale)
        assert got["x"] is lx  # an argument returned is the argument itself
        calls.append((x, y, scale))
    (entry,) = _entries(step)
    assert entry.lean is True
    # the same entry through the general path: the same results and counts
    counted = ("replays", "executions", "execute_count", "replay_misses", "syncs", "compiles",
               "nodes_traced", "transfers_to_host", "bytes_to_host", "transfers_to_device")
    seen = []
    for lean in (False, True):
        entry.lean = lean
        lazyx.reset_metrics()
        for x, y, scale in calls:
            _check(step(lnp.asarray(x), lnp.asarray(y), scale), x, y, scale)
        metrics = lazyx.metrics()
        assert metrics["replays"] == len(calls) and metrics["replay_misses"] == 0
        seen.append({name: metrics[name] for name in counted})
    assert seen[0] == seen[1]


def test_a_pending_argument_is_computed_before_a_lean_replay():
    step = lazyx.compile(lambda a: a * 2.0 + 1.0)
    x = np.arange(4.0)
    for k in range(3):  # trace, then replays
        pending = lnp.asarray(x) + k  # not computed yet: the replay must run it first
        np.testing.assert_allclose(np.asarray(step(pending)), (x + k) * 2.0 + 1.0)
    assert _entries(step)[0].lean is True


def test_a_step_with_state_is_not_lean():
    w = lnp.asarray(np.ones(3))

    def update(g):
        w[...] = w - 0.1 * g  # state written back at each replay
        return (w * w).sum()
    step = lazyx.compile(update)
    for _ in range(3):
        step(lnp.asarray(np.ones(3)))
    entries = _entries(step)
    assert entries and all(e.lean is False for e in entries)
    np.testing.assert_allclose(np.asarray(w), np.full(3, 0.7))


@pytest.mark.parametrize("kwargs", [False, True])
def test_the_all_tensor_call_key_is_the_general_key(kwargs):
    # a call of lazy tensors only is keyed without _flatten: the key must be _flatten's, or
    # a call made once with keywords and once without would trace twice for nothing
    x, y = lnp.asarray(np.ones(2)), lnp.asarray(np.zeros(2))
    tensors = []
    fast = replay._tensor_args_key((x, y), tensors)
    general_tensors = []
    general = (replay._flatten((x, y), general_tensors, []),
               replay._flatten({}, general_tensors, [], "kwargs"))
    assert fast == general and tensors == general_tensors
    assert replay._tensor_args_key((x, 1.0), []) is None  # a number: _flatten's to key
    step = lazyx.compile(lambda a, b: a + b)
    lazyx.reset_metrics()
    for _ in range(4):
        out = step(a=x, b=y) if kwargs else step(x, y)
        np.testing.assert_allclose(np.asarray(out), np.ones(2))
    assert lazyx.metrics()["replays"] >= 2
