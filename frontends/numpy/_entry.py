"""The NumPy frontend's one entry: cut check -> operands to nodes -> lowering -> wrap.

Every traced NumPy function funnels through here (as torch's ``dispatch`` and TF's
``registry.lower`` do), so the per-op work that does not depend on the op is written once:

* ``apply(ufunc, args)`` (and its ``unary``/``binary`` fast paths) -- element-wise
  functions, operators and ``__array_ufunc__``: NumPy's loop dtypes (NEP 50, weak Python
  scalars) come from a plan memoized per (ufunc, operand dtype signature), operands are
  converted and broadcast, then the pure lowering from ``_ufuncs.UFUNCS`` runs and its
  node(s) are wrapped;
* ``@traced(...)`` -- other functions: the decorated lowering takes IR nodes (and static
  arguments) and returns IR node(s);
* ``array_ufunc`` -- NEP 13, using tables that the modules defining gufuncs and ufunc
  reductions register into (so this module imports none of them).

Python scalars stay run-time parameters (``ir.param``): a changing value never recompiles.
"""
import functools
import inspect

import numpy as np

from ...core import compose, ops, runtime, source
from ...core import dtypes as dt
from ...core.ir import param
from ...core.symbolic import SymFloat, SymInt
from ...core.tables import Table, caller
from ._base import LazyArray, wrap
from ._complex import lowering as complex_lowering
from ._fallback import observe_with, run_eagerly
from ._promote import (UnsupportedDtype, as_node, assign, broadcast_node, broadcast_shapes,
                       broadcast_shapes_or_none, dtype_key, resolve_ufunc, shape_of,
                       shape_text)
from ._special import SPECIAL
from ._special import lowers as scipy_lowers
from ._special import name as ufunc_name
from ._ufuncs import UFUNCS, fill

_maybe_cut = runtime.maybe_cut
_OP_LINE = source.OP_LINE
_convert = ops.convert


# ---------------------------------------------------------------- registration

# ufunc -> fn(*inputs, dtype=None, ...) for np.matmul / np.vecdot calls
GUFUNCS = Table("lazyx.frontends.numpy GUFUNCS")
REDUCE = Table("lazyx.frontends.numpy REDUCE")  # ufunc -> fn(ufunc, x, **kwargs): ufunc.reduce
ACCUMULATE = Table("lazyx.frontends.numpy ACCUMULATE")  # the same for ufunc.accumulate
# ufunc -> fn(ufunc, a, indices, b) -> True when it updated the lazy `a` (ufunc.at), else
# False (NumPy runs it, on a host copy written back: _fallback.py)
AT = Table("lazyx.frontends.numpy AT")
# ufunc -> fn(ufunc, a, indices, axis=, dtype=) -> the lazy result, or None (NumPy runs it)
REDUCEAT = Table("lazyx.frontends.numpy REDUCEAT")


def register(table, key, fn):
    """table[key] = fn, refusing a second entry (naming both places)."""
    return table.add(key, fn, caller())


# ---------------------------------------------------------------- ufuncs

_POWERS = (np.power, np.float_power)
_SQRT_LOOPS = ("float32", "float64")
_PLANS = {}   # (ufunc, IR dtype or int/float per operand) -> (lowering, loop dtypes, nout)
_PLAN_LIMIT = 1 << 14
_broadcast_in_dim = ops.broadcast_in_dim


def _plan(key):
    """(lowering, loop IR dtypes, nout) for key = (ufunc, operand dtype keys...); memoized.
    The lowering is None for a loop that is left to NumPy (scipy's complex loops)."""
    ufunc, keys = key[0], key[1:]
    np_keys = tuple(k if k is int or k is float or k is complex else np.dtype(k) for k in keys)
    loop = resolve_ufunc(ufunc, np_keys)  # NumPy's TypeError
    plan = (_lowering(ufunc, loop), loop, ufunc.nout)
    if len(_PLANS) >= _PLAN_LIMIT:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def _lowering(ufunc, loop):
    """The lowering for `ufunc` on these loop dtypes, or None where scipy runs it (scipy's
    complex loops: scipy.special's table is real-only)."""
    if ufunc in UFUNCS:
        return complex_lowering(ufunc, loop, ufunc.nin)
    if any(dt.is_complex(d) for d in loop[:ufunc.nin]):
        return None
    return SPECIAL[ufunc]


def apply(ufunc, args, dtype=None):
    """ufunc(*args) traced: a LazyArray (or a tuple of them for multi-output ufuncs).

    The common case -- lazy arrays and Python int/float operands, no dtype= -- costs one
    plan lookup plus the nodes themselves; anything else takes `_apply_general`.
    """
    if dtype is None:
        if len(args) == 2:
            return binary(ufunc, args[0], args[1])
        if len(args) == 1 and type(args[0]) is LazyArray and ufunc.nin == 1:
            return unary(ufunc, args[0])
    _maybe_cut()
    with _OP_LINE:
        return _apply_general(ufunc, args, dtype)


def unary(ufunc, a):
    """ufunc(a) for a LazyArray `a` and a one-input ufunc (the caller checked both)."""
    _maybe_cut()
    with _OP_LINE:  # one user-line lookup for every node this op makes
        na = a.__lazyx_handle__.node
        key = (ufunc, na.dtype)
        plan = _PLANS.get(key) or _plan(key)
        lower, loop, nout = plan
        if lower is None:
            return _eagerly(ufunc, (a,))
        d = loop[0]
        out = lower(na if na.dtype == d else _convert(na, dtype=d))
        if nout == 1:
            d = loop[1]
            return wrap(out if out.dtype == d else _convert(out, dtype=d))
        return _wrap_outputs(out, loop[1:])


def binary(ufunc, a, b):
    """ufunc(a, b) with no dtype=: the path operators and NumPy calls take."""
    _maybe_cut()
    with _OP_LINE:  # one user-line lookup for every node this op makes
        if ufunc is np.power or ufunc is np.float_power:  # x ** 2 -> x * x and int checks
            return _apply_general(ufunc, (a, b))
        ta, tb = type(a), type(b)
        if ta is LazyArray:
            na = a.__lazyx_handle__.node
            ka = na.dtype
        elif ta is float or ta is int:
            na, ka = None, ta
        else:
            return _apply_general(ufunc, (a, b))
        if tb is LazyArray:
            nb = b.__lazyx_handle__.node
            kb = nb.dtype
        elif tb is float or tb is int:
            nb, kb = None, tb
        else:
            return _apply_general(ufunc, (a, b))
        key = (ufunc, ka, kb)
        plan = _PLANS.get(key) or _plan(key)
        lower, loop, nout = plan
        if lower is None:
            return _eagerly(ufunc, (a, b))
        da, db = loop[0], loop[1]
        try:
            if na is not None and na.dtype != da:
                na = _convert(na, dtype=da)
            if nb is not None and nb.dtype != db:
                nb = _convert(nb, dtype=db)
            # a Python number is one param leaf of its partner's shape (a splat: core/ir.py)
            if na is None:
                na = param(a, da, () if nb is None else nb.shape)
            if nb is None:
                nb = param(b, db, na.shape)
        except OverflowError:  # a Python int out of the loop dtype's range
            return _apply_general(ufunc, (a, b))
        sa, sb = na.shape, nb.shape
        if sa != sb:
            # a rank-0 operand (a Python scalar's parameter) needs no checks to stretch
            if not sa:
                na = _broadcast_in_dim(na, shape=sb, broadcast_dimensions=())
            elif not sb:
                nb = _broadcast_in_dim(nb, shape=sa, broadcast_dimensions=())
            else:
                shape = broadcast_shapes(sa, sb)
                na, nb = broadcast_node(na, shape), broadcast_node(nb, shape)
        out = lower(na, nb)
        if nout == 1:
            d = loop[2]
            return wrap(out if out.dtype == d else _convert(out, dtype=d))
        return _wrap_outputs(out, loop[2:])


def _eagerly(ufunc, args, kwargs=None):
    """The ufunc run by NumPy (or scipy) on host values: a counted fallback."""
    return run_eagerly(ufunc, ufunc_name(ufunc), args, kwargs or {})


def _wrap_outputs(outs, dtypes):
    return tuple(wrap(o if o.dtype == d else _convert(o, dtype=d))
                 for o, d in zip(outs, dtypes))


def _apply_general(ufunc, args, dtype=None):
    """Any operands (NumPy scalars and arrays, lists, bools), dtype=, powers (cut checked)."""
    keys = tuple([dtype_key(a) for a in args])
    signature = None
    if dtype is not None:
        signature = (None,) * ufunc.nin + (np.dtype(dtype),) * ufunc.nout
    try:
        loop = resolve_ufunc(ufunc, keys, signature)
    except UnsupportedDtype:  # np.timedelta64(1, 'h') * lazy: NumPy's, a host result
        return _eagerly(ufunc, args, None if dtype is None else {"dtype": dtype})
    lower = _lowering(ufunc, loop)
    if lower is None:
        return _eagerly(ufunc, args, None if dtype is None else {"dtype": dtype})
    if ufunc in _COMPARISONS and dtype is None:
        decided = _compare_out_of_range(ufunc, args, loop)
        if decided is not None:
            return decided
    if len(args) == 1:
        nodes = [as_node(args[0], loop[0])]
    else:
        shape = broadcast_shapes(*[shape_of(a) for a in args])
        nodes = [broadcast_node(as_node(a, loop[i]), shape) for i, a in enumerate(args)]
    if ufunc is np.power and dt.is_int(loop[1]):
        _check_int_power(args[1])
    if ufunc in _POWERS and _is_host_scalar(args[1]):
        # (a number argument of a compiled step stays symbolic: its comparisons below are
        # guards of the replay, and pow's exponent a run-time parameter. Made plain, the
        # trace's exponent was baked in -- or x * x, or x itself taken -- while the same
        # number, reaching another op, was a parameter: every replay computed x ** 1.0)
        exponent = args[1] if isinstance(args[1], (SymFloat, SymInt)) else \
            np.asarray(args[1]).item()
        if ufunc is np.power and exponent == 0.5 and loop[0] in _SQRT_LOOPS:
            # NumPy's float32/float64 power loop takes a scalar 0.5 as sqrt: sqrt(-0.0) is
            # -0.0 and sqrt(-inf) nan, where pow gives +0.0 and inf
            out = ops.sqrt(nodes[0])
        else:  # x ** 2 is x * x, as in every framework (the same graph as torch's and TF's)
            out = compose.power_scalar(nodes[0], exponent)
    else:
        out = lower(*nodes)
    if ufunc.nout == 1:
        return wrap(_as_dtype(out, loop[-1]))
    return tuple(wrap(_as_dtype(o, d)) for o, d in zip(out, loop[ufunc.nin:]))


# NumPy 2 compares an array with a Python int outside its dtype's range without raising: the
# int lies below (or above) every element, which decides the answer alone.
_COMPARISONS = {np.less: "lt", np.less_equal: "le", np.greater: "gt", np.greater_equal: "ge",
                np.equal: "eq", np.not_equal: "ne"}
_IF_FIRST_BELOW = {"lt": True, "le": True, "gt": False, "ge": False, "eq": False, "ne": True}
_MIRROR = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _compare_out_of_range(ufunc, args, loop):
    if len(args) != 2:
        return None
    name = _COMPARISONS[ufunc]
    for i, (s, x) in enumerate((args, args[::-1])):
        if type(s) is not int or not dt.is_int(loop[i]):
            continue
        info = np.iinfo(loop[i])
        if info.min <= s <= info.max:
            continue
        op = name if i == 0 else _MIRROR[name]  # now: s <op> x
        answer = _IF_FIRST_BELOW[op] if s < info.min else not _IF_FIRST_BELOW[op]
        if s > info.max and op in ("eq", "ne"):
            answer = op == "ne"
        node = as_node(x)
        return wrap(broadcast_node(fill(answer, dt.BOOL, ()), node.shape))
    return None


def _is_host_scalar(value):
    return not isinstance(value, LazyArray) and np.ndim(value) == 0


def _as_dtype(node, dtype):
    return node if node.dtype == dtype else ops.convert(node, dtype=dtype)


def _check_int_power(exponent):
    # Known at trace time only for host values; lazy exponents follow the IR (0 unless +-1).
    if not isinstance(exponent, LazyArray) and np.any(np.asarray(exponent) < 0):
        raise ValueError("Integers to negative integer powers are not allowed.")


# ---------------------------------------------------------------- every other function

def traced(*operands):
    """Decorator: the public NumPy function for a lowering.

    The lowering's parameters named in `operands` receive IR nodes (the first from any
    array-like; the others may also be None, or True for NumPy's ``where=True``, which pass
    through); it returns a node or a tuple of nodes, which the entry wraps and writes to
    ``out`` when the caller gave one (the lowering declares ``out=None`` only so that the
    public signature has it: it never sees it). The cut check runs first.
    """
    def decorate(lower):
        names = list(inspect.signature(lower).parameters)
        where = [(names.index(name), name) for name in operands]
        out_at = names.index("out") if "out" in names else None

        def public(*args, **kwargs):
            _maybe_cut()
            out = kwargs.pop("out", None)
            if out_at is not None and len(args) > out_at:
                out, args = args[out_at], args[:out_at] + (None,) + args[out_at + 1:]
            args = list(args)
            for k, (i, name) in enumerate(where):
                if i < len(args):
                    args[i] = _operand(args[i], k)
                elif name in kwargs:
                    kwargs[name] = _operand(kwargs[name], k)
            with _OP_LINE:
                result = lower(*args, **kwargs)
            if type(result) is tuple:
                result = tuple(LazyArray(r) for r in result)
            else:
                result = LazyArray(result)
            return result if out is None else assign(out, result)

        functools.update_wrapper(public, lower)
        public.lowering = lower
        return public
    return decorate


def _operand(x, k):
    if type(x) is LazyArray:
        return x.__lazyx_handle__.node
    if k and (x is None or x is True):
        return x
    return as_node(x)


# ---------------------------------------------------------------- NEP 13

_PLAIN = (LazyArray, np.ndarray, np.generic, int, float, complex, bool, list, tuple)
_REDUCE_KWARGS = frozenset(("axis", "dtype", "out", "keepdims", "initial", "where"))


def array_ufunc(ufunc, method, inputs, kwargs):
    """The body of LazyArray.__array_ufunc__ (NEP 13)."""
    if not kwargs and method == "__call__" and (ufunc in UFUNCS or scipy_lowers(ufunc)):
        for x in inputs:
            t = type(x)
            if t is not LazyArray and t is not float and t is not int and \
                    not isinstance(x, _PLAIN) and hasattr(t, "__array_ufunc__"):
                return NotImplemented
        return apply(ufunc, inputs)
    for x in inputs + tuple(kwargs.get("out", ())):
        if not isinstance(x, _PLAIN) and hasattr(type(x), "__array_ufunc__"):
            return NotImplemented
    out = kwargs.pop("out", None)
    casting = "same_kind"
    where = True
    if method == "__call__" and _traceable_call(ufunc, kwargs, out):
        if ufunc in GUFUNCS:
            result = GUFUNCS[ufunc](*inputs, **kwargs)
        else:
            casting = kwargs.pop("casting", casting)
            where = kwargs.pop("where", True)
            if where is not True:
                _check_where_shape(inputs, out, where)
            result = apply(ufunc, inputs, dtype=kwargs.get("dtype"))
    elif method == "outer" and ufunc.nin == 2 and ufunc not in GUFUNCS and \
            _traceable_call(ufunc, kwargs):
        casting = kwargs.pop("casting", casting)
        result = apply(ufunc, _outer_operands(*inputs), dtype=kwargs.get("dtype"))
    elif method == "reduce" and ufunc in REDUCE and set(kwargs) <= _REDUCE_KWARGS:
        result = REDUCE[ufunc](ufunc, inputs[0], **kwargs)
    elif method == "accumulate" and ufunc in ACCUMULATE and set(kwargs) <= {"axis", "dtype"}:
        result = ACCUMULATE[ufunc](ufunc, inputs[0], **kwargs)
    elif method == "reduceat" and ufunc in REDUCEAT and len(inputs) == 2 and \
            set(kwargs) <= {"axis", "dtype"} and \
            (result := REDUCEAT[ufunc](ufunc, *inputs, **kwargs)) is not None:
        pass
    elif method == "at" and ufunc in AT and out is None and not kwargs and \
            len(inputs) == 3 and AT[ufunc](ufunc, *inputs):
        return None
    elif method == "at" and isinstance(inputs[0], np.ndarray) and out is None:
        # a host array written from lazy values (numpy-ml's col2im: np.add.at(host, idx,
        # lazy)) reads them, as `host += lazy` does: an observation, not a missing lowering
        return observe_with(ufunc.at, inputs, kwargs)
    else:
        name = ufunc_name(ufunc) + ("" if method == "__call__" else f".{method}")
        return run_eagerly(getattr(ufunc, method), name, inputs,
                           dict(kwargs, out=out) if out is not None else kwargs)
    if out is None:
        return result
    results = result if isinstance(result, tuple) else (result,)
    for i, (o, r) in enumerate(zip(out, results)):
        if o is not None:
            assign(o, r, ufunc, casting=casting, index=i,
                   where=None if where is True else where)
    written = tuple(o if o is not None else r for o, r in zip(out, results))
    return written if isinstance(result, tuple) else written[0]


def _outer_operands(a, b):
    """ufunc.outer(a, b) is ufunc(a, b) with a's axes before all of b's: a gets b.ndim unit
    axes at its end (a Python number stays one, and weak)."""
    extra = len(shape_of(b))
    if not extra or type(a) in (int, float, complex, bool):
        return a, b
    if isinstance(a, LazyArray):
        return wrap(ops.reshape(a._node, new_sizes=a._node.shape + (1,) * extra)), b
    a = np.asarray(a)
    return a.reshape(a.shape + (1,) * extra), b


def _traceable_call(ufunc, kwargs, out=None):
    if ufunc not in UFUNCS and ufunc not in GUFUNCS and not scipy_lowers(ufunc):
        return False
    # "unsafe" only loosens the output's cast (inputs always cast to the loop's dtype here);
    # the stricter rules also judge the inputs: NumPy's own call does that
    casting = kwargs.get("casting", "same_kind")
    traced = ("same_kind",) if ufunc in GUFUNCS else ("same_kind", "unsafe")
    where = kwargs.get("where", True)
    if where is not True and (ufunc in GUFUNCS or not _lazy_where(where, out)):
        return False
    if casting not in traced:
        return False
    return set(kwargs) <= {"dtype", "casting", "where"}


def _check_where_shape(inputs, out, where):
    """NumPy's error for a `where=` mask that does not broadcast with the operands."""
    shapes = [shape_of(x) for x in inputs] + [o.shape for o in out] + [shape_of(where)]
    if broadcast_shapes_or_none(*shapes) is None:
        raise ValueError("operands could not be broadcast together with shapes " +
                         "".join(shape_text(s) + " " for s in shapes))


def _lazy_where(where, out):
    """Whether `where=` can be a select into the outputs: every output given and lazy (the
    positions `where` leaves alone keep their values: NumPy leaves a missing output's
    uninitialized), and the mask a boolean array."""
    if not out or any(not isinstance(o, LazyArray) for o in out):
        return False
    if isinstance(where, LazyArray):
        return where.dtype == np.bool_
    return np.asarray(where).dtype == np.bool_
