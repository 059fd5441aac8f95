"""lazyx.compile's arguments and results as structures: their structure key (the guard's
part for arguments: `_flatten`), the call's Python numbers made symbolic for a trace
(`_substitute`), what a step wrote into its list and dict arguments (`_rebound`), and results
rebuilt around a replay's tensors (`_rebuild`). Containers are tuples, lists, dicts,
namedtuples, dict subclasses built from their items and dataclasses."""
import collections
import dataclasses

import numpy as np

from .capture import _spec
from .symbolic import SymFloat, SymInt, plain, sym


def _structured(obj):
    """(kind, names, values) for a namedtuple, a dict subclass (OrderedDict, HF's
    ModelOutput) or a dataclass -- containers a step takes or returns as it does tuples and
    dicts -- else None. `_built` makes one again from its kind, class and names."""
    cls = type(obj)
    if isinstance(obj, tuple):
        return ("namedtuple", None, tuple(obj)) if hasattr(cls, "_fields") else None
    is_dataclass = dataclasses.is_dataclass(cls)
    if isinstance(obj, dict):
        if is_dataclass:
            kind = "fields"
        elif cls.__init__ in (dict.__init__, collections.OrderedDict.__init__):
            kind = "pairs"
        else:
            return None
        return (kind, tuple(obj), tuple(obj.values()))
    if is_dataclass:
        fields = dataclasses.fields(cls)
        if all(f.init for f in fields):
            names = tuple(f.name for f in fields)
            return ("fields", names, tuple(getattr(obj, n) for n in names))
    return None


def _built(kind, cls, names, values):
    if kind == "namedtuple":
        return cls(*values)
    if kind == "pairs":
        return cls(zip(names, values))
    return cls(**dict(zip(names, values)))


def _flatten(obj, tensors, numbers, path="args", host=None):
    """The structure key of `obj`, collecting its tensors and Python numbers. `path` names
    `obj` in an error: a string, or (its container's path, its index or key), spelled out
    only when there is an error to name it in (every replayed call flattens its arguments).
    `host`, a list for a step's results: values computed outside lazyx (a TF EagerTensor, a
    NumPy array or scalar, any unhashable value) are leaves, collected there and in
    `tensors`, instead of an error (an argument's key must be hashable; a result's need not)."""
    cls = type(obj)
    if cls is tuple or cls is list:
        return (cls, tuple([_flatten(x, tensors, numbers, (path, i), host)
                            for i, x in enumerate(obj)]))
    if cls is dict:
        return (dict, tuple(obj), tuple([_flatten(v, tensors, numbers, (path, k), host)
                                         for k, v in obj.items()]))
    if cls is int or cls is float or cls is SymFloat or cls is SymInt:  # (Sym: a result's)
        numbers.append(obj)
        return cls
    spec = _spec(cls)
    structured = _structured(obj) if spec is None else None
    if structured is not None:
        kind, names, values = structured
        return ("structured", kind, cls, names,
                tuple([_flatten(v, tensors, numbers, (path, n if names else i), host)
                       for i, (n, v) in enumerate(zip(names or values, values))]))
    if spec is not None and spec[0] == "tensor":
        if not spec[1][0](obj):
            guard = _host_integers(obj, cls) if host is None else None
            if guard is not None:
                return guard
            raise TypeError(f"lazyx.compile: {_spelled(path)} is a {cls.__module__}."
                            f"{cls.__name__} that is not a lazyx tensor; a host value would "
                            f"be baked into the compiled program. Pass lazy tensors "
                            f"(lnp.asarray(x), x.to(lt.device), ltf.constant(x)).")
        tensors.append(obj)
        return spec[1]
    if host is not None and (cls.__module__ == "numpy" or hasattr(obj, "__array__") or
                             not _hashable(obj)):
        host.append(obj)
        tensors.append(obj)
        return ("host",)
    if isinstance(obj, np.generic) and cls.__module__ == "numpy":
        # a NumPy scalar (a learning rate from np.linspace, an index from a permutation):
        # NumPy's rules give it its own dtype (np.float32(0.1) * x is not 0.1 * x), which a
        # Python-number parameter would lose; so it is part of the guard, by type and value
        # (float(lr) makes it a run-time parameter: README)
        return ("scalar", cls, obj)
    if cls.__module__ == "numpy" or hasattr(obj, "__array_interface__"):
        raise TypeError(f"lazyx.compile: {_spelled(path)} is a host array ({cls.__name__}); "
                        f"pass a lazy tensor (lnp.asarray(x), x.to(lt.device), "
                        f"ltf.constant(x)) so new data is a new input rather than a constant "
                        f"of the program")
    if not _hashable(obj):
        raise TypeError(f"lazyx.compile: {_spelled(path)} ({cls.__name__}) is neither a "
                        f"tensor, a number, nor a hashable value that can be part of the "
                        f"guard")
    return ("value", obj)


_HOST_INTEGERS_MAX = 4096  # elements: lengths and index lists, not a batch of data


def _host_integers(t, cls):
    """The guard key of a small CPU integer (or bool) torch tensor argument, else None. On a
    device, torch takes such a tensor only as host-side metadata: pack_padded_sequence's
    lengths (its documented form, what a DataLoader collate returns), sizes, indices. Its
    values shape the trace (the packed batch sizes), so they are part of the guard, as a list
    of ints is, and the step gets the tensor itself. Float CPU tensors, data a user meant to
    move, stay refused. (`is_cpu` is torch's: other frameworks' host tensors are refused.)"""
    if getattr(t, "is_cpu", False) is not True or t.numel() > _HOST_INTEGERS_MAX:
        return None
    try:
        values = np.asarray(t)
    except (TypeError, RuntimeError, ValueError):  # (bfloat16, sparse, ... : not integers)
        return None
    if values.dtype.kind not in "biu":
        return None
    return ("host integers", cls, values.dtype.str, values.shape, values.tobytes())


def _hashable(obj):
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _spelled(path):
    """A _flatten path as Python would write it: args[0]['x']."""
    if type(path) is str:
        return path
    container, k = path
    return f"{_spelled(container)}[{k!r}]"


def _rebuild(key, items):
    """Inverse of _flatten: `items` is an iterator over the replacements, in order."""
    if type(key) is tuple and key and key[0] in (tuple, list):
        return key[0](_rebuild(k, items) for k in key[1])
    if type(key) is tuple and key and key[0] is dict:
        return {name: _rebuild(k, items) for name, k in zip(key[1], key[2])}
    if type(key) is tuple and key and key[0] == "value":
        return key[1]
    if type(key) is tuple and key and key[0] == "structured":
        _, kind, cls, names, keys = key
        return _built(kind, cls, names, [_rebuild(k, items) for k in keys])
    return next(items)


def _substitute(obj, numbers, copies=None):
    """`obj` with each Python number replaced by a symbolic one (argument k of `numbers`);
    `copies` records id(container copy) -> (the original, the copy) (what _rebound compares)."""
    cls = type(obj)
    if cls is tuple or cls is list or cls is dict:
        out = cls(_substitute(x, numbers, copies) for x in obj) if cls is not dict else \
            {k: _substitute(v, numbers, copies) for k, v in obj.items()}
        if copies is not None:
            copies[id(out)] = (obj, out)  # (holding the copy keeps its id from being reused)
        return out
    if cls is int or cls is float:
        k = len(numbers)
        numbers.append(obj)
        return sym(obj, lambda n, _k=k: n[_k])
    structured = _structured(obj) if _spec(cls) is None else None
    if structured is not None:  # (the numbers inside, in _flatten's order)
        kind, names, values = structured
        return _built(kind, cls, names, [_substitute(v, numbers, copies) for v in values])
    return obj


class Contents:
    """A list or dict argument's whole new contents (the step added or removed entries:
    `log.append(loss)`), as _rebound reports them."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _rebound(original, copy, copies, path=()):
    """What the step wrote into the list and dict arguments it was given, found by comparing
    the user's containers with the copies _substitute handed it (`copies`, from _substitute):
    [(path, new value)] for each entry it rebound (`params["w"] = params["w"] - lr * g`), and
    (path, Contents(new contents)) for a container it added entries to or removed some from.
    Each change is applied to the user's container, as the uncompiled step would have made
    it, so the first call behaves like the function."""
    changes = []
    cls = type(original)
    if cls is list and len(original) != len(copy) or \
            cls is dict and original.keys() != copy.keys():
        # (a replay fills the container again: a fresh `log=[]` per call replays, a list that
        # grows from call to call changes the guard's key each time, and traces again)
        if cls is list:
            original[:] = [_plain_deep(x) for x in copy]
        else:
            original.clear()
            original.update({k: _plain_deep(v) for k, v in copy.items()})
        return [(path, Contents(copy))]
    for k in (copy if cls is dict else range(len(copy))):
        new, old = copy[k], original[k]
        pair = copies.get(id(new))
        if pair is not None and pair[0] is old and pair[1] is new:  # the copy the step got
            changes += _rebound(old, new, copies, path + (k,))
        elif new is not old and not (type(old) in (int, float) and plain(new) == old) and \
                not (type(new) is type(old) and _structured(old) is not None):
            if cls is tuple:  # a tuple's entries cannot be rebound: the step made a new one
                continue
            changes.append((path + (k,), new))
            original[k] = _plain_deep(new)
    return changes


def _plain_deep(x):
    """`x` with symbolic numbers (SymFloat, SymInt) made plain, also inside containers."""
    cls = type(x)
    if cls is tuple or cls is list:
        return cls(_plain_deep(i) for i in x)
    if cls is dict:
        return {k: _plain_deep(v) for k, v in x.items()}
    if cls is int or cls is float or cls is SymFloat or cls is SymInt or _spec(cls) is not None:
        return plain(x)
    structured = _structured(x)
    if structured is not None:
        kind, names, values = structured
        return _built(kind, cls, names, [_plain_deep(v) for v in values])
    return x
