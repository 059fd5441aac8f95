"""Operators and ndarray methods for LazyArray, each one line onto the namespace functions.

Kept apart from ``_base.py`` so the class's observation protocols and these API hooks can be
read separately; ``install()`` runs once when the package is imported.
"""
import math
import operator

import numpy as np

from ...core import compose, ops
from ...core import dtypes as dt
from . import (_choosing, _complex, _creation, _indexing, _linalg, _manipulation, _reductions,
               _view_ops, _views)
from ._base import LazyArray, wrap
from ._elementwise import round as round_
from ._entry import apply, array_ufunc, binary
from ._functions import array_function
from ._promote import assign
from ._ufuncs import fill

# (a string too: NumPy's resolver raises its own no-loop error for x + "a")
_OPERANDS = (LazyArray, np.ndarray, np.generic, int, float, complex, bool, list, tuple, str,
             bytes)


def _binary(ufunc):
    # the common operands (a lazy array, a Python float or int) skip the isinstance check
    def forward(self, other):
        t = type(other)
        if t is not LazyArray and t is not float and t is not int and \
                not isinstance(other, _OPERANDS):
            return NotImplemented
        return binary(ufunc, self, other)

    def reverse(self, other):
        t = type(other)
        if t is not LazyArray and t is not float and t is not int and \
                not isinstance(other, _OPERANDS):
            return NotImplemented
        return binary(ufunc, other, self)

    def inplace(self, other):
        if not isinstance(other, _OPERANDS):
            return NotImplemented
        assign(self, apply(ufunc, (self, other)), ufunc)
        return self
    return forward, reverse, inplace


def _equality(ufunc):
    # `mask = arr == None` (and a string) is NumPy's element-wise answer, all False (all True
    # for !=), known without the values; other operands as the other comparisons
    forward = _binary(ufunc)[0]
    answer = ufunc is np.not_equal

    def compare(self, other):
        if other is None or isinstance(other, (str, bytes)):
            return wrap(fill(answer, dt.BOOL, self.shape))
        return forward(self, other)
    return compare


def _setflags(self, write=None, align=None, uic=None):
    # the flag lives on the array's stride shadow (_views.py), which every write checks
    if uic:
        raise ValueError("cannot set WRITEBACKIFCOPY flag to True")
    if write is not None:
        _views.set_writeable(self, bool(write))


def _resize(self, *new_shape, refcheck=True):
    """NumPy's in-place ndarray.resize: the flattened values, cut or padded with zeros
    (np.resize repeats them instead). NumPy's refusals are kept: a view does not own its
    data, and an array with live views (the only references lazyx counts) is referenced."""
    if _views.is_view(self):
        raise ValueError("cannot resize this array: it does not own its data")
    if refcheck and _views.has_views(self):
        raise ValueError("cannot resize an array that references or is referenced\n"
                         "by another array in this way.\nUse the np.resize function or "
                         "refcheck=False")
    if len(new_shape) == 1 and (new_shape[0] is None or not isinstance(new_shape[0], int)):
        new_shape = () if new_shape[0] is None else new_shape[0]
    shape = tuple(operator.index(d) for d in new_shape)
    if any(d < 0 for d in shape):
        raise ValueError("negative dimensions not allowed")
    size = math.prod(shape)
    flat = compose.flatten(self._node)
    n = flat.shape[0]
    if size <= n:
        flat = compose.slice_axis(flat, 0, 0, size)
    else:
        flat = ops.concatenate(flat, fill(0, self._node.dtype, (size - n,)), dimension=0)
    _views.detach(self)  # (refcheck=False: NumPy's views would point at freed memory)
    self.__lazyx_handle__.set(ops.reshape(flat, new_sizes=shape))


_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
           "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
           "lshift": np.left_shift, "rshift": np.right_shift, "and": np.bitwise_and,
           "or": np.bitwise_or, "xor": np.bitwise_xor}
_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}
_UNARY = {"neg": np.negative, "pos": np.positive, "abs": np.absolute, "invert": np.invert}


def _matmul(self, other):
    if not isinstance(other, _OPERANDS):
        return NotImplemented
    return _linalg.matmul(self, other)


def _rmatmul(self, other):
    if not isinstance(other, _OPERANDS):
        return NotImplemented
    return _linalg.matmul(other, self)


def _imatmul(self, other):
    assign(self, _linalg.matmul(self, other), np.matmul)
    return self


def _divmod(self, other):
    return apply(np.divmod, (self, other))


def _rdivmod(self, other):
    return apply(np.divmod, (other, self))


def _getitem(self, key):
    return _indexing.getitem(self, key)


def _setitem(self, key, value):
    _indexing.setitem(self, key, value)


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return array_ufunc(ufunc, method, inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    return array_function(func, types, args, kwargs)


def _shape_args(args):
    return args[0] if len(args) == 1 and not isinstance(args[0], (int, np.integer)) else args


def _reshape(self, *shape, order="C", copy=None):
    return _view_ops.reshape(self, _shape_args(shape), order, copy=copy)


def _transpose(self, *axes):
    axes = _shape_args(axes) if axes else None
    return _view_ops.transpose(self, axes)


def _sort(self, axis=-1, kind=None, order=None, *, stable=None):
    _views.write(self, _reductions.sort(self, axis, kind, order)._node)


def _fill(self, value):
    _views.write(self, _creation.full(self.shape, value, self.dtype)._node)


# ndarray methods that are NumPy functions of the array: the function's route (its lowering
# through __array_function__, or a counted eager fallback) is the method's
def _partition(self, kth, axis=-1, kind="introselect", order=None):
    _views.write(self, np.partition(self, kth, axis, kind, order)._node)


def _argpartition(self, kth, axis=-1, kind="introselect", order=None):
    return np.argpartition(self, kth, axis, kind, order)


def _searchsorted(self, v, side="left", sorter=None):
    return np.searchsorted(self, v, side, sorter)


def _compress(self, condition, axis=None, out=None):
    return np.compress(condition, self, axis, out)


def _choose(self, choices, out=None, mode="raise"):
    return np.choose(self, choices, out, mode)


def _put(self, indices, values, mode="raise"):
    np.put(self, indices, values, mode)


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting=casting):
        raise TypeError(f"Cannot cast array data from {self.dtype!r} to {np.dtype(dtype)!r} "
                        f"according to the rule '{casting}'")
    return _manipulation.astype(self, dtype, copy=copy)


def _round(self, decimals=0, out=None):
    return round_(self, decimals, out)


def _conj(self):
    return wrap(_complex.conj(self._node))


# ---------------------------------------------------------------- what a NumPy scalar does
# NumPy gives a scalar (np.float64, np.int64) where an index or a reduction leaves no axis; a
# lazy array has no scalar type, so a 0-d one answers what the scalar would. (A 0-d ndarray
# refuses all of these; code written for NumPy meets scalars there.)

def _scalar_value(self, method):
    """The NumPy scalar a 0-d array stands for (np.float64(...)), read on the host; an array
    of more dimensions has no `method`, as an ndarray has none."""
    if self.ndim:
        raise TypeError(f"type numpy.ndarray doesn't define {method} method")
    return self._host("item").reshape(())[()]


def _hash(self):
    # `names[p.argmax()]`, `{y[0]: n}`
    if self.ndim:
        raise TypeError("unhashable type: 'numpy.ndarray'")
    return hash(_scalar_value(self, "__hash__"))


def _builtin_round(self, ndigits=None):
    if ndigits is None:  # round(x): a Python int
        return round(_scalar_value(self, "__round__"))
    if self.ndim:
        raise TypeError("type numpy.ndarray doesn't define __round__ method")
    return round_(self, ndigits)  # round(x, n): the scalar's type; stays lazy


def _trunc(self):
    return math.trunc(_scalar_value(self, "__trunc__"))  # (np.float64 only: a float's)


def _is_integer(self):
    if self.ndim or self.dtype.kind not in "fiu":
        raise AttributeError("'numpy.ndarray' object has no attribute 'is_integer'")
    return _scalar_value(self, "is_integer").is_integer()


def _set_shape(self, shape):
    """`a.shape = (2, 3)`: NumPy reshapes in place; the lazy array's value is rebound to the
    reshaped one. It leaves its view family (its views and its base keep their values, no
    longer shared): NumPy 2.5 deprecates setting the shape."""
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    node = _manipulation.reshape(self, tuple(shape), "C")._node
    _views.detach(self)
    self.__lazyx_handle__.set(node)


SCALAR_METHODS = {"__hash__": _hash, "__round__": _builtin_round, "__trunc__": _trunc,
                  "is_integer": _is_integer}


# ---------------------------------------------------------------- `**`

def _sqrt_exponent(self, exponent):
    """NumPy's `a ** 0.5` (the operator, not np.power) of a float or complex array is
    np.sqrt(a): -0.0 and -inf give -0.0 and nan there, +0.0 and +inf through pow."""
    return type(exponent) in _REAL_SCALARS and exponent == 0.5 and self.dtype.kind in "fc"


_REAL_SCALARS = (float, int, np.float64, np.float32, np.float16, np.int64, np.int32)


def _power_operators():
    forward, reverse, inplace = _binary(np.power)

    def pow_(self, other, modulo=None):
        if modulo is not None:  # pow(a, b, m): NumPy has no three-argument power either
            raise TypeError(f"unsupported operand type(s) for ** or pow(): 'numpy.ndarray', "
                            f"'{type(other).__name__}', '{type(modulo).__name__}'")
        return apply(np.sqrt, (self,)) if _sqrt_exponent(self, other) else forward(self, other)

    def ipow(self, other):
        if not _sqrt_exponent(self, other):
            return inplace(self, other)
        assign(self, apply(np.sqrt, (self,)), np.power)
        return self
    return pow_, reverse, ipow


METHODS = {
    "__getitem__": _getitem, "__setitem__": _setitem,
    "__array_ufunc__": _array_ufunc, "__array_function__": _array_function,
    "__matmul__": _matmul, "__rmatmul__": _rmatmul, "__imatmul__": _imatmul,
    "__divmod__": _divmod, "__rdivmod__": _rdivmod,
    "sum": _reductions.sum, "prod": _reductions.prod, "mean": _reductions.mean,
    "var": _reductions.var, "std": _reductions.std, "max": _reductions.max,
    "min": _reductions.min, "all": _reductions.all, "any": _reductions.any,
    "argmax": _reductions.argmax, "argmin": _reductions.argmin,
    "cumsum": _reductions.cumsum, "cumprod": _reductions.cumprod,
    "argsort": _reductions.argsort, "sort": _sort, "fill": _fill,
    "reshape": _reshape, "transpose": _transpose, "astype": _astype,
    "ravel": _view_ops.ravel, "flatten": _manipulation.ravel,
    "squeeze": _view_ops.squeeze, "swapaxes": _view_ops.swapaxes,
    "repeat": _manipulation.repeat, "clip": _choosing.clip, "copy": _manipulation.copy,
    "take": _indexing.take, "nonzero": _indexing.nonzero, "dot": _linalg.dot,
    "diagonal": _view_ops.diagonal, "trace": _linalg.trace, "round": _round,
    "conj": _conj, "conjugate": _conj,
    "partition": _partition, "argpartition": _argpartition, "searchsorted": _searchsorted,
    "compress": _compress, "choose": _choose, "put": _put, "setflags": _setflags,
    "resize": _resize, "view": _view_ops.view,
}


_SETTERS = {"real": _view_ops.set_real, "imag": _view_ops.set_imag}  # (in place, as NumPy)
PROPERTIES = {"T": _view_ops.transpose, "mT": _view_ops.matrix_transpose,
              "real": _view_ops.real, "imag": _view_ops.imag, "base": _views.base}


def install():
    for name, ufunc in _BINARY.items():
        fwd, rev, inp = _power_operators() if name == "pow" else _binary(ufunc)
        setattr(LazyArray, f"__{name}__", fwd)
        setattr(LazyArray, f"__r{name}__", rev)
        setattr(LazyArray, f"__i{name}__", inp)
    for name, ufunc in _COMPARE.items():
        setattr(LazyArray, f"__{name}__", _binary(ufunc)[0])
    for name, ufunc in (("eq", np.equal), ("ne", np.not_equal)):
        setattr(LazyArray, f"__{name}__", _equality(ufunc))
    for name, ufunc in _UNARY.items():
        setattr(LazyArray, f"__{name}__", lambda self, _u=ufunc: apply(_u, (self,)))
    for name, fn in METHODS.items():
        setattr(LazyArray, name, fn)
    for name, fn in PROPERTIES.items():
        setattr(LazyArray, name, property(fn, _SETTERS.get(name)))
    for name, fn in SCALAR_METHODS.items():
        setattr(LazyArray, name, fn)
    LazyArray.shape = property(LazyArray.shape.fget, _set_shape)
