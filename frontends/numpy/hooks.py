"""Every change lazyx makes to NumPy's own globals, in one place.

Each hook acts only on lazy arrays: for anything else it calls NumPy's original, so code that
never touches lazyx gets NumPy's own objects back.

Checked against NumPy 2.4.6. On a NumPy upgrade, re-read:

  numpy.nditer   NumPy's C iterator took a lazy operand through __array__, i.e. a host copy,
                 so a write through op_flags=['readwrite'] / ['writeonly'] landed in that copy
                 and was lost without a word. The name `numpy.nditer` now gives NumPy's own
                 iterator for host operands, and for lazy ones an iterator over host copies
                 whose writes are carried back into the lazy arrays at NumPy's writeback
                 points (close(), the end of the `with` block) and when the iteration is
                 exhausted. `isinstance(it, np.nditer)` holds for both. Only the attribute
                 `numpy.nditer` changes (numpy._core's own name is NumPy's iterator, which
                 NumPy's internals use).

  numpy.array,   NumPy converts a list of lazy arrays element by element through __array__:
  numpy.asarray  `np.array([f(r) for r in X])` synced once per element (n programs run).
                 When the list's (or tuple's, nested) first leaf is a lazy array and every
                 leaf is one, of one shape, they are stacked lazily and read in one sync; the
                 host array then goes through NumPy's own function with the caller's
                 arguments (dtype, ndmin, copy, order), so its result type and dtype rules are
                 NumPy's. Anything else -- a list of numbers, a lazy array itself, a ragged
                 or mixed list -- goes straight to NumPy's function: the test looks at the
                 first leaf only (O(depth)) before walking the list.

  numpy.random.shuffle  (the legacy global RandomState's) took a lazy array for a Python
                 sequence and swapped it element by element through __getitem__/__setitem__:
                 every swap was traced (numpy-100 #89 never finished compiling on XLA). For a
                 lazy array, NumPy's own shuffle permutes a host arange of its length -- the
                 same draws, so the same permutation and the same RandomState afterwards --
                 and the array is rebound to one take of it (a write: views see it).

  numpy.r_, numpy.c_  (AxisConcatenator.__getitem__) converted each item with np.array, so a
                 lazy item was read on the host (a counted fallback) and the result was a host
                 array: `np.c_[np.ones(n), X]`, the usual bias column, took everything after it
                 off lazyx. A key holding a lazy array runs NumPy's own method with its
                 `array` global bound to one that keeps lazy items lazy (dtype and ndmin
                 applied lazily), so NumPy's directives, slices and dtype rules stay its own
                 and np.concatenate, which dispatches to lazyx, joins them. Other keys: NumPy's.

  numpy.lib.stride_tricks.as_strided  a plain function, not dispatched: it read a lazy array
                 on the host (a counted fallback) and returned a host view. For a lazy array it
                 is _view_ops.as_strided (a gather of the positions the strides name, linked as
                 a view); NumPy's own for anything else. Code that imported the name before
                 lazyx was imported keeps NumPy's.

  numpy.polynomial.polyutils.mapdomain  converted its argument with np.asanyarray, so
                 calling a Polynomial (Chebyshev, Legendre, ...) on a lazy array read it on
                 the host (a counted fallback, a sync per call: numpy-tutorials' fractals
                 and Moore's law) though the evaluation after it (polyval's Horner loop) is
                 plain arithmetic. For a lazy array it maps the domain lazily, with NumPy's
                 own offset and scale (mapparms); NumPy's for anything else. _polybase looks
                 the name up in polyutils at each call.

  einops         (not a dependency; checked against einops 0.8.2) picks a backend for a
                 tensor among the subclasses of einops._backends.AbstractBackend whose
                 `framework_name` is an imported module; its NumpyBackend accepts only
                 ndarrays ("Tensor type unknown to einops" for a lazy array). A subclass of it
                 that accepts lazy arrays, named after this frontend's module, is defined when
                 einops._backends is imported: at install() if it already is, else when it is
                 (core/after_import.py; einops is never imported here).
                 Its methods are NumpyBackend's: np.stack / tile / concatenate / einsum and
                 the array's own reshape / transpose / reductions, all traced.
"""
import types

import numpy as np
from numpy.lib import _index_tricks_impl as _index_tricks
from numpy.polynomial import polyutils as _polyutils

from ...core import runtime
from ...core.after_import import after_import
from ...core.source import user_line
from . import _view_ops, _views
from ._base import LazyArray, wrap
from ._indexing import take
from ._manipulation import stack
from ._promote import assign

_NDITER = np.nditer  # NumPy's iterator type (not subclassable: a C type without BASETYPE)
_WRITE_FLAGS = ("readwrite", "writeonly")


def _writes(op_flags, n):
    """Which of the `n` operands nditer may write, from its op_flags argument."""
    if op_flags is None:
        return [False] * n
    if isinstance(op_flags, str) or all(isinstance(f, str) for f in op_flags):
        per = [[op_flags] if isinstance(op_flags, str) else op_flags] * n
    else:
        per = [[f] if isinstance(f, str) else f for f in op_flags]
    return [any(f in _WRITE_FLAGS for f in flags) for flags in per] + [False] * (n - len(per))


class _LazyNditer:
    """np.nditer over host copies of the lazy operands (a counted fallback, 'numpy.nditer');
    the copies of operands it may write are assigned back to their lazy arrays on close(),
    at the end of a `with` block and when the iteration is exhausted (next() or iternext())."""

    def __init__(self, op, flags=None, op_flags=None, *args, **kwargs):
        single = not isinstance(op, (list, tuple))
        ops = [op] if single else list(op)
        lazy = [o for o in ops if isinstance(o, LazyArray)]
        runtime.fallback("numpy.nditer", "numpy")
        runtime.sync(*lazy, cause="fallback", source=user_line(3), sharing=True)
        hosts = [np.array(o._host("fallback")) if isinstance(o, LazyArray) else o for o in ops]
        it = _NDITER(hosts[0] if single else hosts, flags, op_flags, *args, **kwargs)
        self._it = it
        self._back = [(o, h) for o, h, w in zip(ops, hosts, _writes(op_flags, len(ops)))
                      if w and isinstance(o, LazyArray)]

    def _write_back(self):
        for lazy, host in self._back:
            assign(lazy, wrap(runtime.from_host(np.array(host))))

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self._it)
        except StopIteration:
            self._write_back()
            raise

    def iternext(self):
        more = self._it.iternext()
        if not more:
            self._write_back()
        return more

    def close(self):
        self._it.close()
        self._write_back()
        self._back = []

    def __enter__(self):
        self._it.__enter__()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __len__(self):
        return len(self._it)

    def __getitem__(self, i):
        return self._it[i]

    def __setitem__(self, i, value):
        self._it[i] = value

    def __getattr__(self, name):
        return getattr(self._it, name)

    def __repr__(self):
        return repr(self._it)


class _NditerType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, (_NDITER, _LazyNditer))

    def __subclasscheck__(cls, sub):
        return issubclass(sub, (_NDITER, _LazyNditer))


class nditer(metaclass=_NditerType):  # noqa: N801 - NumPy's name
    __doc__ = _NDITER.__doc__

    def __new__(cls, op, *args, **kwargs):
        ops = op if isinstance(op, (list, tuple)) else (op,)
        if not any(isinstance(o, LazyArray) for o in ops):
            return _NDITER(op, *args, **kwargs)
        return _LazyNditer(op, *args, **kwargs)


nditer.__module__ = "numpy"


_ARRAY, _ASARRAY = np.array, np.asarray


def _lazy_leaves(obj, leaves):
    """The shape of the nested list/tuple `obj` whose leaves are lazy arrays of one shape
    (appended to `leaves`), or None for anything else."""
    if type(obj) is LazyArray:
        leaves.append(obj)
        return ()
    if type(obj) is not list and type(obj) is not tuple or not obj:
        return None
    inner = _lazy_leaves(obj[0], leaves)
    if inner is None:
        return None
    for item in obj[1:]:
        if _lazy_leaves(item, leaves) != inner:
            return None
    return (len(obj),) + inner


def _stacked_host(obj):
    """The host value of a list of lazy arrays, read in one sync, or None (not such a list)."""
    first = obj
    while (type(first) is list or type(first) is tuple) and first:
        first = first[0]
    if type(first) is not LazyArray:
        return None
    leaves = []
    outer = _lazy_leaves(obj, leaves)
    if outer is None or any(leaf.shape != first.shape for leaf in leaves):
        return None
    stacked = stack(leaves)
    return stacked._host("convert").reshape(outer + first.shape)


def array(object, *args, **kwargs):  # noqa: A002 - NumPy's name
    # (copy=False of a list: NumPy's own ValueError, whatever the leaves)
    if (type(object) is list or type(object) is tuple) and kwargs.get("copy", True) is not False:
        host = _stacked_host(object)
        if host is not None:
            return _ARRAY(host, *args, **kwargs)
    return _ARRAY(object, *args, **kwargs)


def asarray(a, *args, **kwargs):
    if (type(a) is list or type(a) is tuple) and kwargs.get("copy") is not False:
        host = _stacked_host(a)
        if host is not None:
            return _ASARRAY(host, *args, **kwargs)
    return _ASARRAY(a, *args, **kwargs)


_SHUFFLE = np.random.shuffle
_MAPDOMAIN = _polyutils.mapdomain


def mapdomain(x, old, new):
    if type(x) is not LazyArray:
        return _MAPDOMAIN(x, old, new)
    off, scl = _polyutils.mapparms(old, new)
    return off + scl * x


def shuffle(x):
    if type(x) is not LazyArray:
        return _SHUFFLE(x)
    order = np.arange(len(x))
    _SHUFFLE(order)
    _views.write(x, take(x, order, axis=0)._node)


for _fn, _numpy in ((array, _ARRAY), (asarray, _ASARRAY), (shuffle, _SHUFFLE),
                    (mapdomain, _MAPDOMAIN)):
    _fn.__doc__, _fn.__module__ = _numpy.__doc__, "numpy"
shuffle.__module__ = "numpy.random"
mapdomain.__module__ = "numpy.polynomial.polyutils"


def _array_keeping_lazy(item, copy=None, subok=False, ndmin=0, dtype=None):
    """np.array as AxisConcatenator calls it, for a lazy item the lazy array itself."""
    if type(item) is not LazyArray:
        return _ARRAY(item, copy=copy, subok=subok, ndmin=ndmin, dtype=dtype)
    if dtype is not None and item.dtype != dtype:
        item = item.astype(dtype)
    if item.ndim < ndmin:
        item = item.reshape((1,) * (ndmin - item.ndim) + item.shape)
    return item


_CONCATENATOR = _index_tricks.AxisConcatenator
_CONCATENATE_ITEMS = _CONCATENATOR.__getitem__
_CONCATENATE_LAZY = types.FunctionType(
    _CONCATENATE_ITEMS.__code__,
    {**_CONCATENATE_ITEMS.__globals__, "array": _array_keeping_lazy},
    _CONCATENATE_ITEMS.__name__, _CONCATENATE_ITEMS.__defaults__,
    _CONCATENATE_ITEMS.__closure__)


def concatenate_items(self, key):
    items = key if type(key) is tuple else (key,)
    if any(type(item) is LazyArray for item in items):
        return _CONCATENATE_LAZY(self, key)
    return _CONCATENATE_ITEMS(self, key)


concatenate_items.__doc__ = _CONCATENATE_ITEMS.__doc__


_EINOPS_BACKEND = []  # held here: einops finds it through __subclasses__, a weak reference


def _einops_backend(backends):
    """Define the einops backend for lazy arrays, a subclass einops finds on its own."""
    class LazyNumpyBackend(backends.NumpyBackend):
        framework_name = "lazyx.frontends.numpy"  # not "numpy": one backend per name

        def is_appropriate_type(self, tensor):
            return isinstance(tensor, LazyArray)

        def to_numpy(self, x):  # einops.asnumpy: the host value (an observation)
            return x._host("convert")

    _EINOPS_BACKEND.append(LazyNumpyBackend)


def install():
    np.nditer = nditer
    np.array, np.asarray = array, asarray
    np.random.shuffle = shuffle
    _CONCATENATOR.__getitem__ = concatenate_items
    np.lib.stride_tricks.as_strided = _view_ops.as_strided
    _polyutils.mapdomain = mapdomain
    after_import("einops._backends", _einops_backend)
