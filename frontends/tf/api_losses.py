"""tf.nn's cross-entropies, lowered to IR: what Keras' three cross-entropy losses (and
keras.ops' categorical, sparse categorical and binary cross-entropy) end in on TF."""
import tensorflow as tf

from ...core import dtypes as dt
from ...core import compose, host_values, ops
from .lowering import Reject, as_tensor, axes_of, const, operand_nodes, static_ints
from .registry import lower, raise_for_values
from .tensor import node_of, wrap


def _floats(*values):
    """Float nodes of one dtype. Each operand is converted on its own, as these TF functions
    do (float64 NumPy labels with float32 logits are TF's dtype error, not a cast)."""
    try:
        nodes = [node_of(v) for v in values]
    except (TypeError, ValueError) as err:
        raise Reject() from err
    if not dt.is_float(nodes[0].dtype) or any(n.dtype != nodes[0].dtype for n in nodes):
        raise Reject()
    return nodes


@lower(tf.nn.sigmoid_cross_entropy_with_logits, "labels", "logits")
def sigmoid_cross_entropy_with_logits(labels=None, logits=None):
    z, x = _floats(labels, logits)
    if z.shape != x.shape:
        raise Reject()
    # TF's overflow-free form: max(x, 0) - x * z + log(1 + exp(-|x|))
    out = ops.add(ops.sub(compose.relu(x), ops.mul(x, z)),
                  ops.log1p(ops.exp(ops.neg(ops.abs_(x)))))
    return wrap(out, labels, logits)


@lower(tf.nn.softmax_cross_entropy_with_logits, "labels", "logits")
def softmax_cross_entropy_with_logits(labels, logits, axis=-1):
    z, x = _floats(labels, logits)
    if z.shape != x.shape or x.ndim == 0:
        raise Reject()
    (a,) = axes_of(axis, x.ndim, allow_none=False)
    # gradients reach the labels too, as in TF's v2 op
    return wrap(ops.neg(ops.reduce_sum(ops.mul(z, compose.log_softmax(x, a)), axes=(a,))),
                labels, logits)


@lower(tf.nn.sparse_softmax_cross_entropy_with_logits, "labels", "logits")
def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None):
    (x,) = _floats(logits)
    (y,) = operand_nodes(labels)
    if y.dtype not in ("int32", "int64") or x.ndim == 0 or y.shape != x.shape[:-1]:
        raise Reject()
    classes = x.shape[-1]
    known = host_values.known(y)
    if known is not None and host_values.out_of_range(known, 0, classes):
        # TF on CPU refuses a label outside [0, classes): so do we where the labels are known
        # (computed labels cannot be checked without a sync; they give a wrong loss instead)
        raise_for_values(tf.nn.sparse_softmax_cross_entropy_with_logits,
                         dict(labels=labels, logits=logits), {"labels": known})
    last = x.ndim - 1
    # log(sum(exp(x - max))) - (x - max)[label], as TF's kernel rounds it, the label's entry
    # picked by a one-hot mask: its gradient is a select, not a scatter. (Picked from
    # log_softmax instead, as until 2026-11-30, the gradient also summed the picked cotangents
    # over the classes: 2.5x the loss's time at 8,192 classes, measured.)
    hot = ops.eq(ops.iota(dtype=y.dtype, shape=x.shape, dimension=last),
                 ops.broadcast_in_dim(y, shape=x.shape, broadcast_dimensions=tuple(range(last))))
    shifted, log_sum = compose.shifted_log_sum(x, last)
    picked = ops.reduce_sum(ops.select(hot, shifted, const(0, x)), axes=(last,))
    return wrap(ops.sub(ops.reshape(log_sum, new_sizes=picked.shape), picked), labels, logits)


@lower(tf.nn.compute_average_loss, "per_example_loss")
def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """A custom training loop's loss scaling (nn_impl_distribute.compute_average_loss), with TF
    calls on lazy tensors: weighted in float32 with the weights' rank matched to the losses'
    (losses_util), summed, divided (no NaN) by the global batch size -- by default the batch
    times the replicas. Under a distribution strategy, and for a lazy or bad batch size, TF's
    own function runs (its checks and errors)."""
    from tensorflow.python.distribute import distribute_lib
    loss = as_tensor(per_example_loss)
    dtype, rank = loss.dtype, loss.shape.rank
    if rank == 0 or not dtype.is_floating or distribute_lib.has_strategy():
        raise Reject()
    if sample_weight is not None:
        weights = tf.cast(sample_weight, tf.float32)
        loss = tf.cast(loss, tf.float32)
        if weights.shape.rank == rank + 1:
            weights = tf.squeeze(weights, [-1])
        elif weights.shape.rank == rank - 1 and weights.shape.rank:
            weights = tf.expand_dims(weights, [-1])
        loss = tf.cast(tf.multiply(loss, weights), dtype)
    batch = loss.shape[0] if global_batch_size is None else static_ints(global_batch_size)
    if not isinstance(batch, int) or batch < 0:
        raise Reject()
    return tf.math.divide_no_nan(tf.reduce_sum(loss), tf.cast(batch, dtype))
