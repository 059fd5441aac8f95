"""tf.norm, tf.linalg.global_norm, tf.clip_by_norm and tf.clip_by_global_norm on lazy tensors
(frontends/tf/api_norms.py) against eager TF: values, shapes and dtypes, no fallback, and a
training step that clips its gradients by their global norm, step for step."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.tf as ltf

from .conftest import same_as_eager

FLOATS = st.floats(-5, 5, width=32, allow_subnormal=False)


def _same(fn, *arrays, rtol=1e-5):
    same_as_eager(fn, *arrays, rtol=rtol)


@settings(max_examples=25, deadline=None)
@given(st.data(), st.sampled_from(["euclidean", 1, 2, np.inf, 3, 0.5]), st.booleans())
def test_vector_norms(data, ord, keepdims):
    x = data.draw(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                             elements=FLOATS))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    _same(lambda t: tf.norm(t, ord=ord, axis=axis, keepdims=keepdims), x, rtol=2e-5)


@settings(max_examples=20, deadline=None)
@given(st.data(), st.sampled_from(["euclidean", "fro", 1, np.inf]), st.booleans())
def test_matrix_norms(data, ord, keepdims):
    x = data.draw(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=3, max_side=4),
                             elements=FLOATS))
    axis = data.draw(st.sampled_from([(0, 1), (-2, -1), (-1, -2)]))
    _same(lambda t: tf.linalg.norm(t, ord=ord, axis=axis, keepdims=keepdims), x)


def test_what_is_not_lowered_is_tfs_own():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    lazyx.reset_metrics()
    two = tf.norm(ltf.constant(x), ord=2, axis=[0, 1])  # TF's SVD path
    assert lazyx.metrics()["fallback_ops"] == {"tf.norm": 1}
    np.testing.assert_allclose(np.asarray(two), tf.norm(x, ord=2, axis=[0, 1]).numpy(), rtol=1e-6)
    with pytest.raises(ValueError):
        tf.norm(ltf.constant(x[0]), ord="fro")  # TF's own error for a vector's 'fro'


@settings(max_examples=20, deadline=None)
@given(st.data(), st.sampled_from([0.1, 1.0, 100.0]))
def test_clipping(data, clip):
    shapes = data.draw(st.lists(hnp.array_shapes(max_dims=2, max_side=4), min_size=1, max_size=3))
    arrays = [data.draw(hnp.arrays(np.float32, s, elements=FLOATS)) for s in shapes]
    _same(lambda *ts: tf.linalg.global_norm(list(ts)), *arrays)
    _same(lambda *ts: tf.clip_by_global_norm(list(ts), clip), *arrays)
    _same(lambda t: tf.clip_by_norm(t, clip), arrays[0])
    if arrays[0].ndim:
        _same(lambda t: tf.clip_by_norm(t, clip, axes=[0]), arrays[0])


def test_all_zero_gradients_and_a_given_norm():
    zeros = np.zeros((2, 2), np.float32)
    _same(lambda t: tf.clip_by_norm(t, 1.0), zeros)
    _same(lambda t, n: tf.clip_by_global_norm([t, None], 1.0, use_norm=n),
          np.ones((2, 2), np.float32), np.float32(3.0))


def _train(tape_type, constant, steps=4):
    rng = np.random.default_rng(0)
    w = tf.Variable(rng.standard_normal((4, 3)).astype(np.float32))
    b = tf.Variable(np.zeros(3, np.float32))
    x = rng.standard_normal((8, 4)).astype(np.float32) * 3
    y = rng.standard_normal((8, 3)).astype(np.float32)
    losses = []
    for _ in range(steps):
        with tape_type() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(constant(x), w) + b - constant(y)))
        grads, norm = tf.clip_by_global_norm(tape.gradient(loss, [w, b]), 1.0)
        # the lazy run's clipped gradients and norm stay lazy (no read mid-step)
        assert all(isinstance(t, ltf.Tensor) == (constant is ltf.constant)
                   for t in grads + [norm])
        for v, g in zip((w, b), grads):
            v.assign_sub(0.1 * g)
        losses.append((float(loss), float(norm)))
    return losses, w.numpy(), b.numpy()


def test_a_step_clipping_by_global_norm_trains_like_eager_tf():
    want = _train(tf.GradientTape, tf.constant)
    lazyx.reset_metrics()
    got = _train(ltf.GradientTape, ltf.constant)
    assert lazyx.metrics()["fallback_ops"] == {}
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)


def test_matvec_squeezes_lazily():
    a, v = np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)
    _same(tf.linalg.matvec, a, v)
    _same(lambda t: tf.compat.v1.squeeze(t, squeeze_dims=[0]), a[None])


@settings(max_examples=15, deadline=None)
@given(st.data(), st.sampled_from(["euclidean", 1, np.inf]))
def test_normalize(data, ord):
    x = data.draw(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                             elements=st.floats(0.5, 5, width=32)))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    _same(lambda t: tf.linalg.normalize(t, ord=ord, axis=axis), x)


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_gather_nd(data):
    x = data.draw(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1,
                                                          max_side=4), elements=FLOATS))
    k = data.draw(st.integers(1, x.ndim))
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    idx = np.stack([data.draw(hnp.arrays(np.int32, batch, elements=st.integers(0, x.shape[j] - 1)))
                    for j in range(k)], axis=-1)
    _same(lambda p, i: tf.gather_nd(p, i), x, idx)


def test_gather_nd_refuses_known_out_of_range_indices_as_tf_does():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.gather_nd(tf.constant(x), tf.constant([[1, 3]]))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.gather_nd(ltf.constant(x), ltf.constant(np.array([[1, 3]], np.int32)))


def test_gather_nd_gradient_matches_tf():
    x = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    idx = np.array([[0, 1], [1, 2], [0, 1]], np.int32)
    with tf.GradientTape() as tape:
        want = tape.gradient(tf.reduce_sum(tf.gather_nd(x, idx) ** 2), x)
    with ltf.GradientTape() as tape:
        got = tape.gradient(tf.reduce_sum(tf.gather_nd(x, ltf.constant(idx)) ** 2), x)
    np.testing.assert_allclose(np.asarray(tf.convert_to_tensor(got)),
                               np.asarray(tf.convert_to_tensor(want)), rtol=1e-6)


@settings(max_examples=20, deadline=None)
@given(st.data(), st.sampled_from([tf.bool, tf.float32, tf.int32]))
def test_sequence_mask(data, dtype):
    lengths = data.draw(hnp.arrays(np.int32, hnp.array_shapes(min_dims=0, max_dims=2, max_side=4),
                                   elements=st.integers(0, 6)))
    maxlen = data.draw(st.integers(0, 7))
    _same(lambda n: tf.sequence_mask(n, maxlen, dtype=dtype), lengths)
    _same(lambda n: tf.sequence_mask(n, tf.constant(maxlen), dtype=dtype), lengths)
