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
