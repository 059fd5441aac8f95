"""Array creation. Fill values are runtime parameters (a new fill never recompiles);
arange/linspace run NumPy's own arithmetic on the host and ship the result as device data,
so their numbers are NumPy's to the last bit."""
import builtins
import operator

import numpy as np

from ...core import compose, ops, runtime
from ._base import LazyArray, wrap
from ._manipulation import astype as _manipulation_astype, broadcast_to
from ._promote import UnsupportedDtype, as_lazy, as_node, holdable, ir_dtype
from ._ufuncs import fill


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(operator.index(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError("negative dimensions are not allowed")
    return shape


def asarray(obj, /, dtype=None, device=None, copy=None, *, order=None, like=None):
    if dtype is not None and not isinstance(dtype, LazyArray) and not holdable(dtype):
        return _host_array(obj, dtype, copy)
    if not isinstance(obj, LazyArray) and isinstance(obj, (np.ndarray, np.generic)) and \
            not holdable(obj.dtype):
        return _host_array(obj, None, copy)
    target = ir_dtype(dtype) if dtype is not None else None
    if isinstance(obj, LazyArray):
        if copy is False and target is not None and target != obj._node.dtype:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        out = as_lazy(obj, target)
        # a copy is a new handle: a later in-place write to obj (which rebinds obj's handle)
        # must not show through it
        return wrap(out._node) if copy and out is obj else out
    if copy is False:
        raise ValueError("Unable to avoid copy while creating an array as requested "
                         "(host data must be copied to the lazyx device).")
    if target is None and not isinstance(obj, (np.ndarray, np.generic, list, tuple)) \
            and isinstance(obj, (bool, int, float)):
        return wrap(runtime.from_host(np.asarray(obj)))
    try:
        return as_lazy(obj, target)
    except UnsupportedDtype:  # a list of strings or dates
        return _host_array(obj, dtype, copy)


def _host_array(obj, dtype, copy):
    """datetime64, timedelta64, strings: the IR has no such types, so the value stays
    NumPy's own array (a lazy one converted by NumPy's cast: a counted fallback)."""
    if isinstance(obj, LazyArray):
        return _manipulation_astype(obj, dtype)
    return np.array(obj, dtype, copy=copy if copy is not None else None)


def array(obj, dtype=None, *, copy=True, ndmin=0, **kwargs):
    out = asarray(obj, dtype)
    if not isinstance(out, LazyArray):
        return np.array(out, copy=False, ndmin=ndmin)
    if out.ndim < ndmin:
        out = wrap(ops.reshape(out._node, new_sizes=(1,) * (ndmin - out.ndim) + out.shape))
    return out


_PY_SCALARS = frozenset((int, float, bool))


def _on_host(dtype, *values):
    """Whether a creation yields a dtype the IR has no type for (datetime64, timedelta64,
    strings): then the result is NumPy's own array, as lnp.asarray's is."""
    if dtype is not None:
        return not isinstance(dtype, LazyArray) and not holdable(dtype)
    return any(isinstance(v, (str, bytes)) or isinstance(v, (np.ndarray, np.generic))
               and not holdable(v.dtype) for v in values)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    shape = _shape(shape)
    if _on_host(dtype, fill_value):
        return np.full(shape, np.asarray(fill_value) if isinstance(fill_value, LazyArray)
                       else fill_value, dtype)
    if type(fill_value) in _PY_SCALARS and dtype is not None:  # zeros_like & co.: no NumPy calls
        return wrap(compose.scalar(fill_value, ir_dtype(dtype), shape))
    if isinstance(fill_value, LazyArray):
        return broadcast_to(fill_value if dtype is None else fill_value.astype(dtype), shape)
    target = ir_dtype(dtype) if dtype is not None else ir_dtype(np.asarray(fill_value).dtype)
    if np.ndim(fill_value):
        return broadcast_to(as_lazy(np.asarray(fill_value), target), shape)
    return wrap(compose.scalar(fill_value, target, shape))


def zeros(shape, dtype=None, order="C", *, device=None, like=None):
    if _on_host(dtype):  # NumPy's zero bytes: '' for a string field (full(.., 0) writes '0')
        return np.zeros(_shape(shape), dtype)
    return full(shape, 0, dtype if dtype is not None else "float64")


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    if _on_host(dtype):
        return np.ones(_shape(shape), dtype)
    return full(shape, 1, dtype if dtype is not None else "float64")


def empty(shape, dtype=None, order="C", *, device=None, like=None):
    return zeros(shape, dtype)


def _like(a, dtype, shape):
    if _on_host(dtype, a):  # (the lazy array's shape only: no values read)
        return (tuple(np.shape(a)) if shape is None else _shape(shape),
                np.dtype(a.dtype if dtype is None else dtype))
    node = as_node(a)
    return (node.shape if shape is None else _shape(shape),
            node.dtype if dtype is None else ir_dtype(dtype))


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    shape, dtype = _like(a, dtype, shape)
    if not isinstance(dtype, str):  # a datetime64, timedelta64 or string dtype
        return np.full(shape, fill_value, dtype)
    if type(fill_value) is int:  # NumPy's copyto: OverflowError out of an integer dtype's range
        return full(shape, fill_value, dtype)
    return full(shape, np.asarray(fill_value).astype(np.dtype(dtype)) if np.ndim(fill_value)
                else np.array(fill_value).astype(np.dtype(dtype))[()], dtype)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    shape, dtype = _like(a, dtype, shape)
    if not isinstance(dtype, str):  # a datetime64, timedelta64 or string dtype
        return np.zeros(shape, dtype)
    return full(shape, 0, dtype)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    shape, dtype = _like(a, dtype, shape)
    if not isinstance(dtype, str):  # a datetime64, timedelta64 or string dtype
        return np.ones(shape, dtype)
    return full(shape, 1, dtype)


def empty_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return zeros_like(a, dtype, shape=shape)


def arange(start, /, stop=None, step=None, *, dtype=None, device=None, like=None):
    host = np.arange(start, stop, step, dtype=dtype) if step is not None else (
        np.arange(start, stop, dtype=dtype) if stop is not None else np.arange(start,
                                                                               dtype=dtype))
    if not holdable(host.dtype):  # datetime64 bounds: NumPy's own array
        return host
    return wrap(runtime.from_host(host, ir_dtype(host.dtype)))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    # NumPy's signature (its flags by position too): a superset of the Array API's
    if isinstance(start, LazyArray) or isinstance(stop, LazyArray):
        return _lazy_linspace(start, stop, num, endpoint, retstep, dtype, axis)
    result = np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype,
                         axis=axis)
    if retstep:
        return wrap(runtime.from_host(result[0])), result[1]
    return wrap(runtime.from_host(result))


def _lazy_linspace(start, stop, num, endpoint, retstep, dtype, axis):
    """np.linspace with a lazy endpoint: NumPy's own steps (numpy/_core/function_base.py) on
    lazy arrays, so its dtypes, broadcasting, errors and roundings. NumPy picks the step's
    formula by a value (any step == 0: a subnormal or zero span); here both are computed and
    the condition selects, which gives the chosen formula's numbers."""
    from .. import numpy as lnp
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    proxies = [np.empty(0, np.dtype(ir_dtype(x))) if isinstance(x, LazyArray) else x
               for x in (start, stop)]
    dt = np.result_type(*proxies)
    if dt.kind not in "fc":  # (NumPy: ensure_inexact)
        dt = np.result_type(dt, 0.0)
    integer_dtype = dtype is not None and np.issubdtype(dtype, np.integer)
    dtype = dt if dtype is None else dtype
    start, stop = lnp.asarray(start, dtype=dt), lnp.asarray(stop, dtype=dt)
    delta = lnp.subtract(stop, start)
    y = lnp.arange(0, num, dtype=dt).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = delta / div
        y = lnp.where(lnp.any(step == 0), y / div * delta, y * step)
    else:
        step = np.nan
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y[-1, ...] = stop
    if axis != 0:
        y = lnp.moveaxis(y, 0, axis)
    if integer_dtype:
        y = lnp.floor(y)
    y = y.astype(dtype, copy=False)
    return (y, step) if retstep else y


def eye(N, M=None, k=0, dtype=None, order="C", *, device=None, like=None):
    if _on_host(dtype):
        return np.eye(N, M, k, dtype)
    M = N if M is None else M
    shape = _shape((N, M))
    target = ir_dtype(dtype) if dtype is not None else "float64"
    rows = ops.iota(dtype="int64", shape=shape, dimension=0)
    cols = ops.iota(dtype="int64", shape=shape, dimension=1)
    # a diagonal beyond the matrix has no ones: clamp k, which may not fit in int64
    k = builtins.max(-shape[0], builtins.min(shape[1], operator.index(k)))
    on = ops.eq(ops.add(rows, fill(k, "int64", shape)), cols)
    return wrap(on if target == "bool" else ops.convert(on, dtype=target))


def identity(n, dtype=None, *, like=None):
    return eye(n, dtype=dtype)


def _tri_mask(shape, k, lower):
    n, m = shape[-2:]
    rows = ops.iota(dtype="int64", shape=(n, m), dimension=0)
    cols = ops.iota(dtype="int64", shape=(n, m), dimension=1)
    diff = ops.sub(cols, rows)
    kk = fill(int(k), "int64", (n, m))
    mask = ops.le(diff, kk) if lower else ops.ge(diff, kk)
    if len(shape) > 2:
        mask = ops.broadcast_in_dim(mask, shape=shape,
                                    broadcast_dimensions=(len(shape) - 2, len(shape) - 1))
    return mask


def _tri(m, k, lower):
    runtime.maybe_cut()
    node = as_node(m)
    if node.ndim < 2:
        if node.ndim == 1:  # NumPy broadcasts a vector to a square matrix
            n = node.shape[0]
            node = ops.broadcast_in_dim(node, shape=(n, n), broadcast_dimensions=(1,))
        else:
            raise ValueError("input array must be at least 2-d")
    mask = _tri_mask(node.shape, k, lower)
    return wrap(ops.select(mask, node, fill(0, node.dtype, node.shape)))


def tril(m, k=0):
    return _tri(m, k, True)


def triu(m, k=0):
    return _tri(m, k, False)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    nodes = [as_node(x) for x in xi]
    nodes = [ops.reshape(n, new_sizes=(n.size,)) if n.ndim != 1 else n for n in nodes]
    shape = [n.shape[0] for n in nodes]
    if indexing == "xy" and len(nodes) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    shape = tuple(shape)
    out = []
    for i, n in enumerate(nodes):
        axis = i
        if indexing == "xy" and len(nodes) > 1 and i < 2:
            axis = 1 - i
        if sparse:
            s = [1] * len(shape)
            s[axis] = n.shape[0]
            out.append(wrap(ops.reshape(n, new_sizes=tuple(s))))
        else:
            out.append(wrap(ops.broadcast_in_dim(n, shape=shape, broadcast_dimensions=(axis,))))
    return out  # a list, as the Array API 2023.12 says (NumPy gives a tuple)


def from_dlpack(x, /, *, device=None, copy=None):
    return wrap(runtime.from_host(np.from_dlpack(x)))
