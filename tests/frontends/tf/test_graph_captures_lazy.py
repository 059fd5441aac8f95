"""A tf.function traced on TF values whose body reads a lazy tensor it closes over (TF's
style-transfer tutorial: `train_step(image)` with `image` a tf.Variable compares the image's
features with style targets computed, lazily, before). TF's graph captures the lazy value as
it captures an eager tensor, materialized once at the trace; the ops stay TF's, in the graph.
The lowerings took the graph's symbolic tensors as operands and failed reading their value
(AttributeError: 'SymbolicTensor' object has no attribute 'numpy'). Each compares with the
same program on tf.constant values."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

_R = np.random.default_rng(3)
_T = _R.standard_normal((2, 3)).astype(np.float32)
_X = _R.standard_normal((2, 3)).astype(np.float32)


def _both(program):
    """program(make) with tf.constant and with ltf.constant: equal results; the lazy one's."""
    want, got = program(tf.constant), program(ltf.constant)
    want, got = tf.nest.flatten(want), tf.nest.flatten(got)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)
    return got


# each body mixes the graph's input `x` and the captured `t` another way: a lowered op on a
# symbolic and a lazy operand either way round, lazy ops alone whose result meets the graph,
# a lazy value returned as it is, an op with no lowering
_BODIES = {
    "graph op lazy": lambda x, t: tf.reduce_sum((x - t) ** 2),
    "lazy op graph": lambda x, t: t * x + t,
    "lazy ops first": lambda x, t: x * tf.reduce_mean(tf.tanh(t)),
    "returns the lazy value": lambda x, t: (x + 1.0, tf.exp(t)),
    "no lowering": lambda x, t: tf.strings.to_number(tf.strings.as_string(t)) + x,
    "matmul": lambda x, t: tf.matmul(x, t, transpose_b=True),
}


@pytest.mark.parametrize("body", sorted(_BODIES))
def test_a_tf_function_captures_a_lazy_closure(body):
    fn = _BODIES[body]

    def program(make):
        t = make(_T) * 2.0  # lazy under ltf.constant
        f = tf.function(lambda x: fn(x, t))
        v = tf.Variable(_X)
        first = f(v)
        v.assign(v * 0.5)  # the traced graph runs again on the variable's new value
        return first, f(v), f(tf.constant(_X))
    _both(program)


def test_the_capture_is_one_sync_at_the_trace_and_none_per_call():
    t = ltf.constant(_T) * 3.0
    f = tf.function(lambda x: tf.reduce_sum(x * t))
    x = tf.constant(_X)
    f(x)
    syncs = lazyx.metrics()["syncs"]
    for _ in range(3):
        got = f(x)
    assert lazyx.metrics()["syncs"] == syncs
    np.testing.assert_allclose(got.numpy(), np.sum(_X * _T * 3.0), rtol=1e-5)


def test_style_transfer_step_on_lazy_targets_matches_eager():
    """The tutorial's loop in small: a tf.Variable image optimized by a tf.function step toward
    targets computed from the (lazy) style image; its gradient tape runs inside the graph."""
    def program(make):
        style = make(_T)
        targets = tf.nn.relu(style) @ tf.transpose(style)  # a Gram-like target, lazy
        image = tf.Variable(_X)
        opt = tf.keras.optimizers.SGD(0.1)

        @tf.function
        def train_step(image):
            with tf.GradientTape() as tape:
                feats = tf.nn.relu(image) @ tf.transpose(image)
                loss = tf.reduce_mean((feats - targets) ** 2)
            grad = tape.gradient(loss, image)
            opt.apply_gradients([(grad, image)])
            image.assign(tf.clip_by_value(image, -1.0, 1.0))
            return loss
        losses = [train_step(image) for _ in range(3)]
        return losses, image.read_value()
    _both(program)


def test_a_lazy_value_of_another_dtype_than_the_graph_asks_is_tfs_error():
    t = ltf.constant(_T)

    @tf.function
    def f(x):
        return tf.add(x, t)
    with pytest.raises((TypeError, ValueError)):
        f(tf.constant(_X.astype(np.float64)))


def test_a_capture_under_a_tape_keeps_the_gradient_through_the_value():
    """The capture's sync ran inside tf.init_scope, which pauses the tapes: the realized value
    forgot its graph, and a loss using it after the trace had no gradient (None)."""
    def grad(make, tape_type):
        w = tf.Variable(np.full((3, 3), 0.5, np.float32))
        with tape_type() as tape:
            y = tf.matmul(make(_T), w)
            tf.function(lambda: tf.reduce_sum(y))()  # the trace captures y
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, w)
    want = grad(tf.constant, tf.GradientTape)
    for tape_type in (tf.GradientTape, ltf.GradientTape):
        got = grad(ltf.constant, tape_type)
        assert got is not None
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-5)


def test_a_keras_layer_built_by_its_first_call_under_a_tape_gets_its_gradients():
    """Keras traces an unbuilt layer's call in a scratch graph for its output shapes (d2l's
    transformer blocks: layers with sub-layers and no build()); capturing the lazy input
    there synced the step and lost its gradients. It is refused, as before, and Keras builds
    the layer in the real call."""
    keras = pytest.importorskip("keras")

    class Block(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(3)

        def call(self, x):
            return self.dense(x)

    def grads(make):
        keras.utils.set_random_seed(0)
        w = tf.Variable(np.full((3, 3), 0.5, np.float32))
        block = Block()
        lazyx.reset_metrics()
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(block(tf.matmul(make(_T), w)) ** 2)
        assert lazyx.metrics()["syncs"] == 0  # the forward stays lazy
        return tape.gradient(loss, [w] + block.trainable_variables)
    want = grads(tf.constant)
    got = grads(ltf.constant)
    for g, e in zip(got, want):
        assert g is not None
        np.testing.assert_allclose(np.asarray(g), e.numpy(), rtol=1e-5)
