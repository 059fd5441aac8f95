"""Gradients with respect to lazy values computed under TF's own tf.GradientTape: an activation
(keras-io's Grad-CAM takes the class score's gradient w.r.t. the last conv layer's output) and
a value a nested tape watches (keras-io's WGAN-GP: the critic's gradient w.r.t. an interpolate
of real and generated images, whose norm the outer tape differentiates again). TF's tape holds
one token per lazy value, made from the watched tensors behind it, so no token path led from
the target to such a value: the gradient was None (Grad-CAM) or raised later (WGAN-GP)."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
import lazyx.frontends.tf as ltf  # noqa: E402

_RNG = np.random.default_rng(7)
_W = _RNG.standard_normal((3, 4)).astype(np.float32)
_V = _RNG.standard_normal((4, 2)).astype(np.float32)
_X = _RNG.standard_normal((5, 3)).astype(np.float32)


def _both(fn, rtol=1e-5, atol=1e-6):
    """fn(make) on tf.constant and on ltf.constant, both under TF's own tapes: equal results
    (None where eager TF's is None); returns the lazy results."""
    eager, lazy = tf.nest.flatten(fn(tf.constant)), tf.nest.flatten(fn(ltf.constant))
    assert len(eager) == len(lazy)
    for e, g in zip(eager, lazy):
        if e is None:
            assert g is None
        else:
            assert g is not None
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=rtol, atol=atol)
    return lazy


@pytest.mark.parametrize("read", [False, True], ids=["pending", "read first"])
@pytest.mark.parametrize("order", ["activation first", "variable first"])
def test_gradient_with_respect_to_an_activation_and_a_variable(order, read):
    def grad(make):
        w, v = tf.Variable(_W), tf.Variable(_V)
        with tf.GradientTape() as t:
            h = tf.tanh(tf.matmul(make(_X), w))
            loss = tf.reduce_sum(tf.matmul(h, v)[:, 1] ** 2)
        if read:  # (logged after the block: both are data now, their graphs kept by the tape)
            float(loss), h.numpy()
        return t.gradient(loss, [h, w] if order == "activation first" else [w, h])
    got = _both(grad)
    assert any(isinstance(g, ltf.Tensor) for g in got)  # the activation's stays lazy


def test_several_targets_and_output_gradients_seed_an_activations_gradient():
    def grad(make):
        w = tf.Variable(_W)
        with tf.GradientTape(persistent=True) as t:
            h = tf.matmul(make(_X), w)
            a, b = tf.reduce_sum(tf.sin(h)), h * h
        seeds = [tf.constant(2.0), tf.constant(np.linspace(-1, 1, 20, dtype=np.float32)
                                               .reshape(5, 4))]
        return t.gradient({"a": a, "b": b}, {"h": h}), t.gradient([a, b], h, seeds)
    _both(grad)


def test_an_intermediate_the_target_does_not_reach_gets_none_as_in_tf():
    def grad(make):
        w = tf.Variable(_W)
        with tf.GradientTape() as t:
            h = tf.matmul(make(_X), w)
            unrelated = tf.exp(make(_X) * w[:, 0])
            loss = tf.reduce_sum(h)
        return t.gradient(loss, [unrelated, w])
    got = _both(grad)
    assert got[0] is None


def test_grad_cam_of_a_keras_conv_net_matches_eager():
    keras.utils.set_random_seed(3)
    inputs = keras.Input((8, 8, 2))
    conv = keras.layers.Conv2D(4, 3, activation="relu", name="last_conv")(inputs)
    pooled = keras.layers.GlobalAveragePooling2D()(conv)
    model = keras.Model(inputs, keras.layers.Dense(3)(pooled))
    grad_model = keras.Model(model.inputs, [model.get_layer("last_conv").output, model.output])
    images = np.random.default_rng(1).standard_normal((2, 8, 8, 2)).astype(np.float32)

    def heatmap(make):
        with tf.GradientTape() as tape:
            conv_out, preds = grad_model(make(images))
            score = preds[:, 1]
        grads = tape.gradient(score, conv_out)
        weights = tf.reduce_mean(grads, axis=(1, 2))
        return grads, tf.nn.relu(tf.reduce_sum(conv_out * weights[:, None, None, :], axis=-1))
    grads, _ = _both(heatmap)
    assert isinstance(grads, ltf.Tensor) and np.abs(np.asarray(grads)).max() > 0


def _wgan_gp_critic_steps(make, steps=3):
    """keras-io's WGAN-GP critic update: the penalty is the squared distance of the norm of
    the critic's gradient at an interpolate (nested tapes) from 1."""
    keras.utils.set_random_seed(5)
    generator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, "tanh")])
    critic = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, "tanh"),
                               keras.layers.Dense(1)])
    opt = keras.optimizers.Adam(0.01)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        real = make(rng.standard_normal((6, 3)).astype(np.float32))
        z = make(rng.standard_normal((6, 2)).astype(np.float32))
        alpha = make(rng.uniform(size=(6, 1)).astype(np.float32))
        with tf.GradientTape() as tape:
            fake = generator(z, training=True)
            cost = tf.reduce_mean(critic(fake)) - tf.reduce_mean(critic(real))
            interpolated = real + alpha * (fake - real)
            with tf.GradientTape() as gp_tape:
                gp_tape.watch(interpolated)
                pred = critic(interpolated, training=True)
            grads = gp_tape.gradient(pred, [interpolated])[0]
            norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=1))
            loss = cost + 10.0 * tf.reduce_mean((norm - 1.0) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, critic.trainable_variables),
                                critic.trainable_variables))
        losses.append(float(loss))
    return losses, [v.numpy() for v in critic.trainable_variables]


def test_a_wgan_gp_critic_step_under_nested_plain_tapes_matches_eager():
    eager_losses, eager_weights = _wgan_gp_critic_steps(tf.constant)
    lazy_losses, lazy_weights = _wgan_gp_critic_steps(ltf.constant)
    np.testing.assert_allclose(lazy_losses, eager_losses, rtol=1e-5, atol=1e-6)
    for lazy, eager in zip(lazy_weights, eager_weights):
        np.testing.assert_allclose(lazy, eager, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sources", ["input", "input and variable"])
def test_a_path_through_an_eagerly_run_op_keeps_tfs_part(sources):
    # py_function runs eagerly (a counted fallback) and TF's tape differentiates it: the
    # IR alone would give the direct part only (a third of this gradient). (An activation in
    # place of the watched input still gets None there: docs/tf.md.)
    def grad(make):
        w = tf.Variable(np.linspace(0.5, 1.5, 5).astype(np.float32))
        x = make(_X[:, 0])
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.py_function(lambda a: a * a * 3.0, [x * w], tf.float32)
            loss = tf.reduce_sum(y * x)
        return t.gradient(loss, [x, w] if sources == "input and variable" else x)
    _both(grad)


def _nested(make, outer_tape, inner_tape):
    w, v, g = tf.Variable(_W), tf.Variable(_V), tf.Variable(np.eye(3, dtype=np.float32) * 0.7)
    x = make(_X)
    with outer_tape() as outer:
        interpolated = 0.3 * x + 0.7 * tf.matmul(x, g)
        with inner_tape() as inner:
            inner.watch(interpolated)
            pred = tf.matmul(tf.tanh(tf.matmul(interpolated, w)), v)
        grads = inner.gradient(pred, [interpolated])[0]
        norm = tf.sqrt(tf.reduce_sum(grads * grads, axis=1))
        loss = tf.reduce_mean(pred) + 10.0 * tf.reduce_mean((norm - 1.0) ** 2)
    return [grads] + outer.gradient(loss, [w, v, g])


@pytest.mark.parametrize("outer_tape, inner_tape", [
    (tf.GradientTape, tf.GradientTape), (ltf.GradientTape, tf.GradientTape),
    (ltf.GradientTape, ltf.GradientTape), (tf.GradientTape, ltf.GradientTape)],
    ids=["tf in tf", "tf in ltf", "ltf in ltf", "ltf in tf"])
def test_second_order_gradients_through_nested_tapes(outer_tape, inner_tape):
    # (ltf in tf: the inner tape read the variables as shadows, so TF's outer tape saw no
    # read of theirs and gave None until 2026-11-30)
    eager = _nested(tf.constant, tf.GradientTape, tf.GradientTape)
    lazy = _nested(ltf.constant, outer_tape, inner_tape)
    for got, want in zip(lazy, eager):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("outer_tape, inner_tape", [
    (ltf.GradientTape, tf.GradientTape), (tf.GradientTape, ltf.GradientTape)],
    ids=["tf in ltf", "ltf in tf"])
def test_mixed_tapes_differentiate_a_variable_read_under_the_lazy_one(outer_tape, inner_tape):
    """A variable read while an ltf.GradientTape records is read as a shadow, which TF's own
    tape (inside it, or around it) never sees: its gradient with respect to the variable was
    None, first order (TF's tape inside) or second (TF's tape around)."""
    x0 = np.array([0.5, -1.0, 2.0, 0.25])

    def grads(make, outer_type, inner_type):
        x = tf.Variable(x0)
        with outer_type() as outer:
            with inner_type() as inner:
                y = tf.reduce_sum(tf.tanh(make(x0) * x) ** 2)
            g = inner.gradient(y, x)
            z = tf.reduce_sum(g ** 2)
        return g, outer.gradient(z, x)
    eager = grads(tf.constant, tf.GradientTape, tf.GradientTape)
    lazy = grads(ltf.constant, outer_tape, inner_tape)
    for got, want in zip(lazy, eager):
        assert got is not None
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-12)
