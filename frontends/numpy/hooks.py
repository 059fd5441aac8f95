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
"""
import numpy as np

from ...core import runtime
from ...core.source import user_line
from ._base import LazyArray, wrap
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


def install():
    np.nditer = nditer
