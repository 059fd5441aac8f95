"""Runtime state (issue 12/18): O(1) cuts on a hit, traces, failed barriers that lose nothing,
threads that do not interfere, and tables that stay bounded."""
import os
import sys

import numpy as np
import pytest

import lazyx
from lazyx.core import ir, metrics, ops, runtime

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import shared  # noqa: E402  (tests/shared.py)


pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py


def mlp_step(w, x_host, lr):
    """w <- w - lr * tanh(x @ w) summed over the batch (a stand-in training step)."""
    x = runtime.from_host(x_host)
    h = ops.tanh(ops.dot_general(x, w.node, contracting_dimensions=((1,), (0,)),
                                 batch_dimensions=((), ()), preferred_element_type=None))
    g = ops.reduce_sum(h, axes=(0,))
    g = ops.broadcast_in_dim(g, shape=w.node.shape, broadcast_dimensions=(1,))
    lr = ops.broadcast_in_dim(ir.param(lr, "float32"), shape=w.node.shape,
                              broadcast_dimensions=())
    w.set(ops.sub(w.node, ops.mul(lr, g)))
    return runtime.LazyHandle(ops.reduce_sum(h, axes=(0, 1)))


def mlp_reference(w, x, lr):
    h = np.tanh(x @ w)
    return w - np.float32(lr) * h.sum(0)[None, :], h.sum()


def data(seed, shape=(8, 4)):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def test_a_repeated_step_walks_no_graph_on_a_cache_hit():
    w = runtime.LazyHandle(runtime.from_host(data(0, (4, 3))))
    for i in range(6):
        mlp_step(w, data(i + 1), 0.1 * i)
        lazyx.sync()
        if i == 0:
            first_walk = lazyx.metrics()["nodes_walked"]
    m = lazyx.metrics()
    assert m["compiles"] == 1 and m["cache_hits"] == 5
    assert first_walk > 0
    assert m["nodes_walked"] == first_walk  # steps 2-6: the key is read off the roots


def test_the_trace_key_gives_the_right_numbers_whichever_leaf_feeds_which_input():
    # x + y and x + x have the same structure but not the same leaves: never one program
    a, b = runtime.from_host(np.float32([1, 2])), runtime.from_host(np.float32([10, 20]))
    outs = []
    for _ in range(2):
        outs.append(runtime.to_host(runtime.LazyHandle(ops.add(a, b))))
        outs.append(runtime.to_host(runtime.LazyHandle(ops.add(a, a))))
        outs.append(runtime.to_host(runtime.LazyHandle(ops.add(b, b))))
    np.testing.assert_array_equal(np.stack(outs), [[11, 22], [2, 4], [20, 40]] * 2)


def test_values_from_an_older_trace_still_compute_right():
    # a pending value kept across a cut belongs to an older trace: it is walked, not keyed
    x = runtime.from_host(np.float32([1, 2, 3]))
    old = ops.mul(x, x)                       # raw node, no handle: not cut below
    runtime.to_host(runtime.LazyHandle(ops.neg(x)))   # a cut: the trace starts again
    y = runtime.from_host(np.float32([5, 5, 5]))
    mixed = runtime.LazyHandle(ops.add(old, y))
    assert mixed.node.eid is None
    np.testing.assert_array_equal(runtime.to_host(mixed), [6, 9, 14])


class _Flaky:
    """Wraps the backend so that the next `fail` compiles or executions raise `error`."""

    def __init__(self, backend, where, error, fail):
        self.backend, self.where, self.error, self.fail = backend, where, error, fail
        self.name = backend.name

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def compile(self, program):
        if self.where == "compile" and self.fail:
            self.fail -= 1
            raise self.error
        exe = self.backend.compile(program)
        if self.where != "execute":
            return exe
        flaky = self

        class Exe:
            def __init__(self):
                self.nbytes = getattr(exe, "nbytes", 0)

            def __call__(self, values):
                if flaky.fail:
                    flaky.fail -= 1
                    raise flaky.error
                return exe(values)
        return Exe()


@pytest.mark.parametrize("where", ["compile", "execute"])
@pytest.mark.parametrize("error", [RuntimeError("injected"), KeyboardInterrupt()])
def test_a_failed_barrier_loses_nothing(monkeypatch, where, error):
    # an Exception fails the joint cut and then the first value's own try (2 runs: the loss
    # shares the failing step with w, so it is not tried alone); a KeyboardInterrupt is never
    # retried
    fail = 2 if isinstance(error, Exception) else 1
    monkeypatch.setattr(runtime, "_backend", _Flaky(runtime.get_backend(), where, error, fail))
    w = runtime.LazyHandle(runtime.from_host(data(0, (4, 3))))
    loss = mlp_step(w, data(1), 0.5)
    with pytest.raises(type(error)):
        lazyx.sync()
    assert w.pending and loss.pending          # nothing was dropped
    lazyx.sync()                               # the retry computes everything
    want_w, want_loss = mlp_reference(data(0, (4, 3)), data(1), 0.5)
    np.testing.assert_allclose(runtime.to_host(w), want_w, rtol=1e-5)
    np.testing.assert_allclose(runtime.to_host(loss), want_loss, rtol=1e-5)


def test_a_joint_failure_that_each_value_survives_alone_raises_nothing(monkeypatch):
    monkeypatch.setattr(runtime, "_backend",
                        _Flaky(runtime.get_backend(), "execute", RuntimeError("once"), 1))
    w = runtime.LazyHandle(runtime.from_host(data(0, (4, 3))))
    loss = mlp_step(w, data(1), 0.5)
    lazyx.sync()
    want_w, want_loss = mlp_reference(data(0, (4, 3)), data(1), 0.5)
    np.testing.assert_allclose(runtime.to_host(w), want_w, rtol=1e-5)
    np.testing.assert_allclose(runtime.to_host(loss), want_loss, rtol=1e-5)


def test_a_failing_shared_part_is_not_compiled_once_per_live_value(monkeypatch):
    # 40 values computed from one failing part: the joint cut and one value alone fail, the
    # others sharing that part stay pending untried (each was compiled alone: 42 attempts)
    real, attempts = runtime.get_backend(), [0]

    class Refuses:
        name = real.name

        def __getattr__(self, name):
            return getattr(real, name)

        def compile(self, program):
            attempts[0] += 1
            raise RuntimeError("XLA could not compile it")

    base = ops.tanh(runtime.from_host(np.float32([1, 2, 3])))
    values = [runtime.LazyHandle(ops.mul(base, runtime.from_host(np.float32([k] * 3))))
              for k in range(40)]
    monkeypatch.setattr(runtime, "_backend", Refuses())
    with pytest.raises(RuntimeError, match="could not compile"):
        lazyx.sync()
    assert attempts[0] == 2 and all(v.pending for v in values)
    monkeypatch.setattr(runtime, "_backend", real)
    np.testing.assert_allclose(runtime.to_host(values[7]), np.tanh([1, 2, 3]) * 7, rtol=1e-6)


def test_values_not_involved_in_a_failure_stay_usable(monkeypatch):
    good = runtime.LazyHandle(ops.neg(runtime.from_host(np.float32([1, 2]))))
    bad = runtime.LazyHandle(ops.exp(runtime.from_host(np.float32([0, 0, 0]))))
    real = runtime.get_backend()

    class Refuses:
        name = real.name

        def __getattr__(self, name):
            return getattr(real, name)

        def compile(self, program):
            if any(op == "exp" for op, *_ in program.instructions):
                raise RuntimeError("no exp today")
            return real.compile(program)

    monkeypatch.setattr(runtime, "_backend", Refuses())
    with pytest.raises(RuntimeError, match="no exp today"):
        lazyx.sync()
    assert not good.pending                    # computed despite its neighbour's failure
    np.testing.assert_array_equal(runtime.to_host(good), [-1, -2])
    assert bad.pending
    monkeypatch.setattr(runtime, "_backend", real)
    np.testing.assert_array_equal(runtime.to_host(bad), [1, 1, 1])


def test_threads_trace_and_cut_independently():
    steps, n_threads = 60, 4
    w0 = data(0, (4, 3))

    def train(t):
        w = runtime.LazyHandle(runtime.from_host(w0 + t))
        losses = []
        for i in range(steps):
            losses.append(mlp_step(w, data(i, (8, 4)), 0.01 * (t + 1)))
            lazyx.sync()
        return runtime.to_host(w), [float(runtime.to_host(x)) for x in losses]

    results = shared.run_in_threads(train, n_threads)
    for t in range(n_threads):  # each thread's numbers are the single-threaded ones
        w, losses = w0 + t, []
        for i in range(steps):
            w, loss = mlp_reference(w, data(i, (8, 4)), 0.01 * (t + 1))
            losses.append(loss)
        np.testing.assert_allclose(results[t][0], w, rtol=2e-4, atol=1e-5)
        np.testing.assert_allclose(results[t][1], losses, rtol=2e-4, atol=1e-4)


def test_the_compile_cache_is_bounded_by_bytes(monkeypatch):
    exe_bytes = []
    for n in range(1, 4):
        runtime.to_host(runtime.LazyHandle(ops.neg(runtime.from_host(np.zeros(n, np.float32)))))
    exe_bytes = [getattr(e, "nbytes", 0) for e in runtime.CACHE.entries.values()]
    assert all(b > 0 for b in exe_bytes)      # the backend estimates what it holds
    monkeypatch.setenv("LAZYX_CACHE_BYTES", str(int(max(exe_bytes) * 2.5)))
    for n in range(4, 9):
        runtime.to_host(runtime.LazyHandle(ops.neg(runtime.from_host(np.zeros(n, np.float32)))))
    assert len(runtime.CACHE.entries) <= 2
    assert runtime.CACHE.nbytes <= max(exe_bytes) * 2.5


def test_interning_tables_are_bounded_and_stay_exact(monkeypatch):
    monkeypatch.setattr(ir, "TABLE_LIMIT", 64)
    monkeypatch.setattr(ir, "_LOCALS", {})  # start empty (what a reset does: ids never repeat)
    monkeypatch.setattr(ir, "_EIDS", {})
    for n in range(1, 120):  # many distinct shapes: the tables fill up and start again
        x = runtime.from_host(np.arange(n, dtype=np.float32))
        got = runtime.to_host(runtime.LazyHandle(ops.add(ops.mul(x, x), x)))
        np.testing.assert_array_equal(got, np.arange(n) ** 2 + np.arange(n))
        sizes = ir.interned_entries()
        assert sizes["structures"] <= 64 and sizes["expressions"] <= 64


def test_metrics_timers_are_running_statistics():
    for i in range(metrics.MEDIAN_WINDOW + 50):
        metrics.record_time("execute", 1.0 if i % 2 else 3.0)
    m = lazyx.metrics()
    assert m["execute_count"] == metrics.MEDIAN_WINDOW + 50
    assert m["execute_seconds_total"] == pytest.approx(2.0 * (metrics.MEDIAN_WINDOW + 50))
    assert len(metrics._state.timers["execute"].recent) == metrics.MEDIAN_WINDOW


def test_a_barrier_returns_before_the_numbers_exist():
    if lazyx.backend() != "xla":
        pytest.skip("the reference interpreter runs synchronously")
    x = runtime.from_host(np.random.default_rng(0).random((1200, 1200), np.float32))
    y = x
    for _ in range(6):  # seconds of work on a CPU: the check below cannot race it
        y = ops.tanh(ops.dot_general(y, x, contracting_dimensions=((1,), (0,)),
                                     batch_dimensions=((), ()), preferred_element_type=None))
    h = runtime.LazyHandle(y)
    lazyx.sync()
    assert not h.pending
    assert not h.node.value.is_ready()   # dispatched, still computing: tracing can go on
    assert np.isfinite(runtime.to_host(h)).all()   # observation waits for it


def test_factorization_steps_repeat_their_key_and_projections_are_told_apart():
    """A multi-result node and the index of each projection are part of the exact keys: a
    repeated step with a factorization hits the cache without a walk, and LU's pivots and
    permutation (the same type: int32[n]) never share a program."""
    w = runtime.LazyHandle(runtime.from_host(data(0, (4, 4))))
    for i in range(4):
        q, r = ops.qr(w.node)
        w.set(ops.add(w.node, ops.mul(q, ops.broadcast_in_dim(
            ir.param(0.01 * i, "float32"), shape=q.shape, broadcast_dimensions=()))))
        runtime.LazyHandle(ops.reduce_sum(r, axes=(0, 1)))
        lazyx.sync()
        if i == 0:
            first_walk = lazyx.metrics()["nodes_walked"]
    m = lazyx.metrics()
    assert m["compiles"] == 1 and m["cache_hits"] == 3
    assert m["nodes_walked"] == first_walk
    a = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], np.float32) + 0.1 * data(1, (3, 3))
    x = runtime.from_host(a)
    for _ in range(2):
        _, pivots, perm = ops.lu(x)
        assert pivots.local != perm.local and pivots.eid != perm.eid
        got_pivots = runtime.to_host(runtime.LazyHandle(pivots))
        got_perm = runtime.to_host(runtime.LazyHandle(ops.lu(x)[2]))
        np.testing.assert_array_equal(got_pivots, [2, 2, 2])
        np.testing.assert_array_equal(got_perm, [2, 0, 1])
