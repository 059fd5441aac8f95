"""lazyx.compile and a Python number argument that reaches no parameter of the graph: one the
step does not use (a step counter passed for logging), or one Python uses where lazyx cannot
watch it (a list index, a seed, a size). Such a number used to be guarded by value, so a
step taking its step counter traced again at every call. Now the first call with a new value
traces again to check: the same graph leaves the number out of the guard (the step replays
from then on), another one guards it by value, each trace kept for its own values. The
check compares where the two traces found their state too: `data[i % 4]` makes the same
graph for every i, over another tensor. Every call is compared with the uncompiled step."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.numpy as lnp

DATA = [np.full((3,), float(k), np.float32) for k in range(4)]


def _unused(i, x):  # the counter is for the caller's logging only
    return (x * 2.0).sum()


def _indexed(i, x):  # Python picks the array: the graph is the same for every i
    return (_LAZY_DATA[i % 4] + x).sum()


def _sized(n, x):  # C code reads n: the graph's shape follows it
    return lnp.ones(n, dtype=np.float32).sum() + x.sum()


_LAZY_DATA = [lnp.asarray(d) for d in DATA]


def _want(fn, i, x):
    if fn is _unused:
        return float((x * 2.0).sum())
    if fn is _indexed:
        return float((DATA[i % 4] + x).sum())
    return float(i + x.sum())


def _run(fn, counters):
    x = np.arange(3, dtype=np.float32)
    step = lazyx.compile(fn)
    lazyx.reset_metrics()
    for i in counters:
        got = float(step(i, lnp.asarray(x)))
        assert got == pytest.approx(_want(fn, i, x), rel=1e-6), (fn.__name__, i)
    return lazyx.metrics()


def test_an_unused_step_counter_replays_after_one_checking_trace():
    metrics = _run(_unused, range(10))
    # call 1 traces, call 2 (a new counter) traces again to check, calls 3-10 replay
    assert metrics["replays"] == 8
    assert metrics["replay_misses"] == 0


def test_a_number_used_as_a_list_index_is_guarded_by_value():
    metrics = _run(_indexed, [1, 2, 3, 1, 2, 3, 1])
    # 1 traces; 2 checks and finds other state (guarded by value from then on); 3 traces;
    # the repeated values replay their own traces
    assert metrics["replays"] == 4  # (calls 4-7)


def test_a_number_read_by_c_code_as_a_size_is_guarded_by_value():
    metrics = _run(_sized, [2, 3, 2, 3, 4])
    assert metrics["replays"] == 2


def test_a_float_argument_left_unused_replays():
    def step(lr, x):
        return x.sum() * 3.0
    x = np.arange(3, dtype=np.float32)
    compiled = lazyx.compile(step)
    lazyx.reset_metrics()
    for lr in (0.1, 0.2, 0.3, 0.4):
        assert float(compiled(lr, lnp.asarray(x))) == pytest.approx(9.0)
    assert lazyx.metrics()["replays"] == 2


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([_unused, _indexed, _sized]),
       st.lists(st.integers(1, 6), min_size=1, max_size=8))
def test_any_sequence_of_numbers_gives_the_uncompiled_results(fn, counters):
    _run(fn, counters)
