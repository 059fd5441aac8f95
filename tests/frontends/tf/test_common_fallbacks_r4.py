"""Static-shape TF calls that were counted fallbacks (a sync per call, and a CompileError under
lazyx.compile), now lowered (explore_tf4 finding 12): tf.image.resize's other methods and
antialiasing, resize_with_pad, Keras' Resizing. Each compared with eager TF on the same inputs
(values, and gradients through both tapes), recording no fallback."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf
from .test_common_fallbacks import check

_RNG = np.random.default_rng(11)
_METHODS = ["bilinear", "nearest", "bicubic", "lanczos3", "lanczos5", "gaussian",
            "mitchellcubic"]
# up- and down-sampling, one axis kept, a one-pixel axis, odd ratios
_SIZES = [((4, 5), (8, 10)), ((9, 7), (2, 3)), ((5, 5), (5, 3)), ((1, 6), (3, 2)),
          ((6, 4), (13, 1))]


@pytest.mark.parametrize("antialias", [False, True], ids=["plain", "antialias"])
@pytest.mark.parametrize("method", _METHODS)
def test_resize_methods(method, antialias):
    for (h, w), size in _SIZES:
        image = _RNG.standard_normal((2, h, w, 3)).astype(np.float32)
        check(lambda x: tf.image.resize(x, size, method=method, antialias=antialias), image,
              rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, size, kw", [
    ((9, 7), (2, 3), {}),  # down, fractional boxes
    ((3, 5), (7, 8), {"antialias": True}),  # up (TF's area ignores antialias)
    ((8, 6), (5, 5), {"preserve_aspect_ratio": True}),
])
def test_resize_area(shape, size, kw):
    # values only: TF registers no gradient for ResizeArea (test_resize_area_gradient)
    check(lambda x: tf.image.resize(x, size, method="area", **kw),
          _RNG.standard_normal((2, *shape, 3)).astype(np.float32), grad=False)


def test_resize_area_gradient():
    """TF has none (LookupError); the lazy one is the adjoint of TF's own area resize:
    <grad of sum(resize(x) * w), v> equals sum(resize(v) * w) for any v."""
    image, v = (_RNG.standard_normal((1, 7, 5, 2)).astype(np.float32) for _ in range(2))
    weights = _RNG.standard_normal((1, 3, 4, 2)).astype(np.float32)
    x = ltf.constant(image)
    with ltf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.image.resize(x, (3, 4), method="area") * weights)
    got = np.sum(np.asarray(tape.gradient(y, x)) * v)
    want = np.sum(tf.image.resize(v, (3, 4), method="area").numpy() * weights)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("method", ["nearest", "bilinear", "bicubic"])
def test_resize_other_dtypes(method):
    # nearest keeps the dtype (exact); the others compute in, and give, float32
    ints = _RNG.integers(0, 200, (5, 4, 2)).astype(np.int32)
    check(lambda x: tf.image.resize(x, (7, 3), method=method), ints, atol=1e-4, grad=False)
    doubles = _RNG.standard_normal((5, 4, 2))
    check(lambda x: tf.image.resize(x, (3, 9), method=method), doubles, atol=1e-5)


@pytest.mark.parametrize("size", [(8, 8), (3, 10)])
def test_resize_preserve_aspect_ratio(size):
    check(lambda x: tf.image.resize(x, size, method="nearest", preserve_aspect_ratio=True),
          _RNG.standard_normal((1, 4, 5, 2)).astype(np.float32))


@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("target", [(6, 6), (3, 9), (10, 4), (4, 5)])
def test_resize_with_pad(method, target):
    image = _RNG.standard_normal((2, 4, 5, 3)).astype(np.float32)
    check(lambda x: tf.image.resize_with_pad(x, *target, method=method), image)
    check(lambda x: tf.image.resize_with_pad(x, *target, method=method), image[0])


@pytest.mark.parametrize("interpolation", ["nearest", "bicubic", "lanczos3"])
def test_keras_resizing_layer(interpolation):
    import keras
    layer = keras.layers.Resizing(8, 10, interpolation=interpolation)
    check(layer, _RNG.standard_normal((2, 4, 5, 1)).astype(np.float32))


def test_resize_in_compiled_step_replays():
    """No fallback, so lazyx.compile replays a step holding a nearest resize."""
    step = lazyx.compile(lambda x: tf.reduce_sum(
        tf.image.resize(x, (8, 10), method="nearest") * 2.0, axis=[1, 2]))
    lazyx.reset_metrics()
    for _ in range(3):
        image = _RNG.standard_normal((1, 4, 5, 1)).astype(np.float32)
        want = tf.reduce_sum(tf.image.resize(image, (8, 10), method="nearest") * 2.0,
                             axis=[1, 2])
        np.testing.assert_allclose(np.asarray(step(ltf.constant(image))), want, rtol=1e-5)
    assert lazyx.metrics()["replays"] >= 1, lazyx.metrics()


# ---------------------------------------------------------------- array ops

_A = _RNG.standard_normal((4, 5)).astype(np.float32)
_B = _RNG.standard_normal((3, 6, 2)).astype(np.float32)
_C = (_B[..., 0] + 1j * _B[..., 1]).astype(np.complex64)  # 3 frames of 6 bins (fft_length 10)
_ARRAY = {
    "reverse_sequence": (lambda u: tf.reverse_sequence(u, [1, 2, 3, 5], seq_axis=1,
                                                       batch_axis=0), _A),
    "reverse_sequence_int64_axes": (lambda u: tf.reverse_sequence(
        u, tf.constant([0, 6], tf.int64), seq_axis=1, batch_axis=2), _B),
    "reverse_sequence_seq_first": (lambda u: tf.reverse_sequence(
        u, [2, 1, 3, 0, 3, 1], seq_axis=0, batch_axis=1), _B),
    "gather_nd_batch1": (lambda u: tf.gather_nd(tf.reshape(u, (2, 2, 5)), [[1], [0]],
                                                batch_dims=1), _A),
    "gather_nd_batch1_rows": (lambda u: tf.gather_nd(
        u, [[[1], [0], [5]], [[2], [2], [3]], [[0], [1], [4]]], batch_dims=1), _B),
    "gather_nd_batch1_pairs": (lambda u: tf.gather_nd(
        u, [[[1, 0], [0, 1]], [[2, 1], [5, 0]], [[0, 0], [1, 1]]], batch_dims=1), _B),
    "gather_nd_batch2": (lambda u: tf.gather_nd(
        u, np.array([1, 0, 1, 0, 1, 1] * 3, np.int32).reshape(3, 6, 1), batch_dims=2), _B),
    "repeat_list": (lambda u: tf.repeat(u, [1, 0, 2, 3], axis=0), _A),
    "repeat_array_last_axis": (lambda u: tf.repeat(u, np.array([2, 1, 0, 1, 3]), axis=-1), _A),
    "repeat_flat": (lambda u: tf.repeat(u, [2] * 20), _A),
    "histogram": (lambda u: tf.histogram_fixed_width(u, [-1.0, 1.0], nbins=4), _A),
    "histogram_int64": (lambda u: tf.histogram_fixed_width(u, [-0.3, 0.7], nbins=7,
                                                           dtype=tf.int64), _B),
    "histogram_tensor_range": (lambda u: tf.histogram_fixed_width(
        u, tf.constant([-2.0, 2.0])), _B),
    "stft": (lambda u: tf.abs(tf.signal.stft(tf.reshape(u, (20,)), 8, 4)), _A),
    "stft_pad_end": (lambda u: tf.abs(tf.signal.stft(u, 5, 2, pad_end=True)), _A),
    "stft_no_window": (lambda u: tf.abs(tf.signal.stft(u, 4, 1, fft_length=8,
                                                       window_fn=None)), _A),
    "stft_hamming": (lambda u: tf.math.real(tf.signal.stft(
        u, 3, 1, fft_length=16, window_fn=tf.signal.hamming_window)), _A),
    "overlap_and_add": (lambda u: tf.signal.overlap_and_add(tf.reshape(u, (2, 2, 5)), 2), _A),
    "inverse_stft": (lambda c: tf.signal.inverse_stft(c, 9, 3, fft_length=10), _C),
    "inverse_stft_of_stft": (lambda u: tf.signal.inverse_stft(
        tf.signal.stft(tf.reshape(u, (20,)), 8, 2), 8, 2,
        window_fn=tf.signal.inverse_stft_window_fn(2)), _A),
}


@pytest.mark.parametrize("name", sorted(_ARRAY))
def test_array_ops(name):
    fn, array = _ARRAY[name]
    check(fn, array, rtol=1e-4, atol=1e-5, grad=not name.startswith("histogram"))


def test_stft_shorter_fft_length():
    # (TF's own gradient fails here: values only)
    check(lambda u: tf.signal.stft(u, 4, 1, fft_length=3), _RNG.random((3, 9), np.float32),
          grad=False)


def test_histogram_edges():
    """Values on, below and above the range's ends land in TF's bins (the last bin closed,
    outside values in the end bins)."""
    values = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 0.99999, 1.0, 2.0, np.inf], np.float32)
    check(lambda u: tf.histogram_fixed_width(u, [-1.0, 1.0], nbins=4), values, atol=0,
          grad=False)
    check(lambda u: tf.histogram_fixed_width(u, [0, 10], nbins=3),
          np.arange(-2, 14, dtype=np.int32), atol=0, grad=False)


def test_reverse_sequence_bad_length_is_tfs_error():
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.reverse_sequence(ltf.constant(_A), [1, 2, 3, 6], seq_axis=1, batch_axis=0)


@pytest.mark.parametrize("low, high", [(0.5, -0.5), (-0.5, 0.5)])
def test_clip_by_value_low_above_high(low, high):
    """TF clips by minimum(t, max) then maximum(., min): where min > max, every value is min
    (lazyx gave max)."""
    check(lambda u: tf.clip_by_value(u, low, high), _A)
    bounds = np.stack([_A[0], _A[1]])  # some columns with min > max
    check(lambda u, b: tf.clip_by_value(u, b[0], b[1]), _A[2:] * 3, bounds, grad=False)


def test_clip_by_value_number_bounds_in_a_compiled_step_follow_their_order():
    """Two number bounds in order record NumPy's and torch's graph (one graph for the three
    frontends); a compiled step whose bounds later come out of order traces again (the
    comparison is part of its guard) rather than replaying that graph."""
    step = lazyx.compile(lambda u, low, high: tf.clip_by_value(u, low, high) * 2.0)
    x = ltf.constant(_A)
    for low, high in [(-0.5, 0.5), (-0.4, 0.6), (-0.3, 0.3), (0.5, -0.5), (0.6, -0.2)]:
        want = tf.clip_by_value(tf.constant(_A), low, high) * 2.0
        np.testing.assert_allclose(np.asarray(step(x, low, high)), want.numpy(), rtol=1e-6)
