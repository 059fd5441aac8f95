"""The lazy TF tensor: a CompositeTensor, so TensorFlow's type-based dispatch routes TF's own
APIs to lazyx, and tf.GradientTape can take it as a gradient target.

Gradients: a lazy value that depends on tensors a tape is watching (a Keras layer's variable
reads) records one op on the tape -- a scalar "token" whose inputs are those watched tensors.
When the tape reaches the token, its backward function differentiates the *IR* (core/autodiff)
from the lazy value to those inputs, and runs forward and backward as one compiled program.
"""
import contextlib
import os
import sys
import weakref

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import record
from tensorflow.python.framework import composite_tensor, type_spec
from tensorflow.python.util import object_identity

from ...core import ir, ops, runtime, source
from ...core.split_steps import observed
from ...core import capture
from ...core.symbolic import SymFloat, SymInt, plain
from ...core import dtypes as dt


# Handles that run with every observed value: variables.py points this at its pending
# shadows, so observing a step's loss also runs that step's variable updates -- in the same
# program, instead of leaving them to pile up into the next step's graph.
pending_state = list


_FRAMEWORKS = ("tensorflow", "keras", "tf_keras")
_PLUMBING = (os.sep.join(("tensorflow", "python", "util", "")),)  # TF's dispatch wrappers


# framework functions whose whole job is to hand the user a host value
_OBSERVERS = frozenset(("keras.src.backend.tensorflow.core.convert_to_numpy",))


def framework_request():
    """The TF/Keras function that asked for a lazy value's conversion, or None when the user's
    own code asked (`.numpy()`, `print`, `float()` written by the user are observations; so
    is keras.ops.convert_to_numpy, Keras' own `.numpy()`, whoever calls it)."""
    who = source.requester(_FRAMEWORKS, _PLUMBING)
    return None if who in _OBSERVERS else who


def silent_turn(what):
    """A conversion TF or Keras asked for, not the user: a counted fallback named after the
    function that asked (principle 9: no silent eager turn)."""
    from . import control_flow
    control_flow.untraceable(what)  # (a lazy cond's branch stops before the read: uncounted)
    runtime.fallback(what, "tensorflow", read=True)


def _observe(handle, cause):
    """An observed value as NumPy; the pending variable updates run in the same program.
    A conversion requested by TF's or Keras' own code is counted as a fallback."""
    who = framework_request()
    if who is not None:
        silent_turn(who)
        cause = "fallback"
    if handle.pending:
        extra = [h for h in pending_state() if h is not handle]
        if extra:
            runtime.sync(handle, *extra, cause=cause, source=runtime.user_line(3), sharing=True)
    return runtime.to_host(handle, cause=cause)


def tf_dtype(ir_dtype):
    known = _TF_DTYPES.get(ir_dtype)
    return known if known is not None else tf.as_dtype(ir_dtype)


_TF_DTYPES = {name: tf.as_dtype(name) for name in dt.ALL}  # complex64/128 included


def ir_dtype(tf_dtype_like):
    known = _IR_DTYPES.get(tf_dtype_like) if isinstance(tf_dtype_like, tf.DType) else None
    if known is not None:
        return known
    return dt.check(tf.as_dtype(tf_dtype_like).name)


_IR_DTYPES = {d: d.name for d in _TF_DTYPES.values()}


class LazySpec(type_spec.TypeSpec):
    """Shape and dtype only; a lazy value has no TF components to rebuild it from."""
    __slots__ = ("_shape", "_dtype")

    def __init__(self, shape, dtype):
        self._shape = tf.TensorShape(shape)
        self._dtype = tf.as_dtype(dtype)

    value_type = property(lambda self: LazyTensor)
    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    def _serialize(self):
        return (self._shape, self._dtype)

    # The one component is the gradient token (see _GradientHook): tape.watch(lazy) watches it.
    @property
    def _component_specs(self):
        return (tf.TensorSpec((), self._dtype if self._dtype.is_floating else tf.float32),)

    def _to_components(self, value):
        token = LazyTensor.__composite_gradient__.get_gradient_components(value)
        _TOKEN_OWNERS[id(token)] = value
        return (token,)

    def _from_components(self, components):
        # TF code that maps a function over composite components and rebuilds them (the end
        # of an eager tf.while_loop, nest.map_structure(..., expand_composites=True)) gets
        # the lazy value back when its component came back untouched; anything else has no
        # lazy value to be rebuilt from
        owner = _TOKEN_OWNERS.get(id(components[0]))
        if owner is not None and owner._token is components[0]:
            return owner
        raise TypeError("lazyx: a lazy tensor cannot be rebuilt from TF components; "
                        "convert it first with tf.convert_to_tensor")


_TOKEN_OWNERS = weakref.WeakValueDictionary()  # id(gradient token) -> its lazy tensor

# how many lazy values were materialized for TF under a tape so far (tape_bridge): a tape
# path from a lazy value through TF's eager ops needs one made after the value's token, which
# each token's value notes (LazyTensor._made_at)
MATERIALIZED = [0]

# > 0 inside a tape's stop_recording() (hooks.py): values made there are constants to every
# gradient of the IR, as TF's tape records none of their ops
STOPPED = [0]


class _GradientHook:
    """What tf.GradientTape differentiates for a lazy value: its token (see module doc)."""

    def get_gradient_components(self, value):
        if value._token is None:  # a lazy leaf the user watches: give it a token to watch
            value._token = tf.zeros((), tf_dtype(value.node.dtype)
                                    if dt.is_float(value.node.dtype) else tf.float32)
            value._leaf_token = True
            value._made_at = MATERIALIZED[0]
        return value._token

    def replace_gradient_components(self, value, grad):
        # tf.custom_gradient (tf.distribute's all_reduce of Keras gradients goes through
        # one) swaps each output's component for an identity of it: the lazy value itself
        # is that output. Otherwise this is tape.gradient handing back a source's gradient.
        frame = sys._getframe(1)
        while frame is not None and \
                frame.f_globals.get("__name__", "").endswith("composite_tensor_gradient"):
            frame = frame.f_back
        caller = frame.f_globals.get("__name__", "") if frame is not None else ""
        return value if caller.endswith("custom_gradient") else grad


def _numpy_text(text):
    """A value's text as TF prints it in a tensor's repr and str (a scalar's repr is its Python
    value's): on its own lines when it takes several."""
    return "\n" + text if "\n" in text else text


class LazyTensor(composite_tensor.CompositeTensor):
    """A TF-looking tensor whose value is lazyx IR; TF APIs on it dispatch to lazyx."""
    __composite_gradient__ = _GradientHook()
    _made_at = None  # MATERIALIZED when its token was made
    __array_priority__ = 100  # numpy scalars defer to our reflected operators
    is_tensor_like = True  # tf.is_tensor (and so keras) treat it as a tensor

    def __init__(self, node, sources=()):
        if STOPPED[0] and dt.is_float(node.dtype):  # made inside tape.stop_recording()
            node, sources = ops.stop_gradient(node), ()
        self._handle = runtime.LazyHandle(node)
        self._sources = sources      # ((tf tensor, IR node), ...) watched by a tape
        self._token = None
        self._leaf_token = False
        if sources and dt.is_float(node.dtype) and record.could_possibly_record():
            self._token = _record_token(self, node, sources)
            self._made_at = MATERIALIZED[0]
            # the graph the token's gradient differentiates, while the tape keeps it
            # (tape.jacobian's rows: jacobians.direct_gradient)
            self._taped_node = weakref.ref(node)

    # ---- identity
    @property
    def __lazyx_handle__(self):
        return self._handle

    @property
    def node(self):
        return self._handle.node

    @property
    def _type_spec(self):
        return LazySpec(self.node.shape, self.dtype)

    def _shape_invariant_to_type_spec(self, shape):
        return LazySpec(shape, self.dtype)

    def _convert_variables_to_tensors(self):
        # TF calls this on a function's outputs (and a graph while_loop's variables) as it
        # builds the graph, which cannot hold a lazy value: it captures this one's tensor.
        # Eagerly (custom_gradient's arguments): the lazy value itself.
        return self if tf.executing_eagerly() else graph_capture(self)

    # ---- static metadata: answered without running anything
    @property
    def shape(self):
        return tf.TensorShape(self.node.shape)

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        """tf.Tensor.set_shape: a lazy shape is always fully known, so this only checks
        (Keras calls it after ops whose static shape TF could not infer)."""
        if not self.shape.is_compatible_with(shape):
            raise ValueError(f"Tensor's shape {self.shape} is not compatible with supplied "
                             f"shape {tf.TensorShape(shape)}.")

    @property
    def dtype(self):
        return tf_dtype(self.node.dtype)

    @property
    def ndim(self):
        return self.node.ndim

    @property
    def device(self):
        return f"lazyx:{runtime.backend()}"

    name = property(lambda self: None)

    def __len__(self):
        if not self.node.ndim:
            raise TypeError("len is not well defined for a rank-0 tensor")
        return self.node.shape[0]

    # ---- observation: these materialize
    def __reduce__(self):
        # pickling materializes, as NumPy's frontend does: the default pickled the IR node
        # with its backend buffer, which jax (without x64) brought back as float32 under a
        # float64 node -- that value's sync failed, and with it every later barrier
        return _from_host, (np.asarray(_observe(self._handle, cause="convert")),
                            self.node.dtype)

    def __deepcopy__(self, memo):
        return LazyTensor(self.node, sources_of(self))  # (values are immutable: no copy)

    def numpy(self):
        value = _observe(self._handle, cause="convert")
        # TF's EagerTensor.numpy() of a 0-d tensor is a NumPy scalar (np.float32(3.0)):
        # hashable, printed as a number
        return value[()] if value.ndim == 0 and isinstance(value, np.ndarray) else value

    def __array__(self, dtype=None, copy=None):
        value = _observe(self._handle, cause="convert")
        return value.astype(dtype) if dtype is not None else value

    def _scalar(self, kind):
        # (a split lazyx.compile step remembers the read: core/split_steps)
        value = kind(_observe(self._handle, cause="item"))
        return plain(observed(value, self._handle))

    def __bool__(self):
        return self._scalar(bool)

    def __float__(self):
        return self._scalar(float)

    def __int__(self):
        return self._scalar(int)

    def __index__(self):
        if not dt.is_int(self.node.dtype):
            raise TypeError(f"only integer scalar tensors can be indices, got {self.dtype.name}")
        return self._scalar(int)

    def __repr__(self):
        value = _observe(self._handle, cause="print")
        text = _numpy_text(repr(value.item() if np.ndim(value) == 0 else value))
        return f"<lazyx.tf.Tensor: shape={tuple(self.node.shape)}, dtype={self.dtype.name}, " \
               f"numpy={text}>"

    def __str__(self):
        text = _numpy_text(str(_observe(self._handle, cause="print")))
        return f"lazyx.tf.Tensor({text}, shape={tuple(self.node.shape)}, " \
               f"dtype={self.dtype.name})"

    def __format__(self, format_spec):
        # EagerTensor.__format__ formats its NumPy array (not the scalar .numpy() gives):
        # f"{loss:.4f}" works on a 0-d tensor, "" prints the value, and a spec on a
        # non-scalar raises NumPy's TypeError -- object's default raised for every spec
        return np.asarray(_observe(self._handle, cause="print")).__format__(format_spec)

    __hash__ = object.__hash__  # hashable by identity (keras keeps tensors in dicts)

    def ref(self):
        """tf.Tensor.ref: the identity-keyed Reference TF code uses for tensors in sets."""
        return object_identity.Reference(self)

    def experimental_ref(self):  # TF's deprecated name for ref()
        return self.ref()

    def __iter__(self):
        if not self.node.ndim:
            raise TypeError("Cannot iterate over a scalar tensor.")
        return iter(tf.unstack(self))


# TF api -> the dispatch target registry.lower registered for it. LazyTensor's operators call
# it directly: the call TF's type-based dispatch would make, without TF's wrappers around it.
TARGETS = {}


# The operators' commonest call, `x * 0.5` or `x + y` on float lazy tensors of one shape and
# dtype that no tape watches, built here: the nodes api_math's binary lowering makes for it
# (the number as its splat at x's shape), without the general path's layers -- the operand
# scan, the broadcast, the dtype and tape-source checks, each a Python call: 1.3 of a 3.8 us
# `x * 0.9` (docs/bench.md). api_math fills FAST_BINARY (TF api -> IR builder of the two
# operand nodes) for add, subtract and multiply; `ACCEPTS` is registry.require_dtype's memo of
# which dtypes TF takes for an api, and a pair not asked yet goes the general way, which asks.
# Anything else -- another operand type, a watched operand, a number TF converts otherwise
# (scalar_splat) -- takes the general path: tests/frontends/tf/test_fast_paths.py holds both
# to the same graphs, values and source lines.
FAST_BINARY = {}
ACCEPTS = {}  # (TF api, IR dtype) -> whether TF runs the api on that dtype (require_dtype's)
_FAST_DTYPES = frozenset(dt.FLOATS)
_OP_LINE = source.OP_LINE


def _operator(api_path, reflected=False):
    api = _resolve(api_path)

    def method(self, other):
        build = FAST_BINARY.get(api)
        if build is not None and type(self) is LazyTensor and not self._sources and \
                not self._leaf_token:
            kind = type(other)
            if kind is float or kind is int or \
                    kind is LazyTensor and not other._sources and not other._leaf_token:
                result = _fast_binary(api, build, self, other, reflected)
                if result is not None:
                    return result
        fn = TARGETS.get(api, api)
        return fn(other, self) if reflected else fn(self, other)
    return method


def _fast_binary(api, build, x, other, reflected):
    """`x op other` (`other op x` if reflected) built at once, or None: the general path's."""
    runtime.maybe_cut()  # (before the nodes are read: a cut at the node cap gives new ones)
    with _OP_LINE:
        a = x.node
        if a.dtype not in _FAST_DTYPES or ACCEPTS.get((api, a.dtype)) is not True:
            return None
        if type(other) is LazyTensor:
            b = other.node
            if b.shape != a.shape or b.dtype != a.dtype:
                return None
        else:
            b = scalar_splat(other, a)
            if b is None:
                return None
        return LazyTensor(build(b, a) if reflected else build(a, b))


def _resolve(path):
    obj = tf
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _logical_or_bitwise(logical_path, bitwise_path, reflected=False):
    """TF's `&`, `|`, `^` (math_ops.and_, or_, xor_): logical for a bool tensor, bitwise for
    an integer one (`x & 3` on int32)."""
    logical, bitwise = _resolve(logical_path), _resolve(bitwise_path)

    def method(self, *other):
        api = logical if self.node.dtype == "bool" else bitwise
        fn = TARGETS.get(api, api)
        return fn(other[0], self) if reflected else fn(self, *other)
    return method


_OPERATORS = {"add": "__operators__.add", "sub": "math.subtract", "mul": "math.multiply",
              "truediv": "math.truediv", "floordiv": "math.floordiv", "mod": "math.floormod",
              "pow": "math.pow", "matmul": "linalg.matmul", "lt": "math.less",
              "le": "math.less_equal", "gt": "math.greater", "ge": "math.greater_equal"}
for _name, _path in _OPERATORS.items():
    setattr(LazyTensor, f"__{_name}__", _operator(_path))
    if _name not in ("lt", "le", "gt", "ge"):
        setattr(LazyTensor, f"__r{_name}__", _operator(_path, reflected=True))
for _name, _logical, _bitwise in (("and", "math.logical_and", "bitwise.bitwise_and"),
                                  ("or", "math.logical_or", "bitwise.bitwise_or"),
                                  ("xor", "math.logical_xor", "bitwise.bitwise_xor")):
    setattr(LazyTensor, f"__{_name}__", _logical_or_bitwise(_logical, _bitwise))
    setattr(LazyTensor, f"__r{_name}__", _logical_or_bitwise(_logical, _bitwise, True))
LazyTensor.__eq__ = _operator("__operators__.eq")
LazyTensor.__ne__ = _operator("__operators__.ne")


def _unary(api):
    def method(self):
        return TARGETS.get(api, api)(self)
    return method


LazyTensor.__getitem__ = lambda self, key: TARGETS.get(_GETITEM, _GETITEM)(self, key)
_GETITEM = tf.__operators__.getitem
LazyTensor.__neg__ = _unary(tf.math.negative)
LazyTensor.__abs__ = _unary(tf.math.abs)
LazyTensor.__invert__ = _logical_or_bitwise("math.logical_not", "bitwise.invert")


# ---------------------------------------------------------------- lifting operands

_lift_cache = {}  # id(tf tensor) -> (tensor, data node): one leaf per tensor per step
_LIFT_CACHE_SIZE = 512


def _remember(tensor, node):
    """Cache `tensor`'s leaf. When full, the older half goes (insertion order; a hit moves
    its entry to the end), never the whole cache: a lowering lifts an operand twice -- its
    node, then its tape source (sources_of) -- and must get the same leaf both times. A
    clear between the two (the cache's 512th entry being the op's second operand) gave the
    first operand a new leaf for the tape: d(v * v)/dv came out as v, an order-dependent
    flake of test_plain_tape_reads_the_variable_for_real."""
    if len(_lift_cache) >= _LIFT_CACHE_SIZE:
        for key in list(_lift_cache)[:_LIFT_CACHE_SIZE // 2]:
            del _lift_cache[key]
    _lift_cache.pop(id(tensor), None)
    _lift_cache[id(tensor)] = (tensor, node)


# Leaves lifted from real tensors that a recording tape tracks (a fallback's result, say):
# their gradient flows through TF's tape, which the IR's autodiff cannot see.
TAPED_LEAVES = weakref.WeakKeyDictionary()  # leaf node -> the real tensor it holds


def _tf_leaf(tensor, operand=False):
    """The IR leaf holding an eager TF tensor's value (one per tensor while it lives). An
    `operand` of rank 0 is a run-time scalar, packed with the step's Python numbers, as TF's
    own scalars are (Keras' Adam casts its learning rate and betas to tensors every step: 25
    device transfers of one number each per step became one pack)."""
    hit = _lift_cache.get(id(tensor))
    if hit is not None and hit[0] is tensor:
        rec = capture.current()
        node = hit[1]
        if rec is None or node.serial > rec.serial0 or id(node) in rec.start_nodes:
            _lift_cache[id(tensor)] = _lift_cache.pop(id(tensor))  # the newest (_remember)
            return node
        # (a lazyx.compile trace lifts a constant again, as a leaf of its own program: the
        # leaf an earlier call lifted -- a Keras model's tf.constant, lifted by an optimizer's
        # warm-up call -- is a lazy tensor made before the step, which a replay cannot find)
    if not hasattr(tensor, "numpy"):
        # a TF graph's symbolic tensor (a tf.function being traced): it has no value to
        # lift; the op runs in TF's graph instead (registry.in_graph)
        raise TypeError("lazyx: a TF graph tensor is not a lazy operand")
    dtype = ir_dtype(tensor.dtype)
    if operand and tensor.shape.rank == 0 and dtype in dt.REAL and not (
            record.could_possibly_record() and record.should_record_backprop([tensor])):
        # (not complex; not one a tape watches -- a 0-d variable's read, a learnable
        # temperature: the IR differentiates for data leaves, not run-time scalars)
        node = ir.param(tensor.numpy(), dtype)
    else:
        node = runtime.from_host(tensor.numpy(), dtype)
    _remember(tensor, node)
    return node


def graph_capture(value):
    """The tensor a TF graph being built (a tf.function's trace) captures for a lazy value,
    as it captures an eager tensor: materialized once, at the trace (a sync, cause
    "convert"), outside the graph (outside_graph): an eager tensor the graph captures, not a
    constant copied into it."""
    with outside_graph():
        return to_tf(value, cause="convert")


@contextlib.contextmanager
def outside_graph():
    """tf.init_scope, to materialize lazy values a graph being built meets. init_scope pauses
    the tapes, so whether one records is asked first: a sync then keeps what it realized
    computable from its graph (runtime.KEEP_ORIGINS), or the realized value -- used again
    after the trace, in the step's loss -- cut every gradient through it (None under TF's
    tape). Keras' compute_output_spec (an unbuilt layer's first call, traced in a scratch
    graph for its shapes only) is refused, as before 2026-11-30: Keras then builds the layer
    in the real, lazy call -- capturing would sync the whole pending step for a shape."""
    if _keras_symbolic_scope is not None and _keras_symbolic_scope():
        raise TypeError("lazyx: a lazy value in Keras' symbolic trace (compute_output_spec)")
    keep = record.could_possibly_record()
    if keep:
        runtime.KEEP_ORIGINS[0] += 1
    try:
        with tf.init_scope():
            yield
    finally:
        if keep:
            runtime.KEEP_ORIGINS[0] -= 1


try:
    from keras.src.backend.common.symbolic_scope import in_symbolic_scope as \
        _keras_symbolic_scope
except ImportError:  # pragma: no cover - keras is optional
    _keras_symbolic_scope = None


def remember_lift(tensor, node):
    """`tensor` holds what the data leaf `node` holds: lifting it reuses the node."""
    _remember(tensor, node)


_NUMBERS = (float, int, bool)


def taped_node(value):
    """The graph `value`'s tape token was recorded with -- its node before any sync since
    realized it -- while that graph lives; else None."""
    ref = getattr(value, "_taped_node", None)
    return ref() if ref is not None else None


def sources_of(*values):
    """The watched (tf tensor, node) pairs the values depend on, deduplicated."""
    out, seen = [], set()
    for v in values:
        kind = type(v)
        if kind is LazyTensor and not v._sources and not v._leaf_token or kind in _NUMBERS:
            continue  # the usual operand: nothing watched (type checks: LazyTensor is an ABC)
        if isinstance(v, LazyTensor):
            pairs = v._sources
            if not pairs and v._leaf_token and record.should_record_backprop([v._token]):
                pairs = ((v._token, v.node),)
        elif isinstance(v, tf.Tensor) and record.could_possibly_record() \
                and record.should_record_backprop([v]):
            pairs = ((v, _tf_leaf(v, operand=True)),)
            TAPED_LEAVES[pairs[0][1]] = v
        elif kind is list or kind is tuple:  # an operand TF packs (node_of)
            pairs = sources_of(*v)
        else:
            continue
        for pair in pairs:
            if id(pair[0]) not in seen:
                seen.add(id(pair[0]))
                out.append(pair)
    return tuple(out)


def node_of(value, dtype=None, shape=()):
    """An IR node for a lazy tensor, a TF tensor/variable, or anything tf.constant takes.

    Python scalars become run-time params (a new value never recompiles); conversion goes
    through TF itself, so dtype defaults and conversion errors are TF's own. With a `shape`,
    a Python number on the fast path below is its splat of that shape (one node), and any
    other value is returned at its own shape.
    """
    kind = type(value)
    if kind is LazyTensor:
        return value.node
    if dtype is not None and (kind is float or kind is int):
        # the common `x * 0.5`: conversions TF makes exactly as NumPy does need no TF call
        # (tests/frontends/tf/test_fast_paths.py holds this table to tf.convert_to_tensor);
        # tested first, since the isinstance checks below are ABC checks (slow)
        bounds = _SCALAR_RANGE.get(dtype)
        if bounds is not None and _exact(value, bounds):
            return ir.param(value, _IR_DTYPES[dtype], shape)
        if dtype == tf.uint64 and kind is int and value < 0:
            return ir.param(_negative_to_uint64(value), "uint64", shape)
    if kind is SymFloat or kind is SymInt:
        # a number of a lazyx.compile call: converted as its plain value, its param linked
        # to the call's numbers (a new value is a run-time parameter, not a new trace)
        return capture.linked(node_of(plain(value), dtype, shape), value)
    if isinstance(value, LazyTensor):
        return value.node
    if isinstance(value, tf.Variable):
        value = value.value()
    if isinstance(value, tf.Tensor):
        return _tf_leaf(value, operand=True)
    if isinstance(value, (bool, int, float, np.generic)) and dtype is not None:
        converted = tf.convert_to_tensor(value, dtype=dtype)  # TF's range/type errors
        return ir.param(converted.numpy(), ir_dtype(converted.dtype))
    if (kind is list or kind is tuple) and _holds_tensor(value):
        # TF packs a list holding tensors (`loss + model.losses`, d2l's weight decay): packed
        # lazily, element by element, or converting it read a lazy element (or made a leaf
        # of TF's packed tensor, which no tape links to its elements) -- a constant, so the
        # gradient through it was lost, silently
        from .lowering import pack  # (lowering imports this module)
        return pack(value).node
    converted = tf.convert_to_tensor(value, dtype=dtype)
    if converted.shape.rank == 0:
        return ir.param(converted.numpy(), ir_dtype(converted.dtype))
    return runtime.from_host(converted.numpy(), ir_dtype(converted.dtype))


def _holds_tensor(values):
    return any(type(v) is LazyTensor or isinstance(v, tf.Tensor) or
               type(v) in (list, tuple) and _holds_tensor(v) for v in values)


def _negative_to_uint64(value):
    """A negative Python int as uint64, as TF converts one to uint8/16/32: an int64 value wraps
    (two's complement), a smaller one is TF's ValueError. TF 2.21's own uint64 conversion of a
    negative int raises SystemError or aborts the process, so lazyx never asks it."""
    if value < -2**63:
        raise ValueError("Can't convert Python sequence with out-of-range integer to Tensor.")
    return value % 2**64


def _scalar_ranges():
    """dtype -> (low, high, floats allowed): Python numbers TF converts to that dtype as
    NumPy does (rounding to nearest; no wrap-around, no error, no overflow to inf)."""
    out = {}
    for d in (tf.float16, tf.float32, tf.float64):
        top = float(np.finfo(d.as_numpy_dtype).max)
        out[d] = (-top, top, True)
    for d in (tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8, tf.uint16, tf.uint32,
              tf.uint64):
        info = np.iinfo(d.as_numpy_dtype)
        out[d] = (int(info.min), int(info.max), False)
    return out


_SCALAR_RANGE = _scalar_ranges()
_SCALAR_RANGE_IR = {_IR_DTYPES[d]: bounds for d, bounds in _SCALAR_RANGE.items()}


def scalar_splat(value, like):
    """`value` (a Python float or int) as the run-time splat param of `like`'s shape and dtype,
    when TF converts it to that dtype exactly as NumPy does (node_of's table, keyed by the IR
    dtype: no TF dtype object is built or hashed); None otherwise (node_of decides)."""
    bounds = _SCALAR_RANGE_IR.get(like.dtype)
    if bounds is not None and _exact(value, bounds):
        return ir.param(value, like.dtype, like.shape)
    return None


def _exact(value, bounds):
    """Whether a Python int or float converts as NumPy converts it, within `bounds`
    (_scalar_ranges: low, high, floats allowed)."""
    return bounds[0] <= value <= bounds[1] and (type(value) is int or bounds[2])


def _from_host(host, dtype):
    return LazyTensor(runtime.from_host(host, dtype))


def wrap(node, *inputs):
    """A LazyTensor for `node`, inheriting the tape sources of the inputs it was made from."""
    return LazyTensor(node, sources_of(*inputs) if inputs else ())


# TF's tape and the IR (tape_bridge.py): imported last, it reads this module's names
from .tape_bridge import _record_token, to_tf  # noqa: E402,F401
