"""lazyx.compile's guard: whether a traced entry fits a call (core/replay.py), and what a
trace's end says about whether it can be replayed at all."""
import numpy as np

from . import host_state
from .capture import _flatten, _spec
from .symbolic import decided_alike


def _result_needs_grad(result):
    """Whether a result of the traced call has a backward graph (torch's grad_fn), which a
    replay's results cannot have."""
    found = []
    try:
        _flatten(result, found, [])
    except TypeError:
        return False
    return any(_spec(type(t))[1][5](t) for t in found)


def _state_numbers_changed(numbers, reads):
    """'was -> now' for the first number kept in state (a learning rate in an optimizer's
    param_groups) that the traced call itself changed, else None. `numbers` ends with the
    values the trace read, in the order of `reads`."""
    traced = numbers[len(numbers) - len(reads):]
    for was, read in zip(traced, reads):
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
        elif f[0] == "baked":
            out.append(np.asarray(f[1]))
        elif f[0] == "key":
            out.append(("key", f[2]))
    return out


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


def _new_int(entry, numbers):
    """Whether an int that reached a parameter, not yet confirmed to be only that, changed."""
    first = entry.first_numbers
    return any(numbers[k] != first[k] for k in entry.unverified_ints)


def _guard_miss(entry, numbers):
    """None when the entry's guard holds (besides shapes, already in the key); else why not."""
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
            what = f"Python number argument {k}" if k < first_state else \
                "a number kept in state (a learning rate)"
            return (f"{what} changed ({value!r} -> {numbers[k]!r}) and is "
                    f"part of the graph's structure, not a run-time parameter")
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
