"""keras.ops.cond on a lazy predicate (hooks.py): both branches, selected per element; a
predicate that cannot be selected on is read, as a counted fallback."""
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


def test_cond_selects_nested_branches_per_predicate():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for flag in (True, False):
        got = keras.ops.cond(ltf.constant(flag), lambda: (ltf.constant(x), ltf.constant(x) * 2),
                             lambda: (ltf.constant(-x), ltf.constant(x) + 1))
        want = (x, x * 2) if flag else (-x, x + 1)
        assert all(isinstance(g, ltf.Tensor) for g in got)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)


def test_branches_of_different_shapes_read_the_predicate_as_a_counted_fallback():
    lazyx.reset_metrics()
    got = keras.ops.cond(ltf.constant(False), lambda: ltf.constant(np.ones(2, np.float32)),
                         lambda: ltf.constant(np.zeros(3, np.float32)))
    np.testing.assert_array_equal(np.asarray(got), np.zeros(3, np.float32))
    assert sum(lazyx.metrics()["fallback_ops"].values()) == 1


def test_an_eager_predicate_takes_keras_own_path():
    assert keras.ops.cond(tf.constant(False), lambda: 1, lambda: 2) == 2
