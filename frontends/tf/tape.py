"""`ltf.GradientTape`: tf.GradientTape whose gradients of a lazy target stay lazy.

tf.GradientTape can only hand back real tensors, so with it a lazy step syncs at
`tape.gradient` (forward + backward in one program) and the optimizer then runs eagerly.
This subclass is the same API; while it records, variable reads by lowered APIs become
shadows (variables.read), and `gradient()` of a lazy target differentiates the IR
(core/autodiff) with respect to those shadows, returning LazyTensors. The optimizer's math on
them and its assigns then stay lazy too, and the whole training step is one program at the
barrier. Targets that are not lazy get TF's own gradient.
"""
import weakref

import numpy as np
import tensorflow as tf

from ...core import autodiff, ir, ops, origins, runtime
from ...core import dtypes as dt
from . import indexed_slices, variables
from .lowering import GRAD_KEEPS_INPUT
from .tape_bridge import _connected, _differentiable, record, tf_convention
from .tensor import TAPED_LEAVES, LazyTensor


class GradientTape(tf.GradientTape):
    def __enter__(self):
        variables._lazy_tapes[0] += 1
        self._keep_origins()
        self._lazyx_recording = True
        if getattr(self, "_lazyx_start", None) is None:
            self._mark_start()
        return super().__enter__()

    def _mark_start(self):
        """What this tape recorded starts here (TF's rules, which the IR's gradient follows:
        a lazy value made before it is a constant unless watched): the node count now, and
        nothing watched yet."""
        self._lazyx_start = ir.CREATED[0]
        self._lazyx_watched = {}  # id -> each lazy value watched, and its node (kept alive)

    def watch(self, tensor):
        for t in tf.nest.flatten(tensor):
            if isinstance(t, LazyTensor):
                self._lazyx_watched[id(t)] = t
                self._lazyx_watched[id(t.node)] = t.node
        return super().watch(tensor)

    def reset(self):
        """TF's reset: as if the tape were exited and entered anew -- values made before it
        no longer lead a gradient to anything."""
        super().reset()
        self._mark_start()

    def __exit__(self, *exc):
        self._stop_lazy()
        return super().__exit__(*exc)

    def _stop_lazy(self):
        if getattr(self, "_lazyx_recording", False):
            self._lazyx_recording = False
            variables._lazy_tapes[0] -= 1

    def _keep_origins(self):
        """Realized values remember their graphs (runtime.KEEP_ORIGINS) from the block's start
        until this tape's gradient is taken, not only while it records: the loss read after
        the block (logged, NaN-checked) before tape.gradient() is a data leaf then, and
        without its origin no source was behind it -- every gradient was None. Released by
        the gradient of a non-persistent tape, or when the tape dies (an origin keeps its
        graph alive, so an unbounded keep would hold every step's graph)."""
        keep = getattr(self, "_lazyx_origins", None)
        if keep is None or not keep.alive:
            runtime.KEEP_ORIGINS[0] += 1
            self._lazyx_origins = weakref.finalize(self, _release_origins)

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE):
        try:
            if not isinstance(target, LazyTensor):
                targets = tf.nest.flatten(target)
                if not targets or not all(isinstance(t, LazyTensor) for t in targets):
                    return super().gradient(target, sources, output_gradients,
                                            unconnected_gradients)
            return lazy_gradient(self, target, sources, output_gradients,
                                 unconnected_gradients)
        finally:
            keep = getattr(self, "_lazyx_origins", None)
            if keep is not None and not self._persistent:  # TF allows no second gradient
                keep()


def lazy_gradient(tape, target, sources, output_gradients, unconnected_gradients, carried=(),
                  through_tf=True):
    """`tape`'s gradient of a lazy target (or a structure of them) on the IR, as LazyTensors:
    every source under ltf.GradientTape; the lazy sources under TF's own tape (hooks.py),
    where the gradients carry the target's tape sources (`carried`) so that an outer tape
    differentiates through them. `through_tf=False`: the caller knows no eagerly run op lies
    between the sources and the target."""
    if not isinstance(target, LazyTensor):
        targets = tf.nest.flatten(target)
        # several targets (a list, a dict): TF sums their gradients, which are those of
        # the sum of each target times its output gradient
        seeds = [None] * len(targets) if output_gradients is None else \
            tf.nest.flatten(output_gradients)
        target = LazyTensor(_summed(targets, seeds))
        output_gradients = None
    flat = tf.nest.flatten(sources)
    nodes = [_source_node(s) for s in flat]
    start = getattr(tape, "_lazyx_start", None)  # an ltf.GradientTape's: TF's rules below
    if start is not None:
        nodes = _recorded_sources(tape, flat, nodes, start)
    elif not tape._watch_accessed_variables:  # only what was watched has a gradient
        watched = {id(v) for v in tape.watched_variables()}
        nodes = [n if variables.tf_variable(s) is None or
                 id(variables.tf_variable(s)) in watched else None
                 for s, n in zip(flat, nodes)]
    if output_gradients is None:
        one = ir.param(np.ones((), dt.to_numpy(target.node.dtype)), target.node.dtype)
        seed = ops.broadcast_in_dim(one, shape=target.node.shape, broadcast_dimensions=())
    else:
        seed = _node(output_gradients, target.node.dtype)
    order = ir.topo_order([target.node])
    if _usual(order, nodes):
        # the usual step: nothing in this graph realized mid-step or run by TF under the
        # tape -- one walk of the graph here, instead of three with a weak-table lookup
        # per node
        reachable = _connected(target.node, through=False, after=start)
        wanted = [n for n in nodes if n is not None and id(n) in reachable
                  and _differentiable(n.dtype)]
        bridges = []

        def vjp(wrt):
            return autodiff.vjp([target.node], [seed], wrt, order)
    else:
        order = origins.order_through(target.node)
        reachable = _connected(target.node, after=start)
        # a source's shadow realized mid-step has two names (its leaf, its computation)
        wanted = [n for n in nodes if n is not None and _differentiable(n.dtype)
                  and any(id(a) in reachable for a in origins.aliases(n))]
        # leaves holding results of ops TF ran eagerly (fallbacks): the IR differentiates
        # up to them, TF's own tape from them back to the sources
        bridges = [n for n in order if n in TAPED_LEAVES and _differentiable(n.dtype)] \
            if through_tf else []

        def vjp(wrt):
            return origins.vjp(target.node, seed, wrt)
    # a source only gathered along axis 0 (an Embedding's table): TF's IndexedSlices
    grads = indexed_slices.gradients(order, wanted, vjp, extra=bridges)
    extra = _through_tf(tape, bridges, [grads[id(b)] for b in bridges], flat) if bridges \
        else [None] * len(flat)
    if GRAD_KEEPS_INPUT and record.could_possibly_record():  # (an outer tape may use them)
        grads = _keep_activation_inputs(order, wanted, grads)
    zeros = unconnected_gradients == tf.UnconnectedGradients.ZERO
    out = []
    for s, n, more in zip(flat, nodes, extra):
        g = grads.get(id(n)) if n is not None else None
        if isinstance(more, tf.IndexedSlices) and (g is None or
                                                   isinstance(g, tf.IndexedSlices)):
            # TF's tape gave a gather's IndexedSlices through the eagerly run op (an
            # Embedding's rows through tf.boolean_mask): kept sparse, as eager TF aggregates
            # slices (concatenated); made dense, Adam's update of the table was another
            g = _sparse_sum(g, more)
        elif more is not None:
            if isinstance(g, tf.IndexedSlices):  # a dense part too: TF's sum is dense
                g = tf.convert_to_tensor(g).node
            more = tf_convention(_node(more, more.dtype))  # TF's, made the IR's
            g = more if g is None else ops.add(g, ops.convert(more, dtype=g.dtype))
        if isinstance(g, tf.IndexedSlices):
            out.append(g)
        elif g is None:
            out.append(tf.zeros_like(tf.convert_to_tensor(s)) if zeros else None)
        else:
            out.append(LazyTensor(tf_convention(g), carried))  # (a complex source: TF's)
    return tf.nest.pack_sequence_as(sources, out)


def _recorded_sources(tape, flat, nodes, start):
    """The source nodes an ltf.GradientTape differentiates, by TF's rules: a variable when
    trainable and read under it (watch_accessed_variables), or watched; a lazy tensor when
    watched, or made while it recorded from what it watches. The IR would differentiate
    anything reachable: a non-trainable variable, an unwatched tensor made before the tape,
    a value from before tape.reset() all got gradients where TF gives None (the TF guide's
    autodiff cells)."""
    watched_variables = None
    out = []
    for s, n in zip(flat, nodes):
        var = variables.tf_variable(s)
        if n is None:
            out.append(None)
        elif var is not None:
            if not (var.trainable and tape._watch_accessed_variables):
                if watched_variables is None:
                    watched_variables = {id(v) for v in tape.watched_variables()}
                n = n if id(var) in watched_variables else None
            out.append(n)
        else:
            watched = id(s) in tape._lazyx_watched or id(n) in tape._lazyx_watched
            out.append(n if watched or n.serial > start and _from_watched(tape, n, start)
                       else None)
    return out


def _from_watched(tape, node, start):
    """Whether `node`, made while the tape recorded, was computed from something it watches
    (a watched lazy value, a variable's value read under it): TF's tape follows only those."""
    marks = set(tape._lazyx_watched)
    for v in list(variables._SHADOWED.values()):
        shadow = v._lazyx_shadow
        if shadow is not None:
            marks.add(id(shadow.node))
    seen, todo = {id(node)}, [node]
    while todo:
        x = todo.pop()
        if id(x) in marks:
            return True
        if x.serial > start:
            for i in x.inputs:
                if id(i) not in seen:
                    seen.add(id(i))
                    todo.append(i)
    return False


def _through_tf(tape, bridges, cotangents, flat):
    """The part of each source's gradient that flows through eagerly run ops: TF's tape
    takes the IR's cotangents of their results back to the sources (a sync for them)."""
    handles = [runtime.LazyHandle(tf_convention(c)) for c in cotangents]
    runtime.sync(*handles, cause="fallback", sharing=True)
    reals = [TAPED_LEAVES[b] for b in bridges]
    seeds = [tf.constant(runtime.to_host(h), dtype=r.dtype) for h, r in zip(handles, reals)]
    return tf.GradientTape.gradient(tape, reals, flat, output_gradients=seeds)


def _usual(order, sources):
    """Whether no node of this gradient's graph, nor a source, is a value realized under a
    tape (runtime.ORIGINS) or a fallback's result that TF's tape tracks (TAPED_LEAVES). The
    tables are global: one loss read mid-step and kept alive (a history list) sent every
    later step's gradient the long way, ~2 % more Python calls a step (a 3-layer Keras MLP).
    Checked from the smaller side: the table's few keys, or the graph's nodes."""
    tables = [t for t in (runtime.ORIGINS, TAPED_LEAVES) if t]
    if not tables:
        return True
    graph = {id(n): n for n in order}
    graph.update((id(n), n) for n in sources if n is not None)
    for table in tables:
        if len(table) <= len(graph):
            if any(id(k) in graph for k in list(table.keys())):
                return False
        elif any(n in table for n in graph.values()):
            return False
    return True


def _release_origins():
    runtime.KEEP_ORIGINS[0] -= 1


def _keep_activation_inputs(order, wanted, grads):
    """The gradients, each made to depend (with a zero gradient) on the inputs of the
    relu-like activations between the sources and the target, as TF's ReluGrad ops do: an
    outer tape's gradient of them through those inputs is then zeros, as TF's, not None
    (WGAN-GP with a LeakyReLU critic: Keras skipped the biases, "Gradients do not exist")."""
    inputs, after = [], {id(n) for n in wanted}
    for n in order:  # (topological: a node after its inputs)
        if any(id(i) in after for i in n.inputs):
            after.add(id(n))
            entry = GRAD_KEEPS_INPUT.get(id(n))
            if entry is not None and entry[0]() is n and _differentiable(entry[1].dtype):
                inputs.append(entry[1])
    if not inputs:
        return grads
    out = {}
    for k, g in grads.items():
        if isinstance(g, ir.Node) and _differentiable(g.dtype):
            kept = ops.custom_vjp(g, g, *inputs)
            autodiff.CUSTOM_VJPS[kept] = lambda gg, n=len(inputs): (gg,) + (None,) * n
            g = kept
        out[k] = g
    return out


def _summed(targets, seeds):
    """The scalar sum of each target times its seed (ones when None), in the widest dtype."""
    widest = max((t.node.dtype for t in targets), key=lambda d: dt.to_numpy(d).itemsize)
    total = None
    for t, seed in zip(targets, seeds):
        x = t.node
        if seed is not None:
            x = ops.mul(x, _node(seed, x.dtype))
        x = ops.reduce_sum(x, axes=tuple(range(len(x.shape))))
        x = x if x.dtype == widest else ops.convert(x, dtype=widest)
        total = x if total is None else ops.add(total, x)
    return total


def _source_node(source):
    if isinstance(source, LazyTensor):
        return source.node
    var = variables.tf_variable(source)
    shadow = getattr(var, "_lazyx_shadow", None) if var is not None else None
    return shadow.node if shadow is not None else None


def _sparse_sum(lazy, real):
    """The IndexedSlices `lazy` (or None) and TF's real `real` as one lazy IndexedSlices."""
    values = tf_convention(_node(real.values, real.values.dtype))
    indices = _node(real.indices, real.indices.dtype)
    if lazy is not None:
        indices_lazy = lazy.indices.node
        if indices_lazy.dtype != indices.dtype:  # (TF aggregates mixed index types as int64)
            indices_lazy, indices = (ops.convert(i, dtype="int64")
                                     for i in (indices_lazy, indices))
        values = ops.concatenate(lazy.values.node, values, dimension=0)
        indices = ops.concatenate(indices_lazy, indices, dimension=0)
    return tf.IndexedSlices(LazyTensor(values), LazyTensor(indices), real.dense_shape)


def _node(value, dtype):
    from .tensor import node_of
    return node_of(value, tf.as_dtype(dtype))
