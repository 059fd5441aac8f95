"""keras-io's GAN steps (dcgan_overriding_train_step, wgan_gp): a discriminator update, then in
the same step a generator gradient through the updated discriminator. TF holds a variable's
value constant on the tape; ltf.GradientTape differentiated through the lazy update it was
assigned (b' = b - lr * grad_b(a)), so the generator's gradient w.r.t. `a` got a second,
spurious path (explore_kio finding 1)."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
import lazyx.frontends.tf as ltf  # noqa: E402


def _two_variable_steps(constant, tape):
    a = tf.Variable([[1.0, 2.0]])
    b = tf.Variable([[3.0], [-1.0]])
    x = constant(np.array([[0.5]], np.float32))
    with tape() as t:
        loss = tf.reduce_sum(tf.matmul(x * a, b) ** 2)
    b.assign_sub(0.1 * t.gradient(loss, b))  # b's new value is computed from a's
    with tape() as t:
        loss = tf.reduce_sum(tf.matmul(x * a, b) ** 2)
    return np.asarray(t.gradient(loss, a))


def test_gradient_does_not_flow_into_another_variables_pending_update():
    eager = _two_variable_steps(tf.constant, tf.GradientTape)
    np.testing.assert_allclose(_two_variable_steps(ltf.constant, ltf.GradientTape), eager,
                               rtol=1e-6)


def test_an_assigned_value_has_no_gradient_to_what_it_was_computed_from():
    def grad(constant, tape):
        u = tf.Variable([1.0, 2.0])
        v = tf.Variable([0.0, 0.0])
        with tape() as t:
            v.assign(constant(np.array([3.0, 4.0], np.float32)) * u)
            y = tf.reduce_sum(v * 2.0)
        return t.gradient(y, u)
    assert grad(tf.constant, tf.GradientTape) is None  # an assign is not differentiable
    assert grad(ltf.constant, ltf.GradientTape) is None


def _gan(seed=0):
    keras.utils.set_random_seed(seed)
    # (no bias before BatchNormalization: its gradient is zero up to rounding, which Adam
    # scales up to a full step of either sign)
    generator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, use_bias=False),
                                  keras.layers.BatchNormalization(),
                                  keras.layers.LeakyReLU(0.2)])
    discriminator = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, "tanh"),
                                      keras.layers.Dense(1)])
    return generator, discriminator


def _gan_steps(constant, tape, steps=3):
    generator, discriminator = _gan()
    d_opt, g_opt = keras.optimizers.SGD(0.1), keras.optimizers.Adam(0.01)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        real = constant(rng.standard_normal((4, 3)).astype(np.float32))
        z = constant(rng.standard_normal((4, 2)).astype(np.float32))
        with tape() as t:  # the critic's step (WGAN's losses)
            fake = generator(z, training=True)
            d_loss = tf.reduce_mean(discriminator(fake, training=True)) - \
                tf.reduce_mean(discriminator(real, training=True))
        grads = t.gradient(d_loss, discriminator.trainable_variables)
        d_opt.apply_gradients(zip(grads, discriminator.trainable_variables))
        with tape() as t:  # the generator's, through the critic just updated
            g_loss = -tf.reduce_mean(discriminator(generator(z, training=True), training=True))
        grads = t.gradient(g_loss, generator.trainable_variables)
        g_opt.apply_gradients(zip(grads, generator.trainable_variables))
        if constant is ltf.constant:
            ltf.sync()
        losses.append([float(d_loss), float(g_loss)])
    weights = [v.numpy() for v in generator.variables + discriminator.variables]
    return np.array(losses), weights


def test_gan_step_matches_eager():
    eager_losses, eager_weights = _gan_steps(tf.constant, tf.GradientTape)
    lazy_losses, lazy_weights = _gan_steps(ltf.constant, ltf.GradientTape)
    np.testing.assert_allclose(lazy_losses, eager_losses, rtol=1e-5, atol=1e-6)
    for lazy, eager in zip(lazy_weights, eager_weights):
        np.testing.assert_allclose(lazy, eager, rtol=1e-5, atol=1e-6)
