"""Bugs users' code hit, each held to plain TF on the same inputs: formatting a lazy scalar
(f"{loss:.4f}") and tensor.ref(); reading the loss between an ltf.GradientTape's block and
tape.gradient(); tf.compat.v1.shape (TF's internal array_ops.shape) as a reshape's shape;
pickling a pending float64 tensor."""
import warnings

import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf


def _format(value, spec):
    try:
        return format(value, spec)
    except Exception as err:  # noqa: BLE001 - the error is part of what must match
        return f"{type(err).__name__}: {err}"


_VALUES = [np.float32(2.3333333), np.int32(3), np.array([1.0, 2.0], np.float32), True,
           np.float64(2.5), np.float16(1.5), np.uint8(7), np.complex128(1 + 2j)]


@pytest.mark.parametrize("spec", [".4f", "8.2e", "", "5", "d", ">10"])
@pytest.mark.parametrize("value", _VALUES, ids=lambda v: str(np.asarray(v).dtype))
def test_format_spec_like_eager(value, spec):
    """EagerTensor.__format__ formats its NumPy array: a 0-d tensor takes any spec its
    number does, a spec on a vector raises NumPy's TypeError (lazyx raised for every spec)."""
    lazy = ltf.constant(value) * 1 if np.asarray(value).dtype != bool else ltf.constant(value)
    assert _format(lazy, spec) == _format(tf.constant(value), spec)


def test_format_of_a_computed_loss():
    x = np.array([1.0, 2.0, 4.0], np.float32)
    want = tf.reduce_mean(tf.constant(x))
    got = tf.reduce_mean(ltf.constant(x))
    assert f"loss {got:.4f}" == f"loss {want:.4f}" == "loss 2.3333"


def test_ref_and_deref():
    x, y = ltf.constant([1.0]), ltf.constant([1.0])
    refs = {x.ref(): "x", y.ref(): "y"}   # TF's idiom for tensors as keys
    assert refs[x.ref()] == "x" and refs[y.ref()] == "y"
    assert x.ref() == x.ref() and x.ref() != y.ref()
    assert x.ref().deref() is x
    assert type(x.ref()) is type(tf.constant(1.0).ref())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert x.experimental_ref().deref() is x


def _dense_step(make, Tape, read_loss_first, persistent=False):
    """One Dense layer's loss and gradients; the loss read (float) after the tape's block."""
    import keras
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 4), np.float32), rng.standard_normal((8, 2), np.float32)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    with Tape(persistent=persistent) as tape:
        loss = tf.reduce_mean((model(make(x)) - make(y)) ** 2)
    seen = float(loss) if read_loss_first else None
    grads = tape.gradient(loss, model.trainable_variables)
    if persistent:  # a second gradient after another read of the (realized) loss
        float(loss)
        grads += tape.gradient(loss, model.trainable_variables)
    return seen, [None if g is None else np.asarray(g) for g in grads]


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("read_loss_first", [False, True])
def test_ltf_tape_loss_read_before_gradient(read_loss_first, persistent):
    """Reading the loss between the block and tape.gradient() realizes it: it was a data
    leaf with no path back to the variables, and every gradient was None."""
    want = _dense_step(tf.constant, tf.GradientTape, read_loss_first, persistent)
    got = _dense_step(ltf.constant, ltf.GradientTape, read_loss_first, persistent)
    if read_loss_first:
        assert got[0] == pytest.approx(want[0], rel=1e-5)
    assert len(got[1]) == len(want[1])
    for g, w in zip(got[1], want[1]):
        assert g is not None
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_ltf_tape_gradient_releases_origins():
    """The origins kept past the block end with a non-persistent tape's gradient (or the
    tape): kept forever, every later step's graph would stay alive."""
    from lazyx.core import runtime
    before = runtime.KEEP_ORIGINS[0]
    v = tf.Variable([1.0, 2.0])
    with ltf.GradientTape() as tape:
        loss = tf.reduce_sum(v * ltf.constant([3.0, 4.0]))
    assert runtime.KEEP_ORIGINS[0] == before + 1
    float(loss)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), [3.0, 4.0])
    assert runtime.KEEP_ORIGINS[0] == before
    with ltf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(v * ltf.constant([3.0, 4.0]))
    tape.gradient(loss, v)
    assert runtime.KEEP_ORIGINS[0] == before + 1
    del tape
    assert runtime.KEEP_ORIGINS[0] == before


_IMG = np.arange(2 * 4 * 5 * 3, dtype=np.float32).reshape(2, 4, 5, 3) ** 1.5 / 50


@pytest.mark.parametrize("fn", [
    lambda x: tf.reshape(x, tf.compat.v1.shape(x)[::-1][::-1]),
    lambda x: tf.reshape(x, [tf.compat.v1.size(x)]),
    tf.image.image_gradients,
    tf.image.sobel_edges,
    lambda x: tf.compat.v1.pad(x, [[0, 0], [1, 2], [2, 0], [0, 0]], mode="REFLECT"),
    lambda x: tf.pad(x, [[1, 0], [0, 3], [4, 5], [0, 0]], mode="SYMMETRIC"),
], ids=["v1.shape", "v1.size", "image_gradients", "sobel_edges", "reflect", "symmetric"])
def test_tf1_apis_tf_calls_stay_lazy(fn):
    """TF's own code calls tf.compat.v1.shape (array_ops.shape): a fallback made it a lazy
    int tensor, and the reshape taking it raised a bogus InvalidArgumentError."""
    from .conftest import same_as_eager
    same_as_eager(fn, _IMG, rtol=1e-5, atol=1e-5)


def test_sampled_softmax_loss_stays_lazy():
    from .conftest import same_as_eager
    rng = np.random.default_rng(0)
    labels = np.array([[1], [3], [5], [7]], np.int64)
    sampled = tf.random.log_uniform_candidate_sampler(  # drawn once: both runs get them
        true_classes=labels, num_true=1, num_sampled=3, unique=True, range_max=10, seed=1)

    def loss(w, b, x):
        return tf.nn.sampled_softmax_loss(w, b, labels, x, num_sampled=3, num_classes=10,
                                          sampled_values=sampled)
    same_as_eager(loss, rng.standard_normal((10, 6), np.float32),
                  rng.standard_normal(10, np.float32), rng.standard_normal((4, 6), np.float32))


def test_lazy_shape_argument_is_read_not_a_bogus_error():
    """A lazy value where TF reads values (a reshape's shape) was judged by a replay on
    zeros: a valid call raised. A lazy constant's values are known on the host, so they are
    read there (no sync, no fallback, since 2026-11-30); a bad one raises TF's error."""
    want = tf.reshape(tf.constant(_IMG), tf.constant([30, 4]))
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = tf.reshape(ltf.constant(_IMG), ltf.constant([30, 4]))
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
        assert lazyx.metrics()["fallback_ops"] == {}
        with pytest.raises(tf.errors.InvalidArgumentError) as eager:
            tf.reshape(tf.constant(_IMG), tf.constant([7, 4]))
        with pytest.raises(tf.errors.InvalidArgumentError) as lazy:
            tf.reshape(ltf.constant(_IMG), ltf.constant([7, 4]))
    assert "requested shape has 28" in str(eager.value) and \
        "requested shape has 28" in str(lazy.value)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int64", "bool", "bfloat16"])
def test_pickle_and_deepcopy_of_a_pending_tensor(dtype):
    """Pickling pickled the IR node with its backend buffer: a float64 value came back as a
    float32 buffer under a float64 node (xla without x64), its sync failed, and so did every
    later barrier. Pickling materializes now, as NumPy's frontend does."""
    import copy
    import pickle
    host = np.arange(6).reshape(2, 3).astype(tf.as_dtype(dtype).as_numpy_dtype)
    want = tf.reshape(tf.constant(host), (3, 2))
    lazy = tf.reshape(ltf.constant(host), (3, 2))  # pending
    for got in (pickle.loads(pickle.dumps(lazy)), copy.deepcopy(lazy)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
    other = ltf.constant(np.ones(2)) + 1
    lazyx.sync()  # (an unrelated barrier failed after the broken load)
    np.testing.assert_array_equal(other.numpy(), np.full(2, 2.0))


@pytest.mark.parametrize("tape", [tf.GradientTape, ltf.GradientTape],
                         ids=["tf.GradientTape", "ltf.GradientTape"])
def test_a_spectral_loss_through_an_eager_complex_op_has_tfs_gradient(tape):
    """|stft(y)| in a loss: TF runs stft (a counted fallback) and its complex result comes back
    as a lazy leaf. The IR's complex cotangents follow JAX's convention, the conjugate of
    TF's: handed to TF's tape unconjugated they gave another gradient (the plain tape), or
    none at all (ltf.GradientTape skipped complex leaves)."""
    import keras
    rng = np.random.default_rng(0)
    x, target = (rng.standard_normal((2, 64)).astype(np.float32) for _ in range(2))

    def grad(tape_type, make):
        keras.utils.set_random_seed(0)
        layer = keras.layers.Dense(64)
        layer.build((None, 64))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with tape_type() as t:
                spec = tf.abs(tf.signal.stft(layer(make(x)), frame_length=16, frame_step=8))
                spec_t = tf.abs(tf.signal.stft(make(target), frame_length=16, frame_step=8))
                loss = tf.reduce_mean(tf.abs(spec - spec_t))
            g = t.gradient(loss, layer.kernel)
        assert g is not None
        return float(loss), np.asarray(g)
    want_loss, want = grad(tf.GradientTape, tf.constant)
    got_loss, got = grad(tape, ltf.constant)
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("value", [[1, 2, 3], [[1.5, -2.0], [3.25, 4.0]], 7.0, [[True], [False]]])
def test_print_and_repr_lay_out_values_as_tf_does(value):
    eager, lazy = tf.constant(value), ltf.constant(value)
    assert str(lazy) == "lazyx." + str(eager)
    assert repr(lazy) == "<lazyx." + repr(eager)[1:]
