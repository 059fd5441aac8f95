"""Every lowered ufunc against NumPy on the same inputs: dtype, shape and numbers.

Dtype combinations NumPy rejects must be rejected with the same exception type, at the call.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.frontends.numpy._ufuncs import UFUNCS
from numpy_checks import assert_matches

DTYPES = ["float64", "float32", "int64", "int32", "int8", "uint8", "bool"]
UNARY = sorted((u for u in UFUNCS if u.nin == 1), key=lambda u: u.__name__)
BINARY = sorted((u for u in UFUNCS if u.nin == 2), key=lambda u: u.__name__)
# Looser tolerance where XLA's float32 kernels differ from NumPy's by a few ulps.
TOL = {"float32": 2e-5, "float64": 1e-12, "float16": 2e-3}
# Few shapes: every new (op, shape, dtype) is an XLA compile; broadcasting is still covered.
SHAPE_PAIRS = [((), ()), ((3,), ()), ((), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)),
               ((2, 3), (2, 3))]


def values(dtype, shape, ufunc):
    small = ufunc in (np.power, np.float_power, np.ldexp, np.left_shift, np.right_shift)
    if dtype == "bool":
        elements = st.just(True) if ufunc is np.reciprocal else st.booleans()
    elif np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = (0, 6) if small else (max(info.min, -50), min(info.max, 50))
        elements = st.integers(lo, hi)
        if ufunc is np.reciprocal:  # NumPy's own 1 // 0 differs by dtype (hardware division)
            elements = elements.filter(lambda v: v != 0)
    else:
        bound = 4.0 if small else 20.0
        # no subnormals: XLA on CPU flushes them to zero
        elements = st.floats(-bound, bound, width=np.dtype(dtype).itemsize * 8,
                             allow_subnormal=False) | \
            st.sampled_from([0.0, -0.0, 0.5, -1.5, 2.0])
    return hnp.arrays(dtype, shape, elements=elements)


def run_both(ufunc, arrays):
    with np.errstate(all="ignore"):
        try:
            expected = ufunc(*arrays)
        except TypeError as err:
            with pytest.raises(TypeError):
                ufunc(*[lnp.asarray(a) for a in arrays])
            return None, err
    lazy = ufunc(*[lnp.asarray(a) for a in arrays])
    return lazy, expected


@pytest.mark.parametrize("ufunc", UNARY, ids=lambda u: u.__name__)
@settings(max_examples=6)
@given(data=st.data())
def test_unary_ufunc(ufunc, data):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(st.sampled_from([(), (3,), (2, 3)]))
    x = data.draw(values(dtype, shape, ufunc))
    lazy, expected = run_both(ufunc, [x])
    if lazy is not None:
        assert_matches(lazy, expected, rtol=TOL.get(np.asarray(expected).dtype.name),
                       atol=_flushed(expected))


@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
@settings(max_examples=6)
@given(data=st.data())
def test_binary_ufunc(ufunc, data):
    dtypes = data.draw(st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES)))
    if ufunc is np.ldexp:
        dtypes = (dtypes[0] if dtypes[0].startswith("float") else "float64", "int32")
    shape_x, shape_y = data.draw(st.sampled_from(SHAPE_PAIRS))
    x = data.draw(values(dtypes[0], shape_x, ufunc))
    y = data.draw(values(dtypes[1], shape_y, ufunc))
    lazy, expected = run_both(ufunc, [x, y])
    if lazy is None:
        return
    if ufunc.nout == 2:
        for a, b in zip(lazy, expected):
            assert_matches(a, b, rtol=TOL.get(b.dtype.name), atol=_flushed(b))
    else:
        assert_matches(lazy, expected, rtol=TOL.get(np.asarray(expected).dtype.name),
                       atol=_flushed(expected))


def _flushed(expected):
    """The absolute tolerance for a result XLA:CPU may flush to zero (subnormals: docs/numpy.md):
    divmod(1, 2.78e-308)'s remainder is 6.8e-309 in NumPy and 0.0 here."""
    dtype = np.asarray(expected).dtype
    return float(np.finfo(dtype).tiny) if dtype.kind in "fc" else 0.0


@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.subtract, np.true_divide,
                                   np.power, np.maximum, np.less, np.floor_divide,
                                   np.remainder], ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8", "int64", "float64"])
@pytest.mark.parametrize("scalar", [3, 2.5, True])
def test_python_scalars_are_weak(ufunc, dtype, scalar):
    x = np.arange(1, 5).astype(dtype)
    with np.errstate(all="ignore"):
        try:
            expected, expected_r = ufunc(x, scalar), ufunc(scalar, x)
        except TypeError:
            with pytest.raises(TypeError):
                ufunc(lnp.asarray(x), scalar)
            return
    assert_matches(ufunc(lnp.asarray(x), scalar), expected, rtol=1e-6)
    assert_matches(ufunc(scalar, lnp.asarray(x)), expected_r, rtol=1e-6)


def test_out_of_range_python_int_raises_like_numpy():
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        np.ones(3, np.int8) + 1000
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        lnp.ones(3, dtype=lnp.int8) + 1000


def test_new_scalar_value_does_not_recompile():
    x = lnp.asarray(np.linspace(0, 1, 8))
    lazyx.sync()
    lazyx.reset_metrics()
    for lr in (0.1, 0.2, 0.3):
        np.asarray(x * lr + 1)
    m = lazyx.metrics()
    assert m["compiles"] == 1 and m["cache_hits"] == 2


OPERATORS = ["__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__",
             "__pow__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__",
             "__and__", "__or__", "__xor__", "__lshift__", "__rshift__", "__radd__",
             "__rsub__", "__rmul__", "__rtruediv__", "__rpow__", "__rfloordiv__", "__rmod__"]


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_operators(op, dtype):
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype)
    y = np.array([3, 1, 2], dtype)
    if dtype.startswith("float") and op.strip("_") in ("and", "or", "xor", "lshift",
                                                       "rshift"):
        with pytest.raises(TypeError):
            getattr(lnp.asarray(x), op)(lnp.asarray(y))
        return
    with np.errstate(all="ignore"):
        expected = getattr(x, op)(y)
    assert_matches(getattr(lnp.asarray(x), op)(lnp.asarray(y)), expected)
    assert_matches(getattr(lnp.asarray(x), op)(y), expected)


@pytest.mark.parametrize("op", ["__neg__", "__pos__", "__abs__", "__invert__"])
def test_unary_operators(op):
    x = np.array([-2, 0, 3], np.int16)
    assert_matches(getattr(lnp.asarray(x), op)(), getattr(x, op)())


@pytest.mark.parametrize("op,value", [("__iadd__", 2), ("__isub__", 1.5), ("__imul__", 3),
                                      ("__itruediv__", 4.0), ("__ipow__", 2),
                                      ("__ifloordiv__", 3), ("__imod__", 4)])
def test_inplace_operators(op, value):
    x = np.arange(6.0).reshape(2, 3)
    lx = lnp.asarray(x)
    handle = lx.__lazyx_handle__
    getattr(x, op)(value)
    result = getattr(lx, op)(value)
    assert result is lx and lx.__lazyx_handle__ is handle
    assert_matches(lx, x)


def test_inplace_cast_error_matches_numpy():
    a = np.ones(3, np.int64)
    with pytest.raises(TypeError) as numpy_err:
        a += 1.5
    la = lnp.ones(3, dtype=lnp.int64)
    with pytest.raises(type(numpy_err.value), match="Cannot cast ufunc 'add' output"):
        la += 1.5


def test_inplace_shape_error_matches_numpy():
    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        a = np.ones(3)
        a += np.ones((2, 3))
    la = lnp.ones(3)
    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        la += lnp.ones((2, 3))


def test_out_argument_with_lazy_array():
    x = np.arange(4.0)
    out = lnp.zeros(4)
    returned = np.multiply(lnp.asarray(x), 2, out=out)
    assert returned is out
    assert_matches(out, x * 2)
    q, r = lnp.zeros(4), lnp.zeros(4)
    np.divmod(lnp.asarray(x), 3, out=(q, r))
    assert_matches(q, x // 3)
    assert_matches(r, x % 3)


def test_out_argument_with_numpy_array():
    out = np.zeros(4)
    np.add(lnp.arange(4.0), 1, out=out)
    np.testing.assert_array_equal(out, np.arange(4.0) + 1)


REDUCE = [np.add, np.multiply, np.maximum, np.minimum, np.logical_and, np.logical_or]


@pytest.mark.parametrize("ufunc", REDUCE, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_ufunc_reduce(ufunc, dtype, axis, keepdims):
    x = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    try:
        expected = ufunc.reduce(x, axis=axis, keepdims=keepdims)
    except TypeError:
        with pytest.raises(TypeError):
            ufunc.reduce(lnp.asarray(x), axis=axis, keepdims=keepdims)
        return
    assert_matches(ufunc.reduce(lnp.asarray(x), axis=axis, keepdims=keepdims), expected,
                   rtol=1e-6)


@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.maximum, np.minimum],
                         ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", ["float64", "int16"])
@pytest.mark.parametrize("axis", [0, 1])
def test_ufunc_accumulate(ufunc, dtype, axis):
    x = (np.arange(12).reshape(3, 4) % 5 + 1).astype(dtype)
    assert_matches(ufunc.accumulate(lnp.asarray(x), axis=axis), ufunc.accumulate(x, axis=axis))


def test_unlowered_ufunc_method_falls_back():
    lazyx.reset_metrics()
    x = np.arange(4.0)
    with pytest.warns(RuntimeWarning, match="no lowering"):
        result = np.subtract.reduceat(lnp.asarray(x), [0, 2])
    assert_matches(result, np.subtract.reduceat(x, [0, 2]))
    assert lazyx.metrics()["fallback_ops"] == {"numpy.subtract.reduceat": 1}


def _half_ulps(got, want):
    """The largest distance in float16 ulps between two float16 arrays (NaN at NaN: 0)."""
    def ordered(a):
        bits = np.asarray(a, np.float16).view(np.int16).astype(np.int64)
        return np.where(bits < 0, -32768 - bits, bits)
    both_nan = np.isnan(got) & np.isnan(want)
    return int(np.max(np.where(both_nan, 0, np.abs(ordered(got) - ordered(want)))))


_HALF = np.random.default_rng(11).standard_normal(2000).astype(np.float16) * np.float16(3)
_HALF_CASES = {  # operands in each ufunc's domain
    np.hypot: (_HALF, _HALF[::-1]), np.logaddexp: (_HALF, _HALF[::-1]),
    np.logaddexp2: (_HALF, _HALF[::-1]), np.log2: (np.abs(_HALF) + 0.01,),
    np.log10: (np.abs(_HALF) + 0.01,), np.deg2rad: (_HALF,), np.rad2deg: (_HALF,),
    np.expm1: (_HALF,), np.arcsin: (np.clip(_HALF / 10, -1, 1),),
    np.arccos: (np.clip(_HALF / 10, -1, 1),), np.arcsinh: (_HALF,),
    np.arccosh: (np.abs(_HALF) + 1,), np.arctanh: (np.clip(_HALF / 10, -0.99, 0.99),),
}


@pytest.mark.parametrize("ufunc", sorted(_HALF_CASES, key=lambda u: u.__name__),
                         ids=lambda u: u.__name__)
def test_float16_ufuncs_round_once_as_numpy_does(ufunc):
    """NumPy's float16 loops compute in float32 and round once. Lowered as several IR ops
    rounded in float16 after each (hypot, logaddexp, log2), or expanded by XLA:CPU in float16
    (expm1, arcsin, arccosh), results were 1-2 ulps off on up to half the inputs, and
    logaddexp 9 % off near a zero result (the X-ray tutorial's np.hypot of two uint8 Sobel
    images resolves to the float16 loop)."""
    operands = [np.asarray(x, np.float16) for x in _HALF_CASES[ufunc]]
    want = ufunc(*operands)
    got = ufunc(*[lnp.asarray(x) for x in operands])
    assert got.dtype == want.dtype == np.float16
    got = np.asarray(got)
    assert _half_ulps(got, want) <= 1  # (a float32 result on a float16 rounding boundary)
    assert np.mean(got != want) < 0.002


_DIVIDEND = np.arange(1, 400, dtype=np.float64) / 7.3 - 20.0


def _divisions(x, y, e, p):
    """Quotients XLA's simplifier rewrote into other arithmetic: by a Python number, a 0-d
    value, a column broadcast along rows, sqrt, exp and power results (e, p: exp(y / 50) and
    y ** 1.5, computed lazily, as XLA's exp and pow need not round as NumPy's do), and nested
    quotients."""
    rows = x.reshape(21, 19) / y[:21].reshape(21, 1)
    return {
        "x / 10.0": x / 10.0, "x / 0.1": x / 0.1, "x / y.max()": x / y.max(), "rows": rows,
        "x / sqrt(y)": x / np.sqrt(y), "x / exp(y)": x / e, "x / y ** 1.5": x / p,
        "(x / y) / 3.0": (x / y) / 3.0, "x / (y / 3.0)": x / (y / 3.0),
        "x / -(2.5 * 4.0)": x / -(np.float64(2.5) * 4.0),
    }


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_division_is_ieee_division(dtype):
    """x / s is NumPy's correctly rounded quotient on every backend. XLA's algebraic
    simplifier made x / broadcast(s) a product with 1 / s (a third of these quotients one
    ulp off, `floor(0.7 / 0.1)` 7.0 for NumPy's 6.0), and x / sqrt(y) a product with
    rsqrt(y), with no flag to stop it (backends/xla.py, _exact_divisions)."""
    x = _DIVIDEND.astype(dtype)
    y = (np.abs(_DIVIDEND) + 0.5).astype(dtype)[::-1].copy()
    lazy_y = lnp.asarray(y)
    e, p = np.asarray(np.exp(lazy_y / 50.0)), np.asarray(lazy_y ** 1.5)
    want = _divisions(x, y, e, p)
    got = _divisions(lnp.asarray(x), lazy_y, np.exp(lazy_y / 50.0), lazy_y ** 1.5)
    for name in want:
        assert np.array_equal(np.asarray(got[name]), want[name]), name


def test_one_tenth_floors_as_in_numpy():
    x = _DIVIDEND
    assert np.array_equal(np.asarray(np.floor(lnp.asarray(x) / 0.1)), np.floor(x / 0.1))
    y = np.array([3.0, 0.7, 4.35])
    assert np.floor(lnp.asarray(y) / 0.1).tolist() == np.floor(y / 0.1).tolist() == [30.0, 6.0, 43.0]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_logs_and_exp2_are_exact_at_exact_powers(dtype):
    """log2(2**k), log10(10**k) and exp2(k) are exact, as C's (NumPy's) are: log(x) / log(b)
    gave log2(8) = log10(1000) = 2.9999999999999996 and XLA's exp2(3.0) 7.999999999999998,
    so `int(np.log2(x))` and `np.exp2(k).astype(int)` came out one less."""
    k = np.arange(-14, 15).astype(dtype)
    for ufunc, x in ((np.log2, np.exp2(k)), (np.exp2, k)):
        got = ufunc(lnp.asarray(x))
        assert np.array_equal(np.asarray(got), ufunc(x)), ufunc.__name__
    # (NumPy's own float32 log10 is not exact there: 2.0000002 for 100; C's log10f is)
    e = np.arange(0, 5 if dtype == "float16" else 11).astype(dtype)
    tens = np.array([10.0 ** i for i in e.tolist()], dtype)
    assert np.array_equal(np.asarray(np.log10(lnp.asarray(tens))), e)
    assert int(np.log2(lnp.asarray(8.0))) == 3
    assert np.exp2(lnp.asarray(np.arange(11.0))).astype(int).tolist() == [2 ** i for i in range(11)]
    # ldexp is lowered through exp2
    assert np.array_equal(np.asarray(np.ldexp(lnp.asarray(np.ones(5, dtype)), np.arange(5))),
                          np.ldexp(np.ones(5, dtype), np.arange(5)))
