"""Integer edge cases where XLA's own rewrites used to disagree with the reference, or crash
(issue 18): divisions XLA folds, wrapped squares, and the float -> int conversion rule."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from backend_harness import REFERENCE, XLA, leaf, run

from lazyx.core import ops

BACKENDS = [b for b in (REFERENCE, XLA) if b is not None]
SIGNED = ["int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("dtype", SIGNED)
def test_wrapped_squares_keep_their_sign(backend, dtype):
    # XLA's simplifier took y*y and abs(y) to be >= 0: abs(x*x) became x*x, x*x < 0 false
    info = np.iinfo(dtype)
    values = np.array([info.min, info.min + 1, -1, 0, 3, info.max, int(math.isqrt(info.max)) + 1,
                       -(int(math.isqrt(info.max)) + 3)], dtype)
    x = leaf(values)
    square = ops.mul(x, x)
    zero = ops.broadcast_in_dim(leaf(np.zeros((), dtype)), shape=x.shape, broadcast_dimensions=())
    got = run(backend, [ops.abs_(square), ops.lt(square, zero), ops.lt(ops.abs_(x), zero)])
    with np.errstate(over="ignore"):
        expected = [np.abs(values * values), values * values < 0, np.abs(values) < 0]
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and np.array_equal(g, e), (g, e)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("dtype", SIGNED + ["uint8", "uint32", "uint64"])
def test_division_by_zero_and_min_by_minus_one(backend, dtype):
    # the IR's values (those of XLA's run-time division): x / 0 = -1, x % 0 = x, MIN / -1 = MIN
    info = np.iinfo(dtype)
    a = np.array([7, -7 if info.min else 7, info.min, info.max, info.min, 0], dtype)
    b = np.array([0, 0, 0, 0, -1 if info.min else 1, 0], dtype)
    quotient, remainder = run(backend, [ops.div(leaf(a), leaf(b)), ops.rem(leaf(a), leaf(b))])
    all_ones = np.array(-1).astype(dtype)
    minus = info.min < 0
    assert quotient.tolist() == [all_ones, all_ones, all_ones, all_ones,
                                 info.min if minus else info.min, all_ones]
    assert remainder.tolist() == [7, a[1], info.min, info.max, 0, 0]


_FOLDED = """
import numpy as np
from lazyx.backends.xla import XlaBackend
from lazyx.core import ir, ops, runtime
x = ir.param(np.array([3, 5], np.int32), "int32")
zero = ops.sub(x, x)  # XLA folds x - x to a constant 0, then the division of two constants
program, leaves = runtime.linearize([ops.div(zero, zero), ops.rem(zero, zero)])
backend = XlaBackend()
outs = backend.compile(program)([n.value for n in leaves])
print(*[np.asarray(backend.to_host(o)).tolist() for o in outs])
"""


@pytest.mark.skipif(XLA is None, reason="the XLA backend is not installed")
def test_folded_division_by_zero_does_not_kill_the_process():
    # (x - x) / (x - x) raised SIGFPE in XLA's constant folder. A subprocess, so that a
    # regression fails this test instead of ending pytest.
    env = dict(os.environ, LAZYX_BACKEND="xla",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", _FOLDED], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    assert proc.stdout.split() == ["[-1,", "-1]", "[0,", "0]"]


FLOATS = [math.nan, math.inf, -math.inf, -0.5, 0.5, 1.9, -1.9, 127.5, 128.0, -128.9, -129.0,
          255.9, 256.0, 2.0**31, -2.0**31 - 1, 2.0**32, 2.0**63, -2.0**63, 2.0**64, 1e300]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("source", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("target", SIGNED + ["uint8", "uint16", "uint32", "uint64"])
def test_float_to_int_saturates_with_nan_zero(backend, source, target):
    from lazyx.core import dtypes as dt
    with np.errstate(all="ignore"):
        floats = np.array(FLOATS, np.float64).astype(dt.to_numpy(source))
    (got,) = run(backend, [ops.convert(leaf(floats, source), dtype=target)])
    info = np.iinfo(target)

    def rule(v):
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return info.max if v > 0 else info.min
        return min(max(math.trunc(v), info.min), info.max)
    expected = np.array([rule(float(v)) for v in floats], target)
    assert got.dtype == expected.dtype and np.array_equal(got, expected), (floats, got, expected)
