"""tf.functions and tf.Variables holding a lazy value (between a lazy assign and the sync).

A function traced then must store the lazy value eagerly and read the variable as TF does:
an assign of the value known at tracing, baked into the function graph, would run again at
every call and reset the variable to that stale value (it did: 2 instead of 20 below)."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf
from lazyx.frontends.tf import variables

ONES = np.ones(3, np.float32)


def _lazy_add(var, value):
    var.assign_add(ltf.constant(np.asarray(value, np.float32)))


@pytest.mark.parametrize("read", [
    lambda v: tf.identity(v.read_value()) * 2.0,   # a read of the variable
    lambda v: v * 2.0,                             # its operator
    lambda v: tf.gather(v, [0, 1, 2]) * 2.0,      # a gather (sparse_read)
])
def test_a_function_traced_on_a_lazy_variable_reads_it_at_every_call(read):
    v = tf.Variable(np.zeros(3, np.float32))
    f = tf.function(lambda: read(v))
    _lazy_add(v, ONES)                      # v holds a lazy value while f is traced
    np.testing.assert_array_equal(f().numpy(), 2 * ONES)
    np.testing.assert_array_equal(v.numpy(), ONES)
    v.assign(np.full(3, 10, np.float32))    # an eager assign: the function must see it
    np.testing.assert_array_equal(f().numpy(), 20 * ONES)
    np.testing.assert_array_equal(v.numpy(), 10 * ONES)
    _lazy_add(v, ONES)
    ltf.sync()                              # stored at the barrier
    np.testing.assert_array_equal(f().numpy(), 22 * ONES)


def test_a_function_traced_before_reads_a_lazy_value_assigned_since():
    """It runs without Python and reads the variable's TF buffer: the call stores the pending
    shadows of variables whose handle a function holds first (a counted sync)."""
    v = tf.Variable(np.zeros(3, np.float32))
    f = tf.function(lambda: v * 2.0)
    f()
    _lazy_add(v, ONES)
    np.testing.assert_array_equal(f().numpy(), 2 * ONES)
    other = tf.Variable(np.zeros(3, np.float32))  # held by no function: stays lazy
    _lazy_add(other, ONES)
    f()
    assert variables.has_shadow(other)


def test_keras_fit_after_lazy_steps_trains_from_their_values():
    """model.fit after a few ltf.GradientTape steps with no ltf.sync(): fit's train function,
    traced by an earlier fit, read the optimizer's stale TF buffers (Adam's moments and step
    counter) and the weights from before the lazy steps. It must train as eager Keras does."""
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = rng.standard_normal((32, 1)).astype(np.float32)
    results = []
    for tape, make in ((tf.GradientTape, tf.constant), (ltf.GradientTape, ltf.constant)):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.Adam(0.02), loss="mse")
        model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
        for k in range(2):
            with tape() as t:
                part = slice(16 * k, 16 * (k + 1))
                loss = tf.reduce_mean(tf.square(model(make(x[part])) - make(y[part])))
            grads = t.gradient(loss, model.trainable_variables)
            model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
        history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        results.append((history.history["loss"], model.get_weights()))
    (eager_loss, eager_w), (lazy_loss, lazy_w) = results
    np.testing.assert_allclose(lazy_loss, eager_loss, rtol=1e-5)
    for got, want in zip(lazy_w, eager_w):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
