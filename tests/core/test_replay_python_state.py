"""lazyx.compile and what a step decides in Python or keeps on the host, through the NumPy
frontend, against NumPy itself: an int argument that is both a number of the graph and an
index or size, a float argument Python compares (min, if), NumPy scalars as arguments, a
counter the step keeps on an object, NumPy's own random generators drawn inside the step, and
a host array in a global changed between calls (core/host_state.py). Each one replayed the
first call's program silently before (wrong numbers, no miss)."""
import math
import warnings

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

_X = np.arange(1.0, 9.0).reshape(4, 2)


def _calls(step, args_list, lazy_args=lambda *a: a):
    """Each call's result through lazyx.compile(step), next to NumPy's own."""
    compiled = lazyx.compile(step)
    got = [np.asarray(compiled(*lazy_args(*args))) for args in args_list]
    want = [np.asarray(step(*args)) for args in args_list]
    return got, want


def _lazy_first(x, *rest):
    return (lnp.asarray(x),) + rest


def test_an_int_that_is_a_number_of_the_graph_and_a_slice_bound():
    def mean_first(x, n):
        return x[:n].sum(axis=0) / n
    got, want = _calls(mean_first, [(_X, n) for n in (1, 2, 3, 4, 2)], _lazy_first)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


def test_an_int_that_is_a_number_of_the_graph_and_an_index_written_to():
    table_np, table = np.zeros((3, 2)), lnp.asarray(np.zeros((3, 2)))

    def bump(k):
        table[k] += k + 1.0
        return table.sum()

    def bump_np(k):
        table_np[k] += k + 1.0
        return table_np.sum()
    compiled = lazyx.compile(bump)
    for k in (0, 1, 2, 1, 2, 0):
        compiled(k)
        bump_np(k)
    np.testing.assert_array_equal(np.asarray(table), table_np)


@pytest.mark.parametrize("t", [0.5, 2.0, 3.0, 0.25, 1.5])
def test_what_python_decides_from_a_float_argument_is_guarded(t):
    def warm(x, t):
        scale = min(t, 1.0)
        lr = 0.1 * t if t < 1 else 0.1
        return x * scale + lr
    got, want = _calls(warm, [(_X, 0.5), (_X, t), (_X, 0.75)], _lazy_first)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


def test_a_new_float_on_the_same_branch_is_still_a_run_time_parameter():
    def warm(x, t):
        return x * min(t, 1.0)
    compiled = lazyx.compile(warm)
    compiled(lnp.asarray(_X), 0.5)
    lazyx.reset_metrics()
    for t in (0.25, 0.125, 0.375):
        np.testing.assert_allclose(np.asarray(compiled(lnp.asarray(_X), t)), _X * t)
    # the second call traces once more to confirm that t only feeds the graph
    assert lazyx.metrics()["replays"] == 2
    assert lazyx.metrics()["replay_misses"] == 0


def test_numpy_scalars_are_arguments_with_numpys_dtype_rules():
    x = _X.astype(np.float32)

    def scaled(x, i, lr):
        return x[i] * lr
    args = [(x, 1, np.float64(0.5)), (x, np.int64(2), 0.5), (x, 1, np.float32(0.25)),
            (x, np.int64(3), np.float32(0.25))]
    got, want = _calls(scaled, args, _lazy_first)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w)


def test_a_counter_the_step_keeps_on_an_object_runs_lazily_with_a_warning():
    class Adam:
        def __init__(self, w):
            self.w, self.m, self.t = w, w * 0, 0

        def step(self, g, lr):
            self.t += 1
            self.m = 0.9 * self.m + 0.1 * g
            self.w = self.w - lr * self.m / (1 - 0.9 ** self.t)
            return self.w

    ref, lazy = Adam(np.zeros(2)), Adam(lnp.asarray(np.zeros(2)))
    step = lazyx.compile(lazy.step)
    with pytest.warns(RuntimeWarning, match=r"Adam\.t changed while it ran"):
        step(lnp.asarray(_X[0]), 0.1)
    ref.step(_X[0], 0.1)
    for g in _X[1:]:
        np.testing.assert_allclose(np.asarray(step(lnp.asarray(g), 0.1)), ref.step(g, 0.1))
    assert lazy.t == ref.t == 4


def test_numpys_own_random_generators_drawn_inside_the_step_are_not_frozen():
    def noisy(x, rng):
        return x + rng.normal(size=x.shape) + np.random.rand(*x.shape)

    def run(make, compile_):
        rng = np.random.default_rng(0)
        np.random.seed(3)
        step = lazyx.compile(lambda x: noisy(x, rng)) if compile_ else \
            (lambda x: noisy(x, rng))
        return [np.asarray(step(make(_X))) for _ in range(3)]
    want = run(np.asarray, False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = run(lnp.asarray, True)
    assert any("drew numbers" in str(w.message) for w in caught)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


_MASK = np.ones(2)


def _masked(x):
    return (x * _MASK).sum(axis=0)


def test_a_host_array_in_a_global_changed_between_calls_is_a_guard_miss():
    compiled = lazyx.compile(_masked)
    try:
        for k in range(4):
            np.testing.assert_allclose(np.asarray(compiled(lnp.asarray(_X))), _masked(_X))
            _MASK[k % 2] = 10.0 * (k + 1)
        lazyx.reset_metrics()
        compiled(lnp.asarray(_X))
        compiled(lnp.asarray(_X))  # unchanged since: replayed
        assert lazyx.metrics()["replays"] >= 1
    finally:
        _MASK[:] = 1.0


_CFG = {"beta": 0.0}


class _Holder:
    def __init__(self):
        self.beta, self.gamma, self.unread = 0.0, 1.0, 0.0


_H = _Holder()
_SCALE = [1.0]


def _annealed(x):
    return (x * _CFG["beta"]).sum() + (x * _H.beta).sum() * _SCALE[0] + math.sqrt(_H.gamma)


def test_floats_the_caller_changes_in_a_dict_an_object_and_a_list_are_read_at_each_call():
    # a dict entry, an attribute, a list element the step reads, changed between calls (a
    # KL weight annealed): each replay kept the first call's values, with no miss
    compiled = lazyx.compile(_annealed)
    lazyx.reset_metrics()
    try:
        for k in range(8):
            _CFG["beta"], _H.beta, _SCALE[0] = 0.3 * k, 0.7 * (k % 3), 1.5 + k
            _H.gamma = 2.0 + k % 2
            _H.unread = float(k)  # (not spelled by the step: no miss for it)
            np.testing.assert_allclose(np.asarray(compiled(lnp.asarray(_X))), _annealed(_X))
        # (a miss at each float's first change, which makes it a run-time parameter;
        # _H.gamma, which Python takes through math.sqrt, stays guarded: 2 variants)
        assert lazyx.metrics()["replays"] >= 2
        for _ in range(2):
            _H.unread += 1.0
            np.testing.assert_allclose(np.asarray(compiled(lnp.asarray(_X))), _annealed(_X))
        assert lazyx.metrics()["replays"] >= 3
    finally:
        _CFG["beta"], _H.beta, _H.gamma, _SCALE[0], _H.unread = 0.0, 0.0, 1.0, 1.0, 0.0
    assert type(_CFG["beta"]) is float and type(_H.__dict__["beta"]) is float


_NESTED = {"opt": {"mult": 1.0}, "n": 1}


class _Scaler:
    """Reads its own number in a method the step only calls: the step's code never spells
    `temperature`."""

    def __init__(self):
        self.temperature = 1.0
        self.settings = {"shift": 0.0}

    def apply(self, x):
        return x / self.temperature + self.settings["shift"]


_S = _Scaler()


def _nested(x):
    return _S.apply(x).sum() * _NESTED["opt"]["mult"] + _NESTED["n"]


def test_numbers_the_caller_changes_deeper_than_the_steps_roots_are_read_at_each_call():
    # a float two dicts down (`CFG["opt"]["mult"]`), an int in a dict (`CFG["n"]`), a float an
    # object's method reads (and one in a dict of that object): each replay kept the traced
    # call's values, with no miss and no warning
    compiled = lazyx.compile(_nested)
    lazyx.reset_metrics()
    try:
        for k in range(8):
            _NESTED["opt"]["mult"], _S.temperature = 0.5 * k, 1.0 + k
            _S.settings["shift"] = 0.25 * k
            _NESTED["n"] = k // 3
            np.testing.assert_allclose(np.asarray(compiled(lnp.asarray(_X))), _nested(_X))
        # the floats became run-time parameters together, at their first change; the int
        # traces again when it changes (3 values), and each variant it makes traces once
        # more at its next call to confirm the floats only feed the graph: of 8 calls, 7
        # trace (the first, 3 misses, 3 confirmations) and one replays
        assert lazyx.metrics()["replays"] >= 1
    finally:
        _NESTED["opt"]["mult"], _NESTED["n"], _S.temperature = 1.0, 1, 1.0
        _S.settings["shift"] = 0.0


def test_a_number_the_step_changes_deeper_than_its_roots_runs_lazily_with_a_warning():
    state = {"counts": {"calls": 0}}

    def step(x):
        state["counts"]["calls"] += 1
        return x * 2.0

    compiled = lazyx.compile(step)
    with pytest.warns(RuntimeWarning, match=r"dict\['calls'\] changed while it ran"):
        compiled(lnp.asarray(_X))
    for _ in range(3):
        compiled(lnp.asarray(_X))
    assert state["counts"]["calls"] == 4


_READS = {
    "np.unique (run by NumPy)": lambda x, m, k, i: np.unique(x) * 1.0,
    "np.bincount": lambda x, m, k, i: np.bincount(i, minlength=9) * 1.0,
    "x[mask] (a data-dependent shape)": lambda x, m, k, i: x[m].sum(),
    "float() of an argument": lambda x, m, k, i: x * float(k),
    "int() of an argument": lambda x, m, k, i: x[:int(k)].sum(),
    "np.asarray of state": lambda x, m, k, i: x * np.asarray(_STATE[0]).sum(),
}
_STATE = [None]


@pytest.mark.parametrize("name", list(_READS))
def test_a_step_reading_an_arguments_value_is_not_replayed_with_the_first_value(name):
    """Reading the value of an argument (or of state) into Python needs no cut when it is
    already data, and so no observation was seen: every replay returned the first call's
    np.unique(x), x[mask].sum(), x * float(k). Such a read is an observation now: an error
    by default, and a lazily run step, with each call's numbers, under on_observe='split'."""
    fn = _READS[name]
    calls = [(np.array([[1.0, 2.0], [2.0, 5.0]]), np.array([True, False]), np.array(1),
              np.array([0, 3, 3])),
             (np.array([[3.0, 3.0], [7.0, 1.0]]), np.array([False, True]), np.array(2),
              np.array([8, 1, 1])),
             (np.array([[2.0, 8.0], [4.0, 4.0]]), np.array([True, True]), np.array(0),
              np.array([2, 2, 5]))]
    _STATE[0] = lnp.asarray(np.arange(3.0))
    with pytest.raises(lazyx.CompileError, match="argument or of state"):
        lazyx.compile(fn)(*map(lnp.asarray, calls[0]))
    split = lazyx.compile(fn, on_observe="split")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for j, args in enumerate(calls):
            _STATE[0] = lnp.asarray(np.arange(3.0) * (j + 1))
            got = np.asarray(split(*map(lnp.asarray, args)))
            _STATE[0] = np.arange(3.0) * (j + 1)
            np.testing.assert_allclose(got, fn(*args))
