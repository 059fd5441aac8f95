"""keras.ops.cond on a lazy predicate (hooks.py, control_flow.py): both branches are traced, as
tf.function traces them, and their results and variable assigns selected; the predicate is not
read. (tests/frontends/tf/test_lazy_cond.py covers tf.cond and Keras' optimizers.)"""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

LOSSES = ["Hinge", "SquaredHinge"]


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("labels", ["binary", "plus_minus_one"])
def test_hinge_losses_stay_lazy_and_match_eager(name, labels):
    rng = np.random.default_rng(0)
    y_true = (rng.integers(0, 2, (5, 3)) if labels == "binary"
              else rng.choice([-1, 1], (5, 3))).astype(np.float32)
    y_pred = rng.standard_normal((5, 3)).astype(np.float32)
    lazyx.reset_metrics()
    loss = getattr(keras.losses, name)()
    got = loss(ltf.constant(y_true), ltf.constant(y_pred))
    assert isinstance(got, ltf.Tensor)
    assert lazyx.metrics()["fallback_ops"] == {}
    want = loss(tf.constant(y_true), tf.constant(y_pred))
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6)


def test_cond_in_user_code_traces_both_branches():
    runs = []
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for flag in (True, False):
        lazyx.reset_metrics()
        got = keras.ops.cond(ltf.constant(flag),
                             lambda: runs.append("true") or (ltf.constant(x), ltf.constant(x)),
                             lambda: runs.append("false") or (ltf.constant(-x), ltf.constant(x)))
        assert lazyx.metrics()["syncs"] == 0  # the predicate was not read
        np.testing.assert_array_equal(np.asarray(got[0]), x if flag else -x)
        assert lazyx.metrics()["fallback_ops"] == {}
    assert runs == ["true", "false"] * 2  # both branches traced, as tf.function does


def test_a_variable_assigned_in_a_branch_is_assigned_once():
    v = tf.Variable(0.0)
    keras.ops.cond(ltf.constant(True), lambda: v.assign_add(1.0), lambda: v.assign_add(10.0))
    assert float(v.numpy()) == 1.0


def test_an_eager_predicate_takes_keras_own_path():
    assert keras.ops.cond(tf.constant(False), lambda: 1, lambda: 2) == 2
