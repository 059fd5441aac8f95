"""keras.ops.argpartition is lazy for vectors and matrices (Keras' TF backend zeroed x through
tf.where(mask) + a scatter: a counted fallback, a sync): the same indices as eager Keras, its
int32 conversion (floats truncated) and its axis-0 mask quirk included; where Keras' scatter
raises (fewer rows than kth + 1), or for rank 3, Keras' own function runs (counted)."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

RNG = np.random.default_rng(0)
VALUES = {
    "int32-vector": RNG.integers(-5, 5, (9,)).astype(np.int32),  # ties
    "float32-matrix": (RNG.standard_normal((6, 5)) * 3).astype(np.float32),
    "int64-matrix": RNG.integers(-4, 4, (5, 4)).astype(np.int64),
}


@pytest.mark.parametrize("name", sorted(VALUES))
@pytest.mark.parametrize("kth", [0, 2, 3, -1, 40])
@pytest.mark.parametrize("axis", [-1, None])
def test_argpartition_matches_keras(name, kth, axis):
    x = VALUES[name]
    want = keras.ops.argpartition(x, kth, axis=axis)
    lazyx.reset_metrics()
    got = keras.ops.argpartition(ltf.constant(x), kth, axis=axis)
    assert lazyx.metrics()["fallbacks"] == 0
    assert isinstance(got, ltf.Tensor) and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_where_keras_raises_it_still_raises():
    x = VALUES["int64-matrix"]  # 4 rows after the swap of axis 0: kth = 4 needs 5
    with pytest.raises(tf.errors.InvalidArgumentError):
        keras.ops.argpartition(x, 4, axis=0)
    with pytest.raises(tf.errors.InvalidArgumentError):
        keras.ops.argpartition(ltf.constant(x), 4, axis=0)
