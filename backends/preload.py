"""Warm start: a new process readies the executables the previous ones used last.

A disk-cache hit still costs its first step two things the compiler does not: loading the
executable (10-40 ms for a small training step) and its first run, in which XLA:CPU sets up
the loaded code (about 30 ms, measured on a deserialized 2-layer MLP step: first run 31 ms,
second 1.1 ms, also after another program had run). Both depend only on the executable, so
when the XLA backend starts, one background thread loads the LAZYX_CACHE_PRELOAD (default 4)
most recently used entries of the disk cache and runs each once on zeros. A cut whose program
is among them takes it from here instead of from disk (xla.py `_load`), and its first step
runs at steady speed. The user's own first steps trace meanwhile (a model's construction and
its first trace take longer than this), so the work is off their critical path.

Where the foreground catches up with it, the foreground goes first. A cut that waits for an
entry while it is loaded gets it without the run on zeros (its own run sets the code up as
well). After handing an executable over, or while the process runs any program for the first
time, the preloader waits for that run before its next entry, which would share the cores
with it. (A cut that comes during the run on zeros waits for it: running the executable
beside it finished no sooner on two cores, measured on W2.)

A process with nothing to preload (a cold cache, or none) sets up, on the same kind of thread,
what every process's first training step on a CPU pays once: oneDNN's matrix-product kernels
(`warm_kernels`).

Safe by construction: the entries are read-only here (never rewritten, removed or warned
about; `_load` does that for the entries it uses), an executable is a pure function of its
inputs (so a run on zeros has no effect but its warm-up), programs with more than
`MAX_INPUT_BYTES` of inputs are skipped, and the thread stops when the main thread ends (it is
not a daemon: a daemon thread inside XLA at interpreter shutdown aborts the process) or once
the process runs some program a second time (its steady state, see `settle`).
"""
import os
import threading

import numpy as np

from ..core import config
from . import disk_cache

MAX_INPUT_BYTES = 256 << 20
# A cut that needs the entry being preloaded right now waits for it (up to this long) instead
# of loading and first-running it a second time beside the preloader: W2's warm first step
# reached its cut 10-30 ms after the preload began, and both copies then shared two cores.
IN_FLIGHT_WAIT_S = 60.0
_ready = {}  # key (bytes) -> compiled executable, loaded (and run once unless wanted)
_in_flight = {}  # key -> threading.Event set once the preloader is done with it
_claimed = set()  # keys a cut loaded itself: the preloader skips them
_wanted = set()  # keys a cut waits for: handed over once loaded, not run on zeros first
_lock = threading.Lock()
_started = []
_settled = threading.Event()
# The foreground's first runs, which the preloader lets finish before its next entry: W2's
# warm first step ran its program in 50 ms beside the preloader's next entry, 25 ms alone.
_running = []  # True while the preloader thread runs (first runs are only noted then)
_first_runs = []  # outputs of programs the process ran for the first time
_handed_out = threading.Event()  # a cut took an executable from here, and may not have run it
_first_run_noted = threading.Event()
# How long the preloader waits for the cut it handed an executable to to run it: the cut
# runs it at once, but it may also fail before running anything.
HANDOVER_WAIT_S = 1.0


def settle():
    """The process has run some program a second time: it is in its steady state, and what
    is left to preload would only compete with its steps for the cores (measured: with four
    unrelated entries still loading, a W1 step's execution ran inline at 1-4 ms instead of
    0.1 ms for its first ~20 steps). The preloader stops at its next entry."""
    _settled.set()


def take(key):
    """The preloaded executable for `key` (handed out once), or None: then the caller loads
    it itself, and the preloader leaves it alone. Waits while the preloader is busy with it."""
    with _lock:
        done = _in_flight.get(key)
        if done is not None:
            _wanted.add(key)
    if done is not None:
        done.wait(IN_FLIGHT_WAIT_S)
    with _lock:
        compiled = _ready.pop(key, None)
        if compiled is None:
            _claimed.add(key)
        else:
            _handed_out.set()
        return compiled


def note_first_run(outputs):
    """The process has dispatched a program's first run (its `outputs`, not ready yet): the
    preloader finishes the entry it is busy with, then waits for this run before the next
    one. Both would otherwise share the cores, and the step waiting for this run is the
    foreground's (a first step, typically)."""
    if _running:
        with _lock:
            _first_runs.append(outputs)
        _first_run_noted.set()


def _let_the_foreground_run(jax):
    """(On the preloader thread, between entries.) Wait for the first runs the process has
    dispatched, and for the one a cut that took an executable from here is about to
    dispatch."""
    if _handed_out.is_set():
        _first_run_noted.wait(HANDOVER_WAIT_S)
        _handed_out.clear()
    _first_run_noted.clear()
    with _lock:
        runs = list(_first_runs)
        _first_runs.clear()
    for outputs in runs:
        try:
            jax.block_until_ready(outputs)
        except Exception:  # noqa: BLE001 -- the run's own caller sees its errors
            pass


def start(load, device=None):
    """Begin preloading (once per process). `load(payload)` turns a stored payload into
    (compiled, input avals), or raises. `device`: the backend's jax device; on a CPU, a
    process with nothing to preload sets up the matrix-product kernels instead (warm_kernels)."""
    if _started:
        return
    count, cache = config.cache_preload(), disk_cache.open_cache()
    # (not beside a tiered first step: its interpreter and background compile have the cores)
    warm = device if device is not None and device.platform == "cpu" and \
        not config.tiered() else None
    _started.append(True)
    if count > 0 and (cache is not None or warm is not None):
        # (the folder is scanned there, off the caller: a large cache holds many entries)
        threading.Thread(target=_background, args=(cache, count, load, warm),
                         name="lazyx-preload", daemon=False).start()
    else:
        _jobs.append(None)


_jobs = []  # what the background thread did, for tests: "preload", "warm-kernels" or None


def _background(cache, count, load, warm):
    """Preload the cache's newest entries; where there are none, warm `warm`'s product
    kernels instead (an entry's run on zeros sets them up as well)."""
    keys = recent_keys(cache, count) if cache is not None else []
    if keys:
        _jobs.append("preload")
        _preload(cache, keys, load)
    elif warm is not None:
        _jobs.append("warm-kernels")
        warm_kernels(warm)
    else:
        _jobs.append(None)


# Run once per process by warm_kernels: a float32 product with a transposed operand (a
# weight gradient's x.T @ dy) of a size XLA:CPU hands to oneDNN.
_WARM_SIDE = 128


def warm_kernels(device):
    """A cold process's first training step (nothing in the disk cache to preload) spent 28 of
    its 40 ms first run in oneDNN generating its matrix-product kernels (perf: xbyak_gemm_t::
    generate under a call_once), a cost each process pays once, at its first product that
    XLA:CPU hands to oneDNN. This runs such a product on a background thread while the user's
    code builds its model and traces, at about 100 ms of the other core's time. Measured in
    alternate cold processes (`lazyx bench`'s W1, one thread): first step 352-362 -> 302-322
    ms through NumPy, 415-439 -> 370-417 through torch. (8x8 did not reach oneDNN with
    `--xla_cpu_multi_thread_eigen=false`, the bench's single-thread flags; 64x64 did.)"""
    import jax
    try:
        a = jax.device_put(np.ones((_WARM_SIDE, _WARM_SIDE), np.float32), device)
        jax.block_until_ready(jax.jit(lambda m: m.T @ m)(a))
    except Exception:  # noqa: BLE001 -- a warm-up only: the first real product pays it
        pass


def recent_keys(cache, count):
    """The `count` most recently used keys in the cache folder, newest first."""
    try:
        entries = [(e.stat().st_mtime, e.name) for e in os.scandir(cache.folder)
                   if e.name.endswith(disk_cache.SUFFIX)]
    except OSError:
        return []
    keys = []
    for _, name in sorted(entries, reverse=True)[:count]:
        try:
            keys.append(bytes.fromhex(name[:-len(disk_cache.SUFFIX)]))
        except ValueError:
            continue
    return keys


def _preload(cache, keys, load):
    _running.append(True)
    try:
        _preload_entries(cache, keys, load)
    finally:
        _running.clear()
        with _lock:
            _first_runs.clear()


def _preload_entries(cache, keys, load):
    import jax
    main = threading.main_thread()
    for key in keys:
        _let_the_foreground_run(jax)
        if not main.is_alive() or _settled.is_set():  # exiting, or steady: stop here
            return
        with _lock:
            if key in _claimed:
                continue
            done = _in_flight[key] = threading.Event()
        try:
            compiled = _load_and_run(cache, key, load, jax)
            with _lock:
                if compiled is not None:
                    _ready[key] = compiled
                    if key in _wanted:  # (before the cut wakes: it runs it next)
                        _handed_out.set()
        finally:
            with _lock:
                del _in_flight[key]
            done.set()


def _load_and_run(cache, key, load, jax):
    """The entry's executable, loaded and run once on zeros; None where it cannot be.

    Not run when a cut already waits for it: the cut's own run sets the code up as well, and
    a run on zeros first would add a whole execution to that step's time."""
    payload = cache.read(key)
    if payload is None:
        return None
    try:
        compiled, avals = load(payload)
        if sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in avals) > MAX_INPUT_BYTES:
            return None
        with _lock:
            if key in _wanted:
                return compiled
        with jax.enable_x64(any(a.dtype.itemsize == 8 for a in avals)):
            jax.block_until_ready(compiled(*[np.zeros(a.shape, a.dtype) for a in avals]))
    except Exception:  # noqa: BLE001 -- a warm-up only: the cut loads it again if it must
        return None
    return compiled
