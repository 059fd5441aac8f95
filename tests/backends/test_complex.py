"""Complex dtypes and the fft primitive on both backends, against NumPy."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from backend_harness import check, leaf
from lazyx.core import dtypes as dt
from lazyx.core import ops

PARTS = {"complex64": "float32", "complex128": "float64"}
FFT_TOL = {"complex64": 2e-4, "complex128": 1e-10, "float32": 2e-4, "float64": 1e-10}


def _complex(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype", dt.COMPLEX)
def test_arithmetic_and_parts(dtype):
    a, b = _complex((3, 4), dtype, 0), _complex((3, 4), dtype, 1)
    x, y = leaf(a), leaf(b)
    re, im = leaf(a.real), leaf(a.imag)
    cases = {
        "complex": (ops.complex_(re, im), a),
        "real": (ops.real(x), a.real), "imag": (ops.imag(x), a.imag),
        "conj": (ops.conj(x), np.conj(a)), "abs": (ops.abs_(x), np.abs(a)),
        "sign": (ops.sign(x), a / np.abs(a)),
        "add": (ops.add(x, y), a + b), "mul": (ops.mul(x, y), a * b),
        "div": (ops.div(x, y), a / b), "pow": (ops.pow_(x, y), a ** b),
        "exp": (ops.exp(x), np.exp(a)), "log": (ops.log(x), np.log(a)),
        "sqrt": (ops.sqrt(x), np.sqrt(a)), "tanh": (ops.tanh(x), np.tanh(a)),
        "eq": (ops.eq(x, x), a == a), "ne": (ops.ne(x, y), a != b),
        "sum": (ops.reduce_sum(x, axes=(1,)), a.sum(1)),
        "prod": (ops.reduce_prod(x, axes=(0,)), a.prod(0)),
        "cumsum": (ops.cumsum(x, axis=1), np.cumsum(a, 1)),
        "dot": (ops.dot_general(x, y, contracting_dimensions=((1,), (1,))), a @ b.T),
        "to_real": (ops.convert(x, dtype=PARTS[dtype]), a.real),
        "to_bool": (ops.convert(x, dtype="bool"), a != 0),
        "from_int": (ops.convert(leaf(np.arange(4, dtype=np.int32)), dtype=dtype),
                     np.arange(4).astype(dtype)),
    }
    roots = [node for node, _ in cases.values()]
    check(roots, [want for _, want in cases.values()], names=list(cases),
          rtol=1e-4 if dtype == "complex64" else 1e-10)
    assert ops.abs_(x).dtype == PARTS[dtype] and ops.real(x).dtype == PARTS[dtype]


@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple),
       rank=st.integers(1, 3), dtype=st.sampled_from(dt.COMPLEX), seed=st.integers(0, 9))
def test_fft_matches_numpy(shape, rank, dtype, seed):
    rank = min(rank, len(shape))
    lengths = shape[len(shape) - rank:]
    axes = tuple(range(len(shape) - rank, len(shape)))
    a = _complex(shape, dtype, seed)
    real = a.real.astype(PARTS[dtype])
    half = np.fft.rfftn(real, axes=axes)
    roots = [ops.fft(leaf(a), fft_type="fft", fft_lengths=lengths),
             ops.fft(leaf(a), fft_type="ifft", fft_lengths=lengths),
             ops.fft(leaf(real), fft_type="rfft", fft_lengths=lengths),
             ops.fft(leaf(half.astype(dtype)), fft_type="irfft", fft_lengths=lengths)]
    want = [np.fft.fftn(a, axes=axes), np.fft.ifftn(a, axes=axes), half,
            np.fft.irfftn(half, s=lengths, axes=axes)]
    check(roots, want, names=["fft", "ifft", "rfft", "irfft"], atol=FFT_TOL[dtype],
          rtol=FFT_TOL[dtype])
    assert [r.dtype for r in roots] == [dtype, dtype, dtype, PARTS[dtype]]


def test_errors_name_the_op():
    f32, i32 = leaf(np.ones((2, 4), np.float32)), leaf(np.ones((2, 4), np.int32))
    c64 = ops.complex_(f32, f32)
    with pytest.raises(TypeError, match="complex: needs floating"):
        ops.complex_(i32, i32)
    with pytest.raises(TypeError, match="fft: needs complex"):
        ops.fft(f32, fft_type="fft", fft_lengths=(4,))
    with pytest.raises(ValueError, match="needs trailing axes"):
        ops.fft(c64, fft_type="irfft", fft_lengths=(4,))  # wants 4 // 2 + 1 = 3
    with pytest.raises(ValueError, match="fft_type"):
        ops.fft(c64, fft_type="dct", fft_lengths=(4,))
    with pytest.raises(TypeError, match="max: needs"):
        ops.max_(c64, c64)  # complex numbers have no order
    with pytest.raises(TypeError, match="lt: needs"):
        ops.lt(c64, c64)
