"""Gradients of gathers as TF gives them (tf.IndexedSlices), and what Keras' optimizers do
with them, against eager TF. Before, ltf.GradientTape gave an Embedding's table a dense
gradient, and Adam and RMSprop then trained it to other numbers (a token twice in a batch:
(g1 + g2)^2 in the second moment, where Keras' sparse path computes g1^2 + g2^2)."""
import numpy as np
import pytest
import tensorflow as tf

import keras
import lazyx
import lazyx.frontends.tf as ltf
from .conftest import train_keras

TOKENS = np.array([[1, 4, 4, 0, 7, 4, 2, 9, 1], [3, 3, 5, 8, 0, 1, 1, 6, 2],
                   [9, 9, 9, 2, 4, 0, 5, 5, 3], [7, 1, 0, 0, 6, 2, 8, 4, 4]], np.int32)
LABELS = np.array([0, 2, 1, 2])
OPTIMIZERS = {
    "sgd": lambda: keras.optimizers.SGD(0.1),
    "adam": lambda: keras.optimizers.Adam(0.01),
    "rmsprop": lambda: keras.optimizers.RMSprop(0.01),
    "sgd_momentum": lambda: keras.optimizers.SGD(0.1, momentum=0.9),
    "adagrad": lambda: keras.optimizers.Adagrad(0.1),
}


def _train(optimizer, lazy, steps=4):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((9,), dtype="int32"), keras.layers.Embedding(10, 6),
                              keras.layers.Conv1D(5, 3), keras.layers.GlobalMaxPooling1D(),
                              keras.layers.Dense(3)])
    losses, weights, kinds = train_keras(model, OPTIMIZERS[optimizer](), TOKENS, LABELS,
                                         lazy, steps)
    return losses, weights, [k is tf.IndexedSlices for k in kinds]


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_embedding_trains_to_eager_tfs_numbers(optimizer):
    want_losses, want_weights, want_kinds = _train(optimizer, lazy=False)
    lazyx.reset_metrics()
    got_losses, got_weights, got_kinds = _train(optimizer, lazy=True)
    m = lazyx.metrics()
    assert got_kinds == want_kinds == [True, False, False, False, False]
    # one program per step (until 2026-11-29 RMSprop's and Adagrad's steps also read Keras'
    # tf.cond on whether the divisor of the slices has a zero: test_sparse_divide_lazy.py)
    assert m["syncs"] == 4, m
    assert sum(m["fallback_ops"].values()) == 0, m
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5)
    for got, want in zip(got_weights, want_weights):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _gradient(fn, lazy):
    table = tf.Variable(np.arange(12, dtype=np.float32).reshape(6, 2) / 7)
    make = ltf.constant if lazy else tf.constant
    with (ltf.GradientTape if lazy else tf.GradientTape)() as tape:
        loss = fn(table, make(np.array([[4, 1], [4, 4]], np.int32)),
                  make(np.array([5, 0, 4], np.int64)))
    return tape.gradient(loss, table)


CASES = {
    "one gather": (lambda t, i, j: tf.reduce_sum(tf.gather(t, i) ** 2), True),
    "two gathers": (lambda t, i, j: tf.reduce_sum(tf.gather(t, i) * 3.0) +
                    tf.reduce_sum(tf.sin(tf.gather(t, j))), True),
    "gather and a dense use": (lambda t, i, j: tf.reduce_sum(tf.gather(t, i)) +
                               tf.reduce_sum(t * t), False),
    "gather along axis 1": (lambda t, i, j: tf.reduce_sum(tf.gather(t, j[:2] % 2, axis=1) ** 2),
                            False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_kind_and_values_match_eager(case):
    fn, sparse = CASES[case]
    want, got = _gradient(fn, lazy=False), _gradient(fn, lazy=True)
    assert isinstance(want, tf.IndexedSlices) == isinstance(got, tf.IndexedSlices) == sparse
    if sparse:
        np.testing.assert_array_equal(np.asarray(got.indices), want.indices.numpy())
        np.testing.assert_allclose(np.asarray(got.values), want.values.numpy(), rtol=1e-6)
        np.testing.assert_array_equal(got.dense_shape.numpy(), want.dense_shape.numpy())
        dense = tf.convert_to_tensor(got)  # summed lazily, duplicates added
        assert isinstance(dense, ltf.Tensor)
        np.testing.assert_allclose(np.asarray(dense), tf.convert_to_tensor(want).numpy(),
                                   rtol=1e-6)
    else:
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6)


def test_a_real_indexed_slices_still_converts_with_tf():
    real = tf.IndexedSlices(tf.ones((3, 2)), tf.constant([0, 2, 0]), tf.constant([4, 2]))
    dense = tf.convert_to_tensor(real)
    assert type(dense) is type(tf.constant(1.0))
    np.testing.assert_array_equal(dense.numpy(), [[2, 2], [0, 0], [1, 1], [0, 0]])


@pytest.mark.parametrize("method", ["scatter_add", "scatter_sub", "scatter_update",
                                    "scatter_max", "scatter_min", "scatter_mul"])
def test_variable_scatters_of_lazy_slices_stay_lazy_and_match_eager(method):
    start = np.arange(10, dtype=np.float32).reshape(5, 2) - 4
    rows = np.array([[1.5, -2.0], [0.5, 3.0], [-1.0, 2.5]], np.float32)
    idx = np.array([3, 0, 1], np.int32)  # distinct: with repeats scatter_update picks any
    want = tf.Variable(start)
    getattr(want, method)(tf.IndexedSlices(tf.constant(rows), tf.constant(idx)))
    got = tf.Variable(start)
    before = lazyx.metrics()["syncs"]
    getattr(got, method)(tf.IndexedSlices(ltf.constant(rows) * 1.0, ltf.constant(idx)))
    assert lazyx.metrics()["syncs"] == before  # recorded, not run
    ltf.sync()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_scatter_add_sums_repeated_rows_like_tf():
    start = np.zeros((4, 3), np.float32)
    rows = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([2, 0, 2, 2], np.int64)
    want, got = tf.Variable(start), tf.Variable(start)
    want.scatter_add(tf.IndexedSlices(tf.constant(rows), tf.constant(idx)))
    got.scatter_add(tf.IndexedSlices(ltf.constant(rows), ltf.constant(idx)))
    ltf.sync()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_scatter_of_lazy_rows_at_known_indices_out_of_range_raises_tfs_error():
    var = tf.Variable(np.zeros((3, 2), np.float32))
    rows = ltf.constant(np.ones((2, 2), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="is not in"):  # TF's own
        var.scatter_add(tf.IndexedSlices(rows, tf.constant([0, 7])))
