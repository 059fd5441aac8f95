"""ndarray attributes about memory layout, for code written against numpy.ndarray.

A lazy array has no host memory, so what NumPy reads from its buffer is answered from the
layout a fresh C-ordered array of the same shape and dtype would have (`strides`, `flags`;
never a sync), and what goes through the buffer is a value operation: `view(dtype)`
reinterprets the bits (XLA's bitcast; a change of width, which NumPy allows by resizing the
last axis, runs as a counted NumPy fallback), `flat` indexes and assigns the flattened value.
`a.view(t)` is a view (_view_ops.py): writing it writes `a`; `a.flat[i] = v` writes `a`, like
`a[...] = v`.
"""
import builtins

import numpy as np

from ...core import dtypes as dt, ops
from . import _manipulation, _views
from ._base import LazyArray, wrap
from ._fallback import observe_with, run_eagerly
from ._promote import assign


def strides(self):
    """A C-ordered array's strides (those of np.array(value, order="C")); a view's are those
    NumPy's view would have (its stride shadow's: _views.py)."""
    if _views.is_view(self):
        return _views.shadow(self).strides
    if not self.size:  # NumPy's own choice for an empty array (no memory is allocated)
        return np.empty(self.shape, self.dtype).strides
    step, out = self.dtype.itemsize, []
    for n in reversed(self.shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


def flags(self):
    """The flags of the array's stride shadow (_views.py): those of a C-ordered array of this
    shape, or of NumPy's view; kept with the array, so that `x.flags.writeable = False`
    makes it read-only as in NumPy."""
    return _views.shadow(self, keep=True).flags


def subclass_view(base, cls, source):
    """`base` as an instance of `cls`, a subclass of lnp.ndarray (numpy-100's NamedArray):
    made as NumPy makes a subclass view, without calling cls.__new__, then handed to
    cls.__array_finalize__(source) when it has one."""
    if not isinstance(base, LazyArray):  # (a host array: a view NumPy itself made)
        return base
    obj = object.__new__(cls)
    obj.__lazyx_handle__ = base.__lazyx_handle__
    finalize = getattr(obj, "__array_finalize__", None)
    if finalize is not None:
        finalize(source)
    return obj


def view(self, dtype=None, type=None):  # noqa: A002 - NumPy's names
    if type is not None or (isinstance(dtype, builtins.type) and issubclass(dtype, np.ndarray)):
        raise TypeError("lazyx arrays have no ndarray subclass views; use np.asarray(a) "
                        "first (a sync) for a host array of that type")
    if dtype is None or np.dtype(dtype) == self.dtype:
        return wrap(self._node)
    want = np.dtype(dtype)
    if want.itemsize == self.dtype.itemsize and want.kind in "biufc":
        return wrap(ops.bitcast_convert(self._node, dtype=dt.from_numpy(want)))
    return run_eagerly(lambda host: host.view(want), "ndarray.view", (self,), {})


class FlatIter:
    """`a.flat`: the array as one dimension, indexed and assigned like numpy.flatiter."""
    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base

    def __len__(self):
        return self.base.size

    def __getitem__(self, index):
        return self.base.ravel()[index]

    def __setitem__(self, index, value):
        flat = _manipulation.ravel(self.base)  # (a value of its own, written once below)
        flat[index] = value
        assign(self.base, flat.reshape(self.base.shape))

    def __iter__(self):
        return iter(self.base.ravel())

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.base.ravel(), dtype=dtype)

    def copy(self):
        return self.base.ravel().copy()

    @property
    def shape(self):
        return (self.base.size,)

    @property
    def dtype(self):
        return self.base.dtype


def flat(self):
    return FlatIter(self)


def contains(self, value):
    """`value in a`: NumPy's (a == value).any(), read on the host."""
    return bool((self == value).any())


def byteswap(self, inplace=False):
    """NumPy's byteswap of the value (a counted fallback); inplace=True writes the array."""
    out = run_eagerly(lambda host: host.byteswap(), "ndarray.byteswap", (self,), {})
    if inplace:
        assign(self, out)
        return self
    return out


def getfield(self, dtype, offset=0):
    """NumPy's field of the value (a counted fallback; a new value, not a view)."""
    return run_eagerly(lambda host: host.getfield(dtype, offset), "ndarray.getfield",
                       (self,), {})


def setfield(self, val, dtype, offset=0):
    """NumPy's setfield on a host copy, carried back into the array (a counted fallback)."""
    run_eagerly(lambda host, v: host.setfield(v, dtype, offset), "ndarray.setfield",
                (self, val), {})


def dumps(self):
    """NumPy's pickle of the value (an observation: it loads as a NumPy array)."""
    return observe_with(lambda host: host.dumps(), (self,), {})


def dump(self, file):
    return observe_with(lambda host: host.dump(file), (self,), {})


def data(self):
    """A read-only memoryview of a host copy (an observation): a write through it could not
    reach the lazy array, so it raises rather than being lost. (memoryview(a) itself cannot
    work: docs/numpy.md.)"""
    return memoryview(self._host("convert")).toreadonly()


def install():
    LazyArray.strides = property(strides)
    LazyArray.flags = property(flags)
    LazyArray.flat = property(flat, lambda self, value: FlatIter(self).__setitem__(
        slice(None), value))
    # (`view` is _view_ops.view, a method _methods.py installs: it links the view)
    for fn in (byteswap, getfield, setfield, dumps, dump):
        setattr(LazyArray, fn.__name__, fn)
    LazyArray.data = property(data)
    LazyArray.__contains__ = contains
