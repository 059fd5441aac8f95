"""The NumPy calls that return a view, as the user calls them (methods, properties and
`np.*` functions): each makes its value with the plain lowering and links it to its parent
(`_views.link`) with how to derive it and how to write it back.

Only these user-facing entries link: the frontend's own code calls the plain lowerings, so a
value it computes from a user's array and then writes into never reaches the user's array.
"""
import builtins
import operator

import numpy as np

from ...core import dtypes as dt, ops, runtime
from . import _complex, _elementwise, _layout, _linalg, _manipulation, _views
from ._base import LazyArray, wrap
from ._promote import normalize_axis_tuple

_link = _views.link


def _same(node):
    return node


def _put_same(parent, view):
    return view


# ---------------------------------------------------------------- axis permutations

def _permuted(x, out, perm):
    if type(x) is not LazyArray:
        return out
    perm = tuple(perm)
    if perm == tuple(range(len(perm))):
        return _link(x, out, _same, _put_same, lambda s: s.view())
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    inverse = tuple(inverse)
    return _link(x, out, lambda p: ops.transpose(p, permutation=perm),
                 lambda p, v: ops.transpose(v, permutation=inverse),
                 lambda s: s.transpose(perm))


def transpose(a, axes=None):
    out = _manipulation.permute_dims(a, axes)
    n = out.ndim
    perm = tuple(range(n))[::-1] if axes is None else \
        normalize_axis_tuple(tuple(operator.index(i) for i in axes), n)
    return _permuted(a, out, perm)


def permute_dims(x, /, axes):
    return transpose(x, axes)


def swapaxes(a, axis1, axis2):
    out = _manipulation.swapaxes(a, axis1, axis2)
    n = out.ndim
    perm = list(range(n))
    i, j = operator.index(axis1) % n, operator.index(axis2) % n
    perm[i], perm[j] = perm[j], perm[i]
    return _permuted(a, out, perm)


def matrix_transpose(x, /):
    out = _manipulation.matrix_transpose(x)
    perm = list(range(out.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return _permuted(x, out, perm)


def moveaxis(a, source, destination):
    out = _manipulation.moveaxis(a, source, destination)
    n = out.ndim
    source = normalize_axis_tuple(source, n, "source")
    destination = normalize_axis_tuple(destination, n, "destination")
    order = [k for k in range(n) if k not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return _permuted(a, out, order)


# ---------------------------------------------------------------- reshapes

_reshape_node = _manipulation.reshape.lowering


def _reshaped(x, out, order):
    """Link `out`, a reshape of `x` in `order` that NumPy makes without a copy."""
    shape = out.shape
    return _link(x, out, lambda p: _reshape_node(p, shape, order),
                 lambda p, v: _reshape_node(v, p.shape, order),
                 lambda s: np.reshape(s, shape, order=order, copy=False))


def _layout_order(a, order):
    """NumPy's 'A' (and ravel's 'K'): 'F' for a view NumPy lays out column-major (x.T),
    else 'C' (every array lazyx makes is C-ordered). ('K' of a view contiguous in neither
    order stays 'C': NumPy would follow its memory order.)"""
    if order in ("A", "K", None) and type(a) is LazyArray and _views.is_view(a):
        flags = _views.shadow(a).flags
        return "F" if flags.f_contiguous and not flags.c_contiguous else "C"
    return order if order in ("C", "F") else "C"


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order in ("A", None):
        order = _layout_order(a, order)
    out = _manipulation.reshape(a, shape, order, newshape=newshape)
    if type(a) is not LazyArray or copy:
        return out
    if not _views.reshape_is_view(a, out.shape, order):
        if copy is False:
            raise ValueError("Unable to avoid creating a copy while reshaping.")
        return out
    return _reshaped(a, out, order)


def ravel(a, order="C"):
    order = _layout_order(a, order)
    out = _manipulation.ravel(a, order)
    if type(a) is not LazyArray:
        return out
    # NumPy's ravel is a view only of an array contiguous in that order (a strided 1-d
    # view is copied, where reshape(-1) would not copy it)
    if order == "C" and not _views.is_view(a) and a.ndim:
        return _reshaped(a, out, order)
    flags = _views.shadow(a).flags
    if not (flags.c_contiguous if order == "C" else flags.f_contiguous):
        return out
    return _reshaped(a, out, order)


def squeeze(a, axis=None):
    out = _manipulation.squeeze(a, axis)
    return _reshaped(a, out, "C") if type(a) is LazyArray else out


def expand_dims(a, axis=0):
    out = _manipulation.expand_dims(a, axis)
    return _reshaped(a, out, "C") if type(a) is LazyArray else out


# ---------------------------------------------------------------- other views

def real(x):
    if type(x) is not LazyArray:
        return _elementwise.real(x)
    if x.dtype.kind != "c":
        return x  # NumPy's `.real` of a real array is the array itself
    return _link(x, wrap(ops.real(x._node)), ops.real,
                 lambda p, v: ops.complex_(v, ops.imag(p)), lambda s: s.real)


def imag(x):
    if type(x) is not LazyArray:
        return _elementwise.imag(x)
    if x.dtype.kind != "c":  # NumPy: a new read-only array of zeros
        return _views.readonly(wrap(_complex.imag(x._node)))
    return _link(x, wrap(ops.imag(x._node)), ops.imag,
                 lambda p, v: ops.complex_(ops.real(p), v), lambda s: s.imag)


def view(self, dtype=None, type=None):  # noqa: A002 - NumPy's names
    if type is None and isinstance(dtype, builtins.type) and issubclass(dtype, LazyArray):
        dtype, type = None, dtype  # a.view(Sub), as NumPy reads a.view(ndarray subclass)
    if isinstance(type, builtins.type) and issubclass(type, LazyArray):
        return _layout.subclass_view(view(self, dtype), type, self)
    out = _layout.view(self, dtype, type)
    if dtype is None or np.dtype(dtype) == self.dtype:
        return _link(self, out, _same, _put_same, lambda s: s.view())
    want = np.dtype(dtype)
    if want.itemsize != self.dtype.itemsize:
        return out  # NumPy's own view of a host copy (a counted fallback): a new value
    back, there = self._node.dtype, dt.from_numpy(want)
    return _link(self, out, lambda p: ops.bitcast_convert(p, dtype=there),
                 lambda p, v: ops.bitcast_convert(v, dtype=back), lambda s: s.view(want))


def broadcast_to(array, shape, subok=False):
    out = _manipulation.broadcast_to(array, shape)
    shape = out.shape
    return _link(array, out, lambda p: _manipulation.broadcast_to.lowering(p, shape), None,
                 lambda s: np.broadcast_to(s, shape))


def diagonal(a, offset=0, axis1=0, axis2=1):
    out = _linalg.diagonal(a, offset, axis1, axis2)
    return _link(a, out, lambda p: _linalg.diagonal.lowering(p, offset, axis1, axis2), None,
                 lambda s: np.diagonal(s, offset, axis1, axis2))


def einsum(subscripts, *operands, out=None, **kwargs):
    """NumPy's einsum of one operand that sums over nothing (`'ii->i'`, `'ij->ji'`) is a
    writeable view of it: `np.einsum('ii->i', K)[:] += noise` writes K's diagonal."""
    result = _linalg.einsum(subscripts, *operands, out=out, **kwargs)
    if out is not None or kwargs.get("dtype") is not None or len(operands) != 1 \
            or type(operands[0]) is not LazyArray or type(result) is not LazyArray:
        return result
    x = operands[0]
    # NumPy's own einsum of the positions decides: a view holds the positions it reads
    positions = np.arange(x.size).reshape(x.shape)
    optimize = kwargs.get("optimize", False)
    read = np.einsum(subscripts, positions, optimize=optimize)
    if not np.shares_memory(read, positions):  # it sums: a new array, as in NumPy
        return result
    return _positions_view(x, read, lambda s: np.einsum(subscripts, s, optimize=optimize),
                           result)


def _positions_view(x, read, shadow_op, out=None, writeable=True):
    """A view of the lazy `x` holding, at each index, x's element at the C-order position
    `read` (an integer array of the view's shape) names: one gather, and a write into it one
    scatter into x -- read-only when not `writeable` or a position repeats. `out`: the view's
    values, where the caller has computed them already."""
    index = read.reshape(-1, 1)

    def derive(parent):
        flat = ops.reshape(parent, new_sizes=(x.size,))
        taken = ops.gather(flat, runtime.from_host(index))
        return ops.reshape(taken, new_sizes=read.shape)

    def put(parent, view):
        flat = ops.reshape(parent, new_sizes=(x.size,))
        values = ops.reshape(view, new_sizes=(read.size,))
        written = ops.scatter(flat, runtime.from_host(index), values)  # (distinct positions)
        return ops.reshape(written, new_sizes=x.shape)

    writeable = writeable and len(np.unique(index)) == index.size
    return _link(x, wrap(derive(x._node)) if out is None else out, derive,
                 put if writeable else None, shadow_op)


def iterate(x):
    """`for row in x` over a 2-d or more array: each row a view (x[i])."""
    return (x[i] for i in range(x.shape[0]))


def set_real(x, value):
    """`x.real = v`: NumPy writes the part in place (of a real array: the array)."""
    real(x)[...] = value


def set_imag(x, value):
    if x.dtype.kind != "c":
        raise TypeError("array does not have imaginary part to set")
    imag(x)[...] = value


# (NumPy's own: hooks.py rebinds the public name)
_AS_STRIDED = np.lib._stride_tricks_impl.as_strided


def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    """NumPy's strided view of a lazy array (numpy-ml's framing of a signal, `to_frames`):
    the element at each index reads the array's C-order position sum(i_k * strides_k) /
    itemsize, one gather, as a view -- a write into it writes those positions of the array
    when they are distinct; where windows overlap (frames with a hop below their length) the
    view is read-only, as NumPy advises writing into one is not done. Strides that are not
    whole elements, or positions outside the array (memory NumPy would read past it), and
    arrays that are not C-contiguous: NumPy's own on the host value, a counted fallback."""
    if type(x) is not LazyArray:
        return _AS_STRIDED(x, shape, strides, subok, writeable)
    shape = x.shape if shape is None else tuple(operator.index(n) for n in shape)
    strides = x.strides if strides is None else tuple(operator.index(s) for s in strides)
    size, item = x.size, x.itemsize
    index = None
    if len(shape) == len(strides) and all(s % item == 0 for s in strides) and \
            x.flags.c_contiguous:
        index = np.zeros(shape, np.int64)
        for k, (n, s) in enumerate(zip(shape, strides)):
            index += (np.arange(n, dtype=np.int64) * (s // item)).reshape(
                (n,) + (1,) * (len(shape) - k - 1))
    if index is None or index.size and (index.min() < 0 or index.max() >= size):
        from ._fallback import run_eagerly
        return run_eagerly(_AS_STRIDED, "numpy.lib.stride_tricks.as_strided", (x, shape),
                           dict(strides=strides, subok=subok, writeable=writeable))
    return _positions_view(x, index, lambda s: _AS_STRIDED(s, shape, strides,
                                                           writeable=writeable),
                           writeable=writeable)
