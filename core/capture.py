"""What lazyx.compile records while it traces a step (core/replay.py uses it).

* Python numbers among the step's arguments are handed to the step as `SymFloat`/`SymInt`:
  real floats and ints that also remember how they were computed from the arguments. When
  one becomes a run-time parameter (`ir.param`), the parameter is linked to that expression,
  so a replay computes its new value from the new arguments (a new learning rate never
  recompiles). torch's dispatcher turns numbers into plain floats on the way (`alpha=-lr`);
  such a parameter is linked by value to an expression computed in this trace, unless the
  value is an integer or +-0.5 (too common among code constants to be told apart).
* Every random key is linked to the generator stream and counter it was drawn at.
* A sync inside the step (an observation) raises, naming the line; or, with
  on_observe="split", is remembered.

The hooks are installed on the module attributes frontends call (`ir.param`,
`compose.random_key`) only while some thread traces, and act only for that thread.
"""
import operator
import threading

import numpy as np

from . import compose, ir, runtime
from .source import format_line

_local = threading.local()
_lock = threading.Lock()
_active = [0]
_ORIGINAL = {}


class CompileError(RuntimeError):
    """A step lazyx.compile cannot replay (it observes a value, its graph changed)."""


class Recording:
    """One trace's links: parameters to number expressions, keys to generator streams."""

    def __init__(self, on_observe):
        self.on_observe = on_observe
        self.derived = {}     # float value -> expression, for every number derived in this trace
        self.params = {}      # id(param node) -> (node, expression, linked by value)
        self.keys = {}        # id(key node) -> (node, stream, counter)
        self.observed = None  # (cause, "file:line") of the first observation (split mode)


def current():
    return getattr(_local, "recording", None)


# ---------------------------------------------------------------- symbolic numbers

def _expr_of(x):
    expr = getattr(x, "_lazyx_expr", None)
    if expr is not None:
        return expr
    return lambda numbers, _x=x: _x


def _plain(x):
    if isinstance(x, SymFloat):
        return float.__float__(x)
    if isinstance(x, SymInt):
        return int.__int__(x)
    return x


def sym(value, expr):
    """`value` as a number that remembers `expr` (a function of the call's numbers)."""
    if type(value) is bool or not isinstance(value, (int, float)):
        return value
    out = SymFloat(value) if isinstance(value, float) else SymInt(value)
    out._lazyx_expr = expr
    rec = current()
    if rec is not None and isinstance(value, float) and value == value and \
            not float(value).is_integer() and abs(value) != 0.5:
        rec.derived.setdefault(float(value), expr)
        # frameworks that cast numbers to float32 tensors first (Keras) pass the rounded value
        rec.derived.setdefault(float(np.float32(value)), expr)
    return out


def _binary(op, reflected):
    def method(self, other):
        if type(other) is bool or not isinstance(other, (int, float)):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        result = op(_plain(a), _plain(b))
        ea, eb = _expr_of(a), _expr_of(b)
        return sym(result, lambda n: op(ea(n), eb(n)))
    return method


def _unary(op):
    def method(self):
        e = _expr_of(self)
        return sym(op(_plain(self)), lambda n: op(e(n)))
    return method


class SymFloat(float):
    """A float argument of a compiled step (or a number computed from one) while it traces."""


class SymInt(int):
    """An int argument of a compiled step (or a number computed from one) while it traces."""


for _cls in (SymFloat, SymInt):
    for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
        _op = getattr(operator, _name)
        setattr(_cls, f"__{_name}__", _binary(_op, False))
        setattr(_cls, f"__r{_name}__", _binary(_op, True))
    for _name in ("neg", "pos", "abs"):
        setattr(_cls, f"__{_name}__", _unary(getattr(operator, _name)))


# ---------------------------------------------------------------- hooks

def _param(value, dtype):
    node = _ORIGINAL["param"](value, dtype)
    rec = current()
    if rec is not None:
        expr = getattr(value, "_lazyx_expr", None)
        if expr is not None:
            rec.params[id(node)] = (node, expr, False)
        elif isinstance(value, (float, np.floating)):
            expr = rec.derived.get(float(value))
            if expr is not None:
                rec.params[id(node)] = (node, expr, True)
    return node


def _random_key(seed, counter=0, stream=None):
    node = _ORIGINAL["random_key"](seed, counter, stream)
    rec = current()
    if rec is not None and stream is not None:
        rec.keys[id(node)] = (node, stream, int(counter))
    return node


class _Observer:
    """A runtime listener: a sync while this thread traces is an observation inside the step."""

    def on_sync(self, cause, source, program):
        rec = current()
        if rec is None:
            return
        where = format_line(source) if source else "an unknown line"
        if rec.on_observe == "split":
            if rec.observed is None:
                rec.observed = (cause, where)
            return
        what = {"fallback": "an op with no lowering runs eagerly there (its inputs are read)",
                "data_dependent": "an op whose result shape depends on values",
                "explicit": "a barrier (lazyx.sync / mark_step) cuts the step"}.get(
                    cause, "a lazy value is read into Python (.item(), float(), print, bool/if)")
        raise CompileError(
            f"lazyx.compile: the step observes a value at {where}: {what}. A compiled step "
            f"is replayed without running Python, so it cannot read values while it runs. "
            f"Move that line out of the compiled function (e.g. return the value and read it "
            f"after the call), or pass lazyx.compile(fn, on_observe='split').")


_OBSERVER = _Observer()


def host_read(what):
    """A frontend read captured state eagerly (on the host) while a step is traced: the value
    would be baked into the replayed program. The step then runs lazily instead of being
    replayed (correct, not faster); lazyx.compile warns, naming `what`."""
    rec = current()
    if rec is not None and rec.observed is None:
        rec.observed = ("host read", what)


class recording:
    """Context manager: record this thread's trace into a new Recording."""

    def __init__(self, on_observe):
        self.rec = Recording(on_observe)

    def __enter__(self):
        with _lock:
            if _active[0] == 0:
                _ORIGINAL["param"], _ORIGINAL["random_key"] = ir.param, compose.random_key
                ir.param, compose.random_key = _param, _random_key
                runtime.LISTENERS.append(_OBSERVER)
            _active[0] += 1
        self.outer = current()
        _local.recording = self.rec
        return self.rec

    def __exit__(self, *exc):
        _local.recording = self.outer
        with _lock:
            _active[0] -= 1
            if _active[0] == 0:
                ir.param, compose.random_key = _ORIGINAL["param"], _ORIGINAL["random_key"]
                runtime.LISTENERS.remove(_OBSERVER)
        return False
