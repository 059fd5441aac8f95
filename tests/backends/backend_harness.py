"""Runs IR graphs on both backends in one process and compares them (and NumPy).

Graphs are built from `param` leaves (host NumPy values fed at run time), linearized with
runtime.linearize and compiled by each backend directly, so no global runtime state is used.
Several ops on the same inputs go into ONE program with several outputs: one XLA compile per
example instead of one per op keeps the suite fast.

The XLA side runs whenever jax imports; without jax (the numpy-only tox env `core`) only the
reference backend and NumPy are compared. If LAZYX_BACKEND=xla, a missing jax is an error,
so a broken xla environment cannot silently pass on the reference backend alone.
"""
import os

import numpy as np

from lazyx.backends.reference import ReferenceBackend
from lazyx.core import dtypes as dt
from lazyx.core import ir, runtime

REFERENCE = ReferenceBackend()
try:
    from lazyx.backends.xla import XlaBackend
    XLA = XlaBackend()
except ImportError:
    if os.environ.get("LAZYX_BACKEND", "xla") == "xla":
        raise
    XLA = None

# Relative tolerance per float dtype for results of the same inputs on two implementations.
RTOL = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 2e-5, "float64": 1e-11}
ATOL = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-12}


def leaf(value, dtype=None):
    """A run-time leaf holding `value` (converted to `dtype`, default: the value's own)."""
    value = np.asarray(value)
    return ir.param(value, dtype or dt.from_numpy(value.dtype))


_compiled = {}  # (backend name, program key) -> executable; like the runtime's cache


def run(backend, roots):
    """Each root's value as a NumPy array, computed by `backend` from one compiled program.

    Executables are reused for programs of equal structure (leaves are run-time params), so a
    hypothesis test recompiles only when it draws a new shape or dtype.
    """
    program, leaves = runtime.linearize(list(roots))
    exe = _compiled.get((backend.name, program.key))
    if exe is None:
        exe = _compiled[backend.name, program.key] = backend.compile(program)
    return [np.asarray(backend.to_host(out)) for out in exe([n.value for n in leaves])]


def assert_close(actual, expected, dtype, rtol=None, atol=None, what=""):
    """Exact for integers and bool; a dtype-scaled tolerance for floats (NaN equals NaN)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if dt.is_float(dtype) or dt.is_complex(dtype):
        wide = np.complex128 if dt.is_complex(dtype) else np.float64
        part = dt.real_part(dtype) if dt.is_complex(dtype) else dtype
        np.testing.assert_allclose(
            actual.astype(wide), expected.astype(wide), equal_nan=True,
            rtol=RTOL[part] if rtol is None else rtol,
            atol=ATOL[part] if atol is None else atol, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected.astype(actual.dtype), err_msg=what)


def check(roots, expected=None, rtol=None, atol=None, names=None):
    """Run `roots` (nodes) on both backends; they must agree, and match `expected` if given.

    Returns the reference results. `expected` is a list (None entries skip the NumPy check);
    `rtol`/`atol` may be a number or a dict name -> number (used for both comparisons).
    """
    roots = list(roots)
    names = names or [r.op for r in roots]
    ref = run(REFERENCE, roots)
    for r, value, name in zip(roots, ref, names):
        assert value.shape == r.shape, f"{name}: reference shape {value.shape} != IR {r.shape}"
        assert value.dtype == dt.to_numpy(r.dtype), f"{name}: reference dtype {value.dtype}"
    tol = lambda t, name: t.get(name) if isinstance(t, dict) else t  # noqa: E731
    if XLA is not None:
        for r, a, b, name in zip(roots, run(XLA, roots), ref, names):
            assert a.dtype == dt.to_numpy(r.dtype), f"{name}: xla dtype {a.dtype} != {r.dtype}"
            assert_close(a, b, r.dtype, tol(rtol, name), tol(atol, name),
                         what=f"{name} {r.dtype}{r.shape}: xla vs reference")
    if expected is not None:
        for r, want, got, name in zip(roots, expected, ref, names):
            if want is not None:
                assert_close(got, want, r.dtype, tol(rtol, name), tol(atol, name),
                             what=f"{name} {r.dtype}{r.shape}: reference vs numpy")
    return ref
