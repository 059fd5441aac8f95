"""lazyx.compile's guard: whether a traced entry fits a call (core/replay.py), and what a
trace's end says about whether it can be replayed at all."""
import numpy as np

from . import host_state
from .capture import _TENSORS, _flatten, _spec
from .capture_args import _spelled
from .debug import type_text
from .split_steps import same_values
from .symbolic import SymFloat, SymInt, decided_alike


def _result_needs_grad(result):
    """Whether a result of the traced call has a backward graph (torch's grad_fn), which a
    replay's results cannot have."""
    found = []
    try:
        _flatten(result, found, [])
    except TypeError:
        return False
    return any(_spec(type(t))[1][5](t) for t in found)


def _state_numbers_changed(numbers, reads, replayed=()):
    """'was -> now' for the first number kept in state (a learning rate in an optimizer's
    param_groups) that the traced call itself changed, else None. `numbers` ends with the
    values the trace read, in the order of `reads`; `replayed`: ids of the holders (param
    groups) whose numbers an effect each replay makes again changes (capture.replayed_effect)."""
    traced = numbers[len(numbers) - len(reads):]
    for was, read in zip(traced, reads):
        holder = getattr(read, "holder", None)
        if (holder is not None and id(holder) in replayed) or \
                getattr(read, "lazyx_counter", False):
            continue  # (a counter's number is its next value: capture.host_counter)
        try:
            now = read()
        except (LookupError, AttributeError, TypeError):
            continue  # (gone: the guard notices at the next call)
        if type(now) is not type(was) or now != was:
            return f"{was!r} -> {now!r}"
    return None


def _predict(entry, numbers):
    """The values the entry feeds its parameters for these numbers (keys by offset)."""
    out = []
    for f in entry.feed:
        if f[0] == "number":
            try:
                out.append(np.asarray(f[2](f[1](numbers))))
            except AttributeError:  # computed from a value a split step reads as it runs
                out.append(("read",))
        elif f[0] in ("baked", "const"):
            # (a constant array the step made from its numbers on the host -- np.linspace's,
            # np.interp's, np.quantile's -- is fed as traced: a verifying trace must find it
            # unchanged too)
            out.append(np.asarray(f[1]))
        elif f[0] == "key":
            out.append(("key", f[2]))
    return out


def constants_changed(entry, fresh):
    """Whether a trace fed the same parameters as the entry, but some constant the step made
    on the host (np.linspace(0, k, 5), np.quantile's indices and weights) has another value."""
    kept, now = ([f[1] for f in e.feed if f[0] in ("baked", "const")] for e in (entry, fresh))
    return len(kept) == len(now) and [f[0] for f in entry.feed] == [f[0] for f in fresh.feed] \
        and not same_values([np.asarray(v) for v in kept], [np.asarray(v) for v in now])


class _Miss:
    """Why an entry cannot replay this call (its guard held, but the state it finds does
    not fit the program; or, `read`, a split step read another bool or int than traced)."""
    __slots__ = ("why", "read")

    def __init__(self, why, read=False):
        self.why, self.read = why, read


def _with_state_numbers(entry, numbers):
    """The call's numbers, then the current values of the numbers the entry reads from state
    (capture.state_number); None if one of them cannot be read any more."""
    if not entry.state_numbers:
        return numbers
    try:
        return numbers + [read() for read in entry.state_numbers]
    except (LookupError, AttributeError, TypeError):
        return None


def _new_number(entry, numbers):
    """Whether an int or float that reached a parameter, not yet confirmed to be only that,
    changed."""
    first = entry.first_numbers
    return any(numbers[k] != first[k] for k in entry.unverified_numbers)


def _guard_miss(entry, numbers, key=None):
    """None when the entry's guard holds (besides shapes, already in the key); else why not
    (`key`: the call's structure key, to name a number argument as the call wrote it)."""
    for getter, obj in entry.roots:
        if getter() is not obj:
            return f"an object the step refers to was replaced (was {type(obj).__name__})"
    for obj, mode, value in entry.modes:
        if mode(obj) != value:
            return (f"the mode or structure of a {type(obj).__name__} the step uses changed "
                    f"(train/eval, submodules, parameters, param groups)")
    first_state = len(numbers) - len(entry.state_numbers)
    for k, cls, value in entry.numbers_by_value:
        if type(numbers[k]) is not cls or numbers[k] != value:
            what = f"Python number argument {_number_spelled(key, k)}" if k < first_state else \
                getattr(entry.state_numbers[k - first_state], "lazyx_name",
                        "a number kept in state (a learning rate)")
            return (f"{what} changed ({value!r} -> {numbers[k]!r}) and is "
                    f"part of the graph's structure, not a run-time parameter")
    for first, second in entry.ties:
        if first(numbers) != second(numbers):
            return (f"two numbers that were equal when the step was traced (two param groups' "
                    f"learning rates) now differ ({first(numbers)!r}, {second(numbers)!r}); "
                    f"the program reads the first for both")
    if entry.float_guards:
        why = host_state.floats_changed(entry.float_guards, entry.varying)
        if why is not None:
            return why
    if entry.host_arrays:
        why = host_state.arrays_changed(entry.host_arrays)
        if why is not None:
            return why
    for t, version, was in entry.host_tensors:
        if version(t) != was:
            return (f"a {type(t).__name__} kept in state off the lazyx device (the traced "
                    f"call read it) was written since")
    if entry.decisions and not decided_alike(entry.decisions, numbers):
        return ("what the step decided from a Python number argument (a comparison, "
                "min/max, an int) comes out otherwise for this call's numbers")
    return None


# ---------------------------------------------------------------- a call no variant fits

def _leaves(key, path, out):
    """(path, leaf) for each leaf of a _flatten key, in _flatten's (and _rebuild's) order."""
    if type(key) is tuple and key and key[0] in (tuple, list):
        for i, k in enumerate(key[1]):
            _leaves(k, (path, i), out)
    elif type(key) is tuple and key and key[0] is dict:
        for name, k in zip(key[1], key[2]):
            _leaves(k, (path, name), out)
    elif type(key) is tuple and key and key[0] == "structured":
        _, _kind, _cls, names, keys = key
        for i, k in enumerate(keys):
            _leaves(k, (path, names[i] if names else i), out)
    else:
        out.append((path, key))
    return out


def _call_leaves(key):
    return _leaves(key[0], "args", []) + _leaves(key[1], "kwargs", [])


_NUMBER_LEAVES = (int, float, SymFloat, SymInt)


def _number_spelled(key, k):
    """The k-th Python number of a call (its numbers counted alone, as _flatten collects
    them) as the call wrote it, `args[2]`; `#k` without the call's key."""
    if key is not None:
        paths = [p for p, leaf in _call_leaves(key) if leaf in _NUMBER_LEAVES]
        if k < len(paths):
            return _spelled(paths[k])
    return f"#{k}"


def _is_tensor(leaf):
    return any(leaf is spec for spec in _TENSORS.values())


def _leaf_text(leaf):
    if type(leaf) is tuple and leaf and leaf[0] == "value":
        return repr(leaf[1])
    if type(leaf) is tuple and leaf and leaf[0] == "scalar":
        return f"{leaf[1].__name__}({leaf[2]!r})"
    if _is_tensor(leaf):
        return "a tensor"
    return leaf.__name__ if isinstance(leaf, type) else repr(leaf)


def _differences(full, known):
    """What differs between a call's guard key `full` and a traced variant's `known`,
    as phrases (the structure first: with another structure, tensors do not pair up)."""
    key, shapes, aliases, ambient = full
    old_key, old_shapes, old_aliases, old_ambient = known
    if key != old_key:
        new, old = _call_leaves(key), _call_leaves(old_key)
        if [p for p, _ in new] != [p for p, _ in old]:
            return ["the arguments' structure changed (other containers, keys or lengths)"]
        return [f"{_spelled(path)} changed: {_leaf_text(b)} -> {_leaf_text(a)} (a non-tensor "
                f"argument is part of the guard, by value)"
                for (path, a), (_, b) in zip(new, old) if a != b]
    out = []
    if shapes != old_shapes:
        paths = [p for p, leaf in _call_leaves(key) if _is_tensor(leaf) or leaf == ("host",)]
        for path, (shape, dtype, grad), (old_shape, old_dtype, old_grad) in zip(
                paths, shapes, old_shapes):
            if (shape, dtype) != (old_shape, old_dtype):
                out.append(f"{_spelled(path)} changed: {type_text(old_shape, old_dtype)} -> "
                           f"{type_text(shape, dtype)}")
            elif grad != old_grad:
                out.append(f"{_spelled(path)} changed requires_grad: {old_grad} -> {grad}")
    if aliases != old_aliases:
        out.append("which arguments are the same tensor (or share memory) changed")
    if ambient != old_ambient:
        out.append(f"the mode around the call changed ({old_ambient!r} -> {ambient!r}: "
                   f"torch's grad mode or autocast)")
    return out


def call_miss(full, known):
    """Why no traced variant's guard key fits a call's (`full`), compared with the variant
    that differs least: 'args[0] changed: float32[4,8] -> float32[6,8]'."""
    best = None
    for other in known:
        diffs = _differences(full, other)
        rank = (other[0] != full[0], len(diffs))
        if diffs and (best is None or rank < best[0]):
            best = (rank, diffs)
    if best is None:
        return "no traced variant has this argument structure, shapes and dtypes"
    diffs = best[1]
    more = f"; and {len(diffs) - 3} more" if len(diffs) > 3 else ""
    return "no traced variant fits: " + "; ".join(diffs[:3]) + more
