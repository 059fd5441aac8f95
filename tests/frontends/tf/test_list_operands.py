"""A Python list (or tuple) holding lazy tensors as an operand, which TF packs into one tensor:
d2l's concise weight decay computes `loss + self.net.losses`, a list of the regularizers'
values. Converting the list read the lazy element into a constant, so the gradient through
it was lost with no warning: no weight decay at all, the kernel 29 % off eager TF after
four steps. Each compares values and gradients with eager TF, under both tapes."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
import lazyx.frontends.tf as ltf  # noqa: E402

_X = np.arange(1, 5, dtype=np.float32)

_OPS = {
    "a + [b]": lambda a, b: a + [b],
    "a - [b]": lambda a, b: a - [b],
    "a * [b]": lambda a, b: a * [b],
    "a / [b]": lambda a, b: a / [b],
    "[b] + a": lambda a, b: [b] + a,
    "a + (b,)": lambda a, b: a + (b,),
    "tf.add(a, [b])": lambda a, b: tf.add(a, [b]),
    "tf.maximum(a, [b])": lambda a, b: tf.maximum(a, [b]),
    "a + [[b, b, b, b]]": lambda a, b: a + [[b, b, b, b]],
}


@pytest.mark.parametrize("tape_type", [tf.GradientTape, ltf.GradientTape],
                         ids=["tf tape", "ltf tape"])
@pytest.mark.parametrize("name", sorted(_OPS))
def test_a_list_operand_keeps_its_elements_gradient(name, tape_type):
    def run(make, tape_cls):
        w = tf.Variable(np.full(4, 0.75, np.float32))
        with tape_cls() as tape:
            a = make(_X) * w
            b = tf.reduce_sum(w ** 2) * make(np.float32(3.0))
            out = tf.reduce_sum(_OPS[name](a, b))
        return out, tape.gradient(out, w)
    want = run(tf.constant, tf.GradientTape)
    got = run(ltf.constant, tape_type)
    for g, e in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), e.numpy(), rtol=1e-6)


def test_keras_regularization_losses_added_as_a_list_train_as_in_eager():
    def train(make, tape_cls):
        keras.utils.set_random_seed(0)
        net = keras.Sequential([keras.layers.Dense(
            1, kernel_regularizer=keras.regularizers.l2(0.5))])
        opt = keras.optimizers.SGD(0.05)
        x = make(np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32))
        y = make(np.ones((8, 1), np.float32))
        losses = []
        for _ in range(3):
            with tape_cls() as tape:
                loss = tf.reduce_mean((net(x) - y) ** 2) + net.losses  # d2l's weight decay
            opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables),
                                    net.trainable_variables))
            losses.append(np.asarray(loss))
        return losses, [v.numpy() for v in net.trainable_variables]
    want = train(tf.constant, tf.GradientTape)
    for tape_cls in (tf.GradientTape, ltf.GradientTape):
        got = train(ltf.constant, tape_cls)
        for g, e in zip(got[0] + got[1], want[0] + want[1]):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
