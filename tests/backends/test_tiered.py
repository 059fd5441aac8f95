"""LAZYX_TIERED=1: the first steps of a new graph run on the reference interpreter while XLA
compiles in a thread; the hand-over neither repeats a step nor loses a value."""
import threading
import warnings

import numpy as np
import pytest

import lazyx
from lazyx.core import ir, ops, runtime

jax = pytest.importorskip("jax")
from lazyx.backends import tiered, xla  # noqa: E402


@pytest.fixture
def gated(monkeypatch):
    """Tiered mode on the XLA backend, with the background compile held until gate.set()."""
    monkeypatch.setenv("LAZYX_TIERED", "1")
    monkeypatch.setenv("LAZYX_CACHE_DIR", "")
    monkeypatch.setattr(runtime, "_backend", xla.XlaBackend())
    gate, calls = threading.Event(), {"xla": 0}
    compile_now = xla.XlaBackend.compile_now

    def held(self, *args, **kwargs):
        assert gate.wait(60)
        return compile_now(self, *args, **kwargs)

    def counted(self, leaf_values):
        calls["xla"] += 1
        return run(self, leaf_values)

    run = xla._Executable.__call__
    monkeypatch.setattr(xla.XlaBackend, "compile_now", held)
    monkeypatch.setattr(xla._Executable, "__call__", counted)
    lazyx.sync()
    runtime.CACHE.clear()
    lazyx.reset_metrics()
    yield gate, calls
    gate.set()
    lazyx.sync()
    runtime.CACHE.clear()


def _step(handle, k):
    """x <- x * 0.5 + k (k a run-time scalar): each step changes the state, so a repeated or
    lost step shows in the final value."""
    x = handle.node
    half = ops.broadcast_in_dim(ir.param(0.5, x.dtype), shape=x.shape, broadcast_dimensions=())
    add = ops.broadcast_in_dim(ir.param(k, x.dtype), shape=x.shape, broadcast_dimensions=())
    handle.set(ops.add(ops.mul(x, half), add))
    lazyx.sync(handle)


def _executable():
    (exe,) = runtime.CACHE.entries.values()
    return exe


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hand_over_runs_each_step_once_and_keeps_every_value(gated, dtype):
    gate, calls = gated
    start = np.random.default_rng(0).uniform(-1, 1, (16, 8)).astype(dtype)
    handle = runtime.LazyHandle(runtime.from_host(start))
    expected = start.copy()
    for k in range(4):                       # the compile is held: all interpreted
        _step(handle, k)
        expected = expected * 0.5 + k
    exe = _executable()
    assert isinstance(exe, tiered.TieredExecutable) and not exe.compiled
    assert isinstance(handle.node.value, jax.Array)  # interpreted results live on the device
    gate.set()
    assert exe.wait(60) and exe.compiled
    for k in range(4, 10):                   # now on XLA
        _step(handle, k)
        expected = expected * 0.5 + k
    m = lazyx.metrics()
    assert m["interpreted_steps"] == 4 and calls["xla"] == 6 and m["executions"] == 10
    assert m["compiles"] == 1
    np.testing.assert_allclose(runtime.to_host(handle), expected, rtol=1e-6)


def test_interpreted_values_are_the_reference_backends(gated):
    x = np.linspace(-3, 3, 64).astype(np.float32)
    handle = runtime.LazyHandle(ops.tanh(runtime.from_host(x)))
    got = runtime.to_host(handle)
    assert lazyx.metrics()["interpreted_steps"] == 1
    from lazyx.backends.reference import ReferenceBackend
    program, _ = runtime.linearize([ops.tanh(ir.data(None, (64,), "float32"))])
    np.testing.assert_array_equal(got, ReferenceBackend().compile(program)([x])[0])


def test_steps_from_many_threads_during_the_hand_over(gated):
    """Several threads running the same executable while it switches: every call returns its
    own correct result exactly once."""
    gate, calls = gated
    handle = runtime.LazyHandle(runtime.from_host(np.zeros(4, np.float32)))
    _step(handle, 1.0)
    exe = _executable()
    data = jax.device_put(np.arange(4, dtype=np.float32))
    results, errors = [], []

    def worker(k):
        try:
            for i in range(20):
                if k == 0 and i == 5:
                    gate.set()
                values = [data if kind == "data" else np.float32(0.5 if n == 0 else i)
                          for n, (kind, *_r) in enumerate(exe.program.leaves)]
                results.append((i, np.asarray(exe(values)[0])))
        except Exception as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 60
    for i, got in results:
        np.testing.assert_allclose(got, np.arange(4) * 0.5 + i, rtol=1e-6)
    assert lazyx.metrics()["interpreted_steps"] + calls["xla"] == 61


def test_a_failing_compile_warns_and_keeps_interpreting(gated, monkeypatch):
    gate, _ = gated

    def broken(self, *args, **kwargs):
        raise RuntimeError("no XLA today")

    monkeypatch.setattr(xla.XlaBackend, "compile_now", broken)
    handle = runtime.LazyHandle(runtime.from_host(np.ones(3, np.float32)))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        _step(handle, 1.0)
        assert _executable().wait(60) and not _executable().compiled
        _step(handle, 1.0)
        _step(handle, 1.0)
    assert len(said) == 1  # once, whichever step first saw the failure
    assert "no XLA today" in str(said[0].message) and "reference interpreter" in str(said[0].message)
    np.testing.assert_allclose(runtime.to_host(handle), [1.875, 1.875, 1.875])
    assert lazyx.metrics()["interpreted_steps"] == 3


EXIT_PROGRAM = """
import numpy as np
import lazyx.frontends.numpy as lnp
a = lnp.asarray(np.random.default_rng(0).random((300, 300), dtype=np.float32))
for _ in range(3):
    a = np.tanh(a @ a)
print(float(a.sum()))
"""


def test_a_script_that_ends_during_the_background_compile_exits_cleanly(tmp_path):
    """The interpreter answers the first step and the script ends while XLA still compiles:
    the process must exit 0 (a daemon compile thread aborted it with status 134)."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(lazyx.__file__))
    env = dict(os.environ, LAZYX_TIERED="1", LAZYX_CACHE_DIR="", LAZYX_BACKEND="xla",
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    for _ in range(3):  # the race is timing-dependent: a few runs
        out = subprocess.run([sys.executable, "-c", EXIT_PROGRAM], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert float(out.stdout.split()[-1]) > 0
