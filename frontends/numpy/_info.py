"""Data type objects and functions, and the Array API inspection namespace.

The namespace's dtype names are NumPy's own scalar types, as in NumPy 2's own Array API
namespace: ``x.dtype == lnp.float32``, ``lnp.float32(1.5)``, ``isinstance(v, lnp.floating)``
and ``np.finfo(lnp.float32)`` all work as NumPy users expect. (The inspection namespace's
dictionaries hold ``numpy.dtype`` instances, as NumPy's do; either compares equal to the other.)
"""
import numpy as np

from ...core import dtypes as dt
from ._base import DEVICE, LazyArray, np_dtype
from ._promote import ir_dtype, result_ir_dtype

bool = np.bool  # noqa: A001 - the Array API's name
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
DTYPES = {name: np_dtype(name) for name in dt.ALL if name != "bfloat16"}


def _dtype_of(x):
    return x.dtype if isinstance(x, LazyArray) else np.dtype(x)


class FInfo:
    """np.finfo's facts with the Array API's types: Python floats (np.finfo gives float32
    scalars for float32) and the real dtype for complex ones."""

    def __init__(self, info):
        self._info = info
        self.bits, self.dtype = int(info.bits), info.dtype
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.smallest_normal = float(info.smallest_normal)

    def __getattr__(self, name):  # the rest of np.finfo (resolution, tiny, ...)
        return getattr(self._info, name)

    def __repr__(self):
        return repr(self._info)


def finfo(type, /):  # noqa: A002 - the Array API's parameter name
    return FInfo(np.finfo(_dtype_of(type)))


def iinfo(type, /):  # noqa: A002
    return np.iinfo(_dtype_of(type))


def isdtype(dtype, kind):
    return np.isdtype(np.dtype(dtype), kind)


def result_type(*arrays_and_dtypes):
    """NumPy 2's result_type: Python scalars are weak (NEP 50)."""
    items = [np.empty(0, np.dtype(a)) if isinstance(a, (np.dtype, type, str)) else a
             for a in arrays_and_dtypes]
    return np_dtype(result_ir_dtype(*items))


def can_cast(from_, to, /, casting="safe"):
    return np.can_cast(_dtype_of(from_), np.dtype(to), casting=casting)


class Info:
    """What ``__array_namespace_info__()`` returns (Array API 2023.12)."""

    def capabilities(self):
        # Boolean masks and unique/nonzero work by syncing (cause "data_dependent").
        return {"boolean indexing": True, "data-dependent shapes": True}

    def default_device(self):
        return DEVICE

    def devices(self):
        return [DEVICE]

    def default_dtypes(self, *, device=None):
        return {"real floating": np.dtype(float64), "complex floating": np.dtype(complex128),
                "integral": np.dtype(int64), "indexing": np.dtype(int64)}

    def dtypes(self, *, device=None, kind=None):
        names = [n for n in dt.ALL if n not in ("bfloat16", "float16")]  # the standard's
        chosen = {n: np.dtype(n) for n in names
                  if kind is None or np.isdtype(np.dtype(n), kind)}
        return chosen


def __array_namespace_info__():
    return Info()


__all__ = ["ir_dtype"]
