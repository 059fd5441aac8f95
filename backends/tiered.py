"""LAZYX_TIERED=1: a new graph's first steps run on the reference interpreter while XLA compiles.

The XLA backend hands the runtime a TieredExecutable instead of waiting for the compiler. The
compile (and the disk-cache write) runs in a background thread; each call looks once at
whether the XLA executable is ready and runs either it or the interpreter -- never both, so no
step runs twice. The interpreter reads its inputs on the host (jax arrays or the previous
interpreted step's results) and puts its results on the device as jax arrays, so the values
flow across the hand-over like any other step's. Interpreted steps give the reference
backend's numbers (NumPy's rounding), not XLA's.

The compile starts once the first interpreted step has run: jax's tracing and lowering hold
the GIL, and started first they would slow the very step tiering is meant to return quickly.

The compile thread is not a daemon: Python waits for it at exit. A daemon thread inside XLA's
compiler when the interpreter shuts down aborts the process ("terminate called after throwing
an instance of ''", exit status 134), so a short script's exit would be a crash.

Threads: the executable is published by one attribute assignment (atomic), and `jax.enable_x64`
is thread-local, so the background lowering keeps its own 64-bit setting.
"""
import threading
import warnings

import numpy as np

from ..core import metrics
from .reference import ReferenceBackend


class TieredExecutable:
    def __init__(self, backend, program, signature, x64, cache, key):
        self._backend = backend
        self._interpreter = ReferenceBackend().compile(program)
        # the runtime's byte-bounded cache reads this once: count the XLA program it becomes
        from .xla import _EXECUTABLE_OVERHEAD
        self.nbytes = _EXECUTABLE_OVERHEAD + getattr(self._interpreter, "nbytes", 0)
        self._xla = None
        self._error = None
        self._ready = threading.Event()
        self._start_lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._compile, args=(program, signature, x64, cache, key),
            name="lazyx-compile", daemon=False)  # see below

    def start(self):
        """Start the background compile (once; later calls do nothing)."""
        with self._start_lock:
            if self._thread is not None:
                self._thread.start()
                self._thread = None

    def _compile(self, program, signature, x64, cache, key):
        try:
            self._xla = self._backend.compile_now(program, signature, x64, cache, key)
        except Exception as err:  # the interpreter keeps running the graph; say why once
            self._error = err
        finally:
            self._ready.set()

    def wait(self, timeout=None):
        """Block until the background compile has finished (True) or `timeout` passed."""
        self.start()
        return self._ready.wait(timeout)

    @property
    def compiled(self):
        return self._xla is not None

    def __call__(self, leaf_values):
        xla = self._xla  # read once: this step runs on exactly one of the two
        if xla is not None:
            return xla(leaf_values)
        if self._error is not None:
            err, self._error = self._error, None
            warnings.warn(f"lazyx: XLA could not compile a graph ({type(err).__name__}: {err}); "
                          f"it keeps running on the reference interpreter", RuntimeWarning,
                          stacklevel=2)
        metrics.count("interpreted_steps")
        results = self._interpreter([np.asarray(v) for v in leaf_values])
        # np.array: the interpreter may return one of its inputs or a view of one
        results = [self._backend.put_owned(np.array(r)) for r in results]
        self.start()
        return results
