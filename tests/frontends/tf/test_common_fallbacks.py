"""Common TF calls that used to be counted fallbacks (one sync and host round-trip each):
einsum with an ellipsis or a repeated index, tf.gather with batch_dims, conv2d with explicit
padding, tf.convert_to_tensor of a list of lazy values, and tf.image's simple ops. Each is
compared with eager TF on the same inputs (values, gradients through both tapes) and must
record no fallback."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf
from .conftest import assert_matches

_RNG = np.random.default_rng(7)


def _normal(*shape):
    return _RNG.standard_normal(shape).astype(np.float32)


def _no_fallback(fn, *values):
    before = dict(lazyx.metrics()["fallback_ops"])
    out = fn(*values)
    assert dict(lazyx.metrics()["fallback_ops"]) == before, lazyx.metrics()["fallback_ops"]
    return out


def check(fn, *arrays, rtol=1e-5, atol=1e-5, grad=True):
    """fn on lazy inputs equals fn on eager ones, with no fallback; with `grad`, so do the
    gradients of sum(fn * weights) from tf.GradientTape and ltf.GradientTape."""
    want = fn(*[tf.constant(a) for a in arrays])
    got = _no_fallback(fn, *[ltf.constant(a) for a in arrays])
    assert_matches(got, want, rtol=rtol, atol=atol)
    if not grad:
        return
    weights = _RNG.standard_normal(tuple(want.shape)).astype(want.dtype.as_numpy_dtype)

    def gradients(make, Tape):
        values = [make(a) for a in arrays]
        with Tape() as tape:
            for v in values:
                tape.watch(v)
            y = tf.reduce_sum(fn(*values) * weights)
        return [None if g is None else np.asarray(g) for g in tape.gradient(y, values)]
    expected = gradients(tf.constant, tf.GradientTape)
    for Tape in (tf.GradientTape, ltf.GradientTape):
        got = _no_fallback(gradients, ltf.constant, Tape)
        for g, w in zip(got, expected):
            assert (g is None) == (w is None)
            if w is not None:
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- einsum

@pytest.mark.parametrize("equation, shapes", [
    ("...qd,...kd->...qk", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    ("...qd,...kd->...qk", [(2, 1, 5, 4), (3, 6, 4)]),  # ellipses broadcast
    ("...ij->...ji", [(2, 3, 4)]),
    ("ab...,b...->a...", [(2, 3, 4), (3, 4)]),
    ("bii->b", [(3, 4, 4)]),
    ("ii->", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(3, 3)]),  # implicit output
    ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),  # three operands
    ("ij,jk", [(2, 3), (3, 4)]),
])
def test_einsum_ellipsis_diagonal_and_more_operands(equation, shapes):
    check(lambda *xs: tf.einsum(equation, *xs), *[_normal(*s) for s in shapes])


def _raises_without_fallback(error, fn, *args, **kwargs):
    """TF's own error at the call, raised by the lowering (not by running TF: no fallback)."""
    before = dict(lazyx.metrics()["fallback_ops"])
    with pytest.raises(error):
        fn(*args, **kwargs)
    assert dict(lazyx.metrics()["fallback_ops"]) == before, lazyx.metrics()["fallback_ops"]


@pytest.mark.parametrize("equation, shapes", [
    ("...ij,...jk->...ik", [(2, 2, 3), (2, 4, 2)]), ("bii->b", [(2, 3, 4)])])
def test_einsum_bad_shapes_are_tfs_error(equation, shapes):
    _raises_without_fallback(tf.errors.InvalidArgumentError, tf.einsum, equation,
                             *[ltf.constant(_normal(*s)) for s in shapes])


# ---------------------------------------------------------------- gather with batch_dims

@pytest.mark.parametrize("indices_shape, high, kwargs", [
    ((3, 2), 4, dict(axis=1, batch_dims=1)),
    ((3, 4, 6), 5, dict(axis=2, batch_dims=2)),
    ((3, 2, 2), 5, dict(axis=2, batch_dims=1)),
    ((3, 4, 5, 3), 2, dict(batch_dims=-1)),
    ((3, 7), 2, dict(axis=-1, batch_dims=1)),
    ((3,), 4, dict(axis=1, batch_dims=1)),
])
def test_gather_batch_dims(indices_shape, high, kwargs):
    params = _normal(3, 4, 5, 2)
    indices = tf.constant(_RNG.integers(0, high, indices_shape).astype(np.int32))
    check(lambda p: tf.gather(p, indices, **kwargs), params)
    check(lambda p, i: tf.gather(p, i, **kwargs), params, indices.numpy(), grad=False)


@pytest.mark.parametrize("params_shape", [(3, 4), (3, 4, 2)])
def test_gather_batch_dims_bad_index_is_tfs_error(params_shape):
    _raises_without_fallback(tf.errors.InvalidArgumentError, tf.gather,
                             ltf.constant(_normal(*params_shape)), ltf.constant([[9], [0], [0]]),
                             axis=1, batch_dims=1)


# ---------------------------------------------------------------- explicit conv padding

_PADS = [[0, 0], [1, 2], [2, 0], [0, 0]]


@pytest.mark.parametrize("kwargs", [dict(), dict(strides=[1, 2, 2, 1]), dict(dilations=2)])
def test_conv2d_explicit_padding(kwargs):
    kwargs = {"strides": 1, **kwargs}
    # (TF's CPU kernels have no gradient of a dilated convolution to compare with)
    check(lambda x, w: tf.nn.conv2d(x, w, padding=_PADS, **kwargs), _normal(2, 7, 8, 3),
          _normal(3, 2, 3, 4), rtol=1e-4, atol=1e-4, grad="dilations" not in kwargs)


def test_depthwise_conv2d_explicit_padding():
    check(lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], _PADS), _normal(2, 7, 8, 3),
          _normal(3, 3, 3, 2),
          rtol=1e-4, atol=1e-4)


def test_conv2d_bad_explicit_padding_is_tfs_error():
    """Whatever this machine's TF does with a bad padding list, the lazy call does: TF 2.21
    uses oneDNN by default on AVX-512 CPUs, whose kernel computes a padded batch axis and
    raises AbortedError for a negative pad, where TF's own kernel raises InvalidArgumentError
    for both (rehearsal 44's machine had oneDNN, earlier ones not)."""
    x, w = _normal(1, 5, 6, 2), _normal(3, 3, 2, 4)
    lazy = ltf.constant(x), ltf.constant(w)
    _no_fallback(tf.nn.conv2d, *lazy, 1, [[0, 0], [1, 1], [2, 2], [0, 0]])  # (the valid one)
    for pads in ([[1, 0], [1, 1], [2, 2], [0, 0]],  # the batch axis
                 [[0, 0], [-1, 1], [2, 2], [0, 0]], [[1, 1], [2, 2]]):
        try:
            want = tf.nn.conv2d(tf.constant(x), tf.constant(w), 1, pads)
        except (tf.errors.OpError, ValueError) as error:
            _raises_without_fallback(type(error), tf.nn.conv2d, *lazy, 1, pads)
        else:
            np.testing.assert_allclose(np.asarray(tf.nn.conv2d(*lazy, 1, pads)), want.numpy(),
                                       rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- lists of lazy values

@pytest.mark.parametrize("name", ["cast", "add_mixed", "nested", "vectors", "reduce_all"])
def test_list_of_lazy_values_is_packed_lazily(name):
    """A TF API given a (nested) list holding lazy values packs it as TF does (the first
    tensor's dtype; Python numbers take it), as a lazy stack."""
    fn = {
        "cast": lambda a, b, v: tf.cast([a, b], tf.bool),
        "add_mixed": lambda a, b, v: tf.math.add([a, 3.0, b], 1.0),
        "nested": lambda a, b, v: tf.reduce_sum([[a, b], [2.0, a * b]], axis=0),
        "vectors": lambda a, b, v: tf.identity([v, [1.0, 2.0, 3.0], v * a]),
        "reduce_all": lambda a, b, v: tf.reduce_all(
            [tf.math.is_finite(a), tf.math.is_finite(b / a)]),
    }[name]
    arrays = (np.float32(1.5), np.float32(-2.0), _normal(3))
    check(fn, *arrays, grad=name in ("add_mixed", "nested", "vectors"))


def test_framework_conversion_of_a_lazy_list_stays_lazy():
    """keras.ops.all over a list of lazy flags (what LossScaleOptimizer does every step) and
    Keras' own convert_to_tensor of such a list: one lazy stack, no sync."""
    keras = pytest.importorskip("keras")
    a, b = ltf.constant(1.0), ltf.constant(np.inf)
    lazyx.reset_metrics()
    flags = keras.ops.all([tf.math.is_finite(a), tf.math.is_finite(b)])
    both = keras.ops.convert_to_tensor([a, a * 2.0])
    assert isinstance(flags, ltf.Tensor) and isinstance(both, ltf.Tensor)
    m = lazyx.metrics()
    assert m["fallback_ops"] == {} and m["syncs"] == 0, m
    assert not bool(flags) and np.asarray(both).tolist() == [1.0, 2.0]


def test_users_convert_to_tensor_of_a_lazy_list_is_an_observation():
    """The user's own tf.convert_to_tensor materializes, as for one lazy tensor: the list is
    packed in the program it runs, not by a fallback."""
    a, b = ltf.constant(1.0), ltf.constant(2.0)
    out = _no_fallback(lambda: tf.convert_to_tensor([a, [b, 3.0][0]]))
    assert not isinstance(out, ltf.Tensor) and out.numpy().tolist() == [1.0, 2.0]


@pytest.mark.parametrize("values, error", [
    (lambda a, i: [a, i], tf.errors.InvalidArgumentError),  # two dtypes
    (lambda a, i: [a, ltf.constant([1.0, 2.0])], tf.errors.InvalidArgumentError),  # shapes
    (lambda a, i: [i, 1.5], TypeError),  # a float into int32
])
def test_bad_lazy_list_is_tfs_error(values, error):
    a, i = ltf.constant(1.0), ltf.constant(1)
    _raises_without_fallback(error, tf.identity, values(a, i))
    _no_fallback(tf.identity, [a, 2.0])  # (and a good one is lazy)


# ---------------------------------------------------------------- tf.image

_IMAGE = {
    "flip_left_right": tf.image.flip_left_right,
    "flip_up_down": tf.image.flip_up_down,
    "rot90": tf.image.rot90,
    "rot90_k2": lambda x: tf.image.rot90(x, 2),
    "rot90_k3": lambda x: tf.image.rot90(x, k=3),
    "transpose": tf.image.transpose,
    "central_crop": lambda x: tf.image.central_crop(x, 0.33),
    "crop_to_bounding_box": lambda x: tf.image.crop_to_bounding_box(x, 1, 2, 5, 6),
    "pad_to_bounding_box": lambda x: tf.image.pad_to_bounding_box(x, 1, 2, 12, 15),
    "resize_with_crop_or_pad": lambda x: tf.image.resize_with_crop_or_pad(x, 5, 13),
    "per_image_standardization": tf.image.per_image_standardization,
    "rgb_to_grayscale": tf.image.rgb_to_grayscale,
    "adjust_brightness": lambda x: tf.image.adjust_brightness(x, 0.1),
    "adjust_contrast": lambda x: tf.image.adjust_contrast(x, 1.7),
    "adjust_gamma": lambda x: tf.image.adjust_gamma(x, 2.0, 0.9),
    "grayscale_to_rgb": lambda x: tf.image.grayscale_to_rgb(x[..., :1]),
}


@pytest.mark.parametrize("name", sorted(_IMAGE))
@pytest.mark.parametrize("batched", [True, False], ids=["NHWC", "HWC"])
def test_image_ops_float(name, batched):
    image = _RNG.uniform(0, 1, (2, 8, 10, 3) if batched else (8, 10, 3)).astype(np.float32)
    # (TF has no gradient for AdjustContrastv2 to compare with)
    check(_IMAGE[name], image, rtol=1e-5, atol=1e-5, grad=name != "adjust_contrast")


@pytest.mark.parametrize("name", sorted(_IMAGE))
def test_image_ops_uint8(name):
    image = _RNG.integers(0, 256, (8, 10, 3)).astype(np.uint8)
    if name == "per_image_standardization":  # (float32 out)
        check(_IMAGE[name], image, grad=False)
    else:  # every value exact
        check(_IMAGE[name], image, rtol=0, atol=0, grad=False)


@pytest.mark.parametrize("source, target, saturate", [
    (np.float32, tf.uint8, False), (np.float32, tf.uint8, True), (np.float32, tf.int32, True),
    (np.uint8, tf.float32, False), (np.uint8, tf.int32, False), (np.int32, tf.uint8, True),
    (np.float32, tf.float16, False)])
def test_convert_image_dtype(source, target, saturate):
    # (out of range, a float to int cast without saturation is undefined in TF too)
    low, high = (-0.2, 1.2) if saturate or source is not np.float32 else (0.0, 1.0)
    image = _RNG.uniform(low, high, (4, 5, 3)) * (1 if source is np.float32 else 200)
    fn = lambda x: tf.image.convert_image_dtype(x, target, saturate=saturate)  # noqa: E731
    check(fn, image.astype(source), rtol=0, atol=0, grad=False)


@pytest.mark.parametrize("source, target", [
    (np.float32, tf.uint8), (np.float32, tf.int32), (np.float64, tf.int64),
    (np.int32, tf.int8), (np.uint8, tf.int8), (np.int64, tf.float16)])
def test_saturate_cast(source, target):
    values = np.array([-3e9, -300.0, -1.5, 0.0, 0.7, 127.0, 200.0, 70000.0, 3e9])
    if np.issubdtype(source, np.integer):
        info = np.iinfo(source)
        values = np.clip(values, info.min, info.max)
    check(lambda x: tf.dtypes.saturate_cast(x, target), values.astype(source), rtol=0, atol=0,
          grad=False)


@pytest.mark.parametrize("call, error", [
    (lambda x: tf.image.crop_to_bounding_box(x, 4, 0, 6, 3), ValueError),
    (lambda x: tf.image.pad_to_bounding_box(x, 0, 0, 2, 2), ValueError),
    (lambda x: tf.image.central_crop(x, 1.5), ValueError),
    (lambda x: tf.image.flip_left_right(x[0, 0]), ValueError),  # rank 2
])
def test_bad_image_calls_are_tfs_error(call, error):
    image = ltf.constant(_RNG.uniform(0, 1, (8, 10, 3)).astype(np.float32))
    _no_fallback(tf.image.flip_left_right, image)  # (a good one is lazy)
    _raises_without_fallback(error, call, image)
