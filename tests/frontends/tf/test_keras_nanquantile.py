"""keras.ops.nanquantile / nanmedian / nanpercentile with a scalar q are lazy (Keras' TF
backend drops NaNs with boolean_mask: a counted fallback, a sync): every method, axis and
keepdims against eager Keras, on rows with NaNs, a row of NaNs, inf and two float dtypes;
a vector q stays Keras' own (a counted fallback)."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


def _values(dtype):
    x = np.random.default_rng(0).standard_normal((3, 5, 4)).astype(dtype)
    x[0, :, 1] = np.nan  # a row of NaNs along axis 1
    x[1, 2, :] = np.nan  # and along the last axis
    x[2, 1, 3] = np.nan
    x[0, 0, 0], x[2, 4, 2] = np.inf, -np.inf
    x[1, 0, :2] = 7.0  # ties
    return x


def compare(fn, x, *args, **kwargs):
    lazyx.reset_metrics()
    got = fn(ltf.constant(x), *args, **kwargs)
    fallbacks = lazyx.metrics()["fallbacks"]
    want = fn(tf.constant(x), *args, **kwargs)
    assert isinstance(got, ltf.Tensor)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6, equal_nan=True)
    return fallbacks


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("axis", [None, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nanquantile_and_nanpercentile(method, axis, keepdims, dtype):
    x = _values(dtype)
    for q in (0.0, 0.3, 1.0):
        assert compare(keras.ops.nanquantile, x, q, axis=axis, method=method,
                       keepdims=keepdims) == 0
    assert compare(keras.ops.nanpercentile, x, 37.0, axis=axis, method=method,
                   keepdims=keepdims) == 0


@pytest.mark.parametrize("axis", [None, 0, 2, (1, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_nanmedian(axis, dtype):
    assert compare(keras.ops.nanmedian, _values(dtype), axis=axis) == 0
    assert compare(keras.ops.nanmedian, _values(dtype), axis=axis, keepdims=True) == 0


def test_all_nan_gives_nan_and_a_vector_q_stays_keras_own():
    x = np.full((2, 3), np.nan, np.float32)
    assert compare(keras.ops.nanmedian, x) == 0
    assert compare(keras.ops.nanquantile, _values(np.float32), [0.2, 0.5]) == 1
