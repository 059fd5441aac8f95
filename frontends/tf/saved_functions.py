"""tf.functions beside their TF graphs: saving one that ran lazily, and calling a concrete or
restored function with lazy arguments.

A tf.function called with lazy arguments runs its Python function on them and is never traced
by TF (control_flow.function_call), yet tf.saved_model.save serializes the traces it finds: a
function called only lazily was saved without one, and the restored object raised "Found zero
restored functions" at every call. So each lazy call's signature is kept -- its lazy tensors
as TensorSpecs of their shapes and dtypes, everything else as given, which is the signature TF
would have traced on that call -- and traced when the function is listed for serialization
(hooks.py wraps Function._list_all_concrete_functions_for_serialization).

A ConcreteFunction (get_concrete_function's, a restored function's, a SavedModel signature)
holds a TF graph and nothing else: a lazy argument cannot enter it. It runs on the
materialized values, a counted fallback, its results lazy again (registry.run_eagerly).
"""
import warnings

import tensorflow as tf

from .tensor import LazyTensor

_TENSORS = (LazyTensor, tf.Tensor)
# signatures kept per function, at most: a function called with ever new shapes keeps the first
MAX_SIGNATURES = 64


def as_specs(value):
    """`value` with each tensor, lazy or not, replaced by the TensorSpec TF would trace it as
    (and not kept alive by it)."""
    return tf.nest.map_structure(
        lambda v: tf.TensorSpec(v.shape, v.dtype) if isinstance(v, _TENSORS) else v, value)


def remember_signature(function, args, kwargs):
    """Note the signature of a lazy call of `function` (a tf.function), once per signature."""
    kept = function.__dict__.get("_lazyx_signatures")
    if kept is None:
        kept = function._lazyx_signatures = {}
    if len(kept) >= MAX_SIGNATURES:
        return
    key = tuple(_leaf_key(leaf) for leaf in tf.nest.flatten((args, kwargs)))
    if key not in kept:
        kept[key] = (as_specs(args), as_specs(kwargs))


def _leaf_key(leaf):
    if isinstance(leaf, _TENSORS):
        return (tf.Tensor, tuple(leaf.shape), leaf.dtype)
    try:
        hash(leaf)
    except TypeError:
        return (id(leaf),)
    return (type(leaf), leaf)


def trace_remembered(function):
    """Trace `function` for every signature its lazy calls had (TF skips those it has). A
    body TF cannot trace (it ran lazily, reading values) is saved without that signature, as
    TF saves a function it never traced, with a warning saying so."""
    for args, kwargs in function.__dict__.get("_lazyx_signatures", {}).values():
        try:
            function.get_concrete_function(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 -- TF's tracing errors are of every kind
            warnings.warn(f"lazyx: tf.function {function._name!r} ran lazily but TF cannot "
                          f"trace it for its signature {args!r}, {kwargs!r} ({err}); it is "
                          f"saved without it", RuntimeWarning, stacklevel=2)


def name_of(concrete):
    """A ConcreteFunction's name as the user wrote it (TF's is `__inference_<name>_<n>`)."""
    name = concrete.name.decode() if isinstance(concrete.name, bytes) else str(concrete.name)
    if name.startswith("__inference_"):
        name = name[len("__inference_"):].rsplit("_", 1)[0]
    return name
