"""Where lazy values meet TF's own tape: a lazy value made from watched tensors records a
token op whose gradient is the IR's (forward and backward in one run), a value materialized
for TF (to_tf) records that TF's real tensor holds the node's value, and cotangents crossing
between the two are put in TF's complex convention. Split from tensor.py."""
import numpy as np
import tensorflow as tf
from tensorflow.python.eager import record

from ...core import dtypes as dt
from ...core import ir, ops, origins, runtime
from .tensor import MATERIALIZED, LazyTensor, sources_of, taped_node, tf_dtype


def _vjp_to_tf(node, cotangent, sources, also_sync=()):
    """Gradients (real tf tensors) of `node` w.r.t. the sources, forward+backward in one run.
    A source only gathered along axis 0 (an Embedding's table) gets TF's IndexedSlices, as
    eager TF's gather gradient gives it: Keras' optimizers update such a table sparsely (Adam
    touches only the rows gathered), so a dense gradient gave other numbers."""
    from . import indexed_slices
    order = origins.order_through(node)
    grads = indexed_slices.gradients(order, [n for _, n in sources],
                                     lambda wrt: origins.vjp(node, cotangent, wrt))
    # a source reached only through ops TF does not differentiate gets None, as TF's tape
    # gives it (floor, round, an integer result: see _BLOCKING), not zeros
    # (a source realized since it was read has two names, its leaf and its computation)
    reached = _connected(node)
    connected = {id(n) for _, n in sources
                 if any(id(a) in reached for a in origins.aliases(n))}
    grads = {k: tf_convention(g) if k in connected else None for k, g in grads.items()}
    handles = {}  # id(a gradient's node or lazy part) -> a handle of it (synced together)
    for g in grads.values():
        if g is None:  # (a gathered source no gather's cotangent reached: no gradient)
            continue
        for part in (g.values, g.indices) if isinstance(g, tf.IndexedSlices) else (g,):
            handles[id(part)] = runtime.LazyHandle(part.node if isinstance(part, LazyTensor)
                                                   else part)
    runtime.sync(*handles.values(), *[h for h in also_sync if h.pending], cause="convert",
                 sharing=True)

    def real(part, dtype):
        return tf.constant(runtime.to_host(handles[id(part)], cause="convert"), dtype=dtype)
    out = []
    for _, wrt in sources:
        g = grads[id(wrt)]
        # the source's own dtype: a watched variable is a resource handle on TF's tape
        if g is None:
            out.append(None)
        elif isinstance(g, tf.IndexedSlices):
            out.append(tf.IndexedSlices(real(g.values, tf_dtype(wrt.dtype)),
                                        real(g.indices, g.indices.dtype), g.dense_shape))
        else:
            out.append(real(g, tf_dtype(wrt.dtype)))
            # an outer tape recording while this one differentiates (nested tapes: a
            # second-order gradient) sees the gradient as computed from the sources
            _record_materialized(out[-1], g, sources)
    return out


def _differentiable(dtype):
    return dt.is_float(dtype) or dt.is_complex(dtype)


# TF registers Floor, Ceil, Round, Rint, FloorDiv and StopGradient as not differentiable, and
# an integer or boolean result (argmax, a comparison, a cast to int) carries no gradient: a
# source reached only through them has the gradient None under TF's tape, not zeros. (The IR's
# "sign" is not here: TF's Sign has a gradient, zeros.)
_BLOCKING = frozenset(("floor", "ceil", "round", "stop_gradient"))


def _connected(target, through=True, after=None):
    """ids of the nodes that a gradient of `target` reaches through differentiable ops, on
    through realized values to their computations (runtime.ORIGINS, as origins.vjp goes;
    `through=False` where the caller knows no realized value is in the graph). `after`: an
    ltf.GradientTape's start -- a value made before it is reached (a variable's shadow, a
    watched input) but is not gone through: the tape did not record what made it."""
    realized = runtime.ORIGINS if through and runtime.ORIGINS else None  # (len() once)
    reached, todo = {id(target)}, [target]
    while todo:
        node = todo.pop()
        dtype = node.dtype
        if after is not None and node.serial <= after and node is not target:
            continue
        if node.op in _BLOCKING or not (
                any(map(_differentiable, dtype)) if type(dtype) is tuple else
                _differentiable(dtype)):
            continue
        origin = realized.get(node) if realized is not None else None
        for x in (*node.inputs, origin) if origin is not None else node.inputs:
            if id(x) not in reached:
                reached.add(id(x))
                todo.append(x)
    return reached


def tf_convention(g):
    """A cotangent between the IR and TF's tape: the IR's complex gradients follow JAX (the
    conjugate of TF's and torch's: d|z|/dz is conj(z)/|z| there, z/|z| in TF), so a complex
    one is conjugated where it crosses (a spectral loss on tf.signal.stft's result, run by TF,
    gave another number); real ones pass as they are. The map is its own inverse."""
    if isinstance(g, ir.Node) and dt.is_complex(g.dtype):
        return ops.conj(g)
    return g


def _record_token(lazy, node, sources):
    token = tf.zeros((), tf_dtype(node.dtype))
    handle = lazy._handle

    def backward(d_token):
        # the tape's seed (ones), or the user's output_gradients for the whole value -- TF
        # hands it to the token unchecked
        d_token = np.asarray(tf.convert_to_tensor(d_token))
        if d_token.shape == tuple(node.shape):
            g = runtime.from_host(d_token, node.dtype)
        else:
            g = ops.broadcast_in_dim(ir.param(d_token, node.dtype), shape=node.shape,
                                     broadcast_dimensions=())
        g = tf_convention(g)  # (TF's cotangent, made the IR's)
        alive = (handle,) if handle.node is node else ()
        return _vjp_to_tf(node, g, sources, also_sync=alive)

    record.record_operation("LazyxGraph", [token], [t for t, _ in sources], backward)
    return token


def to_tf(value, cause="convert"):
    """A real tf.Tensor for a lazy value; under a tape, gradients still flow through it."""
    # the pending graph, before the sync swaps in its result (a value realized earlier under a
    # tape is a leaf: origins' walks continue to what it was computed from)
    node = value.node
    host = runtime.to_host(value._handle, cause=cause)
    tensor = tf.constant(host, dtype=value.dtype)
    _record_materialized(tensor, node, sources_of(value) or _shadowed_sources(node))
    return tensor


# a value realized while TF's plain tape records remembers its graph (runtime.TAPE_RECORDING)
runtime.TAPE_RECORDING.append(record.could_possibly_record)


def _record_materialized(tensor, node, sources):
    """Records on the tapes watching `sources` that the real `tensor` holds `node`'s value:
    their gradients through it are the IR's (forward and backward in one run)."""
    if not (sources and (dt.is_float(node.dtype) or dt.is_complex(node.dtype)) and
            record.could_possibly_record()):
        return

    def backward(d_tensor):
        # a gather of the real tensor (tape.jacobian's while_loop takes one row at a time)
        # hands back TF's sparse IndexedSlices
        d_tensor = tf.convert_to_tensor(d_tensor)
        if not tf.executing_eagerly():
            return _vjp_in_graph(node, d_tensor, sources)
        g = tf_convention(runtime.from_host(np.asarray(d_tensor), node.dtype))
        return _vjp_to_tf(node, g, sources)

    MATERIALIZED[0] += 1
    record.record_operation("LazyxMaterialize", [tensor], [t for t, _ in sources], backward)


def _vjp_in_graph(node, d_tensor, sources):
    """The backward of a materialized value called while TF builds a graph: tape.jacobian's
    pfor vectorizes the gradient of a real value computed from lazy ones (the Hessian of TF's
    guide: outer.jacobian(inner.gradient(...))). The IR's gradient runs as a py_function,
    which pfor runs once per row."""
    kinds = [tf_dtype(n.dtype) for _, n in sources]

    def run(d):
        grads = _vjp_to_tf(node, tf_convention(runtime.from_host(d.numpy(), node.dtype)),
                           sources)
        return [tf.zeros(n.shape, kind) if g is None else tf.convert_to_tensor(g)
                for g, (_, n), kind in zip(grads, sources, kinds)]
    outs = tf.py_function(run, [d_tensor], kinds)
    for out, (_, n) in zip(outs, sources):
        out.set_shape(n.shape)
    return outs


def _shadowed_sources(node):
    """Under an ltf.GradientTape variable reads are lazy shadows (no TF tape sources): a value
    materialized for an eager op is tied to the variables whose shadows it reads, so TF's
    tape can carry a gradient from that op's result back to them."""
    from . import variables
    if not variables._lazy_tapes[0] or not record.could_possibly_record():
        return ()
    shadows = {}  # every name of each shadow's node (origins.aliases) -> its variable
    for v in list(variables._SHADOWED.values()):
        if v._lazyx_shadow is not None and v.trainable:
            for name in origins.aliases(v._lazyx_shadow.node):
                shadows[id(name)] = v
    found = {id(shadows[id(n)]): shadows[id(n)] for n in origins.order_through(node)
             if id(n) in shadows}
    return tuple((v.__dict__["_handle"], v._lazyx_shadow.node) for v in found.values())


def lazy_source_gradients(tape, target, sources, output_gradients, unconnected_gradients):
    """TF's own tape's gradients of a lazy target with respect to its lazy sources, taken on
    the IR (tape.lazy_gradient, ltf.GradientTape's): {index in the flat sources: gradient}.
    TF's tape holds one token per lazy value, made from the watched tensors it was computed
    from, so no token path led from a target to a lazy value computed under the tape -- an
    activation (Grad-CAM's conv output), an interpolate a nested tape watches (WGAN-GP's
    penalty): TF gave None. The gradients stay lazy and carry the target's tape sources, so
    an outer tape -- TF's or ltf's -- differentiates through them (second order). Only values
    a tape saw (those with a token) qualify: for any other TF's answer, None, stands."""
    from .tape import lazy_gradient
    flat = tf.nest.flatten(sources)
    picked = [i for i, s in enumerate(flat) if type(s) is LazyTensor and s._token is not None]
    targets = tf.nest.flatten(target)
    if not targets or not all(isinstance(t, LazyTensor) for t in targets):
        return {}
    # Not when a lazy value was materialized for TF under a tape since a source was made:
    # TF's eager ops (a fallback) may lie between it and the target, and TF's tape records
    # them from the watched tensors behind a value, not from its token, so no IR route can
    # add their part. TF's tape takes such a gradient, as before 2026-11-30: right for a
    # watched lazy input, None for an activation (docs/tf.md).
    if any(flat[i]._made_at != MATERIALIZED[0] for i in picked):
        return {}
    picked += _lazily_read_variables(tape, flat)
    if not picked:
        return {}
    # (each value as the tape recorded it: a sync since -- a jacobian's earlier row -- made
    # its node a data leaf, which no gradient reaches)
    grads = lazy_gradient(tape, tf.nest.pack_sequence_as(target, [_taped(t) for t in targets]),
                          [flat[i] if type(flat[i]) is not LazyTensor else _taped(flat[i])
                           for i in picked], output_gradients,
                          unconnected_gradients, carried=sources_of(*targets),
                          through_tf=False)
    return dict(zip(picked, grads))


def _lazily_read_variables(tape, flat):
    """Indices of the variable sources this tape watches that were read lazily -- as a shadow,
    because an ltf.GradientTape recorded at the read (one nested in TF's tape, or around
    it: a WGAN-GP penalty's tapes mixed) -- so TF's tape saw no read of theirs and gave None.
    A variable TF's tape read itself holds no shadow (variables.read stores it first)."""
    from .variables import has_shadow, tf_variable
    watched = None
    out = []
    for i, s in enumerate(flat):
        if type(s) is LazyTensor or not has_shadow(s):
            continue
        if watched is None:
            watched = {id(v) for v in tape.watched_variables()}
        if id(tf_variable(s)) in watched:
            out.append(i)
    return out


def _taped(value):
    """`value`, or a lazy value of the graph its tape token was recorded with when a sync
    has realized it since."""
    node = taped_node(value)
    return value if node is None or node is value.node else LazyTensor(node)
