"""Element-wise primitives: both backends agree, and match NumPy (or Python's math) where
those have the op. Integer and bool results are exact; floats use a dtype-scaled tolerance.

IR semantics that NumPy leaves undefined follow XLA (see backends/reference.py): integer
x / 0 == -1 (all bits set), x % 0 == x, shifts by a negative amount or past the bit width give
0 (left, logical right) or the sign fill (arithmetic right), and an arithmetic right shift
of an unsigned type fills with its top bit.
"""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from backend_harness import check, leaf
from lazyx.core import dtypes as dt
from lazyx.core import ops

# Few distinct shapes: the harness reuses a compiled program per shape, and XLA compiles cost
# ~50 ms per op; values still vary freely between examples.
SHAPES = st.sampled_from([(), (2, 3, 4)])
INTS = dt.SIGNED + dt.UNSIGNED


def np_dtype(dtype):
    return dt.to_numpy(dtype)


def float_array(draw, dtype, shape, lo=-10.0, hi=10.0, specials=True):
    """Floats in [lo, hi] (some exact halves, for round-half-even) plus NaN and +-inf."""
    n = math.prod(shape)
    values = draw(st.lists(st.one_of(
        st.floats(lo, hi, width=32),
        st.integers(math.ceil(lo), math.floor(hi) - 1).map(lambda k: k + 0.5),
        st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0] if specials else [0.0])),
        min_size=n, max_size=n))
    x = np.array(values, dtype=np.float64).reshape(shape).astype(np_dtype(dtype))
    return flush_subnormals(x)


def flush_subnormals(x):
    """XLA on CPU flushes subnormal inputs to zero (log(1e-45) is -inf there): a legitimate
    platform difference, so generated floats never contain them."""
    # bfloat16 has float32's exponent range
    tiny = float(np.finfo(np.float32 if x.dtype.name == "bfloat16" else x.dtype).tiny)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(x.astype(np.float64)) < tiny, np.zeros_like(x), x)


def int_array(draw, dtype, shape, lo=None, hi=None):
    info = np.iinfo(np_dtype(dtype))
    lo = info.min if lo is None else max(lo, info.min)
    hi = info.max if hi is None else min(hi, info.max)
    n = math.prod(shape)
    edges = [v for v in (info.min, info.max, 0, 1, -1) if lo <= v <= hi]
    values = draw(st.lists(st.one_of(st.integers(lo, hi), st.sampled_from(edges)),
                           min_size=n, max_size=n))
    return np.array(values, dtype=object).reshape(shape).astype(np_dtype(dtype))


def in_float64(fn):
    """The exact-as-possible answer: compute in float64, round once to the operand dtype.
    0-d operands are computed as 1-element arrays: NumPy's scalar path disagrees with its own
    array path (and C99) at edges, e.g. power(-inf, 0.5) is nan for 0-d arrays, inf else."""
    def expected(*xs):
        with np.errstate(all="ignore"):
            out = fn(*[np.atleast_1d(x.astype(np.float64)) for x in xs])
            return np.asarray(out).reshape(np.shape(xs[0])).astype(xs[0].dtype)
    return expected


_erf = np.vectorize(math.erf, otypes=[np.float64])
_lgamma = np.vectorize(lambda v: v if math.isnan(v) else math.inf if math.isinf(v) else (
    math.inf if v <= 0 and v == math.floor(v) else math.lgamma(v)), otypes=[np.float64])
FLOAT_UNARY_NUMPY = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "erf": _erf, "lgamma": _lgamma,
    "logistic": lambda x: 1 / (1 + np.exp(-x)), "floor": np.floor, "ceil": np.ceil,
    "round": np.rint, "neg": np.negative, "abs": np.abs, "sign": np.sign,
    "erf_inv": None, "digamma": None,  # no NumPy/stdlib equivalent: backends compared only
}
# Functions near their poles or branch points are ill-conditioned: two correct implementations
# differ by more than a few ulps there, so these get an absolute tolerance on top.
LOOSE = {"lgamma": 1e-3, "digamma": 1e-3, "tan": 1e-4}


@pytest.mark.parametrize("dtype", dt.FLOATS)
@given(data=st.data())
def test_float_unary(dtype, data):
    shape = data.draw(SHAPES)
    x = float_array(data.draw, dtype, shape)
    node = leaf(x)
    names = list(FLOAT_UNARY_NUMPY)
    roots = [ops.OPS[name](node) for name in names] + [ops.is_finite(node)]
    expected = [in_float64(FLOAT_UNARY_NUMPY[name])(x) if FLOAT_UNARY_NUMPY[name] else None
                for name in names] + [np.isfinite(x)]
    scale = 1.0 if dtype in ("float32", "float64") else 10.0
    atol = {name: tol * scale for name, tol in LOOSE.items()} if dtype != "float64" else None
    # in float64 the same functions lose a few more digits than the default 1e-11 next to a pole
    rtol = {name: 1e-9 for name in LOOSE} if dtype == "float64" else None
    check(roots, expected, rtol=rtol, atol=atol, names=names + ["is_finite"])


@pytest.mark.parametrize("dtype", dt.FLOATS)
@given(data=st.data())
def test_erf_inv_inverts_erf(dtype, data):
    shape = data.draw(SHAPES)
    y = float_array(data.draw, dtype, shape, lo=-1.0, hi=1.0, specials=False) * 0.999
    y = y.astype(np_dtype(dtype))
    (x,) = check([ops.erf_inv(leaf(y))], atol=1e-2 if dt.ITEMSIZE[dtype] == 2 else None)
    np.testing.assert_allclose(_erf(x.astype(np.float64)), y.astype(np.float64),
                               atol=1e-2 if dt.ITEMSIZE[dtype] == 2 else 1e-5)


@pytest.mark.parametrize("dtype", INTS + ("bool",))
@given(data=st.data())
def test_integer_and_bool_unary(dtype, data):
    shape = data.draw(SHAPES)
    if dtype == "bool":
        x = np.array(data.draw(st.lists(st.booleans(), min_size=math.prod(shape),
                                        max_size=math.prod(shape))), bool).reshape(shape)
        check([ops.not_(leaf(x))], [np.logical_not(x)])
        return
    x = int_array(data.draw, dtype, shape)
    node = leaf(x)
    with np.errstate(all="ignore"):
        expected = [np.negative(x), np.abs(x), np.sign(x), np.invert(x)]
    check([ops.neg(node), ops.abs_(node), ops.sign(node), ops.not_(node)], expected)


# ---------------------------------------------------------------- binary

FLOAT_BINARY_NUMPY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "rem": np.fmod,
    "pow": np.power, "max": np.maximum, "min": np.minimum, "atan2": np.arctan2,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}


@pytest.mark.parametrize("dtype", dt.FLOATS)
@given(data=st.data())
def test_float_binary(dtype, data):
    shape = data.draw(SHAPES)
    x = float_array(data.draw, dtype, shape)
    y = float_array(data.draw, dtype, shape)
    a, b = leaf(x), leaf(y)
    names = list(FLOAT_BINARY_NUMPY)
    roots = [ops.OPS[name](a, b) for name in names]
    expected = []
    for name in names:
        fn = FLOAT_BINARY_NUMPY[name]
        with np.errstate(all="ignore"):
            expected.append(fn(x, y) if name in ops.COMPARISONS else in_float64(fn)(x, y))
    # nextafter is exact: compare bit patterns through NumPy's own nextafter
    roots.append(ops.nextafter(a, b))
    expected.append(np.nextafter(x, y) if dtype != "bfloat16" else None)
    names.append("nextafter")
    # pow of a large base overflows differently when computed at higher precision: the half
    # types are computed in float32 on both backends, which may round a huge result to inf
    check(roots, expected, names=names, rtol={"pow": 1e-4} if dtype == "float32" else None)


def _wrap(values, dtype):
    """Python ints -> the dtype, wrapping around like two's-complement hardware."""
    bits = np.iinfo(np_dtype(dtype)).bits
    wrapped = [v % (1 << bits) for v in values]
    if not dt.is_unsigned(dtype):
        wrapped = [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in wrapped]
    return np.array(wrapped, dtype=object).astype(np_dtype(dtype))


def _int_ops(dtype):
    """Python-int definitions of the integer binary ops (XLA semantics at the edges)."""
    bits = np.iinfo(np_dtype(dtype)).bits

    def div(a, b):
        if b == 0:
            return -1
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q

    def rem(a, b):
        return a if b == 0 else a - div(a, b) * b

    def pow_(a, b):
        if b < 0:
            return 1 if a == 1 else ((-1) ** (b % 2) if a == -1 else 0)
        return pow(a, b, 1 << bits)

    def shift_left(a, b):
        return 0 if not 0 <= b < bits else a << b

    def shift_right_logical(a, b):
        return 0 if not 0 <= b < bits else (a % (1 << bits)) >> b

    def shift_right_arithmetic(a, b):
        a = a - (1 << bits) if a >= 1 << (bits - 1) else a  # the bit pattern, read as signed
        return (-1 if a < 0 else 0) if not 0 <= b < bits else a >> b

    return {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "div": div, "rem": rem, "pow": pow_, "max": max, "min": min,
            "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
            "shift_left": shift_left, "shift_right_logical": shift_right_logical,
            "shift_right_arithmetic": shift_right_arithmetic}


@pytest.mark.parametrize("dtype", INTS)
@given(data=st.data())
def test_integer_binary(dtype, data):
    shape = data.draw(SHAPES)
    x = int_array(data.draw, dtype, shape)
    y = data.draw(st.one_of(
        st.just(None),  # full-range right operand
        st.just("small")))  # shift amounts / exponents around the bit width
    bits = np.iinfo(np_dtype(dtype)).bits
    y = int_array(data.draw, dtype, shape) if y is None else \
        int_array(data.draw, dtype, shape, lo=-2, hi=bits + 2)
    a, b = leaf(x), leaf(y)
    table = _int_ops(dtype)
    names = list(table) + list(ops.COMPARISONS)
    roots = [ops.OPS[name](a, b) for name in names]
    xs, ys = [int(v) for v in x.ravel()], [int(v) for v in y.ravel()]
    expected = [_wrap([table[name](p, q) for p, q in zip(xs, ys)], dtype).reshape(shape)
                for name in table]
    expected += [getattr(np, {"eq": "equal", "ne": "not_equal", "lt": "less",
                              "le": "less_equal", "gt": "greater",
                              "ge": "greater_equal"}[name])(x, y) for name in ops.COMPARISONS]
    check(roots, expected, names=names)


@given(data=st.data())
def test_bool_binary(data):
    shape = data.draw(SHAPES)
    n = math.prod(shape)
    x, y = (np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)),
                     bool).reshape(shape) for _ in range(2))
    a, b = leaf(x), leaf(y)
    table = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
             "max": np.maximum, "min": np.minimum, "eq": np.equal, "ne": np.not_equal,
             "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
    check([ops.OPS[name](a, b) for name in table], [fn(x, y) for fn in table.values()],
          names=list(table))


@pytest.mark.parametrize("dtype", ("float32", "int16", "uint8", "bool", "bfloat16"))
@given(data=st.data())
def test_select_and_clamp(dtype, data):
    shape = data.draw(SHAPES)
    n = math.prod(shape)
    pred = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)),
                    bool).reshape(shape)

    def values():
        if dtype == "bool":
            return np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)),
                            bool).reshape(shape)
        if dt.is_float(dtype):
            return float_array(data.draw, dtype, shape, specials=False)
        return int_array(data.draw, dtype, shape)

    x, y = values(), values()
    roots = [ops.select(leaf(pred), leaf(x), leaf(y))]
    expected = [np.where(pred, x, y)]
    if dtype != "bool":
        lo, hi = np.minimum(x, y), np.maximum(x, y)
        z = values()
        scalar_lo = np.array(x.ravel()[0] if n else 0, dtype=x.dtype)
        roots += [ops.clamp(leaf(lo), leaf(z), leaf(hi)),
                  ops.clamp(leaf(scalar_lo), leaf(z), leaf(np.array(scalar_lo)))]
        expected += [np.minimum(np.maximum(z, lo), hi), np.full(shape, scalar_lo)]
    check(roots, expected, names=["select", "clamp", "clamp_scalar"][:len(roots)])


@pytest.mark.parametrize("shape", [(), (8,)])
def test_pow_of_negative_infinity_follows_c(shape):
    # C99 (and XLA): (-inf) ** y is +inf for y > 0 not an odd integer. NumPy's scalar loop
    # gives NaN for y = 0.5 while its vector loop gives inf; the IR has one answer.
    exponent = np.array([0.5, -0.5, 2, 3, -3, np.inf, -np.inf, np.nan], np.float32)
    want = np.array([np.inf, 0, np.inf, -np.inf, -0.0, np.inf, 0, np.nan], np.float32)
    for y, w in zip(exponent, want):
        base = np.full(shape, -np.inf, np.float32)
        check([ops.pow_(leaf(base), leaf(np.full(shape, y, np.float32)))],
              [np.full(shape, w, np.float32)])
