"""Windows with a run-time start in TF: `X[i:i + b]` and `X[i]` in a loop over i ran one new
program per start (the start was an attribute of a static slice), so a minibatch loop over a
dataset held as a lazy tensor compiled once per batch. NumPy's frontend already made the
start a run-time parameter; TF's x[:, 1:5] now records NumPy's (and torch's) graph."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.numpy as lnp
import lazyx.frontends.tf as ltf

_X = np.random.default_rng(0).standard_normal((24, 6)).astype(np.float32)

_LOOPS = {  # (from 0: a window from 0 is one too, since 2026-11-30)
    "rows X[i:i+b]": lambda X: (tf.reduce_sum(X[i:i + 4] * 2.0, 0) for i in range(0, 21, 4)),
    "row X[i]": lambda X: (X[i] * 3.0 for i in range(0, 8)),
    "columns X[:, i:i+2]": lambda X: (tf.exp(X[:, i:i + 2]) for i in range(0, 5)),
    "negative X[-i]": lambda X: (X[-i] + 1.0 for i in range(2, 6)),
    "tf.strided_slice": lambda X: (tf.strided_slice(X, [i, 0], [i + 3, 6]) for i in range(0, 5)),
}


@pytest.mark.parametrize("name", list(_LOOPS))
def test_a_loop_over_windows_runs_one_program_with_tfs_values(name):
    X = ltf.constant(_X) * 1.0
    lazyx.sync()
    graphs, got = set(), []
    for value in _LOOPS[name](X):
        graphs.add(lazyx.graph_hash(value))
        got.append(value.numpy())
    want = [v.numpy() for v in _LOOPS[name](tf.constant(_X))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert len(graphs) == 1


def test_the_gradient_through_a_window_is_tfs():
    def grads(make, tape_type):
        w = tf.Variable(_X)
        with tape_type() as tape:
            loss = tf.reduce_sum(tf.square(make(w)[3:7, 1:4])) + tf.reduce_sum(make(w)[5])
        return tape.gradient(loss, w).numpy()

    want = grads(lambda w: w * 1.0, tf.GradientTape)
    got = grads(lambda w: w * ltf.constant(np.float32(1.0)), ltf.GradientTape)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("index", [(slice(None), slice(1, 5)), 2, 0, slice(0, 5),
                                   (slice(None), slice(0, 2)), (slice(None), 0), (0, 3)],
                         ids=["x[:, 1:5]", "x[2]", "x[0]", "x[:5]", "x[:, :2]", "x[:, 0]",
                              "x[0, 3]"])
def test_tf_and_numpy_record_one_graph_for_a_unit_step_window(index):
    t, a = ltf.constant(_X), lnp.asarray(_X)
    assert lazyx.graph_hash(t[index]) == lazyx.graph_hash(a[index])
