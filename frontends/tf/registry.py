"""How TF APIs reach lazyx: the explicit allowlist of lowerings, the error probe, the fallback.

* `lower(api, "x", "y")` registers a lowering through tf.experimental.dispatch_for_api, for
  calls where one of the named tensor parameters holds a LazyTensor. The lowering receives the
  API's arguments by name (defaults applied) and returns IR wrapped as a LazyTensor.
* `raise_like_tf` is how a lowering rejects a bad call: it replays the call on real
  placeholder tensors of the same shapes and dtypes, so the user gets exactly the error type
  and message TF would raise, at the call.
* Every other TF API that meets a LazyTensor fails to convert it, and TF's fallback dispatch
  hands the call to `_Fallback`: inputs materialize, real TF runs, the result is wrapped back.
"""
import functools
import inspect
import sys
import typing

import numpy as np
import tensorflow as tf
from tensorflow.python.autograph.impl.api import autograph_artifact
from tensorflow.python.util import dispatch as tf_dispatch, tf_decorator

from ...core import ops, runtime, source
from ...core.tables import Table, caller
from . import control_flow, variables
from .lowering import Reject, pack
from .tensor import (_IR_DTYPES, ACCEPTS, TARGETS, LazyTensor, graph_capture, outside_graph,
                     silent_turn, sources_of, to_tf, _tf_leaf)

_OP_LINE = source.OP_LINE

try:  # Keras 3 hands its variables to TF ops unconverted in places (bias_add, divide_no_nan)
    from keras import Variable as _KerasVariable
except ImportError:  # pragma: no cover - keras is optional
    _KerasVariable = tf.Variable
VARIABLES = (tf.Variable, _KerasVariable)
# TF's type-based dispatch matches an operand through the annotation's own class: an operand
# matched as a plain tf.Variable does not dispatch, though its class (a lazy subclass, see
# variables.py) is registered. So the lazy subclasses' marker comes first, by name.
OPERAND = typing.Union[LazyTensor, variables.LazyVariable, tf.Tensor, tf.Variable,
                       _KerasVariable, int, float, bool, np.ndarray, np.generic, list, tuple]
OPERAND_LIST = typing.List[OPERAND]
LOWERED = Table("lazyx.frontends.tf LOWERED (the TF API table)")  # "tf.math.add" -> lowering


def api_name(api):
    inner = tf_decorator.unwrap(api)[1]
    names = getattr(inner, "_tf_api_names", None) or getattr(api, "_tf_api_names", None)
    if names:
        return "tf." + names[0]
    # a TF 1 API that TF's own modules still call (array_ops.shape is tf.compat.v1.shape)
    names = getattr(inner, "_tf_api_names_v1", None)
    return "tf.compat.v1." + names[0] if names else getattr(api, "__name__", repr(api))


def lower(api, *params, lists=(), direct=None, as_given=()):
    """Register `fn(**arguments)` as the lazy lowering of the TF `api`.

    `direct(x)` or `direct(x, y)`, for element-wise APIs, is the same lowering taking the
    operands by position: LazyTensor's operators and the API's public names (DIRECT, see
    hooks.py) call it without binding TF's signature. A list or tuple given for one of
    `params` is packed into one tensor, as TF converts it, except for the params named in
    `as_given`: the lowering takes them as they come (tf.linalg.tridiagonal_solve's
    'sequence' format: three diagonals of unequal lengths)."""
    signature = inspect.signature(api)
    annotations = {p: OPERAND for p in params}
    annotations.update({p: OPERAND_LIST for p in lists})
    bind = _binder(signature)
    where = caller()

    def register(fn):
        LOWERED.add(api_name(api), fn, where)  # before TF's dispatcher learns it: once only
        missing = set(signature.parameters) - {"name"} - set(inspect.signature(fn).parameters)
        if missing and not any(p.kind == p.VAR_KEYWORD
                               for p in inspect.signature(fn).parameters.values()):
            raise TypeError(f"lazyx: lowering of {api_name(api)} lacks parameters {missing}")

        def target(*args, **kwargs):
            runtime.maybe_cut()
            arguments = bind(args, kwargs)
            lazy, variable = _scan(arguments, params, lists)
            if variable:
                if not lazy:
                    # only a dispatchable variable (Keras', or one that once held a lazy
                    # value) brought the call here, and none holds a lazy value now
                    return api(**_read_variables(arguments, params, lists, _read_eagerly))
                # Read each variable once, so its IR leaf and its tape source are the same
                # tensor; a variable holding a lazy value (a shadow) is read as that value.
                arguments = _read_variables(arguments, params, lists, _read_for_lowering)
            elif not lazy:
                return api(**arguments)
            try:
                with _OP_LINE:  # one user-line lookup for every node this op makes
                    for p in params:  # a list holding lazy values: TF's packing, lazily
                        if type(arguments.get(p)) in (list, tuple) and _has_lazy(arguments[p]):
                            values = _read_lazy_variables(arguments[p])
                            arguments[p] = values if p in as_given else pack(values)
                    return fn(**arguments)
            except ops.TooLarge as err:  # TF's type for an allocation it cannot make
                raise tf.errors.ResourceExhaustedError(None, None, str(err)) from None
            except (Reject, TypeError, ValueError):
                return _rejected(api, args, kwargs, values=any(
                    _has_lazy(v) for k, v in arguments.items()
                    if k not in params and k not in lists))
        target.__name__ = f"lazyx_{fn.__name__}"
        tf.experimental.dispatch_for_api(api, annotations)(target)
        TARGETS[api] = target if direct is None else _operator(api, direct, target)
        if direct is not None:
            DIRECT[api] = (TARGETS[api], len(params))

        def from_fallback(args, kwargs):
            """The lowering, for a call TF's fallback dispatch brought (see FALLBACK_TARGETS);
            NotImplemented when no lowered operand is lazy (the laziness is elsewhere)."""
            try:
                lazy, _ = _scan(bind(args, kwargs), params, lists)
            except TypeError:
                return NotImplemented
            return target(*args, **kwargs) if lazy else NotImplemented
        FALLBACK_TARGETS.add(api_name(api), from_fallback, where)
        return fn
    return register


def _operator(api, direct, target):
    """What `lazy + y` (or a direct call, DIRECT) calls: one operand is a LazyTensor (so the
    call is lazy); a variable operand takes the general path, which reads it."""
    def operator(*operands):
        for v in operands:
            if type(v) not in _PLAIN and isinstance(v, VARIABLES):
                return target(*operands)
        runtime.maybe_cut()
        try:
            with _OP_LINE:
                return direct(*operands)
        except (Reject, TypeError, ValueError):
            return _rejected(api, operands, {})
    return operator


# TF api -> (its operator (above), how many operands it takes), for the APIs lowered with a
# `direct` form. hooks.install puts `direct_wrapper` under each of their public names: a call
# with a LazyTensor operand then goes straight to the lowering, skipping TF's op wrapper, its
# failed eager fast path and its type-based dispatch (tf.tanh on a 4x4 lazy tensor: 8.5 us,
# against 4.3 for `x + 1.0`, which Python's operator protocol brings here directly).
DIRECT = {}


def direct_wrapper(original, operator, arity):
    """`original` (a TF API) for every call but one on `arity` positional operands, one of
    them a LazyTensor, and no keyword but `name`: that one is `operator`'s."""
    def call(*args, **kwargs):
        if len(args) == arity and (not kwargs or len(kwargs) == 1 and "name" in kwargs):
            for v in args:
                # (a variable holding a lazy value too: a generated op such as tf.maximum
                # tries its eager fast path before any dispatch, which would read it, a sync)
                if type(v) is LazyTensor or _lazy_variable(v):
                    return operator(*args)
        return original(*args, **kwargs)
    return _as_api(call, original)


def lazy_operand_wrapper(original, target):
    """`original` for eager calls; `target` for a call with a lazy operand. For an API that
    reaches a generated op before any dispatch (tf.tile, tf.einsum), whose C++ fast path
    would read a variable holding a lazy value (a sync: the shadow stored first); a
    LazyTensor operand only fails its conversion there before TF's dispatch comes to
    `target` anyway."""
    def call(*args, **kwargs):
        for values in (args, kwargs.values()):
            for v in values:
                if type(v) is LazyTensor or _lazy_variable(v):
                    return target(*args, **kwargs)
        return original(*args, **kwargs)
    return _as_api(call, original)


def _lazy_variable(v):
    """A variable (tf or Keras) that holds a lazy value, or is read while a lazy tape records."""
    return type(v) not in _PLAIN and isinstance(v, VARIABLES) and variables.is_lazy(v)


def is_generated_op(api):
    return ".gen_" in getattr(tf_decorator.unwrap(api)[1], "__module__", "")


def _as_api(call, original):
    """`call` standing in for `original` in TF's namespaces: its name, docs and signature
    (inspect follows __wrapped__), its dispatch attributes and its entry in TF's table of
    type-based signatures (a later dispatch_for_api on the public name registers with the
    original's dispatcher), and called as it is inside tf.function (AutoGraph does not
    convert an artifact of its own: it would convert lazyx's code)."""
    functools.update_wrapper(call, original)
    signatures = getattr(tf_dispatch, "_TYPE_BASED_DISPATCH_SIGNATURES", {})
    if original in signatures:
        signatures[call] = signatures[original]  # one table for both names
    return autograph_artifact(call)


_PLAIN = frozenset({LazyTensor, float, int, bool})  # operands that are surely not variables


def _rejected(api, args, kwargs, values=False):
    """A lowering refused the call: TF's own error for a bad call; a call TF accepts but the
    IR cannot express (strings, complex, an unsupported mode) runs eagerly instead.
    `values`: a lazy value sits where TF reads its values (tf.reshape's shape, tf.tile's
    multiples), which the lowerings need static. The replay on zeros would judge another
    call (a reshape to a shape of zeros: a bogus InvalidArgumentError for a valid call), so
    it runs eagerly: TF computes it, or raises its own error for the real values."""
    if not tf.executing_eagerly():
        return in_graph(api, args, kwargs)
    if values or _tf_accepts(api, args, kwargs):
        return run_eagerly(api, args, kwargs)
    raise_like_tf(api, args, kwargs)


def _binder(signature):
    """`bind(args, kwargs)` -> {parameter: value} with defaults, less `name`: what
    inspect.Signature.bind + apply_defaults give (and raise), at a fraction of the cost.
    Calls the fast path cannot vouch for go through the signature itself."""
    kinds = inspect.Parameter
    positional = [p.name for p in signature.parameters.values()
                  if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    by_keyword = frozenset(p.name for p in signature.parameters.values()
                           if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY))
    defaults = {p.name: p.default for p in signature.parameters.values()
                if p.default is not p.empty and p.kind != kinds.VAR_KEYWORD}
    count = len(signature.parameters)
    simple = all(p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)
                 for p in signature.parameters.values())

    def slow(args, kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        arguments.pop("name", None)
        return arguments

    def bind(args, kwargs):
        if not simple or len(args) > len(positional):
            return slow(args, kwargs)
        arguments = defaults.copy()
        arguments.update(zip(positional, args))
        if kwargs:
            if not by_keyword.issuperset(kwargs) or \
                    any(k in kwargs for k in positional[:len(args)]):
                return slow(args, kwargs)  # signature.bind raises TF's TypeError
            arguments.update(kwargs)
        if len(arguments) != count:
            return slow(args, kwargs)  # a required argument is missing
        arguments.pop("name", None)
        return arguments
    return bind


def _scan(arguments, params, lists):
    """(any operand lazy, any operand a variable) for the dispatchable parameters."""
    lazy = variable = False
    for p in params:
        value = arguments.get(p)
        if isinstance(value, LazyTensor):
            lazy = True
        elif isinstance(value, VARIABLES):
            variable = True
            lazy = lazy or variables.is_lazy(value)
        elif type(value) in (list, tuple):  # TF packs it into one tensor (lowering.pack)
            lazy = lazy or _has_lazy(value)
    for p in lists:
        values = arguments.get(p)
        if isinstance(values, LazyTensor):  # one tensor where TF also takes a list
            lazy = True                     # (tf.compat.v1.nn.embedding_lookup's params)
        elif isinstance(values, (list, tuple)):
            for value in values:
                if isinstance(value, LazyTensor):
                    lazy = True
                elif isinstance(value, VARIABLES):
                    variable = True
                    lazy = lazy or variables.is_lazy(value)
    return lazy, variable


def _read_eagerly(value):
    # the variable's own read, not tf.convert_to_tensor: that API is lowered (dispatches);
    # a Keras variable is then cast as Keras' own read casts it (mixed precision: the layer's
    # float32 kernel read as float16 inside its call), or read as Keras reads it in a
    # StatelessScope or while unbuilt (variables.keras_value)
    scoped = variables.keras_value(value)
    if scoped is not None:
        return scoped
    return variables.keras_autocast(value, variables.tf_variable(value).value())


def _read_for_lowering(value):
    scoped = variables.keras_value(value)
    if scoped is not None:
        return scoped
    shadow = variables.read(value)
    return variables.keras_autocast(value, shadow) if shadow is not None else \
        _read_eagerly(value)


def _read_variables(arguments, params, lists, reader):
    arguments = dict(arguments)
    for p in params:
        if isinstance(arguments.get(p), VARIABLES):
            arguments[p] = reader(arguments[p])
    for p in lists:
        if isinstance(arguments.get(p), (list, tuple)):
            arguments[p] = [reader(v) if isinstance(v, VARIABLES) else v for v in arguments[p]]
    return arguments


def _read_lazy_variables(values):
    """`values` (a tuple of arguments, or a dict of keyword arguments) with each variable
    holding a lazy value, there or in a list, read as that value: a lowering that takes
    operands without TF's signature (tf.norm, tf.einsum) would convert it, a sync."""
    def read(v):
        if isinstance(v, VARIABLES) and variables.is_lazy(v):
            return _read_for_lowering(v)
        if isinstance(v, (list, tuple)) and any(isinstance(e, VARIABLES) for e in v):
            return type(v)(read(e) for e in v)
        return v
    if isinstance(values, dict):
        return {k: read(v) for k, v in values.items()}
    return tuple(read(v) for v in values)


def _lowering_keywords(kwargs):
    """A call's keywords as a lowering that takes TF's arguments as given takes them: `name`
    dropped, variables holding lazy values read (_read_lazy_variables)."""
    return _read_lazy_variables({k: v for k, v in kwargs.items() if k != "name"})


def _placeholder(value):
    if isinstance(value, LazyTensor):
        return tf.zeros(value.node.shape, value.dtype)
    if variables.has_shadow(value):  # TF would refuse to read it (variables.py)
        return tf.zeros(value.shape, value.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_placeholder(v) for v in value)
    if isinstance(value, dict):
        return {k: _placeholder(v) for k, v in value.items()}
    return value


def _tf_accepts(api, args, kwargs):
    try:
        api(*_placeholder(tuple(args)), **_placeholder(kwargs or {}))
    except Exception:  # noqa: BLE001
        return False
    return True


def require_dtype(api, dtype, arity):
    """Reject unless TF runs `api` on `arity` operands of the IR `dtype` (asked once per pair,
    on ones: TF refuses bool for tf.math.greater, unsigned ints for tf.math.abs, and has no
    CPU kernel for float16 erfinv; lazyx's element-wise IR would compute them all)."""
    takes = ACCEPTS.get((api, dtype))
    if takes is None:
        try:
            one = tf.ones((), tf.as_dtype(dtype))
        except TypeError:
            raise Reject() from None
        takes = ACCEPTS[(api, dtype)] = _tf_accepts(api, (one,) * arity, {})
    if not takes:
        raise Reject()


def raise_like_tf(api, args=(), kwargs=None, otherwise=None):
    """Re-run the call on real zeros of the same shapes to raise TF's own error for it."""
    try:
        api(*_placeholder(tuple(args)), **_placeholder(kwargs or {}))
    except Exception as err:  # noqa: BLE001 - we re-raise TF's error unchanged
        raise err.with_traceback(None) from None
    raise otherwise or tf.errors.InvalidArgumentError(
        None, None, f"{api_name(api)}: invalid arguments")


def raise_for_values(api, arguments, values):
    """Replay `api(**arguments)` on placeholders, but with the known values of the operands
    named in `values` (NumPy arrays): TF's own error for a bad index or divisor, at the call.
    Returns quietly if TF accepts those values."""
    kwargs = {k: tf.constant(values[k]) if k in values and isinstance(v, LazyTensor)
              else _placeholder(v) for k, v in arguments.items()}
    try:
        api(**kwargs)
    except Exception as err:  # noqa: BLE001 - we re-raise TF's error unchanged
        raise err.with_traceback(None) from None


def _has_lazy(value):
    if isinstance(value, LazyTensor) or variables.has_shadow(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_lazy(v) for v in value)
    if isinstance(value, dict):
        return any(_has_lazy(v) for v in value.values())
    return False


def _materialize(value, cause="fallback"):
    if isinstance(value, LazyTensor):
        return to_tf(value, cause=cause)
    if variables.has_shadow(value):  # TF gets the variable itself, holding its value
        variables.write_back([variables.tf_variable(value)], cause=cause)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_materialize(v, cause) for v in value)
    if isinstance(value, dict):
        return {k: _materialize(v, cause) for k, v in value.items()}
    return value


def wrap_result(value):
    """Real TF results back into lazy tensors (as device data); other values -- and tensors
    of a dtype the IR has no name for (strings, variants) -- unchanged."""
    if isinstance(value, tf.Tensor) and not isinstance(value, LazyTensor):
        if value.dtype not in _IR_DTYPES:
            return value
        return LazyTensor(_tf_leaf(value), sources_of(value))
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(wrap_result(v) for v in value)
    if hasattr(value, "_fields"):  # namedtuples such as tf.math.top_k's
        return type(value)(*[wrap_result(v) for v in value])
    if type(value) is dict:  # a SavedModel signature's results
        return {k: wrap_result(v) for k, v in value.items()}
    return value


def run_eagerly(api, args, kwargs, name=None):
    """Run the real TF api on materialized inputs and wrap the result: a counted fallback
    (named `name`, or the api's public name). In a TF graph being built: `in_graph`."""
    if not tf.executing_eagerly():
        return in_graph(api, args, kwargs)
    control_flow.untraceable(name or api_name(api))  # a lazy cond's branch stops before it
    runtime.fallback(name or api_name(api), "tensorflow")
    return wrap_result(api(*_materialize(tuple(args)), **_materialize(kwargs)))


def in_graph(api, args, kwargs):
    """A lazy value met a TF graph being built: a tf.function's trace reading a lazy tensor
    it closes over (TF's style-transfer tutorial: the style targets). The graph captures its
    value (tensor.graph_capture) and TF's own op joins the graph. A lowering cannot take the
    graph's symbolic operands (tensor._tf_leaf refuses them); ops on lazy operands alone stay
    lazy until their result meets the graph: here, converted by TF, or returned
    (LazyTensor._convert_variables_to_tensors)."""
    with outside_graph():
        args, kwargs = _materialize(tuple(args), "convert"), _materialize(kwargs, "convert")
    return api(*args, **kwargs)


# APIs TF's type-based dispatch cannot take (varargs): tf.einsum
VARARG_LOWERINGS = Table("lazyx.frontends.tf VARARG_LOWERINGS")
VARARG_APIS = []  # the APIs themselves (hooks.py wraps their public names)
# The type-based lowerings (`lower`) by API name, for calls that reach _Fallback instead of
# TF's type-based dispatch (a lazy operand in a form no signature names). Until 2026-11-28
# every call whose only lazy operand was a shadowed tf.Variable came this way (see OPERAND).
FALLBACK_TARGETS = Table("lazyx.frontends.tf FALLBACK_TARGETS")


def lower_varargs(api):
    """Lower an API that only has TF's fallback dispatch; `_Fallback` calls the lowering."""
    where = caller()

    def register(fn):
        LOWERED.add(api_name(api), fn, where)
        VARARG_LOWERINGS.add(api_name(api), fn, where)
        VARARG_APIS.append(api)
        return fn
    return register


# TF functions with no dispatch hook at all (a generated op such as tf.linalg.slogdet, or
# tf.signal.rfft, which converts its input before anything can dispatch): hooks.py replaces
# `namespace.name` with `undispatched_wrapper`. (namespace, attribute name) -> lowering
UNDISPATCHED = {}


def lower_undispatched(namespace, name):
    """Register `fn(*args, **kwargs)` as the lowering of `namespace.name` (see UNDISPATCHED)."""
    where = caller()

    def register(fn):
        LOWERED.add(api_name(getattr(namespace, name)), fn, where)
        UNDISPATCHED[(namespace, name)] = fn
        return fn
    return register


def _eager_only(*args, **kwargs):
    raise Reject()


def fallback_undispatched(namespace, name):
    """`namespace.name` has no dispatch hook and no lowering: on lazy inputs it runs on TF
    (a counted fallback) rather than refusing the conversion of its lazy operand."""
    UNDISPATCHED[(namespace, name)] = _eager_only


def undispatched_wrapper(original, lowering):
    """TF's own function for eager inputs; for lazy ones the lowering, or -- when it rejects
    the call -- TF's function on materialized inputs (a counted fallback: its result or its
    error)."""
    def call(*args, **kwargs):
        if not (_has_lazy(args) or _has_lazy(kwargs)):
            return original(*args, **kwargs)
        runtime.maybe_cut()
        try:
            with _OP_LINE:
                return lowering(*_read_lazy_variables(args), **_lowering_keywords(kwargs))
        except ops.TooLarge as err:
            raise tf.errors.ResourceExhaustedError(None, None, str(err)) from None
        except (Reject, TypeError, ValueError):
            return run_eagerly(original, args, kwargs)
    return _as_api(call, original)


class _Fallback(tf.__internal__.dispatch.GlobalOpDispatcher):
    def handle(self, op, args, kwargs):
        if not (_has_lazy(args) or _has_lazy(kwargs)):
            return self.NOT_SUPPORTED
        name = api_name(op)
        lowered = FALLBACK_TARGETS.get(name)
        if lowered is not None:
            result = lowered(args, kwargs)
            if result is not NotImplemented:
                return result
        lowering = VARARG_LOWERINGS.get(name)
        if lowering is not None:
            runtime.maybe_cut()
            try:
                return lowering(*_read_lazy_variables(args), **_lowering_keywords(kwargs))
            except ops.TooLarge as err:
                raise tf.errors.ResourceExhaustedError(None, None, str(err)) from None
            except (Reject, TypeError, ValueError):
                pass  # TF's own checks and errors: run it for real below
        return run_eagerly(op, args, kwargs)


FALLBACK = _Fallback()


def _refuse_implicit_conversion(value, dtype=None, name=None, as_ref=False):
    """TF converts unknown objects through __array__, which would run every API we do not
    lower silently and uncounted. Refusing sends those calls to _Fallback (counted, wrapped)
    instead. Variable assignment has no dispatch hook, so it alone materializes here; and a
    TF graph being built (a tf.function's trace) captures the value (in_graph)."""
    if not tf.executing_eagerly():
        return _of_dtype(graph_capture(value), dtype)
    frame = sys._getframe(1)
    for _ in range(8):
        if frame is None:
            break
        if frame.f_globals.get("__name__", "").endswith("resource_variable_ops"):
            return _assign_conversion(frame, value, dtype)
        frame = frame.f_back
    raise TypeError(f"lazyx: TensorFlow tried to convert a lazy tensor implicitly "
                    f"(dtype={dtype}); use tf.convert_to_tensor(x) to materialize it")


def _assign_conversion(frame, value, dtype):
    """`tf.Variable.assign*(lazy)` on a variable not yet lazy-aware: record the lazy value as
    its shadow (see variables.py) and hand TF's assign op a value that leaves the variable
    as it is (itself for assign, zero for assign_add/assign_sub). A call we cannot record
    (dtype or shape mismatch, another variable method) materializes, so TF decides."""
    kind, var = frame.f_code.co_name, frame.f_locals.get("self")
    if kind in ("assign", "assign_add", "assign_sub") and isinstance(var, tf.Variable) \
            and not isinstance(var, variables.LazyVariable):
        unchanged = var.value() if kind == "assign" else tf.zeros(var.shape, var.dtype)
        if variables.record_assign(var, kind, value):
            return unchanged
    if kind == "_strided_slice_assign" and isinstance(var, tf.Variable) \
            and not isinstance(var, variables.LazyVariable):
        recorded = _slice_assign(var, frame.f_locals, value)
        if recorded is not None:
            return recorded
    silent_turn(f"tf.Variable.{kind}")  # TF asked for the value, not the user
    return _of_dtype(to_tf(value, cause="fallback"), dtype)


def _slice_assign(var, where, value):
    """`v[i, j].assign(lazy)` / `v[:].assign(lazy)` on a variable not yet lazy-aware (d2l's
    corr2d and its from-scratch optimizers): the variable's lazy value becomes the scatter
    of `value` into the slice (variables.assign_slice), and TF's op is handed the slice as
    it is, which leaves the buffer unchanged. None where the subscript is not static (TF
    decides, on the materialized value)."""
    from .api_array import strided_spec
    keys = ("begin", "end", "strides", "begin_mask", "end_mask", "ellipsis_mask",
            "new_axis_mask", "shrink_axis_mask")
    args = {k: where[k] for k in keys}
    try:
        spec = strided_spec(**args)
    except Reject:
        return None
    unchanged = tf.strided_slice(var.value(), **args)  # (read before the variable turns lazy)
    variables.assign_slice(var, spec, value)
    return unchanged


def _of_dtype(real, dtype):
    """`real`, the conversion's result, if of the `dtype` asked for (or none asked); else what
    TF says converting a real tensor to another dtype."""
    if dtype is not None and not tf.as_dtype(dtype).is_compatible_with(real.dtype):
        raise ValueError(f"Tensor conversion requested dtype {tf.as_dtype(dtype).name} for "
                         f"Tensor with dtype {real.dtype.name}: {real!r}")
    return real
