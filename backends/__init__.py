"""Backends behind one small protocol.

A backend has `name`, and:
  from_host(ndarray) -> buffer        put host data on the device
  to_host(buffer) -> ndarray          read it back (waits for pending work)
  compile(program) -> executable      executable(list of leaf values) -> list of buffers
  lowered_text(program) -> str        what the backend compiled, for dumps
  shard(buffer, sharding) -> buffer   the buffer laid out as a core.sharding.Sharding

  borrow(ndarray) -> value            a data leaf's value for executables (not a buffer to
                                      keep): it may share the array's memory until wait()
                                      returns, so the caller must not write the array before
  wait(buffers)                       block until these results are computed
  code_mappings_short() -> bool       compiled code is running out of memory mappings:
                                      the runtime then drops half of its cached programs

and optionally (XLA):
  sharding_of(buffer) -> Sharding|None  a multi-device buffer's layout (part of its leaf's key)
  compiled_text(executable) -> str      the optimized, partitioned program, for dumps
  compile(program, fixed)               may also take the leaves (index -> value) its caller
                                        will never change and bind: XLA reads equal ones once
  executable.bind(fixed) -> callable    the executable with those leaves' values built in
  bound.inline() -> callable|None       the binding run on the calling thread, for a caller
                                        that passes host data only and waits at once
  memory_per_device() -> {device: bytes}
  mark_used(executable)                 its persistent-cache entry becomes the most recent
  asynchronous = True                   an executable returns before its results exist: a
                                        cut's scalar results may then run ahead of the rest
                                        (core/early_results.py)
  lend_to_host(buffer) -> DLPack-exportable|None  the buffer's own memory when it is host memory
                                        a caller may take over (torch.compile outputs no one
                                        else holds) or share read-only (tf.Variable stores)

Leaf values are buffers for data leaves and host NumPy values for param leaves. A buffer may
also be a read-only NumPy array (the reference backend's, and XLA's results of tiny programs run
on the calling thread: backends/xla_inline.py); every backend method takes those too.
"""
import sys

import numpy as np

from ..core.config import BACKENDS


def load(name):
    """The backend called `name`; a clear error for unknown names or a missing jax."""
    if name == "reference":
        from .reference import ReferenceBackend
        return ReferenceBackend()
    if name == "xla":
        # importing jax draws from NumPy's global generator (its k8s_cluster module has an
        # `np.random.rand(5)` default argument): `np.random.seed(0); lnp.asarray(x)` then drew
        # other dropout masks and initial weights than NumPy's own run. Put the stream back.
        state = None if "jax" in sys.modules else np.random.get_state()
        try:
            try:
                import jax  # noqa: F401
            except ImportError as err:
                raise ImportError("LAZYX_BACKEND=xla needs jax and jaxlib: pip install "
                                  "'lazyx[xla]' (or set LAZYX_BACKEND=reference for the NumPy "
                                  "interpreter)") from err
            from .xla import XlaBackend
            return XlaBackend()
        finally:
            if state is not None:
                np.random.set_state(state)
    raise ValueError(f"lazyx: unknown backend {name!r}; valid choices: {', '.join(BACKENDS)}")
