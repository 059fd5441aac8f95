"""ltf.pad_to_bucket: tf.Tensors stay eager, lazy tensors stay lazy; a loop over varying
lengths compiles once per bucket and, masked, gives eager TF's unpadded results."""
import numpy as np
import pytest

import lazyx

tf = pytest.importorskip("tensorflow")
import lazyx.frontends.tf as ltf  # noqa: E402


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [tf.float32, tf.int32, tf.bool])
def test_pad_to_bucket_matches_tf_pad_on_eager_and_lazy(axis, dtype):
    x = tf.cast(tf.reshape(tf.range(30) % 4, (2, 5, 3)), dtype)
    padded, mask = ltf.pad_to_bucket(x, axis, buckets=(4, 8))
    assert not isinstance(padded, ltf.Tensor) and mask.dtype == tf.bool
    size = x.shape[axis]
    paddings = [[0, 0]] * 3
    paddings[axis] = [0, (4 if size <= 4 else 8) - size]
    np.testing.assert_array_equal(padded.numpy(), tf.pad(x, paddings).numpy())
    np.testing.assert_array_equal(mask.numpy(), tf.pad(tf.ones(x.shape, tf.bool), paddings).numpy())
    lazy_padded, lazy_mask = lazyx.pad_to_bucket(ltf.constant(x), axis, buckets=(4, 8))
    assert isinstance(lazy_padded, ltf.Tensor) and isinstance(lazy_mask, ltf.Tensor)
    np.testing.assert_array_equal(ltf.to_tf(lazy_padded).numpy(), padded.numpy())
    np.testing.assert_array_equal(ltf.to_tf(lazy_mask).numpy(), mask.numpy())


def test_varying_lengths_compile_once_per_bucket_and_match_tf():
    rng = np.random.default_rng(0)
    w = tf.constant(rng.standard_normal((6, 6)).astype(np.float32))
    lazyx.reset_metrics()
    for length in (5, 9, 16, 6, 12, 7, 30, 17):  # buckets 8, 16, 32
        x = tf.constant(rng.standard_normal((3, length, 6)).astype(np.float32))
        expected = tf.reduce_mean(tf.tanh(x @ w), axis=1)
        padded, mask = ltf.pad_to_bucket(x, axis=1)
        m = ltf.constant(tf.cast(mask[..., :1], tf.float32))
        h = tf.tanh(ltf.constant(padded) @ ltf.constant(w)) * m
        got = tf.reduce_sum(h, axis=1) / tf.reduce_sum(m, axis=1)
        np.testing.assert_allclose(ltf.to_tf(got).numpy(), expected.numpy(), rtol=1e-5)
    assert lazyx.metrics()["compiles"] == 3
