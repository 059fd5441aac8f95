"""lazyx.compile and lazy tensors a Keras layer or a tf.Module keeps as plain attributes,
against eager TF. Before, a replay rebound the tensor a call stored (`self.last = y`) in
place, so a tensor kept from an earlier call changed, silently; a table kept as an attribute
made every call trace again."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


class _KeepsLayer(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.inner = keras.layers.Dense(3, kernel_initializer="ones")

    def call(self, x):
        y = self.inner(x) * 2.0
        self.inner.last = y  # (on a sublayer: found through the layer tree)
        self.total = tf.reduce_sum(y)
        return tf.reduce_mean(y)


class _KeepsModule(tf.Module):
    def __call__(self, x):
        y = tf.tanh(x) * 2.0
        self.last = y
        return tf.reduce_sum(y)


def _inputs(n=5):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("make, kept", [
    (_KeepsLayer, lambda m: (m.inner.last, m.total)),
    (_KeepsModule, lambda m: (m.last,)),
], ids=["keras-layer", "tf-module"])
def test_tensors_a_call_stores_keep_each_calls_value(make, kept):
    eager, lazy = make(), make()
    step = lazyx.compile(lazy)
    lazyx.reset_metrics()
    kept_eager, kept_lazy = [], []
    for x in _inputs():
        eager(tf.constant(x))
        kept_eager.append(kept(eager))
        step(ltf.constant(x))
        kept_lazy.append(kept(lazy))
    assert lazyx.metrics()["replays"] >= 3
    for e, lz in zip(kept_eager, kept_lazy):
        for a, b in zip(e, lz):
            np.testing.assert_allclose(np.asarray(b), a.numpy(), rtol=1e-6)


class _Table(keras.layers.Layer):
    def build(self, shape):
        self.pe = ltf.constant(np.arange(3, dtype=np.float32))

    def call(self, x):
        return tf.reduce_sum(x + self.pe)


def test_a_table_kept_as_an_attribute_replays_and_follows_a_rebinding():
    layer = _Table()
    step = lazyx.compile(layer)
    lazyx.reset_metrics()
    x = np.ones((2, 3), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (it warned: calls not replayed)
        results = [float(step(ltf.constant(x))) for _ in range(3)]
        layer.pe = ltf.constant(np.full(3, 5.0, np.float32))
        results += [float(step(ltf.constant(x))) for _ in range(2)]
    assert results == [12.0] * 3 + [36.0] * 2
    assert lazyx.metrics()["replays"] >= 3


class _Appends(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.history = []  # (Keras keeps it as a TrackedList)

    def call(self, x):
        y = tf.reduce_sum(x * 2.0)
        self.history.append(y)
        return y


def test_a_layer_appending_to_its_list_appends_at_every_call():
    """A replay cannot append: each call traces (before, replays left the list at one)."""
    layer = _Appends()
    step = lazyx.compile(layer)
    inputs = _inputs(10)
    for x in inputs:
        step(ltf.constant(x))
    assert len(layer.history) == len(inputs)
    np.testing.assert_allclose([float(np.asarray(h)) for h in layer.history],
                               [float(np.sum(x * 2.0)) for x in inputs], rtol=1e-5)
