"""Warm start (backends/preload.py): a new process loads the disk cache's most recent entries
and runs each once in the background; a cut then takes its executable from there."""
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

from test_disk_cache import SHIM

pytest.importorskip("jax")
from lazyx.backends import disk_cache, preload, xla  # noqa: E402

@pytest.fixture(autouse=True)
def _fresh_preloader_state(monkeypatch):
    """What the preloader holds, waits on and was told to skip, per test."""
    for name, value in (("_ready", {}), ("_in_flight", {}), ("_claimed", set()),
                        ("_wanted", set()), ("_first_runs", []), ("_running", []),
                        ("_handed_out", preload.threading.Event()),
                        ("_first_run_noted", preload.threading.Event())):
        monkeypatch.setattr(preload, name, value)


_STEP = textwrap.dedent("""
    import sys, threading
    sys.path.insert(0, sys.argv[1])
    import numpy as np, lazyx
    from lazyx.core import ops, runtime
    x = runtime.from_host(np.arange(6, dtype=np.float32).reshape(2, 3))  # starts the backend
    for t in threading.enumerate():
        if t.name == "lazyx-preload":
            t.join()
    y = runtime.LazyHandle(ops.reduce_sum(ops.mul(x, x), axes=(1,)))
    value = runtime.to_host(y).tolist()
    m = lazyx.metrics()
    print(value, m["disk_hits"], m["disk_misses"], m["disk_preloaded"])
""")


def _step(cache, preload_count):
    out = subprocess.run(
        [sys.executable, "-c", _STEP, SHIM], capture_output=True, text=True, timeout=300,
        env={**os.environ, "LAZYX_BACKEND": "xla", "LAZYX_CACHE_DIR": str(cache),
             "LAZYX_CACHE_PRELOAD": str(preload_count)})
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_a_new_process_takes_the_step_from_the_preloader(tmp_path):
    assert _step(tmp_path, 4) == ["[5.0,", "50.0]", "0", "1", "0"]  # cold: compiled, stored
    assert _step(tmp_path, 4) == ["[5.0,", "50.0]", "1", "0", "1"]  # preloaded
    assert _step(tmp_path, 0) == ["[5.0,", "50.0]", "1", "0", "0"]  # off: read from disk


def _entry(cache, key, payload=b"x" * 64):
    cache.put(key, payload)
    return cache.path(key)


def test_recent_keys_are_the_newest_entries_first(tmp_path):
    cache = disk_cache.DiskCache(str(tmp_path), 2**20)
    keys = [bytes([i]) * 32 for i in range(5)]
    for age, key in enumerate(keys):
        path = _entry(cache, key)
        os.utime(path, (time.time() - 100 * age,) * 2)
    assert preload.recent_keys(cache, 3) == keys[:3]
    assert preload.recent_keys(cache, 10) == keys


def test_the_preloader_leaves_bad_entries_alone(tmp_path):
    """No warning, no removal, no LRU refresh: those belong to the cut that needs the entry."""
    cache = disk_cache.DiskCache(str(tmp_path), 2**20)
    truncated = _entry(cache, b"\x01" * 32)
    with open(truncated, "r+b") as f:
        f.truncate(os.path.getsize(truncated) - 10)
    unloadable = _entry(cache, b"\x02" * 32, b"\x00" * 8 + b"not an executable")
    os.utime(unloadable, (1000.0, 1000.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        device = xla.jax.local_devices()[0]
        preload._preload(cache, preload.recent_keys(cache, 4), lambda p: xla._deserialize(p, device))
    assert os.path.exists(truncated) and os.path.getsize(unloadable) > 0
    assert os.path.getmtime(unloadable) == 1000.0
    assert preload.take(b"\x01" * 32) is None and preload.take(b"\x02" * 32) is None


def test_the_preloader_stops_once_the_process_is_steady(tmp_path, monkeypatch):
    """A program run a second time settles the process: entries not yet preloaded stay on
    disk (they would only compete with the steady steps for the cores)."""
    cache = disk_cache.DiskCache(str(tmp_path), 2**20)
    for i in range(3):
        _entry(cache, bytes([i + 1]) * 32)
    loaded = []
    monkeypatch.setattr(preload, "_settled", preload.threading.Event())

    def load(payload):
        loaded.append(payload)
        raise ValueError("not an executable")  # (what happens after the load is not at issue)
    preload._preload(cache, preload.recent_keys(cache, 4), load)
    assert len(loaded) == 3                 # not settled: every entry is tried
    loaded.clear()
    x = xla.jax.numpy.ones(3)
    exe = xla._Executable(xla.jax.jit(lambda a: a + 1).lower(x).compile(), False,
                          xla._Signature(_one_leaf_program()))
    exe([np.ones(3, np.float32)])
    preload._preload(cache, preload.recent_keys(cache, 4), load)
    assert len(loaded) == 3                 # one run is not a steady state yet
    loaded.clear()
    exe([np.ones(3, np.float32)])
    preload._preload(cache, preload.recent_keys(cache, 4), load)
    assert loaded == []                     # the second run of a program settles the process


def _one_leaf_program():
    from lazyx.core import ops, runtime
    x = runtime.from_host(np.ones(3, np.float32))
    return runtime.linearize([ops.neg(x)])[0]


def test_a_cut_waits_for_the_entry_in_flight_and_the_preloader_skips_what_a_cut_loaded(
        tmp_path, monkeypatch):
    """Loading and first-running an entry the preloader is busy with would do its work twice on
    the same cores: the cut waits for it. An entry a cut loaded itself is not preloaded."""
    import threading
    cache = disk_cache.DiskCache(str(tmp_path), 2**20)
    first, second = b"\x05" * 32, b"\x06" * 32
    _entry(cache, first)
    os.utime(_entry(cache, second), (1000.0, 1000.0))  # older: preloaded after `first`
    monkeypatch.setattr(preload, "_settled", threading.Event())
    started, release, loaded = threading.Event(), threading.Event(), []
    marker = object()

    def load(payload):
        loaded.append(payload)
        started.set()
        release.wait(30)
        return marker
    # (loading and the run on zeros are not at issue here: the stub stands for both)
    monkeypatch.setattr(preload, "_load_and_run",
                        lambda cache, key, load, jax: load(cache.read(key)))
    assert preload.take(second) is None  # a cut loads `second` itself before the preloader
    worker = threading.Thread(target=preload._preload,
                              args=(cache, preload.recent_keys(cache, 4), load))
    worker.start()
    assert started.wait(30)
    got = []
    taker = threading.Thread(target=lambda: got.append(preload.take(first)))
    taker.start()
    time.sleep(0.2)
    assert taker.is_alive()  # waiting for the preloader, not loading on its own
    release.set()
    taker.join(30)
    worker.join(30)
    assert got == [marker]
    assert len(loaded) == 1  # `second` was claimed by the cut: not preloaded


class _FakeExecutable:
    """Stands for a loaded executable: counts its runs (on zeros, by the preloader)."""

    def __init__(self):
        self.runs = 0

    def __call__(self, *args):
        self.runs += 1
        return ()


def _preloading(cache, load, monkeypatch):
    """The preloader started on its own thread, as at a backend's start."""
    import threading
    monkeypatch.setattr(preload, "_settled", threading.Event())
    worker = threading.Thread(target=preload._preload,
                              args=(cache, preload.recent_keys(cache, 4), load))
    worker.start()
    return worker


def test_a_cut_waiting_for_an_entry_gets_it_loaded_but_not_run_on_zeros(tmp_path, monkeypatch):
    """The run on zeros readies the code for a later first step; a cut already waiting would
    wait for a whole extra execution of its program (W2: 80-110 ms) before its own."""
    import threading
    cache = disk_cache.DiskCache(str(tmp_path), 2**20)
    waited, alone = b"\x07" * 32, b"\x08" * 32
    _entry(cache, waited)
    os.utime(_entry(cache, alone), (1000.0, 1000.0))  # older: preloaded second
    fakes = {}
    loading, release = threading.Event(), threading.Event()

    def load(payload):
        fake = fakes[len(fakes)] = _FakeExecutable()
        if len(fakes) == 1:
            loading.set()
            release.wait(30)
        return fake, [np.zeros(3, np.float32)]
    worker = _preloading(cache, load, monkeypatch)
    assert loading.wait(30)
    got = []
    taker = threading.Thread(target=lambda: got.append(preload.take(waited)))
    taker.start()
    time.sleep(0.2)  # the cut is waiting for the entry being loaded
    release.set()
    taker.join(30)
    preload.note_first_run(())  # (the cut's own run, which the preloader waits for)
    worker.join(30)
    assert got == [fakes[0]] and fakes[0].runs == 0  # handed over as loaded
    assert fakes[1].runs == 1                        # no one waited: run once on zeros
    assert preload.take(alone) is fakes[1]


class _Outputs:
    """A first run's outputs, ready when the test says so."""

    def __init__(self):
        self.ready = preload.threading.Event()
        self.waited = False

    def block_until_ready(self):
        self.waited = True
        assert self.ready.wait(30)
        return self


def test_the_preloader_lets_the_first_run_of_what_it_handed_over_finish_first(
        tmp_path, monkeypatch):
    """The cut that took a preloaded executable runs it at once; the preloader's next entry
    would share the cores with that run (W2's warm first step: its run 50 ms beside the next
    entry's load and run on zeros, 25 ms alone), so it waits for the run to finish."""
    import threading
    cache = disk_cache.DiskCache(str(tmp_path), 2**20)
    first, second = b"\x09" * 32, b"\x0a" * 32
    _entry(cache, first)
    os.utime(_entry(cache, second), (1000.0, 1000.0))
    loads, loading = [], threading.Event()

    def load(payload):
        loads.append(payload)
        if len(loads) == 1:
            assert loading.wait(30)  # the cut asks for it while it loads
        return _FakeExecutable(), [np.zeros(2, np.float32)]
    worker = _preloading(cache, load, monkeypatch)
    got = []
    taker = threading.Thread(target=lambda: got.append(preload.take(first)))
    while not preload._in_flight:
        time.sleep(0.001)
    taker.start()
    time.sleep(0.1)
    loading.set()
    taker.join(30)
    assert got[0] is not None
    time.sleep(0.3)
    assert len(loads) == 1  # waiting for the cut to run what it took
    outputs = _Outputs()
    preload.note_first_run(outputs)
    time.sleep(0.3)
    assert outputs.waited and len(loads) == 1  # waiting for that run to finish
    outputs.ready.set()
    worker.join(30)
    assert len(loads) == 2  # then the next entry


def test_first_runs_are_noted_only_while_the_preloader_runs_and_only_the_first(monkeypatch):
    noted, note = [], preload.note_first_run
    monkeypatch.setattr(preload, "note_first_run", noted.append)
    x = xla.jax.numpy.ones(3)
    exe = xla._Executable(xla.jax.jit(lambda a: a * 2).lower(x).compile(), False,
                          xla._Signature(_one_leaf_program()))
    first = exe([np.ones(3, np.float32)])
    exe([np.ones(3, np.float32)])
    assert len(noted) == 1 and noted[0] is first
    note(first)  # no preloader running: nothing is kept
    assert preload._first_runs == []



_STARTED = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import threading
    from lazyx.backends import preload
    from lazyx.core import runtime
    runtime.from_host(np.zeros(3, np.float32))  # starts the backend
    for t in threading.enumerate():
        if t.name == "lazyx-preload":
            t.join()
    print(preload._jobs[0])
""")


def _started_in_a_new_process(**env):
    out = subprocess.run([sys.executable, "-c", _STARTED, SHIM], capture_output=True,
                         text=True, timeout=300,
                         env={**os.environ, "LAZYX_BACKEND": "xla", "LAZYX_TIERED": "0",
                              "LAZYX_CACHE_PRELOAD": "4", **env})
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()[-1]


def test_a_process_with_nothing_to_preload_warms_the_product_kernels_instead(tmp_path):
    (tmp_path / "empty").mkdir()
    assert _started_in_a_new_process(LAZYX_CACHE_DIR=str(tmp_path / "empty")) == \
        "warm-kernels"
    assert _started_in_a_new_process(LAZYX_CACHE_DIR="") == "warm-kernels"
    # off with the preloader, and beside a tiered first step
    assert _started_in_a_new_process(LAZYX_CACHE_DIR="", LAZYX_CACHE_PRELOAD="0") == "None"
    assert _started_in_a_new_process(LAZYX_CACHE_DIR="", LAZYX_TIERED="1") == "None"
    # an entry to preload: the preloader, whose run on zeros sets the kernels up
    _entry(disk_cache.DiskCache(str(tmp_path / "full"), 2**20), b"k" * 32)
    assert _started_in_a_new_process(LAZYX_CACHE_DIR=str(tmp_path / "full")) == "preload"


def test_the_kernel_warm_up_runs_on_the_device_and_never_raises():
    import jax
    preload.warm_kernels(jax.local_devices()[0])
    preload.warm_kernels(object())  # (not a device: jax refuses it; the warm-up says nothing)
