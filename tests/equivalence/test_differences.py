"""Where the frameworks genuinely differ, each frontend follows its own framework.

Each case is one expression per framework; the lazy result must match that framework's eager
result in dtype and value, or raise the same exception type when eager raises.
"""
import numpy as np
import pytest

from harness import FRONTENDS, _eager_inputs, _lazy_inputs, available, framework, to_numpy

INT32 = np.array([7, -7, 9], np.int32)
INT32_B = np.array([2, 2, -4], np.int32)
INT64 = np.array([1, 2, 3], np.int64)
UINT8 = np.array([200, 3, 7], np.uint8)
INT8 = np.array([-100, 3, 7], np.int8)
HALVES = np.array([0.5, 1.5, 2.5, -2.5], np.float32)
ZEROS_NAN = np.array([np.nan, -0.0, 0.0, -2.0, 3.0, -np.inf], np.float32)

CASES = {
    # NumPy: a Python float makes an int array float64; torch: the default float32; TF: an error
    "int_array_plus_python_float": ([INT32], lambda m, a: a + 1.5),
    # true division of ints: float64 in NumPy and TF, float32 (default dtype) in torch
    "int_true_division": ([INT32, INT32_B], lambda m, a, b: a / b),
    # mixing int widths: NumPy and torch promote to int64; TF refuses
    "int32_plus_int64": ([INT32, INT64], lambda m, a, b: a + b),
    # uint8 + int8: int16 in NumPy and torch; TF refuses
    "uint8_plus_int8": ([UINT8, INT8], lambda m, a, b: a + b),
    # floor division and modulo of negative ints: all three floor (C would truncate)
    "negative_floor_div": ([INT32, INT32_B], lambda m, a, b: (a // b, a % b)),
    # rounding halves: all three round half to even
    "round_half_even": ([HALVES], lambda m, a: m.round(a)),
    # sign: +0 at -0.0 in all three (IEEE's, XLA's, keeps -0.0); NaN at NaN in NumPy and TF,
    # 0 in torch
    "sign_of_zeros_and_nan": ([ZEROS_NAN], lambda m, a: m.sign(a)),
    # argmax over a NaN: NumPy and torch pick the first NaN, TF's kernel never picks one
    "argmax_with_nan": ([ZEROS_NAN], lambda m, a: m.argmax(a)),
}


def _run(frontend, inputs, fn, lazy):
    mod = framework(frontend)
    values = (_lazy_inputs if lazy else _eager_inputs)(frontend, inputs)
    try:
        out = fn(mod, *values)
    except Exception as exc:  # compared by type below
        return exc
    outs = out if isinstance(out, tuple) else (out,)
    return [to_numpy(frontend, o) for o in outs]


@pytest.mark.parametrize("frontend", [f for f in FRONTENDS if available(f)])
@pytest.mark.parametrize("case", sorted(CASES))
def test_frontend_follows_its_framework(frontend, case):
    inputs, fn = CASES[case]
    eager = _run(frontend, inputs, fn, lazy=False)
    lazy = _run(frontend, inputs, fn, lazy=True)
    if isinstance(eager, Exception):
        assert isinstance(lazy, type(eager)), f"eager raised {eager!r}, lazy gave {lazy!r}"
        return
    assert not isinstance(lazy, Exception), f"lazy raised {lazy!r}; eager gave {eager}"
    for e, l in zip(eager, lazy):
        assert l.dtype == e.dtype, f"{case}/{frontend}: lazy {l.dtype}, eager {e.dtype}"
        np.testing.assert_allclose(l, e, rtol=1e-6)
        if e.dtype.kind == "f":  # (NaN where NaN, and the sign of a zero)
            np.testing.assert_array_equal(np.isnan(l), np.isnan(e))
            np.testing.assert_array_equal(np.signbit(l), np.signbit(e))


def test_the_frameworks_really_differ():
    """Guard: the cases above are differences, not accidents of one framework's version."""
    present = [f for f in FRONTENDS if available(f)]
    if len(present) < 2:
        pytest.skip("needs two frameworks")
    outcomes = {f: _run(f, *CASES["int_true_division"], lazy=False) for f in present}
    dtypes = {f: (o[0].dtype if not isinstance(o, Exception) else type(o)) for f, o in outcomes.items()}
    if "torch" in dtypes and "numpy" in dtypes:
        assert dtypes["torch"] == np.float32 and dtypes["numpy"] == np.float64
