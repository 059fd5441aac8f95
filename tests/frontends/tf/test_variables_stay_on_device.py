"""ltf.sync() leaves lazily updated variables on the device: no store into TF, no wait for the
program. Whatever reads a variable afterwards -- eager code, a raw op on its handle, a graph
function traced before or after, a checkpoint -- sees the step's value, as after eager TF."""
import gc

import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf
from lazyx.frontends.tf import variables

from .conftest import STEP_W0 as W0, STEP_X as X, variable_step as _step


def test_a_training_loop_never_copies_its_variables_to_the_host():
    w = tf.Variable(W0)
    before = lazyx.metrics()["transfers_to_host"]
    for _ in range(4):
        _step(w, lazy=True)
    assert lazyx.metrics()["transfers_to_host"] == before
    assert variables.has_shadow(w)
    v = tf.Variable(W0)
    for _ in range(4):
        _step(v, lazy=False)
    np.testing.assert_allclose(w.numpy(), v.numpy(), rtol=1e-6)  # the read stores it
    assert not variables.has_shadow(w)


def _saved_and_restored(w, folder):
    path = tf.train.Checkpoint(w=w).write(str(folder / "ckpt"))
    fresh = tf.Variable(np.zeros_like(W0))
    tf.train.Checkpoint(w=fresh).read(path).assert_consumed()
    return fresh.numpy()


READS = {
    "numpy": lambda w, early, folder: w.numpy(),
    "np.asarray": lambda w, early, folder: np.asarray(w),
    "tf.identity": lambda w, early, folder: tf.identity(w).numpy(),
    "read_value": lambda w, early, folder: w.read_value().numpy(),
    "raw-op": lambda w, early, folder: tf.raw_ops.ReadVariableOp(
        resource=w.handle, dtype=tf.float32).numpy(),
    "fn-traced-early": lambda w, early, folder: early().numpy(),
    "fn-traced-late": lambda w, early, folder: tf.function(lambda: w * 1.0)().numpy(),
    "checkpoint": lambda w, early, folder: _saved_and_restored(w, folder),
}


@pytest.mark.parametrize("read", sorted(READS))
def test_every_read_after_the_barrier_sees_the_steps_value(read, tmp_path):
    def run(lazy):
        w = tf.Variable(W0)
        early = None
        if read == "fn-traced-early":
            # a graph function holding the variable's handle before any lazy step (the
            # others must not: a held handle makes every barrier store the variable)
            early = tf.function(lambda: w * 1.0)
            early()
        seen = []
        for _ in range(3):
            _step(w, lazy)
            seen.append(np.array(READS[read](w, early, tmp_path)))
        return seen

    want, got = run(lazy=False), run(lazy=True)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_a_tf_function_assigning_a_variable_left_on_the_device_builds_on_its_value():
    w, v = tf.Variable(W0), tf.Variable(W0)
    _step(w, lazy=True)
    _step(v, lazy=False)
    bump = tf.function(lambda var: var.assign_add(tf.ones(3)))  # traced on the lazy one
    bump(w), bump(v)
    np.testing.assert_allclose(w.numpy(), v.numpy(), rtol=1e-6)


def test_a_captured_handle_makes_the_barrier_store_at_once():
    w = tf.Variable(W0)
    held = w.handle  # user code may hand it to raw ops at any time: no Python in between
    _step(w, lazy=True)
    assert not variables.has_shadow(w)
    v = tf.Variable(W0)
    _step(v, lazy=False)
    np.testing.assert_allclose(
        tf.raw_ops.ReadVariableOp(resource=held, dtype=tf.float32).numpy(), v.numpy(),
        rtol=1e-6)


def test_a_variable_dropped_with_its_value_on_the_device_is_released():
    w = tf.Variable(W0)
    _step(w, lazy=True)
    key = id(w)
    assert key in variables._SHADOWED
    del w
    gc.collect()
    assert key not in variables._SHADOWED


def test_keras_predict_fit_and_lazy_steps_in_turn_match_eager():
    """Keras' predict and fit trace tf.functions over the variables left on the device (they
    read them as TF does: stored first); lazy steps after them build on what fit left."""
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.standard_normal((16, 3)).astype(np.float32)

    def run(lazy):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.BatchNormalization(), keras.layers.Dense(3)])
        opt = keras.optimizers.Adam(0.01)
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
        make = ltf.constant if lazy else tf.constant
        seen = []
        for _ in range(2):
            for _ in range(2):
                with (ltf.GradientTape if lazy else tf.GradientTape)() as tape:
                    loss = tf.reduce_mean(tf.square(model(make(x), training=True) - make(y)))
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                if lazy:
                    ltf.sync()
            seen.append(model.predict(x, verbose=0))
            model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        return seen + [v.numpy() for v in model.variables]

    for got, want in zip(run(lazy=True), run(lazy=False)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_eager_scalar_operands_are_run_time_numbers():
    """An eager rank-0 tensor operand (Keras casts its learning rate and betas every step) is
    a run-time scalar like a Python number: no transfer of its own, a new value never
    recompiles, and the numbers are eager TF's."""
    x = np.linspace(-1.0, 1.0, 6).astype(np.float32)
    lazy = ltf.constant(x)
    results, transfers = [], []
    lazyx.reset_metrics()
    for k, scale in enumerate([0.5, 2.0, -3.0]):
        before = lazyx.metrics()["transfers_to_device"]
        got = lazy * tf.constant(scale) + tf.cast(tf.constant(k), tf.float32)
        transfers.append(lazyx.metrics()["transfers_to_device"] - before)
        results.append((np.asarray(got), (tf.constant(x) * scale + k).numpy()))
    assert transfers == [0, 0, 0]
    assert lazyx.metrics()["compiles"] == 1
    for got, want in results:
        np.testing.assert_array_equal(got, want)


def test_store_variables_leaves_nothing_on_the_device():
    w, u, v = tf.Variable(W0), tf.Variable(W0 * 2), tf.Variable(W0)
    _step(w, lazy=True)
    u.assign(w * ltf.constant(X[0]))  # pending: store_variables runs it too
    _step(v, lazy=False)
    ltf.store_variables()
    assert not variables.has_shadow(w) and not variables.has_shadow(u)
    assert not any(var is w or var is u for var in variables._SHADOWED.values())
    np.testing.assert_allclose(w.numpy(), v.numpy(), rtol=1e-6)
    np.testing.assert_allclose(u.numpy(), v.numpy() * X[0], rtol=1e-6)


def _momentum_loop(lazy, steps=20):
    """The TF guide's optimizers_core loop: a variable read every step (`x == x_old`) while a
    lazy momentum built from it lives on."""
    Tape = ltf.GradientTape if lazy else tf.GradientTape
    x = tf.Variable(2.0)
    if lazy:
        x.assign(ltf.constant(2.0))
    change = 0.0
    for _ in range(steps):
        with Tape() as tape:
            tape.watch(x)
            loss = 2 * x ** 4 + 3 * x ** 3 + 2
        g = tape.gradient(loss, x)
        x_old = x.numpy()
        c = 1e-3 * g + 0.7 * change
        x.assign_sub(c)
        change = c
        if x == x_old:
            break
    return x.numpy()


def test_a_variable_read_each_step_beside_a_live_lazy_value_compiles_once():
    """The read stores the variable, and computes with it the live values sharing its graph
    (the momentum): left pending, the momentum's graph grew by a step at every read, and every
    read compiled a new program (301 compiles for the guide's 300 steps)."""
    want = _momentum_loop(lazy=False)
    lazyx.sync()
    lazyx.reset_metrics()
    got = _momentum_loop(lazy=True)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert lazyx.metrics()["compiles"] <= 3, lazyx.metrics()["compiles"]
