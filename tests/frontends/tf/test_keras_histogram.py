"""keras.ops.histogram is lazy (Keras' TF backend dropped out-of-range values with
boolean_mask: a counted fallback, a sync): counts and edges against eager Keras, with and
without a range, values outside it, NaN, and two float dtypes."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bins, value_range", [(10, None), (3, None), (4, (-1.0, 1.5)),
                                               (1, (0.0, 0.0)), (7, (-5, 5))])
def test_histogram_matches_keras(dtype, bins, value_range):
    x = np.random.default_rng(0).standard_normal(40).astype(dtype)
    x[:4] = [0.0, 1.5, -1.0, 9.0]  # edges of the range and a value past it
    if value_range is not None:
        x[5] = np.nan  # outside every range (Keras: its comparisons are False)
    want = keras.ops.histogram(x, bins=bins, range=value_range)
    lazyx.reset_metrics()
    got = keras.ops.histogram(ltf.constant(x), bins=bins, range=value_range)
    assert lazyx.metrics()["fallbacks"] == 0
    assert isinstance(got[0], ltf.Tensor)  # (edges from a given range are x-free: eager)
    assert isinstance(got[1], ltf.Tensor) == (value_range is None)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_array_equal(np.asarray(got[0]), want[0].numpy())
    # the lazy tf.linspace on XLA is within an ulp of TF's, not always equal
    np.testing.assert_allclose(np.asarray(got[1]), want[1].numpy(),
                               rtol=4 * np.finfo(dtype).eps)
