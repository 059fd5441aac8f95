"""What TF's tapes promise about what is differentiated, kept for lazy values under both
tf.GradientTape and ltf.GradientTape: tf.stop_gradient holds a value constant, several targets
sum their gradients, watch_accessed_variables=False leaves unwatched variables without one;
and reductions and reads that give TF's own numbers and types (integer means, 0-d .numpy())."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf

_TAPES = [("eager", tf.constant, tf.GradientTape), ("lazy", ltf.constant, tf.GradientTape),
          ("lazy-ltf", ltf.constant, ltf.GradientTape)]
_IDS = [t[0] for t in _TAPES]
_X = np.array([1.0, 2.0, -0.5], np.float32)


def _eager_and(fn):
    """fn(make, Tape) for each tape; each lazy result must equal the eager one."""
    results = [fn(make, Tape) for _, make, Tape in _TAPES]
    for got in results[1:]:
        for a, b in zip(tf.nest.flatten(got), tf.nest.flatten(results[0])):
            if b is None:
                assert a is None
            else:
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    return results


def test_stop_gradient_holds_a_value_constant():
    def grad(make, Tape):
        x = make(_X)
        with Tape() as t:
            t.watch(x)
            y = x * x
            loss = tf.reduce_sum(tf.stop_gradient(y) * y + tf.stop_gradient(tf.sin(x)))
        return t.gradient(loss, x)
    eager = _eager_and(grad)[0]
    np.testing.assert_allclose(eager, 2 * _X ** 3, rtol=1e-6)  # (y held constant: y * 2x)


@pytest.mark.parametrize("structure", ["list", "dict", "one"])
def test_several_targets_sum_their_gradients(structure):
    def grad(make, Tape):
        w = tf.Variable([1.0, 2.0, 3.0])
        x = make(_X)
        with Tape() as t:
            a = tf.reduce_sum(x * w)
            b = w * w
        target = {"list": [a, b], "dict": {"a": a, "b": b}, "one": [a]}[structure]
        seeds = {"list": [tf.constant(2.0), tf.constant([1.0, 0.5, -1.0])],
                 "dict": {"a": tf.constant(2.0), "b": tf.constant([1.0, 0.5, -1.0])},
                 "one": None}[structure]
        return t.gradient(target, w), t.gradient(target, w, output_gradients=seeds) \
            if seeds is not None and Tape is not tf.GradientTape else None
    _eager_and(lambda make, Tape: grad(make, Tape)[0])


def test_unwatched_variables_get_no_gradient_when_accessed_variables_are_not_watched():
    def grad(make, Tape):
        w, b = tf.Variable([1.0, 2.0, 3.0]), tf.Variable([0.5, 0.5, 0.5])
        x = make(_X)
        with Tape(watch_accessed_variables=False) as t:
            t.watch(b)
            loss = tf.reduce_sum(x * w + b * b)
        return t.gradient(loss, [w, b])
    eager = _eager_and(grad)[0]
    assert eager[0] is None


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint16, np.int32,
                                   np.uint32, np.int64])
def test_integer_means_do_not_wrap_and_truncate_as_tfs(dtype):
    info = np.iinfo(dtype)
    values = np.array([[info.max, info.max - 1, info.max // 3],
                       [info.min, info.min + 1, 0 if info.min else 5]], dtype)
    for axis in (None, 0, 1):
        want = tf.reduce_mean(tf.constant(values), axis=axis)
        got = tf.reduce_mean(ltf.constant(values), axis=axis)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_numpy_of_a_0d_tensor_is_a_numpy_scalar():
    want = tf.reduce_max(tf.constant(_X)).numpy()
    got = tf.reduce_max(ltf.constant(_X)).numpy()
    assert type(got) is type(want) and got == want
    assert {got: "best"} == {want: "best"}
    assert ltf.constant(_X).numpy().shape == (3,)


@tf.custom_gradient
def _clipped_identity(x):
    return tf.identity(x), lambda dy: tf.clip_by_value(dy, -0.1, 0.1)


@tf.custom_gradient
def _straight_through_round(x):
    return tf.round(x), lambda dy: dy


@tf.custom_gradient
def _log1pexp(x):  # TF's own docstring example: a stable gradient
    e = tf.exp(x)
    return tf.math.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))


@tf.custom_gradient
def _scaled(x, scale):  # a second argument, not a tensor: its gradient is ignored
    return x * scale, lambda dy: (dy * scale * 10.0, None)


@pytest.mark.parametrize("fn", [_clipped_identity, _straight_through_round, _log1pexp,
                                lambda x: _scaled(x, 3.0) + _clipped_identity(x * x)],
                         ids=["clip", "straight-through", "log1pexp", "two-args"])
def test_custom_gradient_functions_give_their_own_gradients(fn):
    def grad(make, Tape):
        x = make(np.array([0.3, -1.7, 2.5, 40.0], np.float32))
        with Tape() as t:
            t.watch(x)
            loss = tf.reduce_sum(fn(x) * tf.constant([1.0, -2.0, 3.0, 0.5]))
        return t.gradient(loss, x)
    _eager_and(grad)


def test_a_custom_gradient_trains_a_keras_layer_as_eager():
    """Straight-through quantized activations of a Dense layer, trained three SGD steps
    under each tape."""
    def train(make, Tape):
        tf.keras.utils.set_random_seed(0)
        layer = tf.keras.layers.Dense(3, use_bias=False)
        layer.build((None, 4))
        opt = tf.keras.optimizers.SGD(0.1)
        x = make(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))
        for _ in range(3):
            with Tape() as t:
                y = _straight_through_round(tf.matmul(x, layer.kernel) * 4.0) / 4.0
                loss = tf.reduce_sum(y * y)
            opt.apply_gradients(zip(t.gradient(loss, [layer.kernel]), [layer.kernel]))
        return layer.kernel.numpy()
    _eager_and(train)


def test_a_custom_gradient_with_several_results_warns_under_a_tape_only():
    @tf.custom_gradient
    def pair(x):
        return (x * 2.0, x * 3.0), lambda da, db: da * 0.0 + db * 0.0

    x = ltf.constant(_X)
    outside = pair(x)  # (Keras' all-reduce of gradients calls one outside any tape)
    np.testing.assert_allclose(outside[1].numpy(), _X * 3.0)
    with pytest.warns(RuntimeWarning, match="gradient function is not used"):
        with tf.GradientTape() as t:
            t.watch(x)
            a, b = pair(x)


@pytest.mark.parametrize("optimizer", ["Adam", "RMSprop", "SGD"])
def test_an_embedding_under_the_plain_tape_gets_indexed_slices_as_eager(optimizer):
    """Lazy token ids through a Keras Embedding under tf.GradientTape: the table's gradient is
    IndexedSlices, as eager TF's gather gradient, so Keras' sparse update of Adam/RMSprop
    touches the rows eager touches (a dense gradient updated every row's moments: a repeated
    token's row ended 0.08 away from eager's)."""
    def train(make, Tape):
        if Tape is ltf.GradientTape:
            return None  # (ltf's tape gives IndexedSlices already: test_keras_and_gradients)
        tf.keras.utils.set_random_seed(0)
        emb = tf.keras.layers.Embedding(10, 3)
        opt = getattr(tf.keras.optimizers, optimizer)(0.1)
        tokens = make(np.array([[1, 2, 2, 7]], np.int32))
        kinds = []
        for _ in range(3):
            with Tape() as t:
                loss = tf.reduce_sum(tf.square(emb(tokens) - 1.0))
            grads = t.gradient(loss, emb.trainable_weights)
            kinds.append(type(grads[0]).__name__)
            opt.apply_gradients(zip(grads, emb.trainable_weights))
        assert kinds == ["IndexedSlices"] * 3
        return emb.embeddings.numpy()
    results = [train(make, Tape) for _, make, Tape in _TAPES]
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


def test_a_scalar_variable_and_a_watched_scalar_get_their_gradients():
    # a 0-d tensor lifted as a run-time scalar was no node the IR differentiated for: a
    # learnable temperature (Keras' Attention(use_scale=True)) got a zero gradient
    def grad(make, Tape):
        temperature, s = tf.Variable(2.0), tf.constant(3.0)
        x = make(_X)
        with Tape() as t:
            t.watch(s)
            loss = tf.reduce_sum(x * temperature * s + x * x)
        return t.gradient(loss, [temperature, s])
    eager = _eager_and(grad)[0]
    np.testing.assert_allclose([float(g) for g in eager], [3 * _X.sum(), 2 * _X.sum()])


def test_lazy_output_gradients_seed_the_gradient():
    # TF flattened lazy seeds into their components (a zero token): all-zero gradients
    def grad(make, Tape):
        x, w = make(_X), tf.Variable(_X[::-1].copy())
        with Tape() as t:
            t.watch(x)
            y = x * x * w
            z = tf.reduce_sum(x)
        seed = make(np.array([1.0, 10.0, 100.0], np.float32))
        return t.gradient([y, z], [x, w], output_gradients=[seed, make(2.0)])
    _eager_and(grad)


def test_values_made_inside_stop_recording_are_constants():
    def grad(make, Tape):
        x = make(_X)
        w = tf.Variable(_X + 1.0)
        with Tape() as t:
            t.watch(x)
            with t.stop_recording():
                k = x * 2.0 + w
            y = tf.reduce_sum(k * x * w)
        return t.gradient(y, [x, w])
    _eager_and(grad)
