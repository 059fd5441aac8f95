"""Lazy values for tf.Variables: the optimizer update and variable assigns join the step graph.

PyTorch/XLA keeps parameters on the device and records their updates; this is the same idea
for TF. A variable that receives a lazy value (`assign`, `assign_add`, `assign_sub`, as Keras
3 optimizers and BatchNormalization call them) gets a *shadow*: a LazyTensor holding its new
value. Nothing runs. Reads of the variable by lowered TF APIs use the shadow, so the next
update (Adam's `m`, then the weight) builds on it inside the same graph. The barrier runs the
whole step as one program, and the shadows stay where the program left them: the next step
reads them with no copy either way, and `ltf.sync()` returns while XLA still computes (no
store waits for the numbers: storing every weight into TF cost W1 0.6 ms a step, plus the
wait). TF sees a shadow's value the moment it reads the variable itself: eager code that
reads it (`.numpy()`, `value()`, an API with no lowering, a checkpoint, a tf.function being
traced, anything through `handle`) stores it first, so TF never sees a stale value. The one
reader with no Python on its way is a graph function that captured the variable's handle
earlier: `ltf.sync()` stores at once every variable whose handle something besides the
variable holds (sys.getrefcount), as it stores all of them when asked (`write_back()`).

After a store the variable keeps the stored value's device buffer as its *mirror*: the next
step's lowered reads use it instead of copying the variable from TF to the device again. Every
way TF can change the variable's buffer goes through its `handle` (assign ops, raw ops,
checkpoint restore, a tf.function being traced), so reading `handle` drops the mirror, and the
mirror is used only while nothing but the variable holds its handle tensor (as above).

How the calls reach lazyx, without patching a TF function:
* the first lazy assign of a plain tf.Variable arrives through TF's tensor conversion
  (registry._refuse_implicit_conversion); its instance's class becomes a subclass of its own
  class (`_lazy_class`) whose assign/read methods know about the shadow;
* that subclass, and Keras' Variable, are registered dispatchable types, so a TF API whose
  only lazy operand is a shadowed variable (Adam's `m * alpha`) dispatches to the lowering
  (for the subclass, only because registry.OPERAND names it: TF matches an operand through
  the annotation's class, and a plain tf.Variable there is not dispatchable).
"""
import sys
import weakref

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import record
from tensorflow.python.eager import tape as tf_tape

from ...core import capture, ir, ops, runtime
from . import control_flow
from . import tensor as _tensor
from .tensor import LazyTensor, _tf_leaf, ir_dtype, to_tf, wrap

try:
    from keras.src.backend.common.stateless_scope import get_stateless_scope
    from keras.src.backend.tensorflow.core import Variable as _KerasTFVariable
except ImportError:  # pragma: no cover - keras is optional
    _KerasTFVariable = get_stateless_scope = None

# id(tf.Variable) -> tf.Variable, for every variable holding a lazy shadow (weakly: a shadow
# of a variable nobody can read any more is dropped with it)
_SHADOWED = weakref.WeakValueDictionary()
_CLASSES = {}   # original variable class -> its lazy subclass
_lazy_tapes = [0]  # > 0 while an ltf.GradientTape records: variable reads become shadows
_telling_tapes = [0]  # > 0 while lazyx tells TF's tapes of a read (it reads `handle`)
_KEY_READERS = {"_var_key"}  # functions that read `handle` as a key, not the buffer


class LazyVariable:
    """Marker base of the per-class lazy subclasses (a registered dispatchable type: hooks.py)."""


def tf_variable(value):
    """The tf.Variable behind a Keras Variable (or the variable itself); None otherwise."""
    if _KerasTFVariable is not None and isinstance(value, _KerasTFVariable):
        value = value._value
    return value if isinstance(value, tf.Variable) else None


def keras_autocast(variable, value):
    """`value` read from `variable` as Keras reads it: a Keras variable read inside an
    autocast scope (a mixed-precision layer's call) is cast to the scope's dtype."""
    if _KerasTFVariable is None or not isinstance(variable, _KerasTFVariable):
        return value
    return variable._maybe_autocast(value)


def keras_value(value):
    """What Keras' own read of a Keras variable gives when that is not the tf.Variable behind
    it: a StatelessScope's value for it (`stateless_call`), or, while unbuilt (`_value` None,
    Keras' symbolic build), its initializer's placeholder -- autocast as Keras casts them
    (KerasVariable.value, keras 3). None: Keras reads the tf.Variable, which lazyx reads its
    own way (its shadow, its mirror)."""
    if _KerasTFVariable is None or not isinstance(value, _KerasTFVariable):
        return None
    scope = get_stateless_scope()
    if scope is not None:
        scoped = scope.get_current_value(value)
        if scoped is not None:
            return value._maybe_autocast(scoped)
    return value.value if value._value is None else None


def is_lazy(value):
    """A lazy tensor, a variable holding a shadow, or any variable while an ltf.GradientTape
    records (its read becomes a shadow, see read) -- but not in a tf.function being traced,
    which reads the variable as TF does (its shadow stored first: _read_variable_op)."""
    if isinstance(value, LazyTensor):
        return True
    scoped = keras_value(value)
    if scoped is not None:
        return isinstance(scoped, LazyTensor)
    var = tf_variable(value)
    return var is not None and (_lazy_tapes[0] > 0 or
                                getattr(var, "_lazyx_shadow", None) is not None) and \
        tf.executing_eagerly()


def _make_lazy(var):
    """Give this variable instance the shadow-aware methods (its class, subclassed once)."""
    if isinstance(var, LazyVariable):
        return var
    base = type(var)
    cls = _CLASSES.get(base)
    if cls is None:
        cls = _CLASSES[base] = type(f"Lazy{base.__name__}", (_LazyMethods, base, LazyVariable),
                                    {"__module__": __name__})
    var.__class__ = cls
    var._lazyx_shadow = None
    var._lazyx_mirror = None   # a LazyTensor holding what the TF buffer holds (see module doc)
    var._lazyx_left = None     # the shadow the last barrier left on the device
    return var


def _free_refs():
    """sys.getrefcount of a variable's handle tensor that nothing else holds (TF 2.21: 2)."""
    probe = tf.Variable(0.0)
    return sys.getrefcount(probe._handle)


_FREE_REFS = _free_refs()


def mirror_of(var):
    """The device copy of what `var`'s TF buffer holds, if still known to be current."""
    mirror = getattr(var, "_lazyx_mirror", None)
    if mirror is not None and held_elsewhere(var):
        var._lazyx_mirror = mirror = None
    return mirror


def _set_shadow(var, lazy):
    var._lazyx_shadow = lazy
    _SHADOWED[id(var)] = var


def read(value):
    """What a lowering reads for a variable: its shadow, or (under an ltf.GradientTape) a
    new shadow holding its current value, so every read in the step is the same IR node and
    gradients can be taken with respect to it. None: read it the ordinary way."""
    var = tf_variable(value)
    if var is None:
        return None
    shadow = getattr(var, "_lazyx_shadow", None)
    if _plain_tape_reads(var):
        # a plain tf.GradientTape records: it must see a real read of the variable
        if shadow is not None:
            write_back([var])
        return None
    if shadow is None:
        mirror = mirror_of(var)
        if not _lazy_tapes[0]:
            return mirror
        _make_lazy(var)
        shadow = mirror if mirror is not None else LazyTensor(_tf_leaf(var.value()))
        _set_shadow(var, shadow)
    if _lazy_tapes[0] and var.trainable:
        # TF's own read tells the recording tapes that the variable was used, and they watch
        # it from then on; a shadow (kept from an earlier step, or a mirror) is read without
        # TF, so tell them here -- or an op TF runs eagerly under this tape (a fallback)
        # records nothing, and its part of the gradient is silently lost from step 2 on
        _telling_tapes[0] += 1
        try:
            tf_tape.variable_accessed(var)  # (reads `handle`: no store for that)
        finally:
            _telling_tapes[0] -= 1
    return shadow


def _plain_tape_reads(var):
    """A plain tf.GradientTape records and must see a real read of `var` (see read)."""
    return not _lazy_tapes[0] and var.trainable and record.could_possibly_record()


def _dispatched_with(var, depth=10):
    """Whether `var` is an argument of the dispatchable TF API reading it: the nearest
    `op_dispatch_handler` (tensorflow/python/util/dispatch.py) on the stack holds it."""
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return False
        if frame.f_code.co_name == "op_dispatch_handler" and \
                frame.f_globals.get("__name__", "").endswith("util.dispatch"):
            args, kwargs = frame.f_locals.get("args", ()), frame.f_locals.get("kwargs", {})
            return any(tf_variable(a) is var for a in (*args, *kwargs.values()))
        frame = frame.f_back
    return False


def _generated_op_reads(var):
    """Whether the Python frame reading `var._handle` is a generated op (tensorflow/python/ops/
    gen_*.py) holding `var` as an operand: its C++ fast path is reading the buffer."""
    frame = sys._getframe(2)
    if not frame.f_globals.get("__name__", "").startswith("tensorflow.python.ops.gen_"):
        return False
    for value in frame.f_locals.values():  # an operand, or one of a list operand's (concat)
        if value is var or isinstance(value, (list, tuple)) and any(v is var for v in value):
            return True
    return False


def has_shadow(value):
    """A variable (tf or Keras) holding a lazy value."""
    var = tf_variable(value)
    return var is not None and getattr(var, "_lazyx_shadow", None) is not None


def _compatible(var, value):
    return value.dtype == var.dtype and var.shape.is_compatible_with(value.shape)


def record_assign(var, kind, value):
    """Record `var.assign*(value)` with a lazy value; False when TF itself must handle it
    (a dtype or shape mismatch: materializing lets TF raise its own error)."""
    if not _compatible(var, value):
        return False
    if control_flow.DEPTH[0]:
        control_flow.note_assign(var)  # a traced cond branch restores it afterwards
    _make_lazy(var)
    current = var._lazyx_shadow
    if kind != "assign":
        if current is None:
            current = LazyTensor(_tf_leaf(var.value()))
        value = current + value if kind == "assign_add" else current - value
    # TF's tape holds a variable's value constant: a later gradient must not flow into the
    # computation the value was assigned from (a GAN's generator gradient went on through
    # the discriminator's pending update into the generator's own weights)
    _set_shadow(var, wrap(ops.stop_gradient(value.node)))
    return True


def pending_handles():
    return [v._lazyx_shadow._handle for v in _SHADOWED.values()
            if v._lazyx_shadow is not None and v._lazyx_shadow._handle.pending]


_tensor.pending_state = pending_handles


def write_back(variables=None, cause="convert"):
    """Run what is pending for the shadows (one program) and store them into their
    tf.Variables; the variables are plain (eager) again afterwards.

    The store runs eagerly even while a tf.function is being traced (init_scope): inside the
    function graph it would be an assign of the value known at tracing, run again at every
    call -- resetting the variable to that stale value each time (measured: a function traced
    on a lazily updated variable returned 2 instead of 20 after an eager assign of 10)."""
    with tf.init_scope():
        _write_back(variables, cause)


def held_elsewhere(var):
    """Whether something besides `var` holds its handle tensor: a graph function that captured
    it (and reads the buffer with no Python running), or user code."""
    return sys.getrefcount(var.__dict__["_handle"]) > _FREE_REFS


def store_captured():
    """Before a tf.function runs: store each pending shadow whose variable's handle a graph
    function may hold (a function traced before the lazy assign reads the TF buffer with no
    Python on its way: Keras' fit/evaluate/predict after lazy steps, a user's tf.function
    train step between lazy ones). Others stay lazy."""
    held = [var for var in list(_SHADOWED.values())
            if var._lazyx_shadow is not None and held_elsewhere(var)]
    if held:
        write_back(held, cause="convert")


def after_barrier(cause="explicit"):
    """What the barrier (`ltf.sync`) does for variables once the step's program is on its
    way: store each shadow a captured handle could read unseen; the others stay lazy."""
    held = []
    for var in list(_SHADOWED.values()):
        if var._lazyx_shadow is not None:
            var._lazyx_left = var._lazyx_shadow
            if held_elsewhere(var):
                held.append(var)
    if held:
        write_back(held, cause=cause)


def _write_back(variables, cause):
    targets = list(_SHADOWED.values()) if variables is None else variables
    if any(v._lazyx_shadow is not None and v._lazyx_shadow._handle.pending for v in targets):
        # every pending shadow together: one program, not one per variable; with the live
        # values that share its computation (an observation's rule: core/observation.py) --
        # a loop that reads a variable each step (`if v == old`) and keeps a lazy value built
        # with it (a momentum) left that value pending, so its graph grew by a step at every
        # read and every read compiled anew (the TF guide's optimizers_core: 301 compiles)
        runtime.sync(*pending_handles(), cause=cause, sharing=True)
    for var in targets:
        shadow = var._lazyx_shadow
        if shadow is None:
            continue
        var._lazyx_shadow = var._lazyx_left = None
        _SHADOWED.pop(id(var), None)
        if shadow is var._lazyx_mirror:  # read in the step, never assigned: TF holds it
            continue
        super(_LazyMethods, var).assign(_stored_value(shadow, cause), read_value=False)
        var._lazyx_mirror = shadow  # (after the assign: reading `handle` drops the mirror)


def _stored_value(shadow, cause):
    """What the store assigns: a TF tensor over the result's own host buffer where the backend
    keeps it in host memory (TF then holds the buffer, no copy: 7.5 against 98 us for a
    784x512 float32 weight from NumPy), else the NumPy copy. TF copies a buffer it does not own
    before any write (assign_add, scatter, Keras' updates: test_variable_mirror checks), and XLA
    never writes a buffer a program returned, so neither side sees the other's writes."""
    shared = runtime.to_host_shared(shadow._handle, cause=cause)
    if shared is not None:
        try:
            tensor = tf.experimental.dlpack.from_dlpack(shared.__dlpack__())
        except Exception:  # a dtype TF's DLPack import lacks: copy instead
            tensor = None
        if tensor is not None and tensor.dtype == shadow.dtype:
            return tensor
    return runtime.to_host(shadow._handle, cause=cause)


class _LazyMethods:
    """Shadow-aware assign and read methods, placed before the variable's own class."""

    def assign(self, value, use_locking=None, name=None, read_value=True):
        if control_flow.tracing():  # a lazy cond's branch: recorded, never written to TF
            if not record_assign(self, "assign", control_flow.value_for(self, value)):
                control_flow.untraceable(f"tf.Variable.assign of {self.name!r}")
            return self if read_value else None
        if self._lazyx_shadow is not None and not tf.executing_eagerly():
            write_back([self])  # a tf.function being traced: stored first, as a read is
        if has_shadow(value) and tf.executing_eagerly():
            # another variable's lazy value (Keras' EMA overwrite: weight.assign(average));
            # TF's assign would convert it, a fallback reading it
            value = tf_variable(value)._lazyx_shadow
        if self._lazyx_shadow is not None and isinstance(value, tf.Tensor) and \
                not isinstance(value, LazyTensor) and value.shape.rank == 0:
            value = value.numpy()[()]  # Keras casts numbers to eager tensors before assigning
        if self._lazyx_shadow is not None and type(value) is not bool and \
                isinstance(value, (int, float, np.number)) and self.shape.is_fully_defined():
            # a Python number into a lazy variable (a learning rate set in a step) stays a
            # run-time parameter of the step's graph instead of running it
            value = wrap(ops.broadcast_in_dim(ir.param(value, ir_dtype(self.dtype)),
                                              shape=tuple(self.shape), broadcast_dimensions=()))
        if isinstance(value, LazyTensor) and record_assign(self, "assign", value):
            return self if read_value else None
        if self._lazyx_shadow is not None:  # an eager value replaces the lazy one
            self._lazyx_shadow = self._lazyx_left = None
            _SHADOWED.pop(id(self), None)
        if isinstance(value, LazyTensor):  # a mismatch: TF's own assign raises its error
            value = to_tf(value)
        return super().assign(value, use_locking, name, read_value)

    def _assign_delta(self, kind, delta, use_locking, name, read_value):
        if control_flow.tracing():  # a lazy cond's branch: recorded, never written to TF
            if not record_assign(self, kind, control_flow.value_for(self, delta)):
                control_flow.untraceable(f"tf.Variable.{kind} of {self.name!r}")
            return self if read_value else None
        if self._lazyx_shadow is not None and not tf.executing_eagerly():
            write_back([self])  # a tf.function being traced: stored first, as a read is
        if isinstance(delta, LazyTensor) or self._lazyx_shadow is not None:
            lazy = delta if isinstance(delta, LazyTensor) else \
                LazyTensor(_tf_leaf(tf.convert_to_tensor(delta, self.dtype)))
            if record_assign(self, kind, lazy):
                return self if read_value else None
            write_back([self])
            if isinstance(delta, LazyTensor):  # a mismatch: TF's own op raises its error
                delta = to_tf(delta)
        method = getattr(super(), kind)
        return method(delta, use_locking, name, read_value)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._assign_delta("assign_add", delta, use_locking, name, read_value)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._assign_delta("assign_sub", delta, use_locking, name, read_value)

    def _read_variable_op(self, *args, **kwargs):
        if self._lazyx_shadow is not None:  # eager code reads it: store the lazy value first
            capture.host_read(f"an eager read of tf.Variable {self.name!r}")
            write_back([self])
        mirror = mirror_of(self)
        value = super()._read_variable_op(*args, **kwargs)
        if mirror is not None and tf.executing_eagerly():
            # an eager read leaves the buffer as it is; a lowering that lifts the tensor read
            # (Keras reads optimizer slots before its ops) gets the mirror's node, no copy --
            # unless a tape records: each read it watches must stay its own leaf
            self._lazyx_mirror = mirror
            if not record.could_possibly_record():
                _tensor.remember_lift(value, mirror.node)
        return value

    # A TF API given this variable as an operand while it holds a lazy value reaches lazyx
    # first where it can: TF's type-based dispatch matches this class (registry.OPERAND names
    # LazyVariable), and the public names of lowered generated ops and of tf.einsum check
    # their operands before TF's fast path (hooks.py). What is left reads it in one of two
    # ways. (1) Python's conversion inside a dispatchable API without a lowering: the
    # conversion refuses (TypeError) and TF's fallback dispatch hands the call to
    # registry._Fallback, which runs it on the stored value (a counted fallback). (2) A
    # generated op reached some other way (TF's own code calling gen_math_ops) has TF's C++
    # fast path read the operand's `_handle` directly, which would give the buffer from
    # before the step -- a stale value -- and cannot take an exception there (it crashes):
    # the shadow is stored first, a host read. (A tf.function being traced reads the
    # variable as it always did: through _read_variable_op, which stores it first.)
    def _dense_var_to_tensor(self, dtype=None, name=None, as_ref=False):
        if not as_ref and self._lazyx_shadow is not None and tf.executing_eagerly() and \
                _dispatched_with(self):
            if not _plain_tape_reads(self):
                raise TypeError(f"lazyx: tf.Variable {self.name!r} holds a lazy value")
        return super()._dense_var_to_tensor(dtype=dtype, name=name, as_ref=as_ref)

    @property
    def _handle(self):
        if self.__dict__.get("_lazyx_shadow") is not None and tf.executing_eagerly() and \
                _generated_op_reads(self):
            capture.host_read(f"a TF op's read of tf.Variable {self.name!r}")
            write_back([self])
        return self.__dict__["_handle"]

    @_handle.setter
    def _handle(self, value):
        self.__dict__["_handle"] = value

    @property
    def handle(self):
        """Every TF op on the variable's buffer starts here: it must see a value a barrier
        left on the device (stored first), and may change the buffer (the mirror may go
        stale). Not stored: a shadow of the step under way (TF's own assign reads `handle`
        right after registry._assign_conversion recorded the assigned value as the shadow),
        and reads that only want the handle's identity (a Keras optimizer's _var_key, every
        step; lazyx telling TF's tapes of a read)."""
        shadow = self.__dict__.get("_lazyx_shadow")
        if shadow is not None and shadow is self.__dict__.get("_lazyx_left") and \
                not _telling_tapes[0] and sys._getframe(1).f_code.co_name not in _KEY_READERS:
            write_back([self])
        self._lazyx_mirror = None
        return self.__dict__["_handle"]




def assignable_slice(out, var, slice_spec):
    """Give `out`, the slice `var[slice_spec]` of a variable holding a lazy value, TF's
    `assign` of that slice (`v[0, :].assign(row)`)."""
    spec = slice_spec if isinstance(slice_spec, tuple) else (slice_spec,)

    def assign(value, name=None):
        return assign_slice(var, spec, value)
    out.assign = assign
    return out


def assign_slice(var, spec, value):
    """`var[spec].assign(value)` on a variable holding a lazy value (TF's strided-slice
    assign): the selected elements' flat positions are known from the subscript, so the new
    value is a scatter of `value` there, assigned as the variable's lazy value."""
    shape = tuple(var.shape)
    try:
        flat = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[spec]
    except IndexError as err:
        raise tf.errors.InvalidArgumentError(None, None, f"slice index out of bounds: {err}")
    update = _tensor.node_of(value, var.dtype)
    if tuple(update.shape) != flat.shape:
        raise tf.errors.InvalidArgumentError(
            None, None, f"sliced l-value shape {list(flat.shape)} does not match r-value shape "
                        f"{list(update.shape)}")
    current = var._lazyx_shadow if getattr(var, "_lazyx_shadow", None) is not None else \
        LazyTensor(_tf_leaf(var.value()))
    positions = runtime.from_host(flat.reshape(-1, 1))
    updated = ops.scatter(ops.reshape(current.node, new_sizes=(current.node.size,)),
                          positions, ops.reshape(update, new_sizes=(flat.size,)), mode="set")
    return var.assign(wrap(ops.reshape(updated, new_sizes=shape)))


def _gathered_lazily(method_name, gather):
    """Gathers read the buffer through `handle` (tf.gather on a variable calls sparse_read):
    on a variable holding a lazy value they gather from that value, lazily."""
    def method(self, indices, name=None):
        if self._lazyx_shadow is not None:
            if tf.executing_eagerly():
                return gather(self._lazyx_shadow, indices)
            write_back([self])  # a tf.function being traced: stored first, as a read is
        return getattr(super(_LazyMethods, self), method_name)(indices, name)
    method.__name__ = method_name
    return method


for _name, _gather in (("sparse_read", tf.gather), ("gather_nd", tf.gather_nd)):
    setattr(_LazyMethods, _name, _gathered_lazily(_name, _gather))


# IndexedSlices scatters the IR has a mode for (scatter_sub: add of the negated rows, which is
# exact); scatter_div would round otherwise as a product by reciprocals: stored first
SCATTER_MODES = {"scatter_add": "add", "scatter_sub": "sub", "scatter_update": "set",
                 "scatter_max": "max", "scatter_min": "min", "scatter_mul": "mul"}


def scatter_lazily(var, name, sparse_delta):
    """Record var.<name>(sparse_delta) as the variable's new lazy value: a scatter into the
    current value (its shadow, or its TF value). False when TF itself must do it (not
    IndexedSlices, nothing lazy, a dtype or shape TF will refuse with its own error)."""
    mode = SCATTER_MODES.get(name)
    if mode is None or not isinstance(sparse_delta, tf.IndexedSlices):
        return False
    values, indices = sparse_delta.values, sparse_delta.indices
    if getattr(var, "_lazyx_shadow", None) is None and not isinstance(values, LazyTensor) and \
            not isinstance(indices, LazyTensor) and not control_flow.tracing():
        return False
    if values.dtype != var.dtype or not indices.dtype.is_integer or \
            len(indices.shape) != 1 or \
            tuple(values.shape) != tuple(indices.shape) + tuple(var.shape[1:]):
        return False
    known = None if isinstance(indices, LazyTensor) else indices.numpy()
    if known is not None and np.any((known < 0) | (known >= var.shape[0])):
        return False  # TF's own out-of-range error (a lazy index cannot be checked: dropped)
    if control_flow.DEPTH[0]:
        control_flow.note_assign(var)
    _make_lazy(var)
    current = var._lazyx_shadow
    if current is None:
        current = LazyTensor(_tf_leaf(var.value()))
    rows, idx = _tensor.node_of(values, var.dtype), _tensor.node_of(indices, indices.dtype)
    if mode == "sub":
        mode, rows = "add", ops.neg(rows)
    idx = ops.reshape(idx, new_sizes=idx.shape + (1,))
    _set_shadow(var, wrap(ops.stop_gradient(ops.scatter(current.node, idx, rows, mode=mode))))
    return True


def _stored_first(name):
    """A scatter method writes into TF's buffer: on a variable holding a lazy value the buffer
    is stale, so the value is stored first (one sync) and the scatter applies to it -- unless
    it scatters IndexedSlices the IR can scatter (a lazy gradient's, from Keras' optimizers),
    which stay lazy."""
    def method(self, *args, **kwargs):
        delta = args[0] if args else kwargs.get("sparse_delta")
        if scatter_lazily(self, name, delta):
            return self
        control_flow.untraceable(f"tf.Variable.{name}")  # (in a lazy cond's branch)
        if self._lazyx_shadow is not None:
            capture.host_read(f"tf.Variable.{name} on {self.name!r}")
            write_back([self])
        return getattr(super(_LazyMethods, self), name)(*args, **kwargs)
    method.__name__ = name
    return method


STORED_FIRST = ("scatter_sub", "scatter_add", "scatter_max", "scatter_min", "scatter_mul",
                "scatter_div", "scatter_update", "batch_scatter_update", "scatter_nd_sub",
                "scatter_nd_add", "scatter_nd_update", "scatter_nd_max", "scatter_nd_min")
for _name in STORED_FIRST:
    setattr(_LazyMethods, _name, _stored_first(_name))


def _shadow_operator(name):
    """`var * 2` on a variable holding a lazy value computes on that value (tf.Variable's
    own operators would read it eagerly, running the pending step). The value is read as a
    lowering reads it (read): the recording tapes are told, and under a plain
    tf.GradientTape the read is TF's own, stored first -- reading the shadow past the tape
    gave d(x * x)/dx as 2.0 and d(x ** 2)/dx as None (the TF guide's autodiff cells)."""
    def method(self, *args):
        if self._lazyx_shadow is not None:
            if tf.executing_eagerly():
                shadow = read(self)
                if shadow is not None:
                    return getattr(shadow, name)(*args)
            else:
                write_back([self])  # a tf.function being traced: stored first, as a read is
        return getattr(super(_LazyMethods, self), name)(*args)
    method.__name__ = name
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul"):
    for _form in (f"__{_name}__", f"__r{_name}__"):
        setattr(_LazyMethods, _form, _shadow_operator(_form))
for _form in ("__lt__", "__le__", "__gt__", "__ge__", "__neg__", "__abs__"):
    setattr(_LazyMethods, _form, _shadow_operator(_form))


def _getitem(self, slice_spec):
    """`v[0, :]` of a variable holding a lazy value: the slice of that value, which can be
    assigned as TF's variable slices can."""
    shadow = read(self) if self._lazyx_shadow is not None and tf.executing_eagerly() else None
    if shadow is not None:
        return assignable_slice(shadow[slice_spec], self, slice_spec)
    return _shadow_operator("__getitem__")(self, slice_spec)


_LazyMethods.__getitem__ = _getitem
