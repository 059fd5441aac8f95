"""keras-io ddpg_pendulum's `Buffer.update`: a @tf.function with a critic step, then an actor
step through the critic, called with lazy tensors. Keras 3 optimizers create their slots in
the first apply_gradients; the lazy run of the function stopped at that creation (to leave
creation to TF's first trace) with the optimizer already marked built, and TF's trace then
failed: AttributeError: 'Adam' object has no attribute '_momentums' (explore_kio finding 5)."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


def _actor_critic():
    keras.utils.set_random_seed(0)
    actor = keras.Sequential([keras.Input((3,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(1, activation="tanh")])
    state, action = keras.Input((3,)), keras.Input((1,))
    hidden = keras.layers.Dense(8, activation="relu")(
        keras.layers.Concatenate()([state, action]))
    critic = keras.Model([state, action], keras.layers.Dense(1)(hidden))
    return actor, critic


def _train(constant, tape, steps=3):
    actor, critic = _actor_critic()
    actor_opt, critic_opt = keras.optimizers.Adam(0.01), keras.optimizers.Adam(0.02)

    @tf.function
    def update(states, actions, targets):
        with tape() as t:
            critic_loss = tf.reduce_mean((targets - critic([states, actions])) ** 2)
        grads = t.gradient(critic_loss, critic.trainable_variables)
        critic_opt.apply_gradients(zip(grads, critic.trainable_variables))
        with tape() as t:
            actor_loss = -tf.reduce_mean(critic([states, actor(states)]))
        grads = t.gradient(actor_loss, actor.trainable_variables)
        actor_opt.apply_gradients(zip(grads, actor.trainable_variables))
        return critic_loss, actor_loss

    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        batch = [rng.standard_normal((4, n)).astype(np.float32) for n in (3, 1, 1)]
        losses.append([float(v) for v in update(*[constant(b) for b in batch])])
        if constant is ltf.constant:
            ltf.sync()
    return np.array(losses), [v.numpy() for v in actor.variables + critic.variables]


def test_a_tf_function_step_builds_its_optimizers_on_the_first_lazy_call():
    # (the example's own tf.GradientTape; ltf.GradientTape takes the same path)
    eager_losses, eager_weights = _train(tf.constant, tf.GradientTape)
    lazyx.reset_metrics()
    losses, weights = _train(ltf.constant, tf.GradientTape)
    assert lazyx.metrics()["fallback_ops"] == {}  # run lazily from the first call on
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-6)
    for got, want in zip(weights, eager_weights):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
