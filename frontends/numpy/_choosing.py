"""Choosing values element by element: np.where, np.select, np.clip, np.piecewise.

Each is a chain of selects (or max/min) in the graph. Python numbers follow NumPy's own
function, not a ufunc's NEP 50 rule, where the two differ: an out-of-range Python int is
wrapped by where/select, and dropped as a bound by clip when it lies past the dtype's end.
"""
import numpy as np

from ...core import dtypes as dt
from ...core import ops, runtime
from ._base import LazyArray, wrap
from ._fallback import run_eagerly
from ._entry import apply
from ._indexing import nonzero
from ._promote import (as_lazy, as_node, assign, broadcast_node, broadcast_shapes,
                       dtype_key, ir_dtype, resolve_ufunc, result_ir_dtype, shape_of)


def where(condition, x=None, y=None, /):
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    runtime.maybe_cut()
    dtype = result_ir_dtype(x, y)
    shape = broadcast_shapes(tuple(shape_of(condition)), tuple(shape_of(x)), tuple(shape_of(y)))
    cond = broadcast_node(as_node(condition, dt.BOOL), shape)
    return wrap(ops.select(cond, broadcast_node(as_node(_cast_int(x, dtype), dtype), shape),
                           broadcast_node(as_node(_cast_int(y, dtype), dtype), shape)))


def _cast_int(value, dtype):
    """NumPy's where and select cast a Python int through its own array (int64, or uint64
    past it) with an unsafe cast: np.where(c, int8_array, 1000) holds -24, no OverflowError
    as a ufunc would raise."""
    if type(value) is not int or not dt.is_int(dtype):
        return value
    info = np.iinfo(dtype)
    if info.min <= value <= info.max:
        return value
    host = np.asarray(value)  # NumPy's OverflowError past uint64
    return host.astype(host.dtype if host.dtype == object else dtype)[()]


def select(condlist, choicelist, default=0):
    """NumPy's: the first choice whose condition holds, else `default`; Python numbers among
    the choices and the default promote weakly (NEP 50), as in NumPy's own."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    runtime.maybe_cut()
    choices = list(choicelist) + [default]
    try:
        dtype = np.result_type(*(c if type(c) in (int, float, complex) else
                                 c.dtype if isinstance(c, LazyArray) else np.asarray(c)
                                 for c in choices))
    except TypeError as err:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {err}") \
            from None
    if dtype.kind not in "biufc":
        return run_eagerly(np.select, "numpy.select", (condlist, choicelist, default), {})
    for i, cond in enumerate(condlist):
        kind = cond.dtype if isinstance(cond, LazyArray) else np.asarray(cond).dtype
        if kind != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shape = broadcast_shapes(*(tuple(shape_of(v)) for v in list(condlist) + choices))
    target = ir_dtype(dtype)

    def node(value):
        host = value if isinstance(value, LazyArray) else np.asarray(_cast_int(value, target),
                                                                      dtype)
        return broadcast_node(as_node(host, target), shape)
    result = node(default)
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        result = ops.select(broadcast_node(as_node(cond, dt.BOOL), shape), node(choice), result)
    return wrap(result)


def clip(a, min=None, max=None, out=None, *, a_min=None, a_max=None, **kwargs):
    """NumPy's np.clip: on an integer array a Python int bound at or past the dtype's end
    is dropped (it can never be reached), so np.clip(uint8_image, -5, 150) clips; any other
    out-of-range Python int raises the ufunc's OverflowError, as NumPy's own does."""
    runtime.maybe_cut()
    # the Array API's names for the bounds first; NumPy's a_min/a_max still work by keyword
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    if set(kwargs) - {"dtype", "casting"} or \
            kwargs.get("casting", "same_kind") not in ("same_kind", "unsafe"):
        return run_eagerly(np.clip, "numpy.clip", (a, lo, hi, out), kwargs)
    a = as_lazy(a)
    if a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        if type(lo) is int and lo <= info.min:
            lo = None
        if type(hi) is int and hi >= info.max:
            hi = None
    dtype = kwargs.get("dtype")
    if lo is None and hi is None:
        result = apply(np.positive, (a,), dtype=dtype)
    elif lo is None:
        result = apply(np.minimum, (a, hi), dtype=dtype)
    elif hi is None:
        result = apply(np.maximum, (a, lo), dtype=dtype)
    else:
        signature = None if dtype is None else (None, None, None, np.dtype(dtype))
        loop = resolve_ufunc(_CLIP, tuple(dtype_key(v) for v in (a, lo, hi)), signature)
        shape = broadcast_shapes(a.shape, tuple(shape_of(lo)), tuple(shape_of(hi)))
        x, lo, hi = (broadcast_node(as_node(v, d), shape) for v, d in zip((a, lo, hi), loop))
        result = wrap(ops.min_(ops.max_(x, lo), hi))
    return result if out is None else assign(out, result, _CLIP,
                                             casting=kwargs.get("casting", "same_kind"))


_CLIP = np._core.umath.clip


def piecewise(x, condlist, funclist, *args, **kw):
    """NumPy's, as a chain of selects (a later true condition wins, as NumPy's later
    assignment does; the value is cast to x's dtype). NumPy applies each function to the
    elements its condition selects; here it is applied to the whole of x, which gives the
    same values for an elementwise function -- checked once on a host probe. A function that
    is not elementwise (`v - v.mean()`), lazy extra arguments, a condition of another shape
    than x, or a non-numeric x run on NumPy."""
    def eager():
        return run_eagerly(np.piecewise, "numpy.piecewise", (x, condlist, funclist) + args,
                           kw)
    runtime.maybe_cut()
    xa = as_lazy(x)
    shape, dtype = tuple(xa.shape), xa.dtype
    # (NumPy's undocumented rule: a single condition is a list of one; a lazy array of
    # conditions holds arrays where an ndarray of them would, from 2 dimensions)
    if isinstance(condlist, (np.ndarray, LazyArray)):
        single = condlist.ndim < 2 and len(shape) != 0
    else:
        single = np.isscalar(condlist) or len(shape) != 0 and \
            not isinstance(condlist[0], (list, np.ndarray, LazyArray))
    if single:
        condlist = [condlist]
    n, n2 = len(condlist), len(funclist)
    if n != n2 and n != n2 - 1:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    if dtype.kind not in "biuf" or any(isinstance(a, LazyArray) for a in (*args, *kw.values())) \
            or any(tuple(shape_of(c)) != shape for c in condlist) \
            or not all(_elementwise(f, dtype, args, kw) for f in funclist if callable(f)):
        return eager()
    target = ir_dtype(dtype)
    conds = [broadcast_node(as_node(c if isinstance(c, LazyArray) else np.asarray(c, bool),
                                    dt.BOOL), shape) for c in condlist]
    if n == n2 - 1:  # the "otherwise" condition: where none holds
        none = conds[0]
        for c in conds[1:]:
            none = ops.or_(none, c)
        conds.append(ops.not_(none))
    result = broadcast_node(as_node(0, target), shape)
    for cond, func in zip(conds, funclist):
        value = func(xa, *args, **kw) if callable(func) else func
        if tuple(shape_of(value)) not in (shape, ()):
            return eager()
        result = ops.select(cond, broadcast_node(as_node(value, target), shape), result)
    return wrap(result)


def _elementwise(func, dtype, args, kw):
    """Whether `func` maps each element alone, as far as a host probe tells: its result on a
    few of the probe's elements is its result on the whole probe at those elements."""
    probe = np.array([-2.5, -1.0, 0.0, 0.5, 1.5, 3.0]).astype(dtype)
    some = [1, 3, 4]
    try:
        with np.errstate(all="ignore"):
            whole = np.asarray(func(probe, *args, **kw))
            part = np.asarray(func(probe[some], *args, **kw))
        if whole.shape not in ((6,), ()) or part.shape not in ((3,), ()):
            return False
        return np.array_equal(np.broadcast_to(whole, (6,))[some], np.broadcast_to(part, (3,)),
                              equal_nan=True)
    except Exception:  # noqa: BLE001 -- NumPy runs it, and raises what it raises
        return False
