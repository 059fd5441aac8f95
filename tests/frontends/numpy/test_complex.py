"""Complex numbers in the NumPy frontend, against NumPy on real complex inputs: dtypes and
NEP 50 promotion (Python complex scalars are weak), the ufuncs NumPy defines on complex,
real/imag/conj/abs/angle, reductions, matmul/vecdot, lnp.fft; and a TypeError at the call
for what lazyx does not lower on complex (never a wrong number)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyx.frontends.numpy as lnp
from numpy_checks import assert_matches, both

COMPLEX = ["complex64", "complex128"]
# XLA's complex transcendental functions differ from NumPy's (C99) by a few ulps of the part
# they are computed from; complex64 inputs compute in float32
TOL = {"complex64": 3e-5, "complex128": 1e-11, "float32": 3e-5, "float64": 1e-11}


def _values(dtype, shape):
    part = np.float32 if dtype == "complex64" else np.float64
    # no subnormals: XLA on CPU flushes them to zero (docs/numpy.md; reciprocal(1e-45) is inf)
    finite = st.floats(-4, 4, width=32 if part is np.float32 else 64, allow_subnormal=False)
    return hnp.arrays(part, shape, elements=finite).flatmap(
        lambda re: hnp.arrays(part, shape, elements=finite).map(
            lambda im: (re + 1j * im).astype(dtype)))


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
cases = st.tuples(st.sampled_from(COMPLEX), shapes).flatmap(
    lambda t: _values(t[0], t[1]))

UNARY = [np.negative, np.positive, np.absolute, np.sign, np.conjugate, np.sqrt, np.square,
         np.reciprocal, np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p, np.sin,
         np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh,
         np.arcsinh, np.arccosh, np.arctanh, np.isnan, np.isinf, np.isfinite, np.logical_not,
         lnp.real, lnp.imag, lnp.conj, lnp.angle]
BINARY = [np.add, np.subtract, np.multiply, np.true_divide, np.power, np.equal, np.not_equal,
          np.logical_and]


def _tol(dtype):
    return TOL.get(np.dtype(dtype).name, 0)


@settings(max_examples=15, deadline=None)
@given(x=cases, fn=st.sampled_from(UNARY))
def test_unary(x, fn):
    if fn in (lnp.real, lnp.imag, lnp.conj, lnp.angle):
        lazy, expected = fn(lnp.asarray(x)), getattr(np, fn.__name__)(x)
    else:
        lazy, expected = both(fn, x)
    # away from branch cuts and poles, a relative error in the parts: scale atol by magnitude
    assert_matches(lazy, expected, rtol=_tol(expected.dtype), atol=_tol(expected.dtype) * 10)


@settings(max_examples=15, deadline=None)
@given(x=cases, fn=st.sampled_from(BINARY), data=st.data())
def test_binary(x, fn, data):
    y = data.draw(_values(x.dtype.name, x.shape))
    if fn is np.true_divide:
        y = np.where(y == 0, 1, y).astype(y.dtype)
    lazy, expected = both(fn, x, y)
    assert_matches(lazy, expected, rtol=_tol(expected.dtype), atol=_tol(expected.dtype) * 10)


@pytest.mark.parametrize("left, right", [
    ("float32", 1j), ("float64", 1j), ("int64", 2j), ("complex64", 2.0), ("complex64", 3),
    ("float32", "complex64"), ("float64", "complex64"), ("float16", "complex64"),
    ("int32", "complex64"), ("int8", "complex128"), ("complex64", "complex128"),
    ("bool", "complex64"), (1j, "uint8")])
def test_promotion_is_numpy_2s(left, right):
    def operand(spec):
        return np.arange(1, 4).astype(spec) if isinstance(spec, str) else spec
    a, b = operand(left), operand(right)
    lazy_a = lnp.asarray(a) if isinstance(a, np.ndarray) else a
    lazy_b = lnp.asarray(b) if isinstance(b, np.ndarray) else b
    for op in (np.add, np.multiply):
        expected = op(a, b)
        got = op(lazy_a, lazy_b)
        assert got.dtype == expected.dtype
        assert_matches(got, expected)
    def spec(v):
        return v.dtype if isinstance(v, np.ndarray) else v
    assert lnp.result_type(spec(a), spec(b)) == np.result_type(spec(a), spec(b))


def test_namespace_dtypes_and_scalars():
    assert lnp.complex64 == np.complex64 and lnp.complex128 == np.complex128
    info = lnp.__array_namespace_info__()
    assert info.default_dtypes()["complex floating"] == lnp.complex128
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    z = lnp.asarray(1j)
    assert z.dtype == np.complex128 and complex(z) == 1j
    assert_matches(lnp.asarray([1 + 2j, 3]), np.asarray([1 + 2j, 3]))
    assert_matches(lnp.full((2, 2), 1 - 1j, dtype=lnp.complex64),
                   np.full((2, 2), 1 - 1j, dtype=np.complex64))
    assert_matches(lnp.zeros(3, dtype="complex64") + 2j, np.zeros(3, np.complex64) + 2j)
    assert lnp.finfo(lnp.complex64).dtype == np.float32
    assert lnp.isdtype(lnp.complex64, "complex floating")


@settings(max_examples=15, deadline=None)
@given(x=cases, name=st.sampled_from(["sum", "prod", "mean", "var", "std"]),
       keep=st.booleans())
def test_reductions(x, name, keep):
    axis = None if x.ndim == 0 else -1
    lazy = getattr(lnp, name)(lnp.asarray(x), axis=axis, keepdims=keep)
    expected = getattr(np, name)(x, axis=axis, keepdims=keep)
    tol = _tol(x.dtype) * (100 if name == "prod" else 10)
    assert_matches(lazy, expected, rtol=tol, atol=tol)


@settings(max_examples=10, deadline=None)
@given(dtype=st.sampled_from(COMPLEX), n=st.integers(1, 4), data=st.data())
def test_matmul_vecdot_and_norms(dtype, n, data):
    a = data.draw(_values(dtype, (3, n)))
    b = data.draw(_values(dtype, (n, 2)))
    tol = _tol(dtype) * 10
    assert_matches(lnp.asarray(a) @ lnp.asarray(b), a @ b, rtol=tol, atol=tol)
    assert_matches(lnp.vecdot(lnp.asarray(a), lnp.asarray(a)), np.vecdot(a, a), rtol=tol,
                   atol=tol)
    assert_matches(lnp.linalg.vector_norm(lnp.asarray(a)), np.linalg.vector_norm(a), rtol=tol)
    assert_matches(lnp.linalg.matrix_norm(lnp.asarray(a)), np.linalg.matrix_norm(a), rtol=tol)


def test_round_rounds_each_part():
    z = np.array([1.5 + 2.5j, -0.5 - 1.26j], np.complex128)
    assert_matches(lnp.round(lnp.asarray(z)), np.round(z))
    assert_matches(lnp.round(lnp.asarray(z), 1), np.round(z, 1))


@pytest.mark.parametrize("call", [
    lambda z: np.maximum(z, z), lambda z: z < z, lambda z: np.floor(z), lambda z: lnp.max(z),
    lambda z: np.arctan2(z, z), lambda z: lnp.argmax(z), lambda z: lnp.linalg.det(z),
    lambda z: lnp.linalg.cholesky(z), lambda z: lnp.fft.rfft(z), lambda z: lnp.cumulative_sum(z, axis=0) < 0,
], ids=["maximum", "less", "floor", "max", "arctan2", "argmax", "det", "cholesky", "rfft",
        "ordered-compare"])
def test_unsupported_complex_raises_type_error_at_the_call(call):
    z = lnp.asarray(np.array([[1 + 1j, 2], [3j, 4]], np.complex128))
    with pytest.raises(TypeError):
        call(z)


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("fn, z, expected", [
    (np.log, complex(INF, NAN), complex(INF, NAN)), (np.log, complex(NAN, INF), complex(INF, NAN)),
    (np.log10, complex(0, 0), complex(-INF, 0)), (np.sqrt, complex(-1, -0.0), complex(0, -1)),
    (np.sqrt, complex(NAN, INF), complex(INF, INF)), (np.sqrt, complex(INF, NAN), complex(INF, NAN)),
    (np.exp, complex(-INF, NAN), complex(0, 0)), (np.exp, complex(INF, INF), complex(INF, NAN)),
    (np.expm1, complex(NAN, 0), complex(NAN, 0)), (np.expm1, complex(-INF, INF), complex(-1, 0)),
    (np.cosh, complex(0, INF), complex(NAN, 0)), (np.sinh, complex(INF, NAN), complex(INF, NAN)),
    (np.tanh, complex(INF, 1), complex(1, 0)), (np.tanh, complex(0, NAN), complex(0, NAN)),
    (np.arctanh, complex(NAN, 1), complex(NAN, NAN)), (np.arctanh, complex(INF, NAN), complex(0, NAN)),
    (np.arccos, complex(0, NAN), complex(np.pi / 2, NAN)), (np.arcsinh, complex(NAN, 0), complex(NAN, 0)),
    (np.sign, complex(-0.0, 0), complex(0, 0)),
])
def test_c99_special_values(fn, z, expected):
    """The Array API's (C99's) values where a part is infinite or NaN, on both backends (XLA's
    complex formulas give nan + nan j there; NumPy's own expm1 and tanh differ too)."""
    got = complex(fn(lnp.asarray(np.complex128(z))))
    for part, want in ((got.real, expected.real), (got.imag, expected.imag)):
        if np.isnan(want):
            assert np.isnan(part), (got, expected)
        else:
            assert part == want and np.signbit(part) == np.signbit(want), (got, expected)


@pytest.mark.parametrize("name", ["max", "min", "amax", "argmax", "argmin"])
def test_orderings_of_complex_values_are_refused_by_name(name):
    """NumPy orders complex values lexicographically; lazyx does not. The refusal names the
    call (np.max's named the IR's reduce_max and its operand rule)."""
    x = lnp.asarray(np.array([1 + 2j, 3 - 1j]))
    said = name if name.startswith("arg") else name[-3:]
    with pytest.raises(TypeError, match=f"lazyx.frontends.numpy: {said} is not supported on "
                                        f"complex arrays"):
        getattr(np, name)(x)
