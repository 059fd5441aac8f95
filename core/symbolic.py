"""Symbolic numbers: the Python numbers a step traced by lazyx.compile computes with.

A float or int argument of the step is handed to it as a `SymFloat`/`SymInt`: a real number
that also remembers how it was computed from the call's numbers (an expression: a function
of them), through + - * / // % ** and unary ops. When one becomes a run-time parameter of the
graph (core/capture.py's hooks), the parameter is linked to its expression, so a replay
computes its new value from the new call. A float a split step reads (`.item()`,
core/split_steps.py) is one too, computed from what the replay reads back; what Python
decides from such a number -- a comparison, an int, a plain float -- is recorded in the
trace's Recording as a guard of the replay (`_decided`).
"""
import math
import operator
import threading

import numpy as np

_local = threading.local()  # this thread's Recording (core/capture.py), while it traces


def current():
    return getattr(_local, "recording", None)


# ---------------------------------------------------------------- symbolic numbers

def _expr_of(x):
    expr = getattr(x, "_lazyx_expr", None)
    if expr is not None:
        return expr
    return lambda numbers, _x=x: _x


def plain(x):
    """A symbolic number (SymFloat, SymInt) as a plain float or int; anything else as is."""
    if isinstance(x, SymFloat):
        return float.__float__(x)
    if isinstance(x, SymInt):
        return int.__int__(x)
    return x


def linkable(value):
    """Whether a float can be told from a code constant by its value: not NaN, not an
    integer, not +-0.5 (too common among constants). A split step's read of one is a number
    its replays recompute (core/split_steps)."""
    return isinstance(value, float) and value == value and not float(value).is_integer() \
        and abs(value) != 0.5


def sym(value, expr):
    """`value` as a number that remembers `expr` (a function of the call's numbers)."""
    if type(value) is bool or not isinstance(value, (int, float)):
        return value
    out = SymFloat(value) if isinstance(value, float) else SymInt(value)
    out._lazyx_expr = expr
    rec = current()
    out._lazyx_rec = rec
    if rec is not None and isinstance(value, float) and value == value:
        # a parameter a framework made of it as a plain number (torch's `alpha=-lr`, TF's
        # tf.constant(k), Keras' conversions) is linked by value: whole numbers too, since
        # the first call with new numbers traces again to confirm the link (a code constant
        # that equalled the number is then told apart), where guarding such a number by
        # value traced again at every new value. (Also by its float32 rounding: frameworks
        # that cast numbers to float32 tensors first, Keras, pass that.) Two numbers of one
        # value (the decay and no-decay param groups' learning rate, set by one schedule)
        # link their parameters to the first: the other is tied to it, so that replays guard
        # that they stay equal rather than its value (replay_entry)
        for key in (float(value), float(np.float32(value))):
            linked = rec.derived.setdefault(key, expr)
            if linked is not expr:
                rec.ties.append((linked, expr))
    return out


def state_number(value, read):
    """A Python number kept in state rather than passed to the step (a torch optimizer's
    learning rate, which a scheduler changes between calls): while lazyx.compile traces, it
    becomes a number of the call, as if it were an argument, and `read()` gives its value at
    each later call. So a new value is a run-time parameter (or, when the graph does not read
    it, part of the guard) instead of the trace's value baked in. Outside a trace: `value`."""
    rec = current()
    if rec is None or rec.numbers is None or type(value) not in (int, float):
        return value
    k = len(rec.numbers)
    rec.numbers.append(value)
    rec.state_numbers.append(read)
    return sym(value, lambda n, _k=k: n[_k])


def _binary(op, reflected):
    def method(self, other):
        if type(other) is bool or not isinstance(other, (int, float)):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        result = op(plain(a), plain(b))
        ea, eb = _expr_of(a), _expr_of(b)
        return _tainted(sym(result, lambda n: op(ea(n), eb(n))), a, b)
    return method


def _unary(op):
    def method(self):
        e = _expr_of(self)
        return _tainted(sym(op(plain(self)), lambda n: op(e(n))), self)
    return method


def _tainted(out, *operands):
    """`out` marked as computed from a value a split step read (split_steps.observed), if some
    operand was: what Python then decides from it becomes part of the guard (_decided)."""
    if any(getattr(x, "_lazyx_read", False) for x in operands):
        try:
            out._lazyx_read = True
        except AttributeError:  # (a result that is no symbolic number)
            pass
    return out


def _decided(op, reflected=False):
    """A comparison or conversion of a symbolic number: its outcome is a guard of the replay
    (`if loss.item() > 2:`, `min(t, 1.0)`, `int(n)` take the same branch and value, or the step
    traces again). A float() is not a decision: frameworks make a number plain that way before
    it becomes a parameter (linked to it by value, core/capture.py); nor is a hash (a cache's
    key: TF hashes every number it makes a constant of)."""
    def method(self, *other):
        if other and (type(other[0]) is bool or not isinstance(other[0], (int, float))):
            return NotImplemented
        args = (other[0], self) if reflected else (self,) + other
        result = op(*[plain(a) for a in args])
        rec = current()
        if rec is not None and op is not float and op is not hash and \
                any(getattr(a, "_lazyx_rec", None) is rec for a in args) and not (
                    op in _EQUALITY and any(_of_earlier_trace(a, rec) for a in args)):
            # (equal to a number of an earlier trace: a cache's key lookup -- TF's cache of
            # scalar EagerTensors compares tf.constant(k)'s k with the k it cached -- which
            # gives an equal value either way, not a branch; as a guard, every new k missed)
            # (a number of an earlier trace -- one a framework cached, TF's constants -- is a
            # constant here: its expression reads another call's numbers)
            exprs = [_expr_of(a) if getattr(a, "_lazyx_rec", None) is rec else
                     (lambda n, _v=plain(a): _v) for a in args]
            guard = (lambda n: op(*[e(n) for e in exprs]), result)
            # (one computed from a value a split step read is checked once that is read)
            if any(getattr(a, "_lazyx_read", False) for a in args):
                rec.guards.append(guard)
            else:
                rec.decisions.append(guard)
        return result
    return method


_EQUALITY = (operator.eq, operator.ne)


def _of_earlier_trace(x, rec):
    return isinstance(x, (SymFloat, SymInt)) and getattr(x, "_lazyx_rec", None) is not rec


def decided_alike(guards, numbers):
    """Whether each (expression, outcome) recorded by _decided comes out the same for these
    numbers (a new value the trace's math refuses does not)."""
    for expr, outcome in guards:
        try:
            if expr(numbers) != outcome:
                return False
        except (ArithmeticError, ValueError):
            return False
    return True


class SymFloat(float):
    """A float argument of a compiled step (or a number computed from one) while it traces."""
    # Keras reads a number's dtype as getattr(x, "dtype", type(x)) and knows only float
    # itself (a weak float32): keras.ops.multiply(x, k) raised "Invalid dtype: SymFloat"
    dtype = float


class SymInt(int):
    """An int argument of a compiled step (or a number computed from one) while it traces."""
    dtype = int


_round_to_int = _decided(round)
_round_to_digits = _binary(round, False)


def _rounded(self, ndigits=None):
    # round(x) is an int (decided: guarded); round(x, 3) a number like x (logged losses)
    return _round_to_int(self) if ndigits is None else _round_to_digits(self, ndigits)


for _cls in (SymFloat, SymInt):
    for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
        _op = getattr(operator, _name)
        setattr(_cls, f"__{_name}__", _binary(_op, False))
        setattr(_cls, f"__r{_name}__", _binary(_op, True))
    for _name in ("neg", "pos", "abs"):
        setattr(_cls, f"__{_name}__", _unary(getattr(operator, _name)))
    for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(_cls, f"__{_name}__", _decided(getattr(operator, _name)))
    # (what Python makes of the number: a branch, an int, a rounded value, a plain float)
    for _name, _op in (("bool", bool), ("int", int), ("index", operator.index),
                       ("trunc", math.trunc), ("floor", math.floor), ("ceil", math.ceil),
                       ("float", float)):
        if _name != "index" or _cls is SymInt:
            setattr(_cls, f"__{_name}__", _decided(_op))
    _cls.__round__ = _rounded
    _cls.__hash__ = _decided(hash)


# ---------------------------------------------------------------- index bounds

def index_bound(x):
    """An index or slice bound as an int. A symbolic one (a number of a lazyx.compile'd call)
    stays symbolic: what a frontend decides from it are comparisons, guards of the replay by
    expression, and as a dynamic slice's start it becomes a run-time parameter -- `X[i:i + b]`
    replays for every new i. (int() or slice.indices() would guard its value: a minibatch
    loop traced again at every batch.)"""
    return x if isinstance(x, int) else operator.index(x)


def unit_slice(item, n):
    """(start, length) of a slice of step 1 over an axis of size n, clamped as slice.indices
    clamps; the start may stay symbolic (index_bound), the length is a plain int."""
    start = 0 if item.start is None else _clamped(index_bound(item.start), n)
    stop = n if item.stop is None else _clamped(index_bound(item.stop), n)
    length = stop - start
    return start, (int(length) if length > 0 else 0)


def _clamped(bound, n):
    """A slice bound of step 1 in [0, n], a negative one counted from the end."""
    if bound < 0:
        bound = bound + n
        return 0 if bound < 0 else bound
    return n if bound > n else bound


def unit_step(item):
    """Whether a slice's step is 1 (None included)."""
    return item.step is None or operator.index(item.step) == 1
