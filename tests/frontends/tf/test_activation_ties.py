"""Gradients of activations at their kinks, as TF gives them: relu'(0) = 0, relu6' = 0 at 0
and 6, selu'(0) = scale. relu is the IR's max(x, 0), whose gradient gave a tie to the
canonically first operand -- which depended on the op that produced x -- so relu'(0) was 1
after x + 0, tanh or a matmul (TF's CVAE tutorial: a Conv2D's bias gradient on zero patches)."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf

_X = np.array([-1.0, 0.0, 0.0, 6.0, 2.0], np.float32)
_PRODUCERS = {"leaf": lambda x: x, "add": lambda x: x + 0.0, "mul": lambda x: x * 1.0,
              "sub": lambda x: x - 0.0, "tanh": lambda x: tf.tanh(x) * 0.0 + x,  # (x exactly)
              "matmul": lambda x: tf.reshape(tf.reshape(x, (1, 5)) @ tf.eye(5), (5,))}


@pytest.mark.parametrize("tape", ["tf", "ltf"])
@pytest.mark.parametrize("producer", list(_PRODUCERS))
@pytest.mark.parametrize("activation", [tf.nn.relu, tf.nn.relu6, tf.nn.selu, tf.nn.elu,
                                        tf.nn.leaky_relu], ids=lambda f: f.__name__)
def test_the_gradient_at_a_kink_is_tfs(activation, producer, tape):
    def grad(make, Tape):
        x = make(_X)
        with Tape() as t:
            t.watch(x)
            y = tf.reduce_sum(activation(_PRODUCERS[producer](x)))
        return np.asarray(t.gradient(y, x))
    want = grad(tf.constant, tf.GradientTape)
    got = grad(ltf.constant, tf.GradientTape if tape == "tf" else ltf.GradientTape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_a_relu_conv_layers_bias_gradient_on_zero_patches_is_tfs():
    import keras
    keras.utils.set_random_seed(0)
    layer = keras.layers.Conv2D(2, 3, activation="relu")
    image = np.zeros((1, 5, 5, 1), np.float32)
    image[0, 0, 0, 0] = 1.0

    def bias_grad(make):
        with tf.GradientTape() as t:
            loss = tf.reduce_sum(layer(make(image)))
        return np.asarray(t.gradient(loss, layer.bias))
    np.testing.assert_allclose(bias_grad(ltf.constant), bias_grad(tf.constant), rtol=1e-6)
