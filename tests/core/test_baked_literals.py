"""A repeated lazy cut whose Python numbers keep their values gets a second program with them
baked in as constants, compiled in the background (core/baked_literals.py). Which program
runs must move no number: every step's result is compared bit for bit with the run-time
program's, and with NumPy."""
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.core import baked_literals, config, early_results, runtime

pytestmark = pytest.mark.usefixtures("fresh_runtime", "no_mesh_yet")  # tests/conftest.py

STEPS = baked_literals.RUNS_BEFORE_BAKING + 3


def _bakes():
    return getattr(runtime.get_backend(), "bakes_bitwise", lambda: False)()


def host(seed=0, shape=(64, 48)):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(np.float32)


def chain(x, a, b, c):
    """W3's pattern: products and sums with literals, a square, a tanh."""
    for _ in range(3):
        x = x * a + b
        x = x * x - c
        x = np.tanh(x)
    return np.sum(x, axis=0)


def _entry():
    (entry,) = runtime.CACHE.entries.values()
    return entry


def _steps(x, literals, n):
    out = []
    for k in range(n):
        out.append(np.asarray(chain(x, *literals(k))))
        if k == baked_literals.RUNS_BEFORE_BAKING:
            baked_literals.join_all()
    return out


@pytest.fixture
def needs_baking():
    if not _bakes():
        pytest.skip("the backend does not compute baked literals bit for bit (XLA:CPU does)")


def test_unchanged_literals_are_baked_and_move_no_bit(needs_baking):
    x_host = host()
    x = lnp.asarray(x_host)
    results = _steps(x, lambda k: (0.9, 0.1, 0.5), STEPS)
    entry = _entry()
    assert isinstance(entry, baked_literals.Baking)
    assert entry.baked not in (None, False)
    assert lazyx.metrics()["bake_compiles"] == 1
    assert lazyx.metrics()["compiles"] == 1  # (the baked program is counted apart)
    # the steps before the baked program was ready ran the run-time one: same bits after
    for r in results[1:]:
        np.testing.assert_array_equal(r.view(np.uint32), results[0].view(np.uint32))
    np.testing.assert_allclose(results[-1], chain(x_host, 0.9, 0.1, 0.5), rtol=2e-5, atol=1e-6)


def test_a_changed_literal_goes_back_to_the_run_time_program_for_good(needs_baking):
    x_host = host(1)
    x = lnp.asarray(x_host)
    values = [(0.9, 0.1, 0.5)] * STEPS + [(0.9, 0.3, 0.5), (0.9, 0.1, 0.5), (0.7, 0.2, 0.4)]
    results = _steps(x, lambda k: values[k], len(values))
    entry = _entry()
    assert entry.baked is False
    assert lazyx.metrics()["bake_compiles"] == 1 and lazyx.metrics()["compiles"] == 1
    for r, v in zip(results, values):
        np.testing.assert_allclose(r, chain(x_host, *v), rtol=2e-5, atol=1e-6)
    # the same values again after the change: the run-time program, with the baked one's bits
    np.testing.assert_array_equal(results[STEPS + 1].view(np.uint32),
                                  results[0].view(np.uint32))


def test_a_literal_that_changes_every_step_is_never_baked(needs_baking):
    x_host = host(2)
    x = lnp.asarray(x_host)
    results = _steps(x, lambda k: (0.9, 0.1 + 0.01 * k, 0.5), STEPS)
    baked_literals.join_all()
    assert _entry().baked is False
    assert lazyx.metrics()["bake_compiles"] == 0
    for k, r in enumerate(results):
        np.testing.assert_allclose(r, chain(x_host, 0.9, 0.1 + 0.01 * k, 0.5), rtol=2e-5,
                                   atol=1e-6)


def test_the_steps_do_not_wait_for_the_baked_compile(needs_baking, monkeypatch):
    release = threading.Event()
    x = lnp.asarray(host(3))
    first = np.asarray(chain(x, 0.9, 0.1, 0.5))
    entry = _entry()
    compile_baked = entry.compile_baked

    def slow(baked, kept):
        release.wait(30)
        return compile_baked(baked, kept)
    entry.compile_baked = slow
    for _ in range(STEPS):
        np.testing.assert_array_equal(np.asarray(chain(x, 0.9, 0.1, 0.5)), first)
    assert entry.baked is None  # still compiling: the steps ran the run-time program
    release.set()
    assert baked_literals.join_all()
    assert entry.baked not in (None, False)
    np.testing.assert_array_equal(np.asarray(chain(x, 0.9, 0.1, 0.5)), first)


def test_a_baked_program_that_fails_to_compile_leaves_the_run_time_one(needs_baking,
                                                                      monkeypatch):
    def failing(program, values):
        raise RuntimeError("no room")
    monkeypatch.setattr(runtime, "bake", failing)
    x_host = host(4)
    x = lnp.asarray(x_host)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = _steps(x, lambda k: (0.9, 0.1, 0.5), STEPS)
        baked_literals.join_all()
    assert any("no room" in str(w.message) for w in caught)
    assert _entry().baked is False
    np.testing.assert_allclose(results[-1], chain(x_host, 0.9, 0.1, 0.5), rtol=2e-5, atol=1e-6)


def test_switched_off_no_baked_program(needs_baking, monkeypatch):
    monkeypatch.setenv("LAZYX_BAKE_LITERALS", "0")
    assert not config.bake_literals()
    x = lnp.asarray(host(5))
    _steps(x, lambda k: (0.9, 0.1, 0.5), STEPS)
    assert not isinstance(_entry(), baked_literals.Baking)
    assert lazyx.metrics()["bake_compiles"] == 0


def test_literals_outside_the_bitwise_rule_stay_run_time(needs_baking):
    """A literal divided by, or the exponent of a power, is not baked (XLA rewrites those
    around a constant); 0, 1 and -1 are not either (LLVM folds them)."""
    x = lnp.asarray(host(6))
    for _ in range(STEPS):
        np.asarray(np.sum(x / 3.0 + x ** 2.5 * 1.0, axis=0))
    baked_literals.join_all()
    entry = _entry()
    assert not isinstance(entry, baked_literals.Baking)
    assert lazyx.metrics()["bake_compiles"] == 0


@settings(max_examples=12, deadline=None)
@given(st.lists(st.sampled_from(["mul", "add", "sub", "max", "min"]), min_size=1, max_size=8),
       st.lists(st.floats(-3, 3, allow_nan=False, width=32), min_size=8, max_size=8),
       st.integers(0, 2**16))
def test_random_literal_chains_bake_bit_for_bit(ops, numbers, seed):
    if not _bakes():
        pytest.skip("the backend does not bake")
    runtime.CACHE.clear()
    x = lnp.asarray(host(seed, (32, 8)))

    def step():
        y = x
        for op, c in zip(ops, numbers):
            y = {"mul": lambda: y * c, "add": lambda: y + c, "sub": lambda: y - c,
                 "max": lambda: np.maximum(y, c), "min": lambda: np.minimum(y, c)}[op]()
        return np.asarray(np.sum(y * y, axis=1))
    first = step()
    for _ in range(baked_literals.RUNS_BEFORE_BAKING):
        step()
    baked_literals.join_all()
    np.testing.assert_array_equal(step().view(np.uint32), first.view(np.uint32))


def test_the_general_program_stays_the_newest_disk_entry(needs_baking, tmp_path, monkeypatch):
    """A new process's first step runs the general program, the baked one only after 8 runs:
    the warm-start preloader loads the newest disk entries first (backends/preload.py), so
    the general program must be the newest once the baked one is stored."""
    from lazyx.backends import disk_cache, preload
    monkeypatch.setenv("LAZYX_CACHE_DIR", str(tmp_path))
    x = lnp.asarray(host(7))
    _steps(x, lambda k: (0.9, 0.1, 0.5), STEPS)
    disk_cache.flush()
    entry = _entry()
    assert entry.baked not in (None, False)
    general = entry.single
    keys = preload.recent_keys(disk_cache.open_cache(), 3)
    assert len(keys) == 2  # the general program and the baked one
    assert keys[0] == runtime.get_backend()._disk_key(general.program, general.signature,
                                                      general.x64)


def _sgd_loop(steps, lr=0.01):
    """A least-squares SGD loop reading its loss at every step: its cut is split, the loss
    run ahead of the rest (core/early_results.py). Each step's loss and the final weights."""
    x = lnp.asarray(host(8, (64, 256)))
    w = lnp.asarray(host(9, (256, 256)))
    losses = []
    for k in range(steps):
        h = x @ w
        loss = np.sum(h * h) * (1.0 / h.size)
        w = w - (x.T @ (h * (2.0 / h.size))) * lr
        lazyx.sync()
        losses.append(float(loss))
        if k in (early_results.RUNS_BEFORE_SPLIT, early_results.RUNS_BEFORE_SPLIT +
                 baked_literals.RUNS_BEFORE_BAKING + 1):
            early_results.join_all()
            baked_literals.join_all()
    return np.array(losses, np.float32), np.asarray(w)


def test_a_split_cuts_two_programs_bake_bit_for_bit(needs_baking, monkeypatch):
    if not getattr(runtime.get_backend(), "asynchronous", False):
        pytest.skip("only an asynchronous backend splits")
    steps = early_results.RUNS_BEFORE_SPLIT + baked_literals.RUNS_BEFORE_BAKING + 4
    losses, w = _sgd_loop(steps)
    (entry,) = runtime.CACHE.entries.values()
    assert isinstance(entry, early_results.Splitting) and entry.pair
    assert all(isinstance(part, baked_literals.Baking) and part.baked not in (None, False)
               for part in entry.pair)
    assert lazyx.metrics()["bake_compiles"] == 2
    assert entry.nbytes > entry.single.nbytes + sum(p.single.nbytes for p in entry.pair)
    runtime.CACHE.clear()
    monkeypatch.setenv("LAZYX_BAKE_LITERALS", "0")
    plain_losses, plain_w = _sgd_loop(steps)
    np.testing.assert_array_equal(losses.view(np.uint32), plain_losses.view(np.uint32))
    np.testing.assert_array_equal(w.view(np.uint32), plain_w.view(np.uint32))
