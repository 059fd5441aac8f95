"""Windows at a compiled step's int argument: `x[i:i + b]`, `x[i]`, `x[i:i + b] = v`,
`x.narrow(0, i, b)`, `x.select(0, i)` replay for every new i (lazyx.compile, issue 13).

torch's C++ argument parser reads an index as a plain int (through __index__, a decision on
its value, core/symbolic.py, or through int's own slot, unseen) before __torch_dispatch__
sees aten.slice/select, so the window's start was a number of the code and each new i traced
again. While a step with int arguments is traced, a TorchFunctionMode (torch 2.13: it sees
Tensor.__getitem__/__setitem__ before that parser, and is off inside its own handler) sees
those calls first, with the symbolic numbers still in them: the
unit-step bounds are clamped by comparisons (guards by expression, core/symbolic.unit_slice),
the window is cut as an aten.slice with the plain start, and the start is registered under
(base shape, axis, start, length). The lowerings' run-time starts (aten/shapes.py's dynamic
slices, and the scatters the backward and functionalization's write-back make with the same
numbers) find it there and are linked to the number's expression (capture.linked), one
parameter per window. A code constant of the same value would be linked too: that is what
the replay's first call with a new int confirms by tracing again (core/replay.py _verify).

Nothing is pushed on the ordinary lazy path, nor for a step with no int argument.
Strided windows, a changing length, tensors or bools in the index are left to torch: their
numbers are guarded by value (correct, a new value traces again).
"""
import contextlib
import operator
import threading

import torch
from torch.overrides import TorchFunctionMode

from ...core import capture, ir
from ...core.symbolic import SymInt, index_bound, plain, unit_slice
from . import tensor as _tensor

_START = "int32"  # (as aten/shapes.py's run-time starts)
_local = threading.local()  # .starts: {(shape, axis, start, length): [number, param]}


def start_param(shape, axis, start, length):
    """The int32 run-time start of a unit-step window of `length` at `start` along `axis` of
    an operand of `shape` (a dynamic slice, or the dynamic update that writes one back):
    linked to the compiled step's number that a window registered at that key, else plain."""
    starts = getattr(_local, "starts", None)
    if starts:
        link = starts.get((shape, axis, start, length))
        if link is not None and link[0] is not None:
            if link[1] is None:  # (the forward window's, shared by its backward and write-back)
                link[1] = capture.linked(ir.param(start, _START), link[0])
            return link[1]
    return ir.param(start, _START)


def _symbolic(x):
    return type(x) is SymInt and x._lazyx_rec is capture.current()


def _register(shape, axis, start, length):
    """Remember that the window (shape, axis, plain start, length) starts at `start`, a
    number of the call. Two numbers of one value at one key (x[i:i + 4] and x[j:j + 4] with
    i == j) are told apart by no lowering: neither is linked (guarded by value instead)."""
    key = (shape, axis, plain(start), length)
    link = _local.starts.get(key)
    if link is None:
        _local.starts[key] = [start, None]
    elif link[0] is not None and link[0] is not start and not _same(link[0], start):
        link[0] = None


def _same(a, b):
    """Whether two numbers of the call are one expression: equal at other numbers too (each
    int moved by its own amount: i and j must not move alike)."""
    numbers = capture.current().numbers
    probe = [n + 7919 * (k + 1) if type(n) is int else n for k, n in enumerate(numbers)]
    try:
        return a._lazyx_expr(probe) == b._lazyx_expr(probe)
    except (ArithmeticError, ValueError, IndexError):
        return False


def _cut(t, axis, start, length):
    """t[start:start + length] along `axis` (a view, so writes reach t), its start registered
    when it is a number of the call and the window a run-time one (short of the axis)."""
    n = t.shape[axis]
    if _symbolic(start) and 0 < length < n:
        _register(tuple(t.shape), axis, start, length)
    s = plain(start)
    return torch.ops.aten.slice.Tensor(t, axis, s, s + length)


def _int_item(x):
    return isinstance(x, int) and type(x) is not bool


def _window_slice(item):
    """Whether a slice is one this module cuts: a bound symbolic, every bound an int, step 1."""
    bounds = (item.start, item.stop)
    return any(map(_symbolic, bounds)) and \
        all(b is None or _int_item(b) for b in bounds) and (item.step is None or item.step == 1)


def _narrowed(t, index):
    """(t cut at the index's symbolic items, what remains of the index) or None: those items
    become slice(None) or 0 of a window kept as a dimension, so the rest reads as before."""
    items = index if type(index) is tuple else (index,)
    if not any(_symbolic(i) or type(i) is slice and _window_slice(i) for i in items):
        return None
    if not all(i is None or i is Ellipsis or type(i) is slice or _int_item(i) for i in items):
        return None  # (advanced indexing: torch's own, the numbers guarded by value)
    consumed = sum(i is not None and i is not Ellipsis for i in items)
    if consumed > t.dim() or sum(i is Ellipsis for i in items) > 1:
        return None  # (torch's own error)
    axis, rest = 0, []
    for item in items:
        if item is None or item is Ellipsis:
            axis += t.dim() - consumed if item is Ellipsis else 0
            rest.append(item)
            continue
        n = t.shape[axis]
        if type(item) is slice and _window_slice(item):
            start, length = unit_slice(item, n)
            t, item = _cut(t, axis, start, length), slice(None)
        elif _symbolic(item):
            i = index_bound(item)
            if not -n <= i < n:
                return None  # (torch raises its IndexError)
            t, item = _cut(t, axis, i + n if i < 0 else i, 1), 0
        rest.append(item)
        axis += 1
    return t, tuple(rest)


def _bound(args, kwargs, names):
    """(tensor, *its arguments named `names`) of a call spelled positionally or by keyword,
    or None for any other spelling (torch's own, and its errors)."""
    given = list(args[1:])
    for name in names[len(given):]:
        if name not in kwargs:
            return None
        given.append(kwargs[name])
    if len(given) != len(names) or len(kwargs) != len(names) - (len(args) - 1):
        return None
    return (args[0], *given)


def _getitem(func, args, kwargs):
    cut = _narrowed(args[0], args[1]) if len(args) == 2 and not kwargs else None
    return NotImplemented if cut is None else func(cut[0], cut[1])


def _setitem(func, args, kwargs):
    cut = _narrowed(args[0], args[1]) if len(args) == 3 and not kwargs else None
    if cut is None:
        return NotImplemented
    func(cut[0], cut[1], args[2])  # (into the view: functionalization writes it back into t)
    return None


def _axis(t, dim):
    """`dim` as a plain axis of t (a symbolic one guarded by value), or None if none is."""
    if not _int_item(dim):
        return None
    dim = operator.index(dim)
    return dim + t.dim() if -t.dim() <= dim < 0 else dim if 0 <= dim < t.dim() else None


def _narrow(func, args, kwargs):
    bound = _bound(args, kwargs, ("dim", "start", "length"))
    if bound is None or not _symbolic(bound[2]) or not _int_item(bound[3]):
        return NotImplemented
    t, dim, start, length = bound
    axis = _axis(t, dim)
    if axis is None:
        return NotImplemented
    n, length = t.shape[axis], int(length)
    if not -n <= start <= n or length < 0:
        return NotImplemented  # (torch's errors)
    start = start + n if start < 0 else start
    return NotImplemented if start + length > n else _cut(t, axis, start, length)


def _select(func, args, kwargs):
    bound = _bound(args, kwargs, ("dim", "index"))
    if bound is None or not _symbolic(bound[2]):
        return NotImplemented
    t, dim, index = bound
    axis = _axis(t, dim)
    if axis is None or not -t.shape[axis] <= index < t.shape[axis]:
        return NotImplemented  # (torch's errors)
    return _cut(t, axis, index + t.shape[axis] if index < 0 else index, 1).select(axis, 0)


_HANDLERS = {"__getitem__": _getitem, "__setitem__": _setitem, "narrow": _narrow,
             "select": _select}


class _Windows(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        # (Tensor.__setitem__ is hooks.py's wrapper: it reaches the mode under its own name)
        handler = _setitem if func is torch.Tensor.__setitem__ else \
            _HANDLERS.get(getattr(func, "__name__", None))
        if handler is not None and args and isinstance(args[0], torch.Tensor) and \
                _tensor.on_device(args[0]):
            out = handler(func, args, kwargs)
            if out is not NotImplemented:
                return out
        return func(*args, **kwargs)


@contextlib.contextmanager
def _tracing():
    """While a step with an int argument is traced: the mode, and a fresh registry."""
    rec = capture.current()
    if rec is None or not any(type(n) is int for n in rec.numbers or ()):
        yield
        return
    outer, _local.starts = getattr(_local, "starts", None), {}
    try:
        with _Windows():
            yield
    finally:
        _local.starts = outer


capture.register_trace_hook(_tracing)
