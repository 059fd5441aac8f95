import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
import lazyx.frontends.tf as ltf  # noqa: E402


def assert_matches(lazy, eager, rtol=1e-5, atol=1e-6):
    """The lazy result equals eager TF's: value, dtype and static shape."""
    assert isinstance(lazy, ltf.Tensor), type(lazy)
    assert lazy.dtype == eager.dtype, (lazy.dtype, eager.dtype)
    assert lazy.shape == eager.shape, (lazy.shape, eager.shape)
    np.testing.assert_allclose(lazy.numpy(), eager.numpy(), rtol=rtol, atol=atol)


def same_as_eager(fn, *arrays, rtol=1e-5, atol=1e-6, constants=()):
    """fn on eager TF constants and on lazy ones of the same arrays: every (nested) result lazy,
    with eager TF's values, shape and dtype (None where TF's is None), and no fallback.
    `constants`: positions in the flattened result that TF itself makes as constants (a
    count from the static shape), which stay eager tensors."""
    import lazyx
    want = tf.nest.flatten(fn(*[tf.constant(a) for a in arrays]))
    lazyx.reset_metrics()
    got = tf.nest.flatten(fn(*[ltf.constant(a) for a in arrays]))
    assert lazyx.metrics()["fallback_ops"] == {}
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:  # (clip_by_global_norm keeps a list's None entries)
            assert g is None
            continue
        assert k in constants or isinstance(g, ltf.Tensor), type(g)
        g = np.asarray(g)
        assert g.shape == tuple(w.shape) and g.dtype == w.dtype.as_numpy_dtype
        np.testing.assert_allclose(g, w.numpy(), rtol=rtol, atol=atol)


def gradients_both_ways(loss_of, array, tape="ltf"):
    """(eager TF's gradient, lazyx's) of loss_of(x) at x = `array`, as NumPy arrays: eager
    under tf.GradientTape on a tf.constant, lazy under `tape` ("ltf": ltf.GradientTape, "tf":
    TF's own tape) on an ltf.constant, each watching x."""
    out = []
    for tape_cls, make in ((tf.GradientTape, tf.constant),
                           (ltf.GradientTape if tape == "ltf" else tf.GradientTape,
                            ltf.constant)):
        x = make(array)
        with tape_cls() as t:
            t.watch(x)
            loss = loss_of(x)
        out.append(np.asarray(t.gradient(loss, x)))
    return tuple(out)


def train_keras(model, optimizer, x, y, lazy, steps, loss_fn=None):
    """`steps` training steps of a Keras classifier on (x, y), eagerly or lazily (an
    ltf.GradientTape, ltf.sync() per step): (losses, trained weights, each first gradient's
    type)."""
    import keras
    loss_fn = loss_fn or keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    make = ltf.constant if lazy else tf.constant
    xs, ys = make(x), make(y)
    losses, kinds = [], None
    for _ in range(steps):
        with (ltf.GradientTape if lazy else tf.GradientTape)() as tape:
            loss = loss_fn(ys, model(xs, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        kinds = kinds or [type(g) for g in grads]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        if lazy:
            ltf.sync()
        losses.append(float(loss))
    return losses, [v.numpy() for v in model.trainable_variables], kinds


def keras_step(model, optimizer, mode, loss_fn):
    """A Keras training step and its input maker for `mode`: "eager" (tf.GradientTape,
    tf.constant), "lazy" (ltf's) or "compiled" (ltf's, under lazyx.compile). The step takes
    (x, y), applies loss_fn(prediction, y)'s gradients and returns the loss."""
    import lazyx
    tape, make = (tf.GradientTape, tf.constant) if mode == "eager" else \
        (ltf.GradientTape, ltf.constant)

    def step(x, y):
        with tape() as t:
            loss = loss_fn(model(x, training=True), y)
        grads = t.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return (lazyx.compile(step) if mode == "compiled" else step), make


# One variable's training step, eager or lazy (ltf.sync() at its end): tests/frontends/tf's
# variable tests run it on a variable between the writes and reads they check.
STEP_X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
STEP_W0 = np.array([0.3, -0.2, 0.9], np.float32)


def variable_step(w, lazy):
    x = (ltf.constant if lazy else tf.constant)(STEP_X)
    with (ltf.GradientTape if lazy else tf.GradientTape)() as tape:
        loss = tf.reduce_sum(tf.tanh(x * w) * w)
    w.assign_sub(0.1 * tape.gradient(loss, w))
    if lazy:
        ltf.sync()
    return loss
