"""lazyx.compile of a keras-io style `train_step`: the optimizer is reached only through the
model (`self.optimizer` after `model.compile`, or an attribute such as a GAN's
`self.d_optimizer`). Its variables are not in `model.variables`, so replays did not know them:
Adam's `iterations` stayed at the traced 1 and its moments at the traced values, and the
weights drifted from eager TF from the third call on, silently (explore_kio finding 7)."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


class Regressor(keras.Model):
    def train_step(self, data, tape=tf.GradientTape):
        x, y = data
        with tape() as t:
            loss = tf.reduce_mean((self(x, training=True) - y) ** 2)
        grads = t.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return loss


def _model(attribute):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(5, activation="relu")(inputs)
    model = Regressor(inputs, keras.layers.Dense(2)(hidden))
    optimizer = keras.optimizers.Adam(0.01)
    if attribute == "compile":
        model.compile(optimizer=optimizer)
    else:  # an optimizer of the model's own (a GAN's d_optimizer)
        model.compile()
        model.optimizer = optimizer
    return model


def _train(attribute, lazy, compiled, steps=5):
    model = _model(attribute)
    rng = np.random.default_rng(0)
    constant = ltf.constant if lazy else tf.constant
    tape = ltf.GradientTape if lazy else tf.GradientTape

    def step(model, x, y):
        return model.train_step((x, y), tape=tape)
    if compiled:
        step = lazyx.compile(step)
    losses = []
    for _ in range(steps):
        x = rng.standard_normal((8, 4)).astype(np.float32)
        y = rng.standard_normal((8, 2)).astype(np.float32)
        losses.append(float(step(model, constant(x), constant(y))))
        if lazy:
            ltf.sync()
    return losses, int(model.optimizer.iterations.numpy()), model.get_weights()


@pytest.mark.parametrize("attribute", ["compile", "own"])
def test_compiled_train_step_updates_the_models_optimizer(attribute):
    eager_losses, eager_iterations, eager_weights = _train(attribute, False, False)
    lazyx.reset_metrics()
    losses, iterations, weights = _train(attribute, True, True)
    assert lazyx.metrics()["replays"] >= 3  # replayed, not traced again each call
    assert iterations == eager_iterations == 5
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5)
    for got, want in zip(weights, eager_weights):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
