"""GradientTape over lazy computations, Keras 3 layers on lazy tensors, a lazy training step."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf
from .conftest import assert_matches

keras = pytest.importorskip("keras")
RNG = np.random.default_rng(0)


def _grads(fn, lazy, *values):
    variables = [tf.Variable(v) for v in values]
    x = ltf.constant(RNG_X) if lazy else tf.constant(RNG_X)
    with tf.GradientTape() as tape:
        out = fn(x, *variables)
    return out, tape.gradient(out, variables)


RNG_X = RNG.standard_normal((4, 3)).astype(np.float32)
W = RNG.standard_normal((3, 2)).astype(np.float32)
B = RNG.standard_normal((2,)).astype(np.float32)
GRAD_CASES = [
    lambda x, w, b: tf.reduce_sum(tf.nn.relu(x @ w + b) ** 2),
    lambda x, w, b: tf.reduce_mean(tf.nn.softmax(tf.tanh(x @ w) * b)[:, 0]),
    lambda x, w, b: tf.reduce_sum(tf.nn.log_softmax(tf.nn.bias_add(x @ w, b)) *
                                  tf.one_hot([0, 1, 1, 0], 2)),
    lambda x, w, b: tf.reduce_max(tf.concat([x @ w, tf.sigmoid(x @ w) * b], 0)),
    lambda x, w, b: tf.reduce_sum(tf.reduce_logsumexp(x @ w * b, axis=1)),
    lambda x, w, b: tf.reduce_sum(tf.gather(x @ w, [3, 1, 1]) / (1.0 + b * b)),
    # top_k is one IR node with two results (values, indices); the gradient goes to the values
    lambda x, w, b: tf.reduce_sum(tf.math.top_k(tf.transpose(x @ w) + b[:, None], k=3).values
                                  * tf.constant([1.0, -2.0, 0.5])),
]


@pytest.mark.parametrize("i", range(len(GRAD_CASES)))
def test_gradient_tape_matches_eager(i):
    lazy_out, lazy_g = _grads(GRAD_CASES[i], True, W, B)
    eager_out, eager_g = _grads(GRAD_CASES[i], False, W, B)
    np.testing.assert_allclose(float(lazy_out), float(eager_out), rtol=1e-5)
    for got, want in zip(lazy_g, eager_g):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)


def test_softmax_and_logsumexp_gradients_hold_the_shift_constant():
    """Their max shift cancels, so a tape does not differentiate it: no tie mask (`eq`) over
    the logits in the gradient's graph, and the numbers are TF's."""
    w = RNG.standard_normal((4, 3)).astype(np.float32)

    def loss(x):
        return (tf.reduce_sum(tf.reduce_logsumexp(x, axis=1))
                + tf.reduce_sum(tf.nn.softmax(x) * w) + tf.reduce_sum(tf.nn.log_softmax(x) * w))

    grads = []
    for x in (ltf.constant(RNG_X), tf.constant(RNG_X)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = loss(x)
        grads.append(tape.gradient(out, x))
    assert "= eq(" not in lazyx.ir_text(grads[0])
    np.testing.assert_allclose(grads[0].numpy(), grads[1].numpy(), rtol=1e-5, atol=1e-6)


C = RNG.standard_normal((4, 4)).astype(np.float32)


def _sym(x, w):
    m = tf.transpose(x @ w) @ (x @ w)
    return m + tf.linalg.diag(tf.constant([0.0, 3.0]))  # distinct eigenvalues


# tf.linalg's factorizations are IR nodes with several results; uses free of the factors'
# sign conventions (TF's kernels and LAPACK may choose other signs)
FACTOR_CASES = {
    "svd": lambda x, w, b: (lambda s, u, v: tf.reduce_sum(s * s * b) +
                            tf.reduce_sum(u * u * C[:, :2]))(*tf.linalg.svd(x @ w + b)),
    "svd_values": lambda x, w, b: tf.reduce_sum(tf.linalg.svd(x @ w, compute_uv=False) * b),
    "qr": lambda x, w, b: (lambda q, r: tf.reduce_sum(r * r * C[:2, :2]) +
                           tf.reduce_sum(q * q * C[:, :2]))(*tf.linalg.qr(x @ w + b)),
    "eigh": lambda x, w, b: (lambda e, v: tf.reduce_sum(e * b) +
                             tf.reduce_sum(v * v * C[:2, :2]))(*tf.linalg.eigh(_sym(x, w))),
    "eigvalsh": lambda x, w, b: tf.reduce_sum(tf.linalg.eigvalsh(_sym(x, w)) ** 2),
}  # (TF registers no gradient for tf.linalg.lu: lazyx's lu rule is checked in tests/core)


@pytest.mark.parametrize("name", sorted(FACTOR_CASES))
def test_factorization_gradients_match_eager(name):
    lazyx.reset_metrics()
    lazy_out, lazy_g = _grads(FACTOR_CASES[name], True, W, B)
    assert lazyx.metrics()["fallback_ops"] == {}  # lowered: the gradient is lazyx's rule
    eager_out, eager_g = _grads(FACTOR_CASES[name], False, W, B)
    np.testing.assert_allclose(float(lazy_out), float(eager_out), rtol=1e-4)
    for got, want in zip(lazy_g, eager_g):
        if want is None:  # a variable the loss does not read
            assert got is None
            continue
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-3, atol=1e-4)


def test_watched_lazy_tensor_and_materialized_path():
    x = ltf.constant([0.5, -1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        real = tf.convert_to_tensor(tf.exp(x))        # leaves lazyx mid-way
        y = tf.reduce_sum(real * real)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               2 * np.exp(2 * np.array([0.5, -1.0, 2.0])), rtol=1e-5)


def _check_layer(layer, x, **kwargs):
    eager = layer(tf.constant(x), **kwargs)
    before = lazyx.metrics()["syncs"]
    lazy = layer(ltf.constant(x), **kwargs)
    assert isinstance(lazy, ltf.Tensor)
    assert lazyx.metrics()["syncs"] == before  # the layer call itself stayed lazy
    assert_matches(lazy, eager, rtol=1e-4, atol=1e-5)


def test_keras_layers_stay_lazy_and_match_eager():
    keras.utils.set_random_seed(1)
    img = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    seq = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    _check_layer(keras.layers.Dense(4, activation="gelu"), RNG_X)
    _check_layer(keras.layers.Conv2D(4, 3, padding="same", strides=2), img)
    _check_layer(keras.layers.Conv2D(2, (2, 3), dilation_rate=(1, 2)), img)
    _check_layer(keras.layers.MaxPooling2D(2), img)
    _check_layer(keras.layers.AveragePooling2D(3, strides=2, padding="same"), img)
    _check_layer(keras.layers.GlobalAveragePooling2D(), img)
    bn = keras.layers.BatchNormalization()
    bn.build(img.shape)
    bn.moving_mean.assign(RNG.standard_normal(3).astype(np.float32))
    _check_layer(bn, img, training=False)
    _check_layer(keras.layers.LayerNormalization(), seq)
    _check_layer(keras.layers.Dropout(0.5), seq, training=False)
    _check_layer(keras.layers.Embedding(10, 4), np.array([[1, 9, 0], [3, 3, 2]], np.int32))


def test_multi_head_attention_stays_lazy_without_fallbacks():
    keras.utils.set_random_seed(2)
    seq = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    mha = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    eager = mha(tf.constant(seq), tf.constant(seq))
    lazyx.reset_metrics()
    lazy = mha(ltf.constant(seq), ltf.constant(seq))
    assert lazyx.metrics()["syncs"] == 0
    assert_matches(lazy, eager, rtol=1e-4, atol=1e-5)
    assert not lazyx.metrics()["fallback_ops"]


def test_keras_dropout_training_is_lazy_and_scales():
    out = keras.layers.Dropout(0.5, seed=3)(ltf.constant(np.ones((64, 64), np.float32)),
                                           training=True)
    assert isinstance(out, ltf.Tensor)
    values = out.numpy()
    assert set(np.unique(values)) <= {0.0, 2.0} and abs((values == 0).mean() - 0.5) < 0.05


def _train(lazy, steps=20):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.LayerNormalization(),
                              keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)])
    opt = keras.optimizers.Adam(0.01)
    loss_fn = keras.losses.MeanSquaredError()
    rng = np.random.default_rng(5)
    losses = []
    for _ in range(steps):
        xb = rng.standard_normal((32, 8)).astype(np.float32)
        yb = (xb[:, :1] * 2 - xb[:, 1:2]).astype(np.float32)
        make = ltf.constant if lazy else tf.constant
        with tf.GradientTape() as tape:
            loss = loss_fn(make(yb), model(make(xb), training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        losses.append(float(loss))
    return np.array(losses)


def test_keras_sequential_trains_lazily_one_compile_per_step_graph():
    eager = _train(False)
    lazyx.reset_metrics()
    lazy = _train(True)
    np.testing.assert_allclose(lazy, eager, rtol=1e-4)
    m = lazyx.metrics()
    assert m["compiles"] == 1, m["compiles"]          # forward + backward: one program
    assert m["executions"] == 20 and not m["fallback_ops"]
    assert lazy[-1] < lazy[0]


@pytest.mark.parametrize("make", [
    lambda: keras.layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2),
    lambda: keras.layers.SeparableConv2D(6, 3, strides=2),
    lambda: keras.layers.Conv2DTranspose(3, 3, strides=2, padding="same"),
], ids=["depthwise", "separable", "transposed"])
def test_conv_layer_gradients_under_the_lazy_tape_match_eager(make):
    keras.utils.set_random_seed(0)
    layer = make()
    x = np.random.default_rng(2).standard_normal((2, 8, 8, 4)).astype(np.float32)
    layer.build(x.shape)
    results = []
    for lazy in (False, True):
        lazyx.reset_metrics()
        with (ltf.GradientTape if lazy else tf.GradientTape)() as tape:
            y = layer(ltf.constant(x) if lazy else tf.constant(x))
            loss = tf.reduce_sum(y * y)
        results.append([np.asarray(g) for g in tape.gradient(loss, layer.trainable_variables)])
    assert lazyx.metrics()["fallbacks"] == 0, lazyx.metrics()["fallback_ops"]
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_gradient_nodes_carry_the_line_that_asked_for_them():
    """core.autodiff.vjp finds the user's line once for every node it makes: the line of the
    tape.gradient call (each node used to walk the frames itself, to the same answer)."""
    import inspect
    from lazyx.core import ir
    x = ltf.constant(RNG_X)
    with ltf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.tanh(x) * x + tf.nn.relu(x))
    (grad,) = tape.gradient(y, [x]); line = inspect.currentframe().f_lineno  # noqa: E702
    forward = {id(n) for n in ir.topo_order([y.node])}
    made = [n for n in ir.topo_order([grad.node]) if id(n) not in forward and not n.is_leaf]
    assert made and {n.source for n in made} == {(__file__, line)}
    want = 1 - np.tanh(RNG_X) ** 2
    np.testing.assert_allclose(grad.numpy(), np.tanh(RNG_X) + RNG_X * want + (RNG_X > 0),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lazy", ["none", "inputs", "state"])
def test_stateless_call_reads_the_scope_values_not_the_stored_ones(lazy):
    # Keras variables dispatch to lazyx even with no lazy operand; reading their tf.Variable
    # there skipped Keras' own read: the StatelessScope's values (the stored ones were used)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    stored = [v.numpy() for v in model.variables]
    kernel, bias = RNG.standard_normal((3, 2)).astype("f4"), np.float32([0.5, -1.0])
    make = ltf.constant if lazy == "state" else np.asarray
    x = (ltf.constant if lazy == "inputs" else np.asarray)(RNG_X)
    y, _ = model.stateless_call([make(kernel), make(bias)], [], x)
    assert isinstance(y, ltf.Tensor) == (lazy != "none")
    np.testing.assert_allclose(np.asarray(y), RNG_X @ kernel + bias, rtol=1e-5, atol=1e-6)
    for v, before in zip(model.variables, stored):  # a stateless call stores nothing
        np.testing.assert_array_equal(v.numpy(), before)


def test_functional_build_of_a_layer_holding_unbuilt_layers():
    # Keras' symbolic build reads an unbuilt variable as its initializer's placeholder; the
    # tf.Variable behind it does not exist yet (lazyx crashed: NoneType has no 'value')
    class Block(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.mha, self.ff = keras.layers.MultiHeadAttention(2, 4), keras.layers.Dense(8)

        def call(self, x):
            return x + self.ff(self.mha(x, x))
    inputs = keras.Input((5, 8))
    model = keras.Model(inputs, Block()(inputs))
    assert model.output_shape == (None, 5, 8)
    seq = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    assert_matches(model(ltf.constant(seq)), model(tf.constant(seq)), rtol=1e-4, atol=1e-5)


def test_embedding_refuses_an_out_of_range_id_at_the_call():
    # Keras' take wraps negative ids first (where(i < 0, i + n, i)): the gather's index is
    # computed, yet still known on the host, so TF's own error is raised, not a clamp
    emb = keras.layers.Embedding(5, 2)
    emb.build(None)
    ids = np.array([[1, -1]], np.int32)
    assert_matches(emb(ltf.constant(ids)), emb(tf.constant(ids)))
    bad = np.array([[1, 7]], np.int32)
    with pytest.raises(tf.errors.InvalidArgumentError) as eager:
        emb(tf.constant(bad))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0,1\] = 7 is not in"):
        emb(ltf.constant(bad))
    assert "indices[0,1] = 7 is not in [0, 5)" in str(eager.value)
