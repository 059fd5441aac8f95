"""Fallback, never a crash: run a NumPy function eagerly on materialized inputs.

Lazy inputs are synced together (one cut, cause "fallback"), the real NumPy function runs on
host arrays, and every ndarray in the result comes back as device data. Each fallback is
counted per function in lazyx.metrics()['fallback_ops'] and warned once.
"""
import numpy as np

from ...core import runtime
from ...core.source import user_line
from ._base import LazyArray, wrap
from ._promote import assign, holdable


def _lazy_in(obj, found):
    if isinstance(obj, LazyArray):
        found.append(obj)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _lazy_in(v, found)
    elif isinstance(obj, dict):
        for v in obj.values():
            _lazy_in(v, found)
    return found


def materialize(obj, cause="fallback"):
    """`obj` with every lazy array (inside lists, tuples, dicts) replaced by its host value."""
    if isinstance(obj, LazyArray):
        return obj._host(cause)
    if isinstance(obj, list):
        return [materialize(v, cause) for v in obj]
    if isinstance(obj, tuple):
        items = [materialize(v, cause) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        return {k: materialize(v, cause) for k, v in obj.items()}
    return obj


def observe_with(fn, args, kwargs):
    """fn(*args, **kwargs) on host values for a function whose job is to hand the values to
    the host (np.save, np.array2string): the user asked for them, an observation (one cut,
    cause "convert"), not a fallback. Its result (None, a string) is returned as is."""
    lazy = _lazy_in(args, _lazy_in(kwargs, []))
    if lazy:
        runtime.sync(*lazy, cause="convert", source=user_line(3), sharing=True)
    return fn(*materialize(args, "convert"), **materialize(kwargs, "convert"))


def rewrap(obj):
    """Host results back as lazy arrays (device data); scalars, other objects and arrays of
    dtypes the IR has no type for (datetime64, strings: they stay NumPy's) unchanged."""
    if isinstance(obj, np.ndarray) and holdable(obj.dtype):
        return wrap(runtime.from_host(obj))
    if isinstance(obj, list):
        return [rewrap(v) for v in obj]
    if isinstance(obj, tuple):
        items = [rewrap(v) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    return obj


def run_eagerly(fn, name, args, kwargs):
    """fn(*args, **kwargs) on host values; counted and warned as a fallback."""
    runtime.fallback(name, "numpy")
    lazy = _lazy_in(args, _lazy_in(kwargs, []))
    if lazy:
        runtime.sync(*lazy, cause="fallback", source=user_line(2), sharing=True)
    out = kwargs.get("out")
    outs = out if isinstance(out, tuple) else (out,)
    lazy_out = any(isinstance(o, LazyArray) for o in outs)
    if lazy_out:
        # NumPy writes into host copies of the lazy outputs, which hold their current values:
        # its casting rule, its `where` (which keeps the unselected values) and its errors
        # are its own; the copies are then carried back
        host_outs = tuple(np.array(materialize(o)) if isinstance(o, LazyArray) else o
                          for o in outs)
        kwargs = dict(kwargs, out=host_outs if isinstance(out, tuple) else host_outs[0])
    host_args, host_kwargs = materialize(args), materialize(kwargs)
    # NumPy functions that write into an argument (np.put, np.putmask, np.fill_diagonal,
    # np.add.at) write into its host copy here: watch each lazy argument's copy and carry a
    # write back into the lazy array, or it would be silently lost
    watched = [(lazy_arg, host, host.tobytes()) for lazy_arg, host in
               [*zip(args, host_args), *((kwargs[k], host_kwargs[k]) for k in kwargs)]
               if isinstance(lazy_arg, LazyArray)]
    result = fn(*host_args, **host_kwargs)
    for lazy_arg, host, before in watched:
        if host.tobytes() != before:
            assign(lazy_arg, wrap(runtime.from_host(host)))
    if not lazy_out:
        return rewrap(result)
    for o, host in zip(outs, host_outs):
        if isinstance(o, LazyArray):
            assign(o, wrap(runtime.from_host(host)))
    return out
