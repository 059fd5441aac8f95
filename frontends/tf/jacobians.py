"""`tape.jacobian` and `tape.batch_jacobian` of a lazy target, for tf.GradientTape and
ltf.GradientTape.

TF's default way (pfor) vectorizes the tape's gradient function inside a tf.function graph,
where a lazy value cannot live; its other way (a while_loop over the target's elements) gathers
one element of the target per iteration. Here each row is one gradient of the whole target
seeded with a one-hot output gradient -- TF's while_loop way without the gather -- and the rows
are stacked lazily: one program at the next observation.

Under the plain tf.GradientTape each row is a gradient through TF's tape, which a
non-persistent tape gives only once. When the target depends on nothing but watched lazy
sources (no variable, no eagerly run op on the way), the rows are the IR's own gradients
(`direct_gradient`) and any tape will do.
"""
import numpy as np
import tensorflow as tf

from ...core import origins, runtime
from .tensor import LazyTensor, taped_node


def tape_gradient(tape, target, sources):
    """How `tape` gives one row: the IR's own gradient where it can (see module doc), else
    the tape's gradient."""
    from .tape import GradientTape as LazyTape
    if tape._tape is None:
        raise RuntimeError("A non-persistent GradientTape can only be used to compute one set "
                           "of gradients (or jacobians)")
    direct = None if isinstance(tape, LazyTape) else direct_gradient(target, sources)
    if direct is not None:
        return direct
    if not tape._persistent and not isinstance(tape, LazyTape):
        raise RuntimeError(
            "lazyx: the jacobian of a lazy target that depends on variables or on values TF "
            "ran eagerly takes one gradient per element through tf.GradientTape, which needs "
            "GradientTape(persistent=True); or record with lazyx.frontends.tf.GradientTape")

    def gradient(target, flat, seed, unconnected_gradients):
        return tape.gradient(target, flat, output_gradients=seed,
                             unconnected_gradients=unconnected_gradients)
    return gradient


def jacobian(gradient, target, sources, unconnected_gradients):
    """d target / d each source, of shape target.shape + source.shape. `gradient` is the
    tape's gradient(target, flat_sources, output_gradients, unconnected_gradients)."""
    flat = tf.nest.flatten(sources)
    rows = [gradient(target, flat, _one_hot(target.dtype, target.shape, index),
                     unconnected_gradients) for index in np.ndindex(*target.shape.as_list())]
    out = [_stacked([row[k] for row in rows], target.shape, s, unconnected_gradients, axis=0)
           for k, s in enumerate(flat)]
    return tf.nest.pack_sequence_as(sources, out)


def batch_jacobian(gradient, target, source, unconnected_gradients):
    """d target[b] / d source[b] for each b of the shared first dimension, of shape
    [batch] + target.shape[1:] + source.shape[1:]. Examples are independent, so one gradient
    seeded with the same one-hot in every example gives all examples' rows at once."""
    shape, source_shape = target.shape, source.shape
    if shape.rank < 2 or source_shape.rank < 2 or shape[0] != source_shape[0]:
        raise ValueError("Need first dimension of target shape (%s) and source shape (%s) to "
                         "match." % (shape, source_shape))
    row_shape = shape[1:]
    rows = [gradient(target, [source],
                     _one_hot(target.dtype, shape, (slice(None),) + index),
                     unconnected_gradients)[0]
            for index in np.ndindex(*row_shape.as_list())]
    return _stacked(rows, row_shape, source, unconnected_gradients, axis=1)


def direct_gradient(target, sources):
    """A gradient function for `jacobian` computing each row on the IR -- or None when some
    part of the target's gradient runs through TF's tape (a variable read, a value an eager op
    made), which only the tape can follow. Under the plain tape a lazy value's tape sources
    are the tokens of the watched lazy leaves it was computed from (tensor.sources_of)."""
    flat = tf.nest.flatten(sources)
    if not target._sources:  # depends on nothing the tape watches
        return lambda target, flat, seed, unconnected_gradients: [None] * len(flat)
    tokens = {id(s._token): s for s in flat if isinstance(s, LazyTensor) and
              s._token is not None and s._leaf_token}
    node = taped_node(target)  # (the graph before any sync realized it)
    if node is None or not all(id(token) in tokens for token, _ in target._sources):
        return None
    # each reached source's node as the target's graph holds it
    reached = {id(tokens[id(token)]): leaf for token, leaf in target._sources}

    def gradient(target, flat, seed, unconnected_gradients):
        wanted = [s for s in flat if id(s) in reached]
        seed_node = runtime.from_host(seed.numpy(), node.dtype)
        grads = origins.vjp(node, seed_node, [reached[id(s)] for s in wanted])
        grads = dict(zip(map(id, wanted), grads))
        return [LazyTensor(grads[id(s)]) if id(s) in grads else None for s in flat]
    return gradient


def _one_hot(dtype, shape, index):
    seed = np.zeros(shape.as_list(), dtype.as_numpy_dtype)
    seed[index] = 1
    return tf.constant(seed)


def _stacked(rows, row_shape, source, unconnected_gradients, axis):
    """The rows of one source's jacobian stacked along `axis` and shaped row_shape + the
    source's (per example for batch_jacobian); None (or zeros) when no row reaches it."""
    if all(r is None for r in rows) and unconnected_gradients == tf.UnconnectedGradients.NONE:
        return None
    source_shape = source.shape
    like = tf.zeros(source_shape, source.dtype)
    # (an IndexedSlices row -- a gathered source -- is made dense; a lazy row stays lazy)
    dense = [like if r is None else r if isinstance(r, LazyTensor) else tf.convert_to_tensor(r)
             for r in rows]
    if not dense:  # a target with no element
        lead = source_shape[:1] if axis else []
        rest = source_shape[1:] if axis else source_shape
        return tf.zeros(list(lead) + row_shape.as_list() + list(rest), source.dtype)
    stacked = tf.stack(dense, axis=axis)
    lead = source_shape[:1].as_list() if axis else []
    rest = source_shape[1:].as_list() if axis else source_shape.as_list()
    return tf.reshape(stacked, lead + row_shape.as_list() + rest)
