"""`ltf.GradientTape`: tf.GradientTape whose gradients of a lazy target stay lazy.

tf.GradientTape can only hand back real tensors, so with it a lazy step syncs at
`tape.gradient` (forward + backward in one program) and the optimizer then runs eagerly.
This subclass is the same API; while it records, variable reads by lowered APIs become
shadows (variables.read), and `gradient()` of a lazy target differentiates the IR
(core/autodiff) with respect to those shadows, returning LazyTensors. The optimizer's math on
them and its assigns then stay lazy too, and the whole training step is one program at the
barrier. Targets that are not lazy get TF's own gradient.
"""
import numpy as np
import tensorflow as tf

from ...core import autodiff, ir, ops
from ...core import dtypes as dt
from . import variables
from .tensor import LazyTensor


class GradientTape(tf.GradientTape):
    def __enter__(self):
        variables._lazy_tapes[0] += 1
        self._lazyx_recording = True
        return super().__enter__()

    def __exit__(self, *exc):
        self._stop_lazy()
        return super().__exit__(*exc)

    def _stop_lazy(self):
        if getattr(self, "_lazyx_recording", False):
            self._lazyx_recording = False
            variables._lazy_tapes[0] -= 1

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE):
        if not isinstance(target, LazyTensor):
            return super().gradient(target, sources, output_gradients, unconnected_gradients)
        flat = tf.nest.flatten(sources)
        nodes = [_source_node(s) for s in flat]
        if output_gradients is None:
            one = ir.param(np.ones((), dt.to_numpy(target.node.dtype)), target.node.dtype)
            seed = ops.broadcast_in_dim(one, shape=target.node.shape, broadcast_dimensions=())
        else:
            seed = _node(output_gradients, target.node.dtype)
        reachable = {id(n) for n in ir.topo_order([target.node])}
        wanted = [n for n in nodes if n is not None and id(n) in reachable
                  and dt.is_float(n.dtype)]
        grads = dict(zip(map(id, wanted), autodiff.vjp([target.node], [seed], wanted)))
        zeros = unconnected_gradients == tf.UnconnectedGradients.ZERO
        out = []
        for s, n in zip(flat, nodes):
            g = grads.get(id(n)) if n is not None else None
            if g is None:
                out.append(tf.zeros_like(tf.convert_to_tensor(s)) if zeros else None)
            else:
                out.append(LazyTensor(g))
        return tf.nest.pack_sequence_as(sources, out)


def _source_node(source):
    if isinstance(source, LazyTensor):
        return source.node
    var = variables.tf_variable(source)
    shadow = getattr(var, "_lazyx_shadow", None) if var is not None else None
    return shadow.node if shadow is not None else None


def _node(value, dtype):
    from .tensor import node_of
    return node_of(value, tf.as_dtype(dtype))
