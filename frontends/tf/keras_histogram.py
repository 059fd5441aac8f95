"""keras.ops.histogram on lazy values: Keras' TF backend keeps the values inside the range
with tf.boolean_mask (a data-dependent shape: a counted fallback, a sync) before it bins and
counts them with scatter_nd. Here every value is binned and the ones outside the range (NaN
included) add 0: the same counts, with static shapes; the rest is Keras' code as it is."""
import tensorflow as tf

from .lowering import as_tensor


def histogram(x, bins, range, original):  # noqa: A002 - Keras' names
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        return original(x, bins=bins, range=range)
    x = as_tensor(x)
    if range is None:
        min_val, max_val = tf.reduce_min(x), tf.reduce_max(x)
    else:
        min_val, max_val = range
    inside = (x >= min_val) & (x <= max_val)
    bin_edges = tf.cast(tf.linspace(min_val, max_val, bins + 1), x.dtype)
    bin_indices = tf.searchsorted(bin_edges[1:-1], tf.reshape(x, [-1]), side="right")
    counts = tf.scatter_nd(indices=tf.expand_dims(bin_indices, axis=-1),
                           updates=tf.cast(tf.reshape(inside, [-1]), x.dtype),
                           shape=(bins,))
    return counts, bin_edges
