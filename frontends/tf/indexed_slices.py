"""tf.IndexedSlices with lazy values: a gather's gradient, as TF gives it.

TF's gradient of `tf.gather(params, indices)` along axis 0 (what Keras' Embedding and
`variable.sparse_read` compute) is an IndexedSlices -- the rows' cotangents and the indices,
duplicates kept -- not a dense tensor, and Keras' optimizers take it down other paths: Adam
and RMSprop square the slices' values before summing duplicate rows (a row gathered twice in
a batch gets g1^2 + g2^2 in its second moment, not (g1 + g2)^2), and the TF optimizer writes
IndexedSlices updates with `variable.scatter_add`. A dense lazy gradient therefore trained an
Embedding to other numbers than eager TF. So `ltf.GradientTape` gives an IndexedSlices where
TF would (every use of the source is such a gather: `sparse_gradient`), with lazy values and
indices; Keras' sparse helpers then run lazily, `tf.convert_to_tensor` of it sums the rows
lazily (`densify`, a dispatch TF reaches before its own conversion, which could only return a
real tensor), and the variables' scatter methods record the update (variables.py).
"""
import weakref

import tensorflow as tf

from ...core import ops, origins
from .tensor import LazyTensor, wrap

# gather nodes the TF frontend made for a gather along axis 0 (api_array.gather): the ones
# whose gradient TF hands back as IndexedSlices (not a gather_nd's: TF's is dense there)
ROW_GATHERS = weakref.WeakValueDictionary()


def mark_row_gather(node):
    ROW_GATHERS[id(node)] = node
    return node


def is_row_gather(node):
    return ROW_GATHERS.get(id(node)) is node


def sparse_sources(order, wanted):
    """{id(source): [its gathers]} for the wanted source nodes whose every use in `order` (the
    target's graph) is a row gather of it: the sources TF differentiates to IndexedSlices."""
    # a source realized since its gathers read it (a variable's new value synced by a
    # fallback's materialization) has two names, its leaf and the computation they read
    names = {id(a): id(n) for n in wanted if n.ndim for a in origins.aliases(n)}
    uses = {}
    for node in order:
        for k, operand in enumerate(node.inputs):
            if id(operand) in names:
                uses.setdefault(names[id(operand)], []).append((node, k))
    # (latest use first: TF's backward pass meets them in that order and concatenates so)
    return {i: [node for node, _ in reversed(found)] for i, found in uses.items()
            if all(k == 0 and is_row_gather(node) for node, k in found)}


def sparse_gradient(source, gathers, cotangents):
    """The IndexedSlices TF's gather gradient gives (several gathers: their slices
    concatenated, as TF aggregates them); None when no gather has a cotangent."""
    pairs = [(c, g.inputs[1]) for g, c in zip(gathers, cotangents) if c is not None]
    if not pairs:
        return None
    # one row per index (a gather's index operand is (*indices, 1))
    values = [ops.reshape(c, new_sizes=(i.size,) + source.shape[1:]) for c, i in pairs]
    indices = [ops.reshape(i, new_sizes=(i.size,)) for _, i in pairs]
    if len({i.dtype for i in indices}) > 1:  # TF aggregates mixed index types as int64
        indices = [ops.convert(i, dtype="int64") for i in indices]
    if len(pairs) > 1:
        values = [ops.concatenate(*values, dimension=0)]
        indices = [ops.concatenate(*indices, dimension=0)]
    return tf.IndexedSlices(wrap(values[0]), wrap(indices[0]),
                            tf.constant(source.shape, dtype=tf.int32))


def gradients(order, wanted, vjp, extra=()):
    """{id(node): its gradient} for the `wanted` sources of a target whose graph is `order`
    (and for the `extra` nodes, always dense): `vjp(nodes)` gives the cotangents of nodes; a
    source only gathered along axis 0 gets TF's IndexedSlices (sparse_gradient)."""
    sparse = sparse_sources(order, wanted)
    dense = [n for n in wanted if id(n) not in sparse] + list(extra)
    gathers = [g for n in wanted if id(n) in sparse for g in sparse[id(n)]]
    cotangents = vjp(dense + gathers)
    grads = dict(zip(map(id, dense), cotangents))
    rest = iter(cotangents[len(dense):])
    for n in wanted:
        if id(n) in sparse:
            grads[id(n)] = sparse_gradient(n, sparse[id(n)], [next(rest) for _ in sparse[id(n)]])
    return grads


def is_lazy(slices):
    return isinstance(slices.values, LazyTensor) or isinstance(slices.indices, LazyTensor)


def densify(value, dtype=None, dtype_hint=None, name=None):
    """tf.convert_to_tensor of lazy IndexedSlices: the rows summed into the dense shape, as
    TF's own conversion does (a segment sum), lazily. Others: TF's conversion. (Dispatched
    to for every IndexedSlices: hooks.py registers it.)"""
    if not is_lazy(value) or value.dense_shape is None:
        return NotImplemented
    try:
        rows = int(tf.get_static_value(value.dense_shape)[0])
    except (TypeError, IndexError):
        return NotImplemented
    dense = tf.math.unsorted_segment_sum(value.values, value.indices, rows)
    return dense if dtype is None else tf.cast(dense, dtype)
