"""tf.image's simple ops -- resizes, flips, rotations, crops, pads, standardization, grayscale,
dtype conversion, brightness and contrast -- and tf.dtypes.saturate_cast.

TF writes each in Python over ops lazyx lowers, but its bodies begin with
ops.convert_to_tensor, which a lazy value refuses (so each call ran eagerly, a counted
fallback). These follow TF's bodies step for step, as TF calls on the lazy tensor (which
dispatch back to lazyx), with every size, offset and fraction static."""
import functools

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import random_ops

from ...core import dtypes as dt
from ...core import ir, ops
from .lowering import Reject, operand_nodes, static_ints
from .registry import lower
from .tensor import LazyTensor, wrap


def _rank(image):
    """The image's rank, 3 (H, W, C) or 4 (N, H, W, C); anything else is TF's error."""
    if not isinstance(image, LazyTensor) or len(image.shape) not in (3, 4):
        raise Reject()
    return len(image.shape)


@lower(tf.image.flip_left_right, "image")
def flip_left_right(image):
    return tf.reverse(image, [_rank(image) - 2])


@lower(tf.image.flip_up_down, "image")
def flip_up_down(image):
    return tf.reverse(image, [_rank(image) - 3])


def _random_flip(image, flip_index, seed):
    """TF's random flip (image_ops_impl._random_flip) with TF's own draws: the same
    random_uniform call, so the same numbers from TF's stream as eager TF's, and the flip
    itself lazy -- it was a fallback, a sync of the image per call (augmentation in an eager
    loop). One draw picks the flip of one image; a batch blends each image with its flip by
    its rounded draw, as TF does (so an inf or NaN spreads as in TF's)."""
    rank = _rank(image)
    axis = flip_index + rank - 3
    if rank == 3:
        draw = random_ops.random_uniform(shape=[], minval=0, maxval=1.0, seed=seed)
        return tf.reverse(image, [axis]) if draw.numpy() < 0.5 else image
    draw = random_ops.random_uniform(shape=[image.shape[0]], minval=0, maxval=1.0, seed=seed)
    flips = tf.cast(tf.round(tf.reshape(draw, [image.shape[0], 1, 1, 1])), image.dtype)
    return flips * tf.reverse(image, [axis]) + (1 - flips) * image


@lower(tf.image.random_flip_left_right, "image")
def random_flip_left_right(image, seed=None):
    return _random_flip(image, 1, seed)


@lower(tf.image.random_flip_up_down, "image")
def random_flip_up_down(image, seed=None):
    return _random_flip(image, 0, seed)


@lower(tf.image.random_crop, "value")
def random_crop(value, size, seed=None):
    """TF's random crop (random_crop_ops) with TF's own draw -- one random_uniform of the
    rank's length, taken modulo the room left, as TF takes it -- and the crop a lazy slice
    (a run-time start: one program for every offset). It was a fallback, a sync per call.
    A size TF refuses is TF's error (Reject)."""
    size = static_ints(size)
    shape = [int(d) for d in value.shape]
    if not isinstance(size, list) or len(size) != len(shape) or \
            any(not 0 <= s <= d for s, d in zip(size, shape)):
        raise Reject()
    draw = random_ops.random_uniform([len(shape)], dtype=tf.int32, maxval=tf.int32.max,
                                     seed=seed)
    offset = draw.numpy() % (np.array(shape, np.int32) - np.array(size, np.int32) + 1)
    return tf.slice(value, offset.tolist(), size)


def _swap_hw(rank):
    return [1, 0, 2] if rank == 3 else [0, 2, 1, 3]


@lower(tf.image.transpose, "image")
def transpose(image):
    return tf.transpose(image, _swap_hw(_rank(image)))


@lower(tf.image.rot90, "image")
def rot90(image, k=1):
    rank, k = _rank(image), static_ints(k)
    if not isinstance(k, int):
        raise Reject()
    h, w = rank - 3, rank - 2
    k %= 4
    if k == 1:
        return tf.transpose(tf.reverse(image, [w]), _swap_hw(rank))
    if k == 2:
        return tf.reverse(image, [h, w])
    if k == 3:
        return tf.reverse(tf.transpose(image, _swap_hw(rank)), [w])
    return image


def _crop(image, top, left, height, width):
    rank = _rank(image)
    begin = [top, left, 0] if rank == 3 else [0, top, left, 0]
    return tf.slice(image, begin, [-1] * (rank - 3) + [height, width, -1])


@lower(tf.image.central_crop, "image")
def central_crop(image, central_fraction):
    rank, fraction = _rank(image), central_fraction
    if isinstance(fraction, (LazyTensor, tf.Tensor)) or not 0.0 < fraction <= 1.0:
        raise Reject()  # a tensor fraction: TF's own (dynamic) call; else TF's ValueError
    if fraction == 1.0:
        return image
    h, w = image.shape[rank - 3], image.shape[rank - 2]
    top = int((float(h) - float(h) * fraction) / 2)  # TF's own rounding
    left = int((float(w) - float(w) * fraction) / 2)
    return _crop(image, top, left, h - 2 * top, w - 2 * left)


def _box(image, *values):
    """Static ints for a bounding box's offsets and sizes, and the image's height and width."""
    rank = _rank(image)
    ints = [static_ints(v) for v in values]
    if not all(isinstance(v, int) for v in ints):
        raise Reject()
    return ints, image.shape[rank - 3], image.shape[rank - 2]


@lower(tf.image.crop_to_bounding_box, "image")
def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    (top, left, th, tw), h, w = _box(image, offset_height, offset_width, target_height,
                                     target_width)
    if top < 0 or left < 0 or th <= 0 or tw <= 0 or top + th > h or left + tw > w:
        raise Reject()  # TF's ValueError
    return _crop(image, top, left, th, tw)


@lower(tf.image.pad_to_bounding_box, "image")
def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    (top, left, th, tw), h, w = _box(image, offset_height, offset_width, target_height,
                                     target_width)
    bottom, right = th - top - h, tw - left - w
    if min(top, left, bottom, right) < 0:
        raise Reject()  # TF's ValueError
    pads = [[top, bottom], [left, right], [0, 0]]
    return tf.pad(image, pads if _rank(image) == 3 else [[0, 0]] + pads)


@lower(tf.image.resize_with_crop_or_pad, "image")
def resize_with_crop_or_pad(image, target_height, target_width):
    (th, tw), h, w = _box(image, target_height, target_width)
    if th <= 0 or tw <= 0:
        raise Reject()
    cropped = crop_to_bounding_box(image, max(h - th, 0) // 2, max(w - tw, 0) // 2,
                                   min(th, h), min(tw, w))
    return pad_to_bounding_box(cropped, max(th - h, 0) // 2, max(tw - w, 0) // 2, th, tw)


@lower(tf.image.per_image_standardization, "image")
def per_image_standardization(image):
    _rank(image)
    x = tf.cast(image, tf.float32)
    pixels = int(np.prod(image.shape[-3:]))
    mean = tf.reduce_mean(x, axis=[-1, -2, -3], keepdims=True)
    stddev = tf.math.reduce_std(x, axis=[-1, -2, -3], keepdims=True)
    adjusted = tf.maximum(stddev, tf.math.rsqrt(tf.cast(pixels, tf.float32)))
    return tf.divide(x - mean, adjusted)


@lower(tf.image.convert_image_dtype, "image")
def convert_image_dtype(image, dtype, saturate=False):
    dtype, have = tf.as_dtype(dtype), image.dtype
    if not (dtype.is_floating or dtype.is_integer) or not (have.is_floating or have.is_integer):
        raise Reject()  # TF's AttributeError
    if dtype == have:
        return image
    cast = tf.dtypes.saturate_cast if saturate else tf.cast
    if have.is_integer and dtype.is_integer:
        if have.max > dtype.max:
            return cast(tf.math.floordiv(image, (have.max + 1) // (dtype.max + 1)), dtype)
        return tf.multiply(cast(image, dtype), (dtype.max + 1) // (have.max + 1))
    if have.is_floating and dtype.is_floating:
        return tf.cast(image, dtype)
    if have.is_integer:
        return tf.multiply(tf.cast(image, dtype), 1.0 / have.max)
    return cast(tf.multiply(image, dtype.max + 0.5), dtype)


@lower(tf.dtypes.saturate_cast, "value")
def saturate_cast(value, dtype):
    """TF's clamp to the range both dtypes share (each limit moved toward zero where the
    input dtype rounds it past the output's), then the cast; complex values: TF's own."""
    have, dtype = value.dtype, tf.as_dtype(dtype).base_dtype
    if have.is_complex or dtype.is_complex or have == tf.bool or dtype == tf.bool:
        raise Reject()
    kind = have.as_numpy_dtype
    try:
        promoted = np.promote_types(kind, dtype.as_numpy_dtype)
    except TypeError:
        promoted = float
    low = kind(np.maximum(have.min, dtype.min))
    if np.array([low, dtype.min], dtype=promoted)[0] < np.array([low, dtype.min],
                                                                dtype=promoted)[1]:
        low = np.nextafter(low, kind(0), dtype=kind)
    high = kind(np.minimum(float(have.max), float(dtype.max)))
    if np.array([high, dtype.max], dtype=promoted)[0] > np.array([high, dtype.max],
                                                                 dtype=promoted)[1]:
        high = np.nextafter(high, kind(0), dtype=kind)
    clamped = tf.clip_by_value(value, tf.constant(low, have), tf.constant(high, have))
    return tf.cast(clamped, dtype)


@lower(tf.image.rgb_to_grayscale, "images")
def rgb_to_grayscale(images):
    if not isinstance(images, LazyTensor) or not images.shape or images.shape[-1] != 3:
        raise Reject()
    flat = convert_image_dtype(images, tf.float32)
    gray = tf.tensordot(flat, [0.2989, 0.5870, 0.1140], [-1, -1])
    return convert_image_dtype(tf.expand_dims(gray, -1), images.dtype)


def _float_image(image):
    """The image as TF's adjust_* ops take it: float16/32 as they are, others as float32."""
    return image if image.dtype in (tf.float16, tf.float32) else \
        convert_image_dtype(image, tf.float32)


@lower(tf.image.adjust_brightness, "image", "delta")
def adjust_brightness(image, delta):
    if not isinstance(image, LazyTensor):
        raise Reject()
    x = _float_image(image)
    return convert_image_dtype(tf.add(x, tf.cast(delta, x.dtype)), image.dtype, saturate=True)


@lower(tf.image.adjust_contrast, "images", "contrast_factor")
def adjust_contrast(images, contrast_factor):
    """AdjustContrastv2: each channel's values moved from its mean over height and width by
    the factor, in float32."""
    if not isinstance(images, LazyTensor) or len(images.shape) < 3:
        raise Reject()
    x = _float_image(images)
    wide = tf.cast(x, tf.float32)
    mean = tf.reduce_mean(wide, axis=[-3, -2], keepdims=True)
    adjusted = (wide - mean) * tf.cast(contrast_factor, tf.float32) + mean
    return convert_image_dtype(tf.cast(adjusted, x.dtype), images.dtype, saturate=True)


@lower(tf.image.grayscale_to_rgb, "images")
def grayscale_to_rgb(images):
    if not isinstance(images, LazyTensor) or len(images.shape) < 2 or images.shape[-1] != 1:
        raise Reject()  # TF's ValueError
    return tf.tile(images, [1] * (len(images.shape) - 1) + [3])


@lower(tf.image.adjust_gamma, "image")
def adjust_gamma(image, gamma=1, gain=1):
    if isinstance(gamma, (LazyTensor, tf.Tensor)) or isinstance(gain, (LazyTensor, tf.Tensor)) \
            or gamma < 0:
        raise Reject()  # (tensor arguments: TF's own call; a negative gamma: TF's ValueError)
    x = _float_image(image)
    return convert_image_dtype(gain * x ** gamma, image.dtype, saturate=True)


# ---------------------------------------------------------------- resize

# Every tf.image.resize method is separable and linear: each output row is a fixed
# combination of input rows, then the same along columns. So a lazy resize is two products
# with constant (n_out, n_in) matrices, or for "nearest" two gathers. ("area" averages the
# input box under each output pixel, the box's product of per-axis overlaps; TF registers no
# gradient for it, LookupError, where the lazy one has the products' -- docs/tf.md.)
_METHODS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5", "gaussian",
            "mitchellcubic", "area")


@functools.lru_cache(maxsize=256)
def _axis_weights(n_in, n_out, method, antialias):
    """(n_out, n_in) weights of TF's resize along one axis, read off TF's own kernel on a
    one-hot image (channel c holds input row c): half-pixel centers, nearest's rounding,
    bicubic's a=-0.5 Keys kernel with its edge renormalization, and the antialiasing
    kernels' widths are TF's by construction, in TF's float32 arithmetic."""
    eye = tf.reshape(tf.eye(n_in, dtype=tf.float32), (1, n_in, 1, n_in))
    out = tf.image.resize(eye, (n_out, 1), method=method, antialias=antialias)
    return np.asarray(out, np.float32)[0, :, 0, :]


def _is_identity(weights):
    return weights.shape[0] == weights.shape[1] and np.array_equal(weights, np.eye(len(weights)))


def _nearest(x, axis, weights):
    """x (n, h, w, c) resampled along `axis` (1 or 2) by nearest's (n_out, n_in) weights: a
    gather (exact for every dtype, and its gradient adds as TF's does)."""
    if _is_identity(weights):
        return x
    rest = tuple(d for d in range(4) if d != axis)
    back = tuple(np.argsort((axis,) + rest).tolist())
    index = np.argmax(weights, axis=1).astype(np.int32).reshape(-1, 1)
    moved = ops.transpose(x, permutation=(axis,) + rest)
    return ops.transpose(ops.gather(moved, ir.constant(index, "int32")), permutation=back)


def _mixed(x, wh, ww):
    """x (n, h, w, c) float32 resampled by the (oh, h) and (ow, w) weights: two products laid
    out so that one transpose ends them (XLA's CPU dot beats a gather of each output row's
    few taps: 1.8x on a 16x512x512x3 -> 224 resize)."""
    if _is_identity(wh) and _is_identity(ww):
        return x
    rows = ops.dot_general(ir.constant(wh, "float32"), x,
                           contracting_dimensions=((1,), (1,)))  # (oh, n, w, c)
    both = ops.dot_general(rows, ir.constant(ww, "float32"),
                           contracting_dimensions=((2,), (1,)))  # (oh, n, c, ow)
    return ops.transpose(both, permutation=(1, 0, 3, 2))


def _resized(images, size, method, antialias, preserve_aspect_ratio=False):
    (x,) = operand_nodes(images)
    size = static_ints(size)
    method = getattr(method, "value", method)  # a ResizeMethod member or its string
    if method not in _METHODS or x.ndim not in (3, 4) or not isinstance(size, list) or \
            len(size) != 2 or 0 in x.shape or x.dtype == dt.BOOL or dt.is_complex(x.dtype):
        raise Reject()  # (a lazy size, TF's errors: TF)
    h, w = x.shape[-3:-1]
    if preserve_aspect_ratio:  # TF's float32 arithmetic, rounded half to even
        scale = min(np.float32(size[0]) / np.float32(h), np.float32(size[1]) / np.float32(w))
        size = [int(np.round(scale * np.float32(h))), int(np.round(scale * np.float32(w)))]
    if min(size) < 1:
        raise Reject()
    nearest = method == "nearest"
    batched = x if x.ndim == 4 else ops.reshape(x, new_sizes=(1,) + x.shape)
    if not nearest and batched.dtype != "float32":  # TF's kernels compute in, and give, float32
        batched = ops.convert(batched, dtype="float32")
    antialias = bool(antialias) and method != "area"  # (TF's area takes no antialias)
    wh = _axis_weights(h, size[0], method, antialias)
    ww = _axis_weights(w, size[1], method, antialias)
    out = _nearest(_nearest(batched, 1, wh), 2, ww) if nearest else _mixed(batched, wh, ww)
    return wrap(out if x.ndim == 4 else ops.reshape(out, new_sizes=out.shape[1:]), images)


@lower(tf.image.resize, "images")
def resize(images, size, method="bilinear", preserve_aspect_ratio=False, antialias=False):
    return _resized(images, size, method, antialias, preserve_aspect_ratio)


@lower(tf.image.resize_with_pad, "image")
def resize_with_pad(image, target_height, target_width, method="bilinear", antialias=False):
    """TF's body: the largest resize that fits (its float32 arithmetic), centred by a pad."""
    (th, tw), h, w = _box(image, target_height, target_width)
    if th <= 0 or tw <= 0:
        raise Reject()
    f32 = np.float32
    ratio = max(f32(w) / f32(tw), f32(h) / f32(th))
    rh, rw = f32(h) / ratio, f32(w) / ratio
    top = max(0, int(np.floor((f32(th) - rh) / f32(2))))
    left = max(0, int(np.floor((f32(tw) - rw) / f32(2))))
    resized = _resized(image, [int(np.floor(rh)), int(np.floor(rw))], method, antialias)
    return pad_to_bounding_box(resized, top, left, th, tw)
