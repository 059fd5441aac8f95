"""Norms and gradient clipping, lowered: tf.norm (tf.linalg.norm), tf.linalg.normalize,
tf.linalg.global_norm, tf.clip_by_norm and tf.clip_by_global_norm. A TF training loop that
clips its gradients calls them at every step, and each converted its lazy input to a TF
tensor (a sync) and ran eagerly. TF's type-based dispatch never reaches them (they convert
their input first), so they are replaced in their namespaces (registry.lower_undispatched).
They follow TF's own formulas (math_ops / clip_ops), written with TF calls on lazy tensors, which
dispatch back to lazyx; what they do not cover (a matrix 2-norm, IndexedSlices, an ord TF
refuses) runs TF's own, so its errors are the ones raised."""
import numbers

import numpy as np
import tensorflow as tf

from .lowering import Reject, as_tensor
from .registry import UNDISPATCHED, lower_undispatched
from .tensor import LazyTensor


def _axes(axis):
    """TF's axis argument as a list of ints (None: every axis), or Reject."""
    if axis is None:
        return None
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not items or any(isinstance(a, bool) or not isinstance(a, (int, np.integer))
                        for a in items):
        raise Reject()
    return [int(a) for a in items]


@lower_undispatched(tf.linalg, "norm")
def norm(tensor, ord="euclidean", axis=None, keepdims=None):  # noqa: A002 - TF's names
    axes = _axes(axis)
    matrix = axes is not None and len(axes) == 2
    if axes is not None and len(axes) > 2 or isinstance(ord, LazyTensor):
        raise Reject()
    if matrix:
        if ord not in ("euclidean", "fro", 1, np.inf):  # (2: TF's SVD path)
            raise Reject()
    elif ord == "fro" or not (ord == "euclidean" or ord == np.inf or (
            isinstance(ord, numbers.Real) and not isinstance(ord, bool) and ord > 0)):
        raise Reject()
    x = as_tensor(tensor)
    if not x.dtype.is_floating and not x.dtype.is_complex:
        raise Reject()
    if ord in ("fro", "euclidean", 2, 2.0):
        result = tf.sqrt(tf.reduce_sum(tf.math.real(x * tf.math.conj(x)) if x.dtype.is_complex
                                       else x * x, axes, keepdims=True))
    else:
        result = tf.abs(x)
        if ord == 1:
            result = tf.reduce_sum(result, None if axes is None else axes[0], keepdims=True)
            if matrix:
                result = tf.reduce_max(result, axes[-1], keepdims=True)
        elif ord == np.inf:
            if matrix:
                result = tf.reduce_sum(result, axes[1], keepdims=True)
            result = tf.reduce_max(result, None if axes is None else axes[0], keepdims=True)
        else:  # TF's general p-norm
            result = tf.pow(tf.reduce_sum(tf.pow(result, ord), axes, keepdims=True), 1.0 / ord)
    if not keepdims:
        result = tf.squeeze(result, axes)
    return result


def _tensors(values):
    """The list's tensors, None entries kept in place; Reject for IndexedSlices and the like
    (TF's own takes their values)."""
    if not isinstance(values, (list, tuple)):
        raise Reject()
    if any(isinstance(v, (tf.IndexedSlices, tf.SparseTensor)) for v in values):
        raise Reject()
    return [None if v is None else as_tensor(v) for v in values]


def _global_norm(tensors):
    """TF's: sqrt(2 * sum(l2_loss(t))), each t's half squared norm in its own dtype."""
    tensors = [t for t in tensors if t is not None]
    if not tensors:
        raise Reject()
    half = tf.reduce_sum(tf.stack([tf.nn.l2_loss(t) for t in tensors]))
    return tf.sqrt(half * tf.constant(2.0, half.dtype))


@lower_undispatched(tf.linalg, "global_norm")
def global_norm(t_list):
    return _global_norm(_tensors(t_list))


@lower_undispatched(tf, "clip_by_norm")
def clip_by_norm(t, clip_norm, axes=None):
    if isinstance(t, (tf.IndexedSlices, tf.SparseTensor)):
        raise Reject()
    x = as_tensor(t)
    l2sum = tf.reduce_sum(x * x, _axes(axes), keepdims=True)
    positive = l2sum > 0
    safe = tf.where(positive, l2sum, tf.ones_like(l2sum))
    l2norm = tf.where(positive, tf.sqrt(safe), l2sum)
    clip = tf.cast(clip_norm, x.dtype)
    return (x * clip) / tf.maximum(l2norm, clip)


@lower_undispatched(tf, "clip_by_global_norm")
def clip_by_global_norm(t_list, clip_norm, use_norm=None):
    tensors = _tensors(t_list)
    norm_ = _global_norm(tensors) if use_norm is None else as_tensor(use_norm)
    clip = tf.cast(clip_norm, norm_.dtype)
    # TF's scale: finite norms scale by min(1, clip / norm); a NaN or inf norm makes NaNs
    scale = clip * tf.minimum(1.0 / norm_, tf.constant(1.0, norm_.dtype) / clip)
    scale = scale + (norm_ - norm_)
    clipped = [None if t is None else tf.cast(scale, t.dtype) * t for t in tensors]
    return clipped, norm_


@lower_undispatched(tf.linalg, "normalize")
def normalize(tensor, ord="euclidean", axis=None):  # noqa: A002 - TF's name
    """TF's: the norm (keepdims), cast to the tensor's dtype, and the tensor divided by it."""
    x = as_tensor(tensor)
    n = tf.cast(norm(x, ord=ord, axis=axis, keepdims=True), x.dtype)
    return x / n, n


# tf.norm is tf.linalg.norm under a second name: replaced in both namespaces
UNDISPATCHED[(tf, "norm")] = norm
