"""TF functions a lazy value cannot enter -- py_function, tf.data, string results -- run on its
materialized value as counted fallbacks, with TF's numbers; a tf.function runs its Python
function lazily (test_tf_function_lazy.py)."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf

X = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)


def _same(got, want):
    got, want = tf.nest.flatten(got), tf.nest.flatten(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


def test_a_tf_function_called_with_lazy_values_runs_its_python_function_lazily():
    @tf.function
    def f(t, scale):
        return tf.reduce_sum(t * scale, axis=1), t[0]

    want = f(tf.constant(X), 2.0)
    lazyx.reset_metrics()
    got = f(ltf.constant(X) * 1.0, 2.0)  # a pending lazy value
    assert lazyx.metrics()["fallback_ops"] == {}  # (until 2026-11-29: "tf.function(f)")
    assert all(isinstance(g, ltf.Tensor) for g in got)  # results are lazy again
    _same(got, want)
    lazyx.reset_metrics()
    f(tf.constant(X), 3.0)  # eager arguments: TF's own call, nothing counted
    assert lazyx.metrics()["fallback_ops"] == {}


def test_gradients_flow_through_a_tf_function_under_the_lazy_tape():
    w = tf.Variable(np.linspace(0.5, 1.5, 5).astype(np.float32))
    inner = tf.function(lambda t: tf.tanh(t) * 2.0)

    def grad(tape_type, make):
        with tape_type() as tape:
            loss = tf.reduce_sum(inner(make(X) * w) + w)
        return tape.gradient(loss, w)

    _same(grad(ltf.GradientTape, ltf.constant), grad(tf.GradientTape, tf.constant))


CASES = {
    # (map_fn and vectorized_map run their body lazily since 2026-11-29: test_map_scan_lazy.py)
    "py_function": lambda t: tf.py_function(lambda a: a * 3.0, [t], tf.float32),
    "numpy_function": lambda t: tf.numpy_function(lambda a: a * 3.0, [t], tf.float32),
    "sparse.from_dense": lambda t: tf.sparse.to_dense(tf.sparse.from_dense(t)),
    "from_tensor_slices": lambda t: list(tf.data.Dataset.from_tensor_slices(t).batch(4)),
    "from_tensors": lambda t: list(tf.data.Dataset.from_tensors(t).map(lambda a: a + 1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_functions_that_rebuild_their_inputs_take_lazy_values(name):
    want = CASES[name](tf.constant(X))
    lazyx.reset_metrics()
    got = CASES[name](ltf.constant(X))
    assert sum(lazyx.metrics()["fallback_ops"].values()) == 1
    _same(got, want)
    if name.endswith("function"):  # named by its API, its result lazy (numpy_function's was
        assert lazyx.metrics()["fallback_ops"] == {f"tf.{name}": 1}  # neither)
        assert isinstance(got, ltf.Tensor)


def test_a_fallback_with_string_results_hands_back_tf_strings():
    got = tf.strings.as_string(ltf.constant(X[0]), precision=3)
    assert got.dtype == tf.string
    np.testing.assert_array_equal(got.numpy(), tf.strings.as_string(X[0], precision=3).numpy())


def test_serialize_tensor_of_a_lazy_value_gives_tfs_bytes():
    """tf.io.serialize_tensor has no dispatch: it refused the implicit conversion (TypeError)."""
    lazyx.reset_metrics()
    got = tf.io.serialize_tensor(ltf.constant(X) * 2.0)
    assert lazyx.metrics()["fallback_ops"] == {"tf.io.serialize_tensor": 1}
    assert got.numpy() == tf.io.serialize_tensor(tf.constant(X) * 2.0).numpy()
    np.testing.assert_array_equal(tf.io.parse_tensor(got, tf.float32).numpy(), X * 2.0)


def test_summary_write_of_a_lazy_loss_is_a_counted_fallback(tmp_path):
    """pix2pix's train_step logs its losses with tf.summary.scalar, TensorBoard's call of
    tf.summary.write, which has no dispatch: it refused the implicit conversion (TypeError)."""
    writer = tf.summary.create_file_writer(str(tmp_path))
    lazyx.reset_metrics()
    with writer.as_default():
        assert bool(tf.summary.write("loss", tf.reduce_mean(ltf.constant(X)), step=3))
    assert lazyx.metrics()["fallback_ops"] == {"tf.summary.write": 1}
    writer.flush()
    events = [e for f in tmp_path.iterdir() for e in tf.compat.v1.train.summary_iterator(str(f))]
    values = [v for e in events for v in e.summary.value if v.tag == "loss"]
    assert [e.step for e in events if e.summary.value] == [3]
    np.testing.assert_allclose(tf.make_ndarray(values[0].tensor), X.mean(), rtol=1e-6)
