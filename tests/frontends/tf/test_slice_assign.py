"""`v[i, j].assign(lazy)` / `v[:].assign(lazy)` on a tf.Variable that holds no lazy value yet
(d2l's corr2d fills a Variable element by element; its from-scratch optimizers update
`p[:].assign(p - lr * g)`): TF's sliced assign converted the lazy value, a counted fallback
and a sync per assign (42 for corr2d's 6x8 example). The variable now takes the lazy value
of the slice's scatter, as a variable already holding one did. Each compares with eager TF."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


def _corr2d(X, K):  # d2l's conv-layer.md, unchanged
    h, w = K.shape
    Y = tf.Variable(tf.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1)))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j].assign(tf.reduce_sum(X[i: i + h, j: j + w] * K))
    return Y


def test_corr2d_fills_a_variable_lazily():
    x = np.arange(48, dtype=np.float32).reshape(6, 8)
    k = np.array([[1.0, -1.0]], np.float32)
    want = _corr2d(tf.constant(x), tf.constant(k)).numpy()
    lazyx.reset_metrics()
    got = _corr2d(ltf.constant(x), ltf.constant(k))
    assert lazyx.metrics()["fallback_ops"] == {} and lazyx.metrics()["syncs"] == 0
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("index", [slice(None), (1, slice(None)), (slice(None), 2),
                                   (slice(0, 2), slice(1, 3)), slice(None, None, 2), -1],
                         ids=["[:]", "[1, :]", "[:, 2]", "[0:2, 1:3]", "[::2]", "[-1]"])
def test_sliced_assigns_of_lazy_values_match_eager(index):
    def run(make):
        v = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
        g = make(np.linspace(-1, 1, 12).astype(np.float32).reshape(4, 3))
        v[index].assign(v[index] - 0.5 * g[index])  # d2l's sgd: p[:].assign(p - lr * g)
        v[index].assign(v[index] * 2.0)  # (now a variable holding a lazy value)
        return v.numpy()
    np.testing.assert_array_equal(run(ltf.constant), run(tf.constant))


def test_a_sliced_assign_of_another_shape_is_tfs_error():
    v = tf.Variable(np.zeros((4, 3), np.float32))
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)):
        v[0, :].assign(ltf.constant(np.ones(4, np.float32)))
