"""keras.ops.argpartition on lazy values: Keras' TF backend, step for step, but for the one
step with a data-dependent shape -- it zeroes x where a mask is set through tf.where(mask)
(a list of positions: a counted fallback, a sync) and tensor_scatter_nd_update -- which is
an element-wise select of the same mask. Its mask sums one-hot rows over axis 0 (so for a
matrix it marks rows 0..kth, a quirk kept here, not fixed); ranks above 2, a lazy kth, and a
matrix with fewer rows than kth + 1 (where Keras' scatter raises) go to Keras' own function."""
import tensorflow as tf


def argpartition(x, kth, axis, original):
    from keras.src.backend.tensorflow.core import convert_to_tensor
    from keras.src.backend.tensorflow.numpy import swapaxes
    if not isinstance(kth, int) or isinstance(kth, bool):
        return original(x, kth, axis=axis)
    x = convert_to_tensor(x, tf.int32)
    if axis is None:
        x, axis, original_axis = tf.reshape(x, [-1]), 0, None
    else:
        original_axis = axis
    x = swapaxes(x, axis, -1)
    n = x.shape[-1]
    kth = min(max(kth, 0), n - 1)
    if x.shape.rank > 2 or x.shape.rank == 2 and x.shape[0] < kth + 1 or n == 0:
        return original(swapaxes(x, -1, axis) if original_axis is not None else x, kth,
                        axis=original_axis)
    bottom_ind = tf.math.top_k(-x, kth + 1).indices
    mask = tf.reduce_sum(tf.one_hot(bottom_ind, n, dtype=tf.int32), axis=0)
    if x.shape.rank == 2:  # rows 0..kth of x, as the scatter's positions
        mask = tf.pad(mask, [[0, x.shape[0] - mask.shape[0]], [0, 0]])
    final_mask = tf.where(mask > 0, tf.zeros_like(x), x)
    top_ind = tf.math.top_k(final_mask, n - kth - 1).indices
    out = tf.concat([bottom_ind, top_ind], axis=-1)
    return out if original_axis is None else swapaxes(out, -1, axis)
