"""tape.jacobian and tape.batch_jacobian of lazy targets (frontends/tf/jacobians.py), and
second-order gradients through nested tapes, under tf.GradientTape and ltf.GradientTape, against
eager TF: lazy sources, Keras variables, unconnected sources, non-persistent tapes, Hessians."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf

_X = np.array([[1.0, 2.0, -0.5], [0.25, -1.5, 3.0]], np.float32)
_TAPES = [("eager", tf.constant, tf.GradientTape), ("lazy", ltf.constant, tf.GradientTape),
          ("lazy-ltf", ltf.constant, ltf.GradientTape)]


def _eager_and(fn, rtol=1e-5):
    """fn(make, Tape) for each tape; each lazy result equals the eager one (None as None)."""
    results = [fn(make, Tape) for _, make, Tape in _TAPES]
    for (name, _, _), got in zip(_TAPES[1:], results[1:]):
        want = results[0]
        assert len(tf.nest.flatten(got)) == len(tf.nest.flatten(want))
        for a, b in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
            if b is None:
                assert a is None, name
                continue
            assert a.shape == b.shape, (name, a.shape, b.shape)
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-6,
                                       err_msg=name)
    return results


@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("pfor", [True, False])
def test_jacobian_of_lazy_sources(persistent, pfor):
    if not persistent and not pfor:
        pytest.skip("TF itself needs a persistent tape for its while_loop jacobian")

    def jac(make, Tape):
        x, u = make(_X), make(_X[0])
        with Tape(persistent=persistent) as t:
            t.watch(x)
            t.watch(u)
            y = tf.tanh(x) * 2.0 + tf.reduce_sum(x, axis=0) * u
        return t.jacobian(y, {"x": x, "u": u}, experimental_use_pfor=pfor)
    eager = _eager_and(jac)[0]
    assert eager["x"].shape == (2, 3, 2, 3)
    assert isinstance(jac(ltf.constant, tf.GradientTape)["x"], ltf.Tensor)  # stays lazy


def test_jacobian_and_batch_jacobian_of_keras_variables():
    def jac(make, Tape):
        tf.keras.utils.set_random_seed(3)
        layer = tf.keras.layers.Dense(2, activation="tanh")
        x = make(_X)
        with Tape(persistent=True) as t:
            t.watch(x)
            y = layer(x)
        return (t.jacobian(y, layer.trainable_variables), t.batch_jacobian(y, x))
    eager = _eager_and(jac)[0]
    assert [j.shape for j in eager[0]] == [(2, 2, 3, 2), (2, 2, 2)]
    assert eager[1].shape == (2, 2, 3)


@pytest.mark.parametrize("zeros", [False, True])
def test_an_unconnected_source_has_none_or_zeros(zeros):
    how = tf.UnconnectedGradients.ZERO if zeros else tf.UnconnectedGradients.NONE

    def jac(make, Tape):
        x, other = make(_X[0]), make(_X[1, :2])
        with Tape(persistent=True) as t:
            t.watch(x)
            t.watch(other)
            y = x * x
        return t.jacobian(y, [x, other], unconnected_gradients=how)
    eager = _eager_and(jac)[0]
    assert (eager[1] is None) != zeros


def test_hessian_from_nested_lazy_tapes():
    def hessian(make, Tape):
        x = make(_X[0])
        with Tape() as outer:
            outer.watch(x)
            with Tape() as inner:
                inner.watch(x)
                z = tf.reduce_sum(x ** 3) + x[0] * x[1]
            g = inner.gradient(z, x)
        return outer.jacobian(g, x)
    results = [hessian(make, Tape) for _, make, Tape in _TAPES if Tape is ltf.GradientTape or
               make is tf.constant]
    np.testing.assert_allclose(results[1].numpy(), results[0].numpy(), rtol=1e-6)


def test_a_non_persistent_plain_tape_says_what_it_needs_when_variables_are_involved():
    w = tf.Variable(_X[0])
    x = ltf.constant(_X[1])
    with tf.GradientTape() as t:
        y = x * w
    with pytest.raises(RuntimeError, match="persistent=True"):
        t.jacobian(y, w)


def test_batch_jacobian_checks_the_batch_dimension():
    x = ltf.constant(_X)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tf.reduce_sum(x, axis=1)
    with pytest.raises(ValueError, match="first dimension"):
        t.batch_jacobian(y, x)


def test_a_jacobian_is_one_program():
    x = ltf.constant(_X)
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.sin(x) * x
    lazyx.sync()
    before = lazyx.metrics()["syncs"]
    j = t.jacobian(y, x)
    assert lazyx.metrics()["syncs"] == before  # nothing ran yet
    expected = np.zeros(_X.shape * 2, np.float32)
    for i, k in np.ndindex(*_X.shape):
        expected[i, k, i, k] = np.cos(_X[i, k]) * _X[i, k] + np.sin(_X[i, k])
    np.testing.assert_allclose(j.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_output_gradients_of_a_whole_lazy_target_under_the_plain_tape():
    # (the token's backward took the seed for a scalar: a crash inside the tape before)
    def grad(make, Tape):
        x, w = make(_X[0]), tf.Variable(_X[1])
        with Tape() as t:
            t.watch(x)
            y = x * w
        return t.gradient(y, [x, w], output_gradients=tf.constant([1.0, 0.0, 2.0]))
    _eager_and(grad)


def test_a_target_that_depends_on_nothing_watched():
    def jac(make, Tape):
        x, other = make(_X[0]), make(_X[1])
        with Tape() as t:
            t.watch(x)
            y = other * 2.0
        return t.jacobian(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert _eager_and(jac)[0].shape == (3, 3)


@pytest.mark.parametrize("Tape", [tf.GradientTape, ltf.GradientTape])
def test_second_order_through_nested_tapes_as_tfs_guide_writes_it(Tape):
    # the Hessian of TF's guide: outer.jacobian(inner.gradient(...)), and a gradient of a
    # function of the gradient, with respect to a lazy value and a variable
    def second(make, OuterTape):
        x = make(_X[0])
        w = tf.Variable(_X[1])
        with OuterTape(persistent=True) as outer:
            outer.watch(x)
            with OuterTape() as inner:
                inner.watch(x)
                z = tf.reduce_sum(x ** 3 * w) + x[0] * x[1]
            gx, gw = inner.gradient(z, [x, w])
            penalty = tf.reduce_sum(gx * gx) + tf.reduce_sum(gw)
        return outer.jacobian(gx, x), outer.gradient(penalty, [x, w])
    eager = second(tf.constant, tf.GradientTape)
    lazy = second(ltf.constant, Tape)
    for a, b in zip(tf.nest.flatten(lazy), tf.nest.flatten(eager)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)
