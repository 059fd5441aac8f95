"""The math, sort and complex VJP rules (core/autodiff_math.py) against jax.vjp, in float32 and
float64, at random points of each op's domain with a random cotangent.

The reference is JAX in float64 at the same (rounded) inputs, so a float32 gradient is held to
float32 accuracy, not to JAX's float32 answer. Complex values follow JAX's convention, which
the IR's rules share (the linear transpose, no conjugation)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lazyx.core import autodiff, autodiff_memo, ops, runtime

jax = pytest.importorskip("jax")  # (the core environment has no jax: the backends one runs it)
jnp = jax.numpy

lax = jax.lax
TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-10, atol=1e-12)}
COMPLEX = {"float32": "complex64", "float64": "complex128"}
SHAPE = (3, 5)


def _eval(node):
    return runtime.to_host(runtime.LazyHandle(node))


def _lazyx_vjp(build, arrays, cot):
    leaves = [runtime.from_host(a) for a in arrays]
    out = build(*leaves)
    return [_eval(g) for g in autodiff.vjp([out], [runtime.from_host(cot)], leaves)]


def _jax_vjp(fn, arrays, cot):
    with jax.enable_x64(True):
        wide = [jnp.asarray(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
                for a in arrays]
        out, pull = jax.vjp(fn, *wide)
        wide_cot = cot.astype(np.complex128 if cot.dtype.kind == "c" else np.float64)
        return [np.asarray(g) for g in pull(jnp.asarray(wide_cot, out.dtype))]


def _check(build, fn, arrays, cot, dtype):
    got = _lazyx_vjp(build, arrays, cot)
    want = _jax_vjp(fn, arrays, cot)
    for i, (a, g, w) in enumerate(zip(arrays, got, want)):
        assert g.dtype == a.dtype, f"input {i}: cotangent dtype {g.dtype}, input {a.dtype}"
        scale = np.max(np.abs(w))
        # a gradient this far from 0 would show a sign error (or a dropped term)
        assert scale > 1e-2, f"input {i}: reference gradient too small to test ({scale})"
        tol = TOL[dtype]
        np.testing.assert_allclose(g, w, rtol=tol["rtol"], atol=tol["atol"] * scale,
                                   err_msg=f"input {i}")


def _uniform(rng, lo, hi, dtype, shape=SHAPE):
    return rng.uniform(lo, hi, shape).astype(dtype)


def _off_poles(rng, dtype):
    """(-4.9, 8) away from 0, -1, -2, ... (lgamma and digamma's poles)."""
    x = rng.uniform(-4.9, 8, SHAPE)
    neg = x < 0.1
    x[neg] = np.floor(x[neg]) + rng.uniform(0.1, 0.9, int(neg.sum()))
    return x.astype(dtype)


def _unit(lo, hi):
    return lambda rng, dtype: [_uniform(rng, lo, hi, dtype)]


def _atan2_args(rng, dtype):
    y, x = rng.uniform(-3, 3, (2,) + SHAPE)
    small = np.hypot(x, y) < 0.2
    x[small] += 0.5
    return [y.astype(dtype), x.astype(dtype)]


def _rem_args(rng, dtype):
    x = rng.uniform(-10, 10, SHAPE).astype(dtype)
    y = (rng.uniform(0.5, 3, SHAPE) * rng.choice([-1, 1], SHAPE)).astype(dtype)
    q = x.astype(np.float64) / y.astype(np.float64)
    near = np.abs(q - np.round(q)) < 1e-3  # d/dy jumps where x / y crosses an integer
    x[near] += (0.1 * y[near]).astype(dtype)
    return [x, y]


UNARY = {  # op -> its domain (jax.lax has the same name)
    "tan": _unit(-1.4, 1.4), "asin": _unit(-0.95, 0.95), "acos": _unit(-0.95, 0.95),
    "atan": _unit(-5, 5), "sinh": _unit(-4, 4), "cosh": _unit(-4, 4), "asinh": _unit(-5, 5),
    "acosh": _unit(1.05, 6), "atanh": _unit(-0.95, 0.95), "erf_inv": _unit(-0.95, 0.95),
    "lgamma": lambda rng, dtype: [_off_poles(rng, dtype)],
    "digamma": lambda rng, dtype: [_off_poles(rng, dtype)],
}
CASES = {name: (ops.OPS[name], getattr(lax, name), args) for name, args in UNARY.items()}
CASES["atan2"] = (ops.atan2, lax.atan2, _atan2_args)
CASES["rem"] = (ops.rem, lax.rem, _rem_args)
# (a and x away from 0, where d/da is steep and the reference's central difference coarse)
CASES["igamma"] = (ops.igamma, lax.igamma, lambda rng, dtype: [
    _uniform(rng, 0.3, 8, dtype), _uniform(rng, 0.1, 10, dtype)])
CASES["igammac"] = (ops.igammac, lax.igammac, CASES["igamma"][2])

DTYPES = ["float32", "float64"]
EXAMPLES = settings(max_examples=8, deadline=None)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_math_rule_matches_jax(name, dtype, seed):
    build, fn, args = CASES[name]
    rng = np.random.default_rng(seed)
    arrays = args(rng, dtype)
    _check(build, fn, arrays, rng.standard_normal(SHAPE).astype(dtype), dtype)


def test_digamma_gradient_near_poles_and_far_out():
    """The trigamma the digamma rule builds: reflection near the negative poles, the
    asymptotic series for large x, the recurrence for small ones."""
    for dtype in DTYPES:
        x = np.array([-3 + 1e-3, -2.999, -0.5, -1e-3, 1e-3, 0.5, 1.0, 2.5, 9.75, 37.0, 1e3,
                      1e5], dtype)
        _check(ops.digamma, lax.digamma, [x], np.ones_like(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis,descending", [(0, False), (1, False), (1, True), (0, True)])
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_sort_sends_each_cotangent_to_its_source(axis, descending, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.permutation(np.arange(15.0)).reshape(SHAPE).astype(dtype)  # distinct values
    if descending:
        def fn(v):
            return -jnp.sort(-v, axis=axis)
    else:
        def fn(v):
            return jnp.sort(v, axis=axis)
    _check(lambda v: ops.sort(v, axis=axis, descending=descending), fn, [x],
           rng.standard_normal(SHAPE).astype(dtype), dtype)


def _complex_args(rng, dtype):
    parts = rng.standard_normal((2,) + SHAPE)
    return (parts[0] + 1j * parts[1]).astype(COMPLEX[dtype])


def _complex_cot(rng, dtype):
    return _complex_args(rng, dtype)


COMPLEX_CASES = {  # name -> (build, jax function, inputs, cotangent of the output)
    "real": (ops.real, lax.real, lambda r, d: [_complex_args(r, d)],
             lambda r, d: r.standard_normal(SHAPE).astype(d)),
    "imag": (ops.imag, lax.imag, lambda r, d: [_complex_args(r, d)],
             lambda r, d: r.standard_normal(SHAPE).astype(d)),
    "abs": (ops.abs_, lax.abs, lambda r, d: [_complex_args(r, d)],
            lambda r, d: r.standard_normal(SHAPE).astype(d)),
    "conj": (ops.conj, lax.conj, lambda r, d: [_complex_args(r, d)], _complex_cot),
    "complex": (ops.complex_, lax.complex,
                lambda r, d: list(r.standard_normal((2,) + SHAPE).astype(d)), _complex_cot),
    "sin": (ops.sin, lax.sin, lambda r, d: [_complex_args(r, d)], _complex_cot),
    "pow": (ops.pow_, lax.pow, lambda r, d: [_complex_args(r, d), _complex_args(r, d)],
            _complex_cot),
    # real inputs through complex values: the same answer under any complex convention
    "abs(complex)": (lambda a, b: ops.abs_(ops.complex_(a, b)),
                     lambda a, b: lax.abs(lax.complex(a, b)),
                     lambda r, d: list(r.standard_normal((2,) + SHAPE).astype(d)),
                     lambda r, d: r.standard_normal(SHAPE).astype(d)),
    "imag(exp(complex))": (lambda a, b: ops.imag(ops.exp(ops.complex_(a, b))),
                           lambda a, b: lax.imag(lax.exp(lax.complex(a, b))),
                           lambda r, d: list(r.uniform(-1, 1, (2,) + SHAPE).astype(d)),
                           lambda r, d: r.standard_normal(SHAPE).astype(d)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_complex_rule_matches_jax(name, dtype, seed):
    build, fn, args, cot = COMPLEX_CASES[name]
    rng = np.random.default_rng(seed)
    _check(build, fn, args(rng, dtype), cot(rng, dtype), dtype)


def test_abs_of_complex_zero_has_zero_gradient():
    z = np.array([0j, 3 + 4j], np.complex64)
    (g,) = _lazyx_vjp(ops.abs_, [z], np.ones(2, np.float32))
    np.testing.assert_allclose(g, [0, 0.6 - 0.8j], rtol=1e-6)  # JAX: conj(z) / |z|, 0 at 0


def _negated(rule):
    def wrong(n, g):
        return tuple(None if c is None else ops.neg(c) for c in rule(n, g))
    return wrong


@pytest.mark.parametrize("name", sorted(CASES) + ["sort", "real", "imag", "abs", "complex"])
def test_a_sign_error_in_the_rule_would_fail(name):
    """The checks above catch a rule that returns the negated cotangents."""
    rng = np.random.default_rng(0)
    if name in CASES:
        build, fn, args = CASES[name]
        arrays, cot = args(rng, "float64"), rng.standard_normal(SHAPE)
    elif name == "sort":
        build, fn = (lambda v: ops.sort(v, axis=1)), (lambda v: jnp.sort(v, axis=1))
        arrays, cot = [rng.standard_normal(SHAPE)], rng.standard_normal(SHAPE)
    else:
        build, fn, args, make_cot = COMPLEX_CASES[name]
        arrays, cot = args(rng, "float64"), make_cot(rng, "float64")
    _check(build, fn, arrays, cot, "float64")  # the rule as it is passes
    rule = autodiff.VJP[name]
    dict.__setitem__(autodiff.VJP, name, _negated(rule))  # (the Table refuses a second entry)
    autodiff_memo._RECIPES.clear()  # a gradient stamped from a recipe would skip the rule
    try:
        with pytest.raises(AssertionError):
            _check(build, fn, arrays, cot, "float64")
    finally:
        dict.__setitem__(autodiff.VJP, name, rule)
        autodiff_memo._RECIPES.clear()


# ---------------------------------------------------------------- Fourier transforms

_JAX_FFT = {"fft": "FFT", "ifft": "IFFT", "rfft": "RFFT", "irfft": "IRFFT"}


def _fft_case(kind, lengths, dtype, rng):
    """(input, cotangent) arrays for one fft of `kind` over `lengths` with a batch axis."""
    complex_dtype = COMPLEX[dtype]

    def draw(shape, cplx):
        real = rng.standard_normal(shape)
        return (real + 1j * rng.standard_normal(shape)).astype(complex_dtype) if cplx else \
            real.astype(dtype)
    half = lengths[:-1] + (lengths[-1] // 2 + 1,)
    shapes = {"fft": (lengths, lengths), "ifft": (lengths, lengths),
              "rfft": (lengths, half), "irfft": (half, lengths)}[kind]
    kinds = {"fft": (True, True), "ifft": (True, True), "rfft": (False, True),
             "irfft": (True, False)}[kind]
    return draw((2,) + shapes[0], kinds[0]), draw((2,) + shapes[1], kinds[1])


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16))
@pytest.mark.parametrize("lengths", [(8,), (7,), (4, 6), (3, 5)], ids=str)
@pytest.mark.parametrize("kind", sorted(_JAX_FFT))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fft_rule_matches_jax(kind, lengths, dtype, seed):
    """Even and odd last lengths (irfft's Nyquist term), one and two axes."""
    x, cot = _fft_case(kind, lengths, dtype, np.random.default_rng(seed))
    fft_type = getattr(lax.FftType, _JAX_FFT[kind])
    _check(lambda v: ops.fft(v, fft_type=kind, fft_lengths=lengths),
           lambda v: lax.fft(v, fft_type, lengths), [x], cot, dtype)


@pytest.mark.parametrize("kind", sorted(_JAX_FFT))
def test_a_wrong_fft_rule_would_fail(kind):
    x, cot = _fft_case(kind, (6,), "float64", np.random.default_rng(1))
    build = lambda v: ops.fft(v, fft_type=kind, fft_lengths=(6,))  # noqa: E731
    fn = lambda v: lax.fft(v, getattr(lax.FftType, _JAX_FFT[kind]), (6,))  # noqa: E731
    _check(build, fn, [x], cot, "float64")
    rule = autodiff.VJP["fft"]
    dict.__setitem__(autodiff.VJP, "fft", _negated(rule))
    autodiff_memo._RECIPES.clear()
    try:
        with pytest.raises(AssertionError):
            _check(build, fn, [x], cot, "float64")
    finally:
        dict.__setitem__(autodiff.VJP, "fft", rule)
        autodiff_memo._RECIPES.clear()
