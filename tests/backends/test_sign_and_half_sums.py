"""Two places where XLA's own answer was not the IR's, so the same graph gave two answers on
the two backends: `sign` of a negative zero (IEEE keeps it, NumPy and TF give +0) and sums and
products of float16/bfloat16 values (XLA:CPU accumulated in the half type; NumPy, torch, TF
and the reference backend accumulate in float32)."""
import ml_dtypes
import numpy as np
import pytest

from backend_harness import REFERENCE, XLA, leaf, run
from lazyx.core import ops

BACKENDS = [REFERENCE] + ([XLA] if XLA is not None else [])


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.all(
        (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))))


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_sign_is_positive_zero_at_either_zero_and_nan_at_nan(backend, dtype):
    x = np.array([np.nan, -0.0, 0.0, -2.5, 3.0, -np.inf, np.inf], dtype)
    (got,) = run(backend, [ops.sign(leaf(x))])
    assert _same_bits(got, np.sign(x)), (got, np.sign(x))


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_complex_sign_of_a_negative_zero_is_zero(backend):
    x = np.array([complex(-0.0, 0.0), complex(0.0, -0.0), 3 - 4j], np.complex64)
    (got,) = run(backend, [ops.sign(leaf(x))])
    want = np.sign(x)
    assert _same_bits(got.real, want.real) and _same_bits(got.imag, want.imag), (got, want)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_sums_and_products_accumulate_in_float32(backend, dtype):
    np_dtype = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    ones = np.ones(30000, np_dtype)
    tenths = np.full(4096, 0.1, np_dtype)
    near_one = np.full(2000, 1.0009765625, np.float32).astype(np_dtype)
    roots = [ops.reduce_sum(leaf(ones), axes=(0,)), ops.reduce_sum(leaf(tenths), axes=(0,)),
             ops.reduce_prod(leaf(near_one), axes=(0,))]
    got = run(backend, roots)
    for g, x, f in zip(got, (ones, tenths, near_one), (np.sum, np.sum, np.prod)):
        want = f(x.astype(np.float32)).astype(np_dtype)
        assert g.dtype == want.dtype and float(g) == float(want), (float(g), float(want))


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_half_result_cast_to_float32_was_rounded_to_its_type_first(backend, dtype):
    # XLA may keep a half value in float32 and drop the rounding (excess precision): a
    # bfloat16 product cast to float32 held bits no bfloat16 has
    np_dtype = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 64)), rng.standard_normal((64, 3))
    x, y = (ops.convert(leaf(v.astype(np.float32)), dtype=dtype) for v in (a, b))
    prod = ops.dot_general(x, y, contracting_dimensions=((1,), (0,)),
                           batch_dimensions=((), ()))
    summed = ops.add(ops.mul(x, x), x)
    got = run(backend, [ops.convert(prod, dtype="float32"), ops.convert(summed, dtype="float32")])
    for g in got:
        assert np.array_equal(g.astype(np_dtype).astype(np.float32), g)
