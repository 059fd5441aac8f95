"""Host state a lazyx.compile step reads without the graph seeing it: Python numbers kept on
objects (`self.t += 1`, `G["step"] += 1`), NumPy's own random generators, plain host
arrays (a mask, a lookup table in a global), and a frontend's tensors off the lazyx device (a
CPU `scale` read with float()). A replay runs no Python, so

* a number or generator the step itself changes while it traces would never change again:
  the step runs lazily from then on (`changed_by_step`, with a warning that names it);
* a host array the graph took as a constant must still hold the traced values at each replay:
  a change between calls is a guard miss, and the step traces again (`arrays_changed`); so
  must a host tensor, by its version counter (`tensor_guards`; one the step writes is caught
  with the deeper ones, by capture's walk);
* a number the step reads there (`CFG["beta"]`, `self.scale`, `scale[0]`, and deeper:
  `CFG["opt"]["mult"]`, a submodule's `self.temperature` read in its forward) that the caller
  changes between calls must not replay the traced value: guarded by value; a float is then
  a number of each call (`read_numbers`).

The snapshot's numbers, generators, arrays and host tensors are those one level from the
step's roots: its closure cells, the globals its code names, the object of a bound method and
the dicts among them -- where such state lives in the programs we met. The numbers it reads
are looked for deeper too, through dicts, lists, plain objects and module trees; a torch
optimizer's param_groups have their own mechanism (capture.state_number).
"""
import operator
import types

import numpy as np

from .symbolic import SymFloat, SymInt, plain

# host arrays larger than this are not compared at each replay (docs: README, lazyx.compile)
ARRAY_GUARD_BYTES = 1 << 20

_GENERATORS = (np.random.Generator, np.random.RandomState)


def snapshot(roots, tensor_version=lambda value: None):
    """[(name, getter, kind, value)] for the numbers, generators, arrays and host tensors one
    level from `roots` ((getter, object) pairs: capture._roots), values copied as they are
    now (a host tensor's: (tensor, version function, version)). `tensor_version(value)`: a
    host tensor's version function, else None."""
    out = []
    for k, (getter, obj) in enumerate(roots):
        _add(out, f"root {k}", getter, obj, tensor_version)
        if isinstance(obj, dict):
            items = [(key, value) for key, value in obj.items()]
            get = _item
        else:
            attrs = getattr(obj, "__dict__", None)
            if type(attrs) is not dict or isinstance(obj, (type, types.ModuleType)) or \
                    getattr(type(obj), "_lazyx_compiled", False):  # (a step's own counters)
                continue
            items, get = list(attrs.items()), _attr
        for key, value in items:
            if type(value) is not bool:
                read = lambda g=getter, key=key, get=get: get(g(), key)  # noqa: E731
                read.holder = id(obj)  # (whose number: changed_by_step's `replayed`)
                _add(out, _name(obj, key), read, value, tensor_version)
    out.append(("np.random's global generator", _global_state, "rng", _global_state()))
    return out


def changed_by_step(before, replayed=()):
    """What the traced call changed itself among the snapshot's numbers, generators and
    arrays ('name: was -> now'), else None. `replayed`: ids of objects whose numbers an
    effect each replay makes again changes (an LR scheduler's: capture.replayed_effect)."""
    for name, getter, kind, value in before:
        if getattr(getter, "holder", None) in replayed:
            continue
        try:
            now = getter()
        except (LookupError, AttributeError, TypeError):
            continue
        if kind == "rng":
            if getter is not _global_state:
                now = _state(now) if isinstance(now, _GENERATORS) else value
            if now != value:
                return f"{name} drew numbers (NumPy's own generators are not replayed; " \
                       f"draw with lnp.random, or outside the step)"
        elif kind == "number":
            if type(now) is not type(value) or now != value and now == now:
                return f"{name} changed while it ran ({value!r} -> {now!r}; keep it in an " \
                       f"argument or a tensor)"
        elif kind == "array" and isinstance(now, np.ndarray) and not same_array(now, value):
            return f"{name}, a host array, was written while it ran"
    return None


def array_guards(before):
    """(name, getter, copy) for the host arrays to compare at each replay."""
    return [(name, getter, value) for name, getter, kind, value in before if kind == "array"]


def tensor_guards(before):
    """(tensor, version function, version) for the host tensors to check at each replay."""
    return [value for _name, _getter, kind, value in before if kind == "tensor"]


def arrays_changed(guards):
    """A guard-miss message when a guarded host array holds other values now, else None."""
    for name, getter, value in guards:
        try:
            now = getter()
        except (LookupError, AttributeError, TypeError):
            now = None
        if not isinstance(now, np.ndarray) or not same_array(now, value):
            return f"{name}, a host array the program took as a constant, changed"
    return None


def _add(out, name, getter, value, tensor_version):
    if isinstance(value, _GENERATORS):
        out.append((name, getter, "rng", _state(value)))
    elif isinstance(value, np.ndarray):
        if value.nbytes <= ARRAY_GUARD_BYTES and value.dtype != object:
            out.append((name, getter, "array", value.copy()))
    elif isinstance(value, (int, float)) and type(value) is not bool:
        out.append((name, getter, "number", value))
    else:
        version = tensor_version(value)
        if version is not None:
            out.append((name, getter, "tensor", (value, version, version(value))))


def same_array(a, b):
    """Equal host arrays: shape, dtype and values (NaN equal to NaN)."""
    return a.shape == b.shape and a.dtype == b.dtype and \
        np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _state(generator):
    if isinstance(generator, np.random.Generator):
        return _comparable(generator.bit_generator.state)
    return _comparable(generator.get_state(legacy=False))


def _global_state():
    return _comparable(np.random.get_state(legacy=False))


def _comparable(state):
    """A generator's state (nested dicts, ints, arrays) as a value == compares exactly."""
    if isinstance(state, dict):
        return tuple((k, _comparable(v)) for k, v in sorted(state.items()))
    if isinstance(state, np.ndarray):
        return state.tobytes()
    return state


def _item(holder, key):
    return holder[key]


def _attr(holder, key):
    return getattr(holder, key)


def _name(obj, key):
    return f"{type(obj).__name__}[{key!r}]" if isinstance(obj, (dict, list)) else \
        f"{type(obj).__name__}.{key}"


# ---------------------------------------------------------------- numbers the step reads

def code_keys(fn):
    """The attribute names and constant keys the code of `fn` (and of the functions defined
    in it) spells: `CFG["beta"]`, `H.beta`, `scale[0]`. A number one level from the step's
    roots is taken as read by the step when its key is among them (a number the step does
    not spell, as a counter the caller keeps next to it, must not guard the replay)."""
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    out = set()
    stack = [code] if code is not None else []
    while stack:
        code = stack.pop()
        out.update(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                stack.append(const)
            elif type(const) in (str, int):
                out.add(const)
    return out


def read_numbers(roots, keys, walk_into=lambda obj: True):
    """(read, write, value) for each number next to the step that the caller may change
    between calls: lazyx.compile guards them by value at each replay (`floats_changed`: a
    number that never changes, a setting, costs a comparison per call and stays a literal
    bound once), and hands a float seen to change to the step as a number of the call
    (`bind`): a run-time parameter of the replay from then on (or, where Python consumed it,
    part of the guard), never the traced value baked in. An int is only guarded: a changed
    one traces again (ints are sizes and indices as often as they are factors).

    Where: an entry of a dict, an attribute of an object, an element of a list, from `roots`
    down through dicts, lists and objects (`walk_into(obj)`: the caller's say on a frontend
    type -- a torch module tree is walked, a tensor or an optimizer is not), as deep as a
    module tree goes (`model.encoder._modules["attn"].temperature`). Which: a float whose
    key the step's code spells (`keys`: code_keys; `CFG["beta"]`) or the code of its holder's
    class (a module's `self.temperature` read in its forward, which the step only calls);
    an int whose key the step's code spells. A number nobody spells -- a counter the caller
    keeps next to the step -- must not guard the replay."""
    out, seen, visited = [], set(), set()
    stack = [(getter, obj, 0, frozenset()) for getter, obj in reversed(roots)]
    while stack and len(visited) < _MAX_OBJECTS:
        getter, obj, depth, holder_keys = stack.pop()
        if id(obj) in visited or depth > _MAX_DEPTH:
            continue
        visited.add(id(obj))
        if isinstance(obj, dict):
            if depth and len(obj) > _MAX_ITEMS:  # (a vocabulary, data: not settings)
                continue
            items, get, put = list(obj.items()), operator.getitem, dict.__setitem__
            float_keys = keys | holder_keys
        elif type(obj) is list:
            items = [(k, v) for k, v in enumerate(obj) if k in keys or k - len(obj) in keys]
            get, put, float_keys = operator.getitem, list.__setitem__, keys
        else:
            attrs = getattr(obj, "__dict__", None)
            if type(attrs) is not dict or isinstance(obj, (type, types.ModuleType)) or \
                    getattr(type(obj), "_lazyx_compiled", False) or not walk_into(obj):
                continue
            items, get, put = list(attrs.items()), getattr, _set_attr
            holder_keys = class_keys(type(obj))
            float_keys = keys | holder_keys
        for key, value in items:
            kind = type(value)
            if kind is float and key in float_keys or kind is int and key in keys:
                if (id(obj), key) not in seen:
                    seen.add((id(obj), key))
                    read = _Place(getter, get, key)
                    read.lazyx_name, read.lazyx_key = _name(obj, key), (id(obj), key)
                    out.append((read, lambda v, g=getter, p=put, k=key: p(g(), k, v), value))
            elif kind is dict or kind is list or not isinstance(value, _LEAVES) and \
                    hasattr(value, "__dict__"):
                stack.append((_Place(getter, get, key), value, depth + 1, holder_keys))
    return out


class _Place:
    """Reads what lies at `get(parent(), key)` now: an object below a step's root, or a
    number. Within a guard's pass (`_PASS`) each place is read once, since the numbers'
    places share their prefixes (a module tree: `model._modules["h"]._modules["0"]...`)."""
    __slots__ = ("parent", "get", "key", "stamp", "value", "lazyx_name", "lazyx_key")

    def __init__(self, parent, get, key):
        self.parent, self.get, self.key, self.stamp = parent, get, key, None

    def __call__(self):
        token = _PASS[0]
        if token is not None and self.stamp is token:
            return self.value
        value = self.get(self.parent(), self.key)
        if token is not None:
            self.stamp, self.value = token, value
        return value


_PASS = [None]  # the current guard pass's token (floats_changed), else None: no memo


_MAX_DEPTH = 16   # steps below a root: a module tree takes two a level (`_modules`, name)
_MAX_ITEMS = 256  # entries of a dict below the roots worth looking through
_MAX_OBJECTS = 50_000  # objects and containers looked through per trace (a bound, not a budget)
_LEAVES = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType,
           type, np.ndarray, np.generic, str, bytes, tuple, bool, int, float, complex,
           type(None)) + _GENERATORS
_CLASS_KEYS = {}


def class_keys(cls):
    """The names the methods of `cls` and its bases (`object` aside) spell: code_keys of each
    function, property and static or class method in their class dicts, `__init__` aside (it
    spells every attribute it sets: one no other method spells is not read). Per class."""
    found = _CLASS_KEYS.get(cls)
    if found is None:
        found = set()
        for base in cls.__mro__[:-1]:
            for name, member in list(vars(base).items()):
                if name == "__init__":
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                elif isinstance(member, property):
                    member = member.fget
                if isinstance(member, types.FunctionType):
                    found |= code_keys(member)
        found = _CLASS_KEYS[cls] = frozenset(found)
    return found


def changed_numbers(found):
    """'name: was -> now' for the first number `read_numbers` found that the traced call
    changed itself (a replay, running no Python, would not change it again), else None."""
    for read, _write, value in found:
        try:
            now = read()
        except (LookupError, AttributeError, TypeError):
            continue
        if type(now) is not type(value) or now != value and now == now:
            return f"{read.lazyx_name} changed while it ran ({value!r} -> {now!r})"
    return None


def bind(found, state_number):
    """Put each number `read_numbers` found in its place as `state_number(value, read)` while
    the step traces; [(read, write, value, symbolic)] for `unbind`."""
    bound = []
    for read, write, value in found:
        number = state_number(value, read)
        write(number)
        bound.append((read, write, value, number))
    return bound


def unbind(bound):
    """The plain numbers back in their places after the trace (a number the step replaced
    stays replaced, made plain: changed_by_step then names it)."""
    for read, write, value, number in reversed(bound):
        try:
            now = read()
        except (LookupError, AttributeError, TypeError):
            continue
        if now is number:
            write(value)
        elif isinstance(now, (SymFloat, SymInt)):
            write(plain(now))


def floats_changed(guards, varying):
    """A guard-miss message when a number `read_numbers` found holds another value now, else
    None. Every float found changed joins `varying` (traced again, each is a run-time
    parameter: one trace for all the floats a caller changed together, not one per float)."""
    why, _PASS[0] = None, object()
    try:
        for read, value in guards:
            try:
                now = read()
            except (LookupError, AttributeError, TypeError):
                return f"{read.lazyx_name}, a number the step reads, is gone"
            if type(value) is int:
                if type(now) is not int or now != value:
                    return (f"{read.lazyx_name} changed ({value!r} -> {now!r}), an int the "
                            f"step reads")
            elif now != value and (now == now or value == value) or type(now) is not float:
                varying.add(read.lazyx_key)
                why = why or (f"{read.lazyx_name} changed ({value!r} -> {now!r}), a float "
                              f"the step reads: from now on a run-time parameter")
        return why
    finally:
        _PASS[0] = None


def _set_attr(holder, key, value):
    holder.__dict__[key] = value  # (past a framework's __setattr__: Keras tracks attributes)
