"""keras.ops.nanquantile (and nanmedian / nanpercentile, which call it) on lazy values.

Keras' TF backend drops each row's NaNs with tf.boolean_mask (a data-dependent shape: a
counted fallback, a sync) and maps its quantile over the rows. Here, in TF ops that lower
lazily: one sort per row puts the NaNs last (the IR's sort orders NaN above +inf), the row's
count of numbers stands for Keras' length d, and its index formulas (tfp.stats.percentile's,
in float64) pick from the first d sorted entries; a row of NaNs gives NaN, as Keras.
Calls this does not cover go to Keras' own function: integer x, and a vector q (over all
axes Keras returns a scalar NaN for it when every value is NaN, a shape the data decides; per
row it raises ValueError for a row of NaNs, which a lazy value cannot)."""
import numpy as np
import tensorflow as tf

from .lowering import as_tensor

_FLOATS = (tf.float16, tf.bfloat16, tf.float32, tf.float64)
_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def nanquantile(x, q, axis, method, keepdims, original):
    from keras.src.backend import config
    x = as_tensor(x)
    floatx = config.floatx()
    q = tf.cast(q, floatx) if isinstance(q, tf.Tensor) or hasattr(q, "node") else \
        tf.convert_to_tensor(q, dtype=floatx)
    if x.dtype not in _FLOATS or method not in _METHODS or q.shape.rank != 0 or \
            axis in ((), []):
        return original(x, q, axis=axis, method=method, keepdims=keepdims)
    rank = x.shape.rank
    if axis is None:
        axes, other = list(range(rank)), []
    else:
        axes = [a % rank for a in ([axis] if isinstance(axis, int) else list(axis))]
        other = [i for i in range(rank) if i not in axes]
    other_shape = [x.shape[i] for i in other]
    rows = tf.reshape(tf.transpose(x, other + axes),
                      [int(np.prod(other_shape)), int(np.prod([x.shape[i] for i in axes]))])
    picked = _pick(rows, q, method)  # (rows, 1)
    if axis is None:
        return tf.reshape(picked, [1] * rank if keepdims else [])
    out = tf.reshape(picked, other_shape)
    if keepdims:
        for a in sorted(axes):
            out = tf.expand_dims(out, axis=a)
    return out


def _pick(rows, q, method):
    """Keras' _quantile of the scalar q on each row's leading `count` sorted numbers."""
    count = tf.reduce_sum(tf.cast(tf.logical_not(tf.math.is_nan(rows)), tf.int32), axis=-1,
                          keepdims=True)
    ordered = tf.sort(rows, axis=-1)
    d = tf.cast(count, tf.float64)
    q = tf.cast(q, tf.float64)
    top = tf.maximum(count - 1, 0)

    def indices(how):
        rounded = {"lower": tf.math.floor, "higher": tf.math.ceil,
                   "nearest": tf.round}[how]((d - 1) * q)
        return tf.minimum(tf.maximum(tf.cast(rounded, tf.int32), 0), top)

    def at(i):
        return tf.gather(ordered, i, axis=1, batch_dims=1)
    if method in ("lower", "higher", "nearest"):
        out = at(indices(method))
    elif method == "midpoint":
        out = 0.5 * (at(indices("lower")) + at(indices("higher")))
    else:
        larger = indices("higher")
        smaller = tf.maximum(larger - 1, 0)
        larger = tf.minimum(smaller + 1, top)
        fraction = tf.cast(tf.cast(larger, tf.float64) - (d - 1) * q, rows.dtype)
        out = at(larger) * (1 - fraction) + at(smaller) * fraction
    return tf.where(count > 0, out, tf.constant(np.nan, rows.dtype))
