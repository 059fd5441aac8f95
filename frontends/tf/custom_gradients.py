"""tf.custom_gradient on lazy values: the function's own gradient, not its graph's.

TF's eager decorator records the call on its tape with the user's gradient function. The
tapes differentiate a lazy value's IR instead (core/autodiff), which would go through the
function's ops as through any others: `clip_gradient(x)` returning `tf.identity(x)` had the
identity's gradient, unclipped. So the result becomes a `custom_vjp` node over the lazy
inputs, and its gradient function (registered in core/autodiff.CUSTOM_VJPS) calls the user's
on the cotangent as a lazy tensor. hooks.py routes the decorator's calls with a lazy argument
here.

Covered: one tensor result (the common case: clipping, straight-through estimators, stable
forms of a function) and no variables used inside. A function with several results or that
reads variables keeps TF's own path, with a warning that its gradient function is not used
for lazy values (outside any tape, as Keras' all-reduce of its gradients calls one, nothing
is recorded either way: no warning).
"""
import warnings

import tensorflow as tf
from tensorflow.python.eager import record

from ...core import autodiff, ops
from ...core import dtypes as dt
from .tensor import LazyTensor, node_of, sources_of


def call(original, f, args, kwargs):
    """The decorated function called with a lazy argument (`original`: TF's decorator)."""
    with record.VariableWatcher() as watcher:
        result, grad_fn = f(*args, **kwargs)
    flat_args = tf.nest.flatten(args) + tf.nest.flatten(kwargs)
    flat_result = tf.nest.flatten(result)
    lazy = [i for i, x in enumerate(flat_args) if isinstance(x, LazyTensor)]
    if len(flat_result) != 1 or not isinstance(flat_result[0], LazyTensor) or \
            not dt.is_float(flat_result[0].node.dtype) or watcher.watched_variables():
        if not record.could_possibly_record():  # no tape: no gradient to get wrong (Keras'
            return result  # all-reduce of its gradients calls one so, every step)
        warnings.warn(f"lazyx: tf.custom_gradient function {getattr(f, '__name__', f)!r} "
                      f"with several results or reading variables, called on lazy values: "
                      f"its gradient function is not used (the gradient is its graph's)",
                      RuntimeWarning, stacklevel=4)
        return result
    y = flat_result[0]
    node = ops.custom_vjp(y.node, *[flat_args[i].node for i in lazy])

    def backward(cotangent):
        grads = grad_fn(LazyTensor(cotangent))
        flat = tf.nest.flatten(grads) if isinstance(grads, (list, tuple)) else [grads]
        if len(flat) != len(flat_args):
            raise ValueError(f"custom_gradient function expected to return {len(flat_args)} "
                             f"gradients, but returned {len(flat)} instead.")
        out = []
        for i in lazy:
            g, x = flat[i], flat_args[i].node
            if g is None or not dt.is_float(x.dtype):
                out.append(None)
                continue
            g = node_of(g, tf.as_dtype(dt.to_numpy(x.dtype)))
            if g.shape != x.shape:
                if g.shape:
                    raise ValueError(f"custom_gradient: a gradient of shape {list(g.shape)} "
                                     f"for an input of shape {list(x.shape)}")
                g = ops.broadcast_in_dim(g, shape=x.shape, broadcast_dimensions=())
            out.append(g)
        return out
    autodiff.CUSTOM_VJPS[node] = backward
    out = LazyTensor(node, sources_of(y, *[flat_args[i] for i in lazy]))
    return tf.nest.pack_sequence_as(result, [out])
