"""lazyx.compile through the NumPy frontend: replays equal the uncompiled lazy run and NumPy,
guards hit and miss, state is written back, Python numbers are run-time parameters, random
draws advance as the uncompiled run's, observation inside the step is refused, and
verify_every catches a step whose graph changed. Runs on the backend tox selects."""
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import lazyx
import lazyx.frontends.numpy as lnp


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    return {"W1": rng.standard_normal((6, 8)).astype(np.float32) * 0.3,
            "b1": np.zeros(8, np.float32),
            "W2": rng.standard_normal((8, 2)).astype(np.float32) * 0.3}


def _step_fn(params, xp):
    """A two-layer MLP step with hand-written backprop, for NumPy (xp=np) or lazy arrays."""
    def step(x, y, lr):
        h = x @ params["W1"] + params["b1"]
        a = xp.maximum(h, 0)
        out = a @ params["W2"]
        err = out - y
        loss = (err * err).mean()
        g = 2 * err / err.size
        gW2 = a.T @ g
        ga = (g @ params["W2"].T) * (h > 0)
        params["W2"] -= lr * gW2
        params["W1"] -= lr * (x.T @ ga)
        params["b1"] -= lr * ga.sum(axis=0)
        return loss
    return step


def _data(n=4, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((5, 6)).astype(np.float32),
             rng.standard_normal((5, 2)).astype(np.float32)) for _ in range(n)]


def _lazy(params):
    return {k: lnp.asarray(v) for k, v in params.items()}


def test_hand_written_backprop_equals_uncompiled_and_numpy(runs_bitwise):
    data, lrs = _data(6), [0.1 / (i + 1) for i in range(6)]
    eager = _mlp()
    eager_step = _step_fn(eager, np)
    plain, comp = _lazy(_mlp()), _lazy(_mlp())
    plain_step, comp_step = _step_fn(plain, np), lazyx.compile(_step_fn(comp, np))
    lazyx.reset_metrics()
    for (x, y), lr in zip(data, lrs):
        want = eager_step(x, y, lr)
        a = plain_step(lnp.asarray(x), lnp.asarray(y), lr)
        lazyx.sync()
        b = comp_step(lnp.asarray(x), lnp.asarray(y), lr)  # a new learning rate every call
        if runs_bitwise:
            assert float(b) == float(a)
        np.testing.assert_allclose(float(b), float(a), rtol=1e-5)
        np.testing.assert_allclose(float(b), want, rtol=1e-5)
    for k in eager:
        if runs_bitwise:
            np.testing.assert_array_equal(np.asarray(comp[k]), np.asarray(plain[k]))
        np.testing.assert_allclose(np.asarray(comp[k]), np.asarray(plain[k]), rtol=1e-4,
                                   atol=1e-8)
        np.testing.assert_allclose(np.asarray(comp[k]), eager[k], rtol=1e-5, atol=1e-6)
    m = lazyx.metrics()
    # the second call traces once more to confirm that lr only feeds the graph
    assert m["replays"] == 4 and m["replay_misses"] == 0


def test_guard_misses_on_shape_and_keeps_both_variants():
    params = _lazy(_mlp())
    step = lazyx.compile(_step_fn(params, np))
    lazyx.reset_metrics()
    x, y = _data(1)[0]
    for rows in (5, 5, 3, 3, 5):
        step(lnp.asarray(x[:rows]), lnp.asarray(y[:rows]), 0.1)
    m = lazyx.metrics()
    assert m["replay_misses"] == 1  # the first 3-row call; 5 rows again replays
    assert m["replays"] == 3
    assert sum(len(v) for v in step.entries.values()) == 2


def test_a_step_that_mostly_traces_again_is_named_by_the_analysis():
    # a structure number (the rows kept) changes at every call: each call traces again
    w = lnp.asarray(np.arange(8.0, dtype=np.float32))
    step = lazyx.compile(lambda x, rows: (x[:rows] * w[:rows]).sum())
    lazyx.reset_metrics()
    for rows in range(2, 8):
        assert float(step(lnp.asarray(np.ones(8, np.float32)), rows)) == sum(range(rows))
    m = lazyx.metrics()
    assert m["replays"] == 0 and m["replay_misses"] == 5
    (reason, n), = m["replay_miss_reasons"].items()
    # (the slice's bounds are comparisons of `rows`: the guard names what they decided)
    assert n == 5 and "decided from a Python number argument" in reason
    assert __file__.rsplit("/", 1)[-1] in reason
    report = lazyx.analysis()
    assert "! lazyx.compile rarely replays: 5 of 5 calls" in report and reason in report


def test_guard_misses_when_captured_state_is_replaced():
    state = {"w": lnp.asarray(np.ones(3, np.float32))}

    def step(x):
        state["w"] = state["w"] * x
        return state["w"].sum()

    f = lazyx.compile(step)
    x = lnp.asarray(np.full(3, 2.0, np.float32))
    assert [float(f(x)) for _ in range(3)] == [6.0, 12.0, 24.0]
    state["w"] = lnp.asarray(np.ones(4, np.float32))  # a new tensor, another shape
    lazyx.reset_metrics()
    assert float(f(lnp.asarray(np.full(4, 2.0, np.float32)))) == 8.0
    assert float(f(lnp.asarray(np.full(4, 2.0, np.float32)))) == 16.0
    assert lazyx.metrics()["replay_misses"] == 1


def test_non_number_arguments_are_guarded_by_value():
    w = lnp.asarray(np.arange(4.0, dtype=np.float32))

    def step(x, mode):
        return x * w if mode == "mul" else x + w

    f = lazyx.compile(step)
    x = lnp.asarray(np.ones(4, np.float32))
    assert np.asarray(f(x, "mul")).tolist() == [0, 1, 2, 3]
    assert np.asarray(f(x, "add")).tolist() == [1, 2, 3, 4]
    assert np.asarray(f(x, "mul")).tolist() == [0, 1, 2, 3]


def test_numbers_used_as_structure_are_guarded():
    def step(x, n):
        return x[:n] * 2.0

    f = lazyx.compile(step)
    x = lnp.asarray(np.arange(6, dtype=np.float32))
    assert np.asarray(f(x, 2)).tolist() == [0, 2]
    assert np.asarray(f(x, 4)).tolist() == [0, 2, 4, 6]


@given(st.lists(st.floats(-3, 3, allow_nan=False, width=32), min_size=3, max_size=6))
def test_python_numbers_are_run_time_parameters(scales):
    w = lnp.asarray(np.linspace(-1, 1, 5).astype(np.float32))

    def step(x, s):
        return x * s - w / (s * s + 1.5)

    f = lazyx.compile(step)
    x = lnp.asarray(np.arange(5, dtype=np.float32))
    lazyx.reset_metrics()
    for s in scales:
        want = np.arange(5, dtype=np.float32) * np.float32(s) - \
            np.linspace(-1, 1, 5).astype(np.float32) / np.float32(s * s + 1.5)
        np.testing.assert_allclose(np.asarray(f(x, s)), want, rtol=1e-6, atol=1e-6)
    assert lazyx.metrics()["compiles"] <= 1


def test_random_draws_match_the_uncompiled_run():
    def make():
        rng = lnp.random.default_rng(7)

        def step(x):
            keep = rng.random(x.shape) > 0.3  # dropout
            return lnp.where(keep, x / 0.7, 0.0), rng.standard_normal(2)
        return step

    x = lnp.asarray(np.ones((3, 4), np.float32))
    plain, comp = make(), lazyx.compile(make())
    seen = []
    for _ in range(4):
        a, b = plain(x), comp(x)
        np.testing.assert_array_equal(np.asarray(a[0]), np.asarray(b[0]))
        np.testing.assert_array_equal(np.asarray(a[1]), np.asarray(b[1]))
        seen.append(np.asarray(b[1]).tolist())
    assert len({tuple(s) for s in seen}) == 4  # every replay draws new numbers


def test_results_keep_their_structure():
    w = lnp.asarray(np.ones(2, np.float32))

    def step(batch):
        return {"sum": batch["x"] + w, "parts": [batch["x"] * 2, (batch["x"] - w,)]}

    f = lazyx.compile(step)
    for k in range(3):
        out = f({"x": lnp.asarray(np.full(2, float(k), np.float32))})
        assert set(out) == {"sum", "parts"}
        assert isinstance(out["parts"][1], tuple)
        assert np.asarray(out["parts"][1][0]).tolist() == [k - 1.0] * 2
        assert isinstance(out["sum"], lnp.LazyArray)


def test_observation_inside_the_step_raises_naming_the_line():
    w = lnp.asarray(np.ones(2, np.float32))

    def step(x):
        y = x * w
        if float(y.sum()) > 0:  # observation
            return y
        return -y

    f = lazyx.compile(step)
    with pytest.raises(lazyx.CompileError, match=r"test_replay.py:\d+.*on_observe='split'"):
        f(lnp.asarray(np.ones(2, np.float32)))


def test_split_runs_an_observing_step_lazily():
    w = lnp.asarray(np.ones(2, np.float32))

    def step(x):
        y = x * w
        return y if float(y.sum()) > 0 else -y

    f = lazyx.compile(step, on_observe="split")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.asarray(f(lnp.asarray(np.ones(2, np.float32)))).tolist() == [1, 1]
    assert np.asarray(f(lnp.asarray(-np.ones(2, np.float32)))).tolist() == [1, 1]


def test_verify_every_catches_a_changed_graph():
    config = {"square": False}
    w = lnp.asarray(np.ones(3, np.float32))

    def step(x):
        return x * x + w if config["square"] else x + w

    f = lazyx.compile(step, verify_every=3)
    x = lnp.asarray(np.full(3, 2.0, np.float32))
    f(x), f(x), f(x)  # the third call verifies: same graph
    config["square"] = True  # a dict the guard cannot see into
    f(x), f(x)
    with pytest.raises(lazyx.CompileError, match="verify_every=3"):
        f(x)


def test_host_arrays_are_refused_with_a_clear_error():
    f = lazyx.compile(lambda x: x + 1)
    with pytest.raises(TypeError, match="host array"):
        f(np.ones(3))
    with pytest.raises(TypeError, match=r"args\[0\]\['a'\]\[1\] is a host array"):
        f({"a": [1.0, np.ones(3)]})  # the error names where, in the arguments, it was


@pytest.mark.parametrize("in_place", [False, True], ids=["rebinds", "in-place"])
def test_a_dict_argument_the_step_updates_is_updated_every_call(in_place):
    # `step(params, x)` with `params["w"] = params["w"] - lr * g` (or `-=`, which rebinds a
    # lazy array's entry too): the step gets a copy of the dict (its numbers are symbolic
    # while tracing), so the write never reached the caller's dict -- not even on the first
    # call -- and every replay repeated the first step
    def step(params, x, lr):
        h = x @ params["W1"] + params["b1"]
        loss = (h * h).mean() * params["scale"]
        g = 2 * h / h.size
        if in_place:
            params["W1"] -= lr * (x.T @ g)
            params["b1"] -= lr * g.sum(axis=0)
        else:
            params["W1"] = params["W1"] - lr * (x.T @ g)
            params["b1"] = params["b1"] - lr * g.sum(axis=0)
        params["scale"] = params["scale"] * 0.5  # a number the graph reads, written back
        return loss

    data = _data(5)
    eager = {**_mlp(), "scale": 1.0}
    lazy = {**_lazy(_mlp()), "scale": 1.0}
    compiled = lazyx.compile(step)
    lazyx.reset_metrics()
    for i, (x, _) in enumerate(data):
        lr = 0.1 / (i + 1)
        want = step(eager, x, lr)
        got = compiled(lazy, lnp.asarray(x), lr)
        np.testing.assert_allclose(float(got), want, rtol=1e-5)
        assert lazy["scale"] == eager["scale"] and type(lazy["scale"]) is float
        for k in ("W1", "b1"):
            np.testing.assert_allclose(np.asarray(lazy[k]), eager[k], rtol=1e-5, atol=1e-6)
    assert lazyx.metrics()["replays"] == 3  # (the second call confirms the float scale)


def test_nested_lists_and_dicts_written_by_the_step_reach_the_caller():
    def step(state, x):
        state["layers"][0] = state["layers"][0] * x
        state["layers"][1]["b"] = state["layers"][1]["b"] + 1.0
        return state["layers"][0].sum()

    state = {"layers": [lnp.asarray(np.ones(3, np.float32)),
                        {"b": lnp.asarray(np.zeros(3, np.float32))}]}
    compiled = lazyx.compile(step)
    x = lnp.asarray(np.full(3, 2.0, np.float32))
    lazyx.reset_metrics()
    for i in range(1, 5):
        assert float(compiled(state, x)) == 3 * 2.0 ** i
        np.testing.assert_array_equal(np.asarray(state["layers"][0]), np.full(3, 2.0 ** i))
        np.testing.assert_array_equal(np.asarray(state["layers"][1]["b"]), np.full(3, float(i)))
    assert lazyx.metrics()["replays"] == 3


def test_a_step_that_adds_entries_to_its_argument_runs_as_written():
    # a new key changes the argument's structure: the next call traces again, so every call
    # does what the function does
    def step(log, x):
        log[f"step{len(log)}"] = x * 2.0
        return x.sum()

    log = {}
    compiled = lazyx.compile(step)
    x = lnp.asarray(np.ones(2, np.float32))
    for _ in range(3):
        compiled(log, x)
    assert sorted(log) == ["step0", "step1", "step2"]
    np.testing.assert_array_equal(np.asarray(log["step2"]), [2.0, 2.0])


def test_a_step_that_fills_a_fresh_list_or_dict_each_call_is_replayed():
    # `step(x, lr, log=[])` appending its loss, a pair and a number, and moving an entry of
    # a dict: each call's containers get what the uncompiled step puts there. (Before, a
    # step that added or removed entries kept no trace and ran lazily at every call, unsaid.)
    def step(x, lr, log, stats):
        y = x * lr
        log.append(y.sum())
        log.append((y, lr * 2))
        stats["last"] = stats.pop("first") + y
        stats["lr"] = lr
        return y

    compiled = lazyx.compile(step)
    lazyx.reset_metrics()
    for i in range(4):
        x0 = np.arange(3, dtype=np.float32) + i
        lr = 0.5 / (i + 1)
        log, stats = [], {"first": lnp.asarray(np.ones(3, np.float32))}
        want_log, want_stats = [], {"first": np.ones(3, np.float32)}
        want = step(x0, lr, want_log, want_stats)
        got = compiled(lnp.asarray(x0), lr, log, stats)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
        assert len(log) == 2 and type(log[1]) is tuple and sorted(stats) == ["last", "lr"]
        np.testing.assert_allclose(float(log[0]), float(want_log[0]), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(log[1][0]), want_log[1][0], rtol=1e-6)
        assert log[1][1] == want_log[1][1] and type(log[1][1]) is float
        np.testing.assert_allclose(np.asarray(stats["last"]), want_stats["last"], rtol=1e-6)
        assert stats["lr"] == lr and type(stats["lr"]) is float
    assert lazyx.metrics()["replays"] == 2  # (the second call confirms the new number)


def test_a_list_that_grows_from_call_to_call_is_traced_again_and_right():
    # the same list passed at every call: its length is part of the guard, so each call
    # traces (a miss says why); what it holds is what the uncompiled step makes
    def step(x, log):
        log.append(x * len(log))
        return x

    compiled = lazyx.compile(step)
    log, want = [], []
    x = np.ones(2, np.float32)
    for _ in range(3):
        compiled(lnp.asarray(x), log)
        step(x, want)
    assert [np.asarray(a).tolist() for a in log] == [w.tolist() for w in want]


def test_arguments_updated_in_place_are_updated_in_each_call():
    # `a -= 0.1 * g` on an argument: each replay must update the array passed in that call,
    # not the one passed when the step was traced
    def step(a, g):
        a -= 0.1 * g
        return a.sum()

    arrays = [lnp.asarray(np.ones(3, np.float32)), lnp.asarray(np.full(3, 5.0, np.float32))]
    eager = [np.ones(3, np.float32), np.full(3, 5.0, np.float32)]
    g = np.full(3, 2.0, np.float32)
    compiled = lazyx.compile(step)
    lazyx.reset_metrics()
    for i in range(6):
        got = compiled(arrays[i % 2], lnp.asarray(g))
        want = step(eager[i % 2], g)
        np.testing.assert_allclose(float(got), want, rtol=1e-6)
        for lazy, host in zip(arrays, eager):
            np.testing.assert_allclose(np.asarray(lazy), host, rtol=1e-6)
    assert lazyx.metrics()["replays"] == 5


def test_an_argument_passed_twice_is_guarded():
    # traced as f(a, a), the program reads one input for both; replayed as f(a, b) it
    # computed a * a
    @lazyx.compile
    def f(x, y):
        return (x * y).sum()

    a = lnp.asarray(np.full(3, 2.0, np.float32))
    b = lnp.asarray(np.full(3, 3.0, np.float32))
    got = [float(f(x, y)) for x, y in ((a, a), (a, b), (b, a), (b, b), (a, b))]
    assert got == [12.0, 18.0, 18.0, 27.0, 18.0]


def test_numbers_among_the_results_are_plain_and_follow_the_call():
    # a result holding Python numbers crashed every replay (StopIteration), and the first
    # call handed back the trace's symbolic number instead of a float
    @lazyx.compile
    def f(x, lr):
        return {"loss": (x * lr).sum(), "doubled": lr * 2, "count": 3, "tag": "a"}, lr

    x = lnp.asarray(np.full(3, 2.0, np.float32))
    lazyx.reset_metrics()
    for lr in (0.1, 0.25, 0.5):
        out, same = f(x, lr)
        assert type(out["doubled"]) is float and out["doubled"] == lr * 2
        assert type(same) is float and same == lr
        assert out["count"] == 3 and out["tag"] == "a"
        np.testing.assert_allclose(float(out["loss"]), 6 * lr, rtol=1e-6)
    assert lazyx.metrics()["replays"] >= 1


def test_state_rebound_between_calls_is_read_where_it_is():
    """A replay reads captured state where the step found it, at each call: an array the
    caller rebinds in a closure dict between calls is the one the step uses."""
    params = {"w": lnp.asarray(np.ones((3, 2), np.float32)), "b": lnp.asarray(np.zeros(2, np.float32))}

    def f(x):
        return (x @ params["w"] + params["b"]).sum()

    step = lazyx.compile(f)
    x = lnp.asarray(np.arange(12, dtype=np.float32).reshape(4, 3))
    for _ in range(3):
        step(x)
    lazyx.reset_metrics()
    for k in range(3):
        params["w"] = lnp.asarray(np.full((3, 2), k - 1.5, np.float32))
        assert float(step(x)) == float(f(x)) == (k - 1.5) * 2 * 66
    assert lazyx.metrics()["replays"] == 3


def test_state_that_stops_being_shared_traces_again():
    """Two places that held one array when traced (the program reads it once) must still
    hold one array; after one of them is rebound, the step traces again."""
    shared = lnp.asarray(np.ones(3, np.float32))
    box = {"a": shared, "b": shared}

    def f(x):
        return (x * box["a"] + box["b"]).sum()

    step = lazyx.compile(f)
    x = lnp.asarray(np.arange(3, dtype=np.float32))
    for _ in range(3):
        assert float(step(x)) == 6.0
    box["b"] = lnp.asarray(np.full(3, 10.0, np.float32))
    lazyx.reset_metrics()
    assert float(step(x)) == float(f(x)) == 33.0
    assert lazyx.metrics()["replay_misses"] == 1


def test_state_the_step_replaces_gets_a_new_array_at_each_replay():
    """A step that rebinds its state (`params[k] = params[k] - lr * g`) leaves a new array
    there; so does each replay, as NumPy code does: an array kept from before a call keeps
    its value, and two places the step binds to one array still hold one (no retrace)."""
    params = {"w": lnp.asarray(np.ones(3, np.float32))}
    box = {}

    def step(x):
        new = params["w"] - 0.5 * x
        params["w"] = new
        box["a"] = box["b"] = new * 2
        return new.sum()

    compiled = lazyx.compile(step)
    x = lnp.asarray(np.arange(3, dtype=np.float32))
    for _ in range(3):
        compiled(x)
    lazyx.reset_metrics()
    for k in range(3):
        kept, kept_a = params["w"], box["a"]
        before, before_a = np.asarray(kept).copy(), np.asarray(kept_a).copy()
        compiled(x)
        assert params["w"] is not kept and box["a"] is box["b"]
        np.testing.assert_array_equal(np.asarray(kept), before)  # the old array is untouched
        np.testing.assert_array_equal(np.asarray(kept_a), before_a)
        np.testing.assert_array_equal(np.asarray(params["w"]), before - 0.5 * np.arange(3))
        np.testing.assert_array_equal(np.asarray(box["b"]), 2 * np.asarray(params["w"]))
    assert lazyx.metrics()["replays"] == 3 and lazyx.metrics()["replay_misses"] == 0
