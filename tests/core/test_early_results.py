"""A repeated cut whose results include floating-point scalars runs them in a program of their
own, dispatched ahead of the rest (core/early_results.py): a read of the loss waits for that
program only. The numbers must be the single program's, bit for bit."""
import threading
import warnings

import numpy as np
import pytest

import lazyx
from lazyx.core import early_results, ir, ops, runtime

pytestmark = pytest.mark.usefixtures("fresh_runtime", "no_mesh_yet")  # tests/conftest.py


def host(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def _matmul(a, b):
    return ops.dot_general(a, b, contracting_dimensions=((1,), (0,)),
                           batch_dimensions=((), ()))


def _sgd_step(x, w, lr=0.01):
    """(loss, updated w) of a least-squares step, written in IR ops with its gradient."""
    h = _matmul(x, w)
    n = float(np.prod(h.shape))
    loss = ops.div(ops.reduce_sum(ops.mul(h, h), axes=(0, 1)), ir.param(n, "float32"))
    grad_h = ops.mul(h, ir.param(2.0 / n, "float32", h.shape))
    grad_w = _matmul(ops.transpose(x, permutation=(1, 0)), grad_h)
    return loss, ops.sub(w, ops.mul(grad_w, ir.param(lr, "float32", grad_w.shape)))


def _numpy_step(x, w, lr=0.01):
    h = x @ w
    return (h * h).sum() / h.size, w - (x.T @ (2.0 * h / h.size)) * lr


def _program(x_shape, w_shape):
    x = runtime.from_host(host(x_shape, 1))
    w = runtime.from_host(host(w_shape, 2))
    loss, new_w = _sgd_step(x, w)
    return runtime.linearize([loss, new_w])[0]


def _ops(program):
    return [inst[0] for inst in program.instructions]


def test_the_scalar_and_what_it_needs_go_first_and_the_rest_second():
    program = _program((64, 256), (256, 256))
    split = early_results.plan(program, runtime.Program)
    assert split is not None
    # the loss's product is the first program's; the weight gradient's is the second's
    assert _ops(split.first).count("dot_general") == 1
    assert _ops(split.second).count("dot_general") == 1
    assert "reduce_sum" in _ops(split.first) and "reduce_sum" not in _ops(split.second)
    # h, made by the first, is handed to the second instead of being computed twice
    assert len(split.handoff) >= 1
    assert len(split.first.instructions) + len(split.second.instructions) == \
        len(program.instructions)
    assert split.order == [(0, 0), (1, 0)] or split.order == [(1, 0), (0, 0)]
    assert split.first.instructions[split.first.outputs[0] - len(split.first.leaves)][3] == ()


@pytest.mark.parametrize("case", ["small", "no scalar", "only scalars", "integer scalar"])
def test_no_split_where_it_cannot_pay(case):
    if case == "small":  # the rest is a few thousand multiply-adds: not worth a dispatch
        program = _program((8, 16), (16, 16))
    else:
        x = runtime.from_host(host((64, 256), 1))
        w = runtime.from_host(host((256, 256), 2))
        loss, new_w = _sgd_step(x, w)
        roots = {"no scalar": [new_w], "only scalars": [loss],
                 "integer scalar": [ops.convert(loss, dtype="int32"), new_w]}[case]
        program = runtime.linearize(roots)[0]
    assert early_results.plan(program, runtime.Program) is None


class _Loop:
    """The least-squares SGD loop, one cut per step; each step's loss and weights read back."""

    def __init__(self):
        self.x = runtime.LazyHandle(runtime.from_host(host((64, 256), 1)))
        self.w = runtime.LazyHandle(runtime.from_host(host((256, 256), 2)))
        self.losses, self.weights = [], []

    def step(self, read_loss_first=True):
        loss, new_w = _sgd_step(self.x.node, self.w.node)
        loss, self.w = runtime.LazyHandle(loss), runtime.LazyHandle(new_w)
        runtime.sync(loss, self.w)
        reads = [(self.losses, loss), (self.weights, self.w)]
        for into, handle in reads if read_loss_first else reversed(reads):
            into.append(runtime.to_host(handle).copy())


def _split_loop(steps_after):
    """A loop whose pair is compiled (waited for) after the single program's runs."""
    loop = _Loop()
    for _ in range(early_results.RUNS_BEFORE_SPLIT):
        loop.step()
    early_results.join_all()
    for _ in range(steps_after):
        loop.step()
    return loop


def _whole_loop(steps, monkeypatch):
    runtime.CACHE.clear()
    monkeypatch.setattr(early_results, "MIN_WORK", 1 << 62)
    loop = _Loop()
    for _ in range(steps):
        loop.step(read_loss_first=False)
    assert not any(isinstance(e, early_results.Splitting)
                   for e in runtime.CACHE.entries.values())
    return loop


def _asynchronous():
    return getattr(runtime.get_backend(), "asynchronous", False)


def test_a_repeated_step_splits_on_an_asynchronous_backend_with_the_same_bits(monkeypatch):
    split = _split_loop(3)
    entries = list(runtime.CACHE.entries.values())
    assert len(entries) == 1 and lazyx.metrics()["compiles"] == 1
    if _asynchronous():  # XLA: the pair was compiled once, behind the second run
        assert isinstance(entries[0], early_results.Splitting)
        assert entries[0].pair not in (None, False)
        assert lazyx.metrics()["split_compiles"] == 2
        # the cache's byte bound counts the pair it holds too
        assert runtime.CACHE.nbytes == entries[0].nbytes > entries[0].whole.nbytes
    else:  # the reference interpreter finishes a program before returning: nothing to gain
        assert not isinstance(entries[0], early_results.Splitting)
        assert lazyx.metrics()["split_compiles"] == 0
    whole = _whole_loop(len(split.losses), monkeypatch)
    for a, b in zip(split.losses + split.weights, whole.losses + whole.weights):
        np.testing.assert_array_equal(a, b)
    # and the numbers are the math's
    x_host, w_host = host((64, 256), 1), host((256, 256), 2)
    for loss, w in zip(split.losses, split.weights):
        expected_loss, w_host = _numpy_step(x_host, w_host)
        np.testing.assert_allclose(loss, expected_loss, rtol=1e-4)
        np.testing.assert_allclose(w, w_host, rtol=1e-4, atol=1e-6)


def test_the_scalar_program_is_dispatched_first_and_feeds_the_second():
    if not _asynchronous():
        pytest.skip("only an asynchronous backend splits")
    loop = _split_loop(1)
    (entry,) = runtime.CACHE.entries.values()
    calls = []

    def recording(name, exe):
        def run(values):
            calls.append((name, len(values)))
            return exe(values)
        return run
    first, second = entry.pair
    entry.pair = (recording("first", first), recording("second", second))
    loop.step()
    split = entry.split
    assert calls == [("first", len(split.first.leaves)), ("second", len(split.second.leaves))]


def test_steps_run_the_single_program_while_the_pair_compiles():
    if not _asynchronous():
        pytest.skip("only an asynchronous backend splits")
    release = threading.Event()
    compiled = []

    def slow_part(part, fixed, splitting):
        release.wait(30)
        compiled.append(part)
        return runtime.get_backend().compile(part, fixed) if fixed else \
            runtime.get_backend().compile(part)
    loop = _Loop()
    loop.step()
    (entry,) = runtime.CACHE.entries.values()
    entry.compile_part = slow_part  # (the compile starts at the RUNS_BEFORE_SPLIT-th run)
    for _ in range(early_results.RUNS_BEFORE_SPLIT + 1):
        loop.step()
    assert entry.pair is None and not compiled  # still compiling: the steps did not wait
    release.set()
    assert early_results.join_all()  # (it was compiling)
    assert len(compiled) == 2 and entry.pair not in (None, False)
    assert not early_results.join_all()
    loop.step()
    x_host, w_host = host((64, 256), 1), host((256, 256), 2)
    for loss in loop.losses:
        expected_loss, w_host = _numpy_step(x_host, w_host)
        np.testing.assert_allclose(loss, expected_loss, rtol=1e-4)


def test_a_pair_that_fails_to_compile_leaves_the_single_program(monkeypatch):
    if not _asynchronous():
        pytest.skip("only an asynchronous backend splits")

    def failing(part, fixed, splitting):
        raise RuntimeError("no room for another executable")
    monkeypatch.setattr(runtime, "_compile_part", failing)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loop = _split_loop(2)
    assert any("runs as one program" in str(w.message) for w in caught)
    (entry,) = runtime.CACHE.entries.values()
    assert entry.pair is False
    whole = _whole_loop(len(loop.losses), monkeypatch)
    for a, b in zip(loop.losses + loop.weights, whole.losses + whole.weights):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("value, splits", [("0", False), ("1", True)])
def test_LAZYX_SCALARS_FIRST_turns_it_off_and_on(monkeypatch, value, splits):
    monkeypatch.setenv("LAZYX_SCALARS_FIRST", value)
    _split_loop(1)
    (entry,) = runtime.CACHE.entries.values()
    assert isinstance(entry, early_results.Splitting) == (splits and _asynchronous())


def test_a_rest_that_reads_the_scalar_itself_gets_it_handed_over(monkeypatch):
    """w - lr * loss * grad: the second program needs the loss the first computes."""
    if not _asynchronous():
        pytest.skip("only an asynchronous backend splits")

    def scaled_step(x, w):
        loss, _ = _sgd_step(x, w)
        h = _matmul(x, w)
        grad = _matmul(ops.transpose(x, permutation=(1, 0)), h)
        scale = ops.broadcast_in_dim(loss, shape=grad.shape, broadcast_dimensions=())
        return loss, ops.sub(w, ops.mul(ops.mul(grad, scale), ir.param(1e-3, "float32",
                                                                        grad.shape)))

    def run(steps):
        x = runtime.LazyHandle(runtime.from_host(host((64, 256), 1)))
        w = runtime.LazyHandle(runtime.from_host(host((256, 256), 2)))
        seen = []
        for k in range(steps):
            loss, new_w = scaled_step(x.node, w.node)
            loss, w = runtime.LazyHandle(loss), runtime.LazyHandle(new_w)
            runtime.sync(loss, w)
            seen += [runtime.to_host(loss).copy(), runtime.to_host(w).copy()]
            if k == early_results.RUNS_BEFORE_SPLIT - 1:
                early_results.join_all()
        return seen

    split = run(early_results.RUNS_BEFORE_SPLIT + 2)
    (entry,) = runtime.CACHE.entries.values()
    assert entry.pair not in (None, False)
    first_results = entry.split.first.outputs
    assert len(first_results) > len(set(first_results))  # the loss: a result and a handoff
    runtime.CACHE.clear()
    monkeypatch.setattr(early_results, "MIN_WORK", 1 << 62)
    for a, b in zip(split, run(early_results.RUNS_BEFORE_SPLIT + 2)):
        np.testing.assert_array_equal(a, b)


def test_the_single_program_stays_the_newest_disk_entry(tmp_path, monkeypatch):
    """A new process's first step needs the cut's own program, its pair only later: the
    warm-start preloader loads the newest entries first, so the single program must be the
    newest entry once the pair is stored (backends/preload.py)."""
    if not _asynchronous():
        pytest.skip("only an asynchronous backend splits")
    from lazyx.backends import disk_cache, preload
    monkeypatch.setenv("LAZYX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("LAZYX_TIERED", raising=False)
    _split_loop(1)
    disk_cache.flush()
    (entry,) = runtime.CACHE.entries.values()
    backend = runtime.get_backend()
    whole = entry.whole
    keys = preload.recent_keys(disk_cache.open_cache(), 3)
    assert len(keys) == 3  # the single program and the pair
    assert keys[0] == backend._disk_key(whole.program, whole.signature, whole.x64)
