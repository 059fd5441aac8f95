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
_ready = {}  # key (bytes) -> compiled executable, loaded and run once
_in_flight = {}  # key -> threading.Event set once the preloader is done with it
_claimed = set()  # keys a cut loaded itself: the preloader skips them
_lock = threading.Lock()
_started = []
_settled = threading.Event()


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
        done.wait(IN_FLIGHT_WAIT_S)
    with _lock:
        compiled = _ready.pop(key, None)
        if compiled is None:
            _claimed.add(key)
        return compiled


def start(load):
    """Begin preloading (once per process). `load(payload)` turns a stored payload into
    (compiled, input avals), or raises."""
    if _started:
        return
    _started.append(True)
    count, cache = config.cache_preload(), disk_cache.open_cache()
    if cache is None or count <= 0:
        return
    threading.Thread(target=_preload, args=(cache, count, load), name="lazyx-preload",
                     daemon=False).start()


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


def _preload(cache, count, load):
    import jax
    main = threading.main_thread()
    for key in recent_keys(cache, count):
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
        finally:
            with _lock:
                del _in_flight[key]
            done.set()


def _load_and_run(cache, key, load, jax):
    """The entry's executable, loaded and run once on zeros; None where it cannot be."""
    payload = cache.read(key)
    if payload is None:
        return None
    try:
        compiled, avals = load(payload)
        if sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in avals) > MAX_INPUT_BYTES:
            return None
        with jax.enable_x64(any(a.dtype.itemsize == 8 for a in avals)):
            jax.block_until_ready(compiled(*[np.zeros(a.shape, a.dtype) for a in avals]))
    except Exception:  # noqa: BLE001 -- a warm-up only: the cut loads it again if it must
        return None
    return compiled
