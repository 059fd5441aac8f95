"""NumPy's rules, applied once for every op: dtypes (NEP 50), broadcasting, axes, operands.

The IR never promotes or broadcasts, so every frontend op funnels its operands through here
and emits explicit ``convert`` / ``broadcast_in_dim``. Python scalars stay *weak* (NEP 50)
and become ``ir.param`` leaves, so a changing learning rate never recompiles.
"""
import functools
import numbers

import numpy as np
from numpy.exceptions import AxisError
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ...core import dtypes as dt
from ...core import compose, ir, ops, runtime
from . import _views
from ._base import LazyArray, np_dtype, wrap

__all__ = ["AxisError", "normalize_axis_index", "normalize_axis_tuple"]

_SUPPORTED = frozenset(dt.ALL)
_WEAK = {int: "int64", float: "float64", complex: "complex128"}  # NEP 50 defaults


class UnsupportedDtype(TypeError):
    """A dtype the IR has no type for (datetime64, timedelta64, strings, objects): the
    callers that can hand the work to NumPy (a counted fallback) catch it; it stays a
    TypeError for the others."""


def holdable(dtype):
    """Whether a lazy array can hold `dtype` (else the value stays a NumPy array)."""
    return np.dtype(dtype).name in _SUPPORTED


def ir_dtype(dtype):
    """The IR dtype name for anything NumPy accepts as a dtype; TypeError for unsupported ones."""
    if isinstance(dtype, str) and dtype in _SUPPORTED:
        return dtype
    if isinstance(dtype, LazyArray):
        return dtype._node.dtype
    d = np.dtype(dtype)
    if d.name not in _SUPPORTED:
        raise UnsupportedDtype(f"lazyx.frontends.numpy: dtype {d.name} is not supported (lazy arrays "
                        f"hold {', '.join(dt.ALL)})")
    return d.name


# ---------------------------------------------------------------- operands

def scalar_kind(x):
    """int / float / complex for a Python (weak) scalar, else None. bool is strong: NumPy's
    bool dtype."""
    t = type(x)
    if t is int or t is float or t is complex:
        return t
    if t is bool:
        return None
    if isinstance(x, (np.generic, np.ndarray)):
        return None
    if isinstance(x, numbers.Integral):
        return int
    if isinstance(x, numbers.Real):
        return float
    if isinstance(x, numbers.Complex):
        return complex
    return None


def dtype_key(x):
    """What NumPy's promotion sees: a numpy dtype, or the Python type int/float/complex when
    weak."""
    if isinstance(x, LazyArray):
        return np_dtype(x._node.dtype)
    kind = scalar_kind(x)
    if kind is not None:
        return kind
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    return np.asarray(x).dtype


def as_lazy(x, dtype=None):
    """A LazyArray for any array-like (lazy arrays pass through)."""
    if isinstance(x, LazyArray):
        return x if dtype is None or x._node.dtype == dtype else wrap(ops.convert(x._node,
                                                                                    dtype=dtype))
    return wrap(as_node(x, dtype))


def as_node(x, dtype=None):
    """The IR node for an operand, converted to the IR dtype `dtype` when given.

    Scalars (Python or NumPy) become runtime parameters; host arrays become device data;
    sequences that hold lazy arrays are stacked lazily.
    """
    if isinstance(x, LazyArray):
        node = x._node
        return node if dtype is None or node.dtype == dtype else ops.convert(node, dtype=dtype)
    if isinstance(x, (list, tuple)) and _holds_lazy(x):
        node = stack_nodes([as_node(v) for v in x])
        return node if dtype is None or node.dtype == dtype else ops.convert(node, dtype=dtype)
    kind = scalar_kind(x)
    if kind is not None:
        if dtype is None:
            dtype = _WEAK[kind]
        return ir.param(x, dtype)  # OverflowError for out-of-range ints, as NumPy 2 raises
    if isinstance(x, np.generic) or type(x) is bool:
        host = np.asarray(x)
        if dtype is None:
            dtype = ir_dtype(host.dtype)
        return ir.param(host.astype(np_dtype(dtype)) if host.dtype.name != dtype else host, dtype)
    host = np.asarray(x)
    if host.dtype == object:
        raise TypeError(f"lazyx.frontends.numpy: cannot convert {type(x).__name__} to a lazy "
                        f"array")
    return runtime.from_host(host, dtype or ir_dtype(host.dtype))


def stack_nodes(nodes):
    """np.stack(nodes) along a new first axis, in their promoted dtype (as np.stack does)."""
    if not nodes:
        raise ValueError("need at least one array to stack")
    dtype = _result_type(tuple(np_dtype(n.dtype) for n in nodes))
    if any(n.shape != nodes[0].shape for n in nodes):
        raise ValueError("all input arrays must have the same shape")
    shape = (1,) + nodes[0].shape
    nodes = [ops.reshape(n if n.dtype == dtype else ops.convert(n, dtype=dtype),
                         new_sizes=shape) for n in nodes]
    return nodes[0] if len(nodes) == 1 else ops.concatenate(*nodes, dimension=0)


def _holds_lazy(seq):
    return any(isinstance(v, LazyArray) or (isinstance(v, (list, tuple)) and _holds_lazy(v))
               for v in seq)


def shape_of(x):
    if isinstance(x, LazyArray):
        return x._node.shape
    if scalar_kind(x) is not None or isinstance(x, np.generic):
        return ()
    return np.shape(x)


# ---------------------------------------------------------------- broadcasting

@functools.lru_cache(maxsize=4096)
def broadcast_shapes(*shapes):
    """NumPy's broadcast of shapes, with NumPy's ValueError wording on mismatch."""
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            if d != 1:
                if out[i] != 1 and out[i] != d:
                    listed = " ".join("(" + ",".join(str(v) for v in t) +
                                      ("," if len(t) == 1 else "") + ")" for t in shapes)
                    raise ValueError(f"operands could not be broadcast together with shapes "
                                     f"{listed} ")
                out[i] = d
    return tuple(out)


def broadcast_node(node, shape):
    """`node` stretched to `shape` (trailing alignment), or the node itself if it fits."""
    if node.shape == shape:
        return node
    offset = len(shape) - node.ndim
    if offset < 0:
        raise ValueError(f"cannot broadcast a shape {node.shape} array to shape {shape}")
    for d, t in zip(node.shape, shape[offset:]):
        if d != 1 and d != t:
            raise ValueError(f"operands could not be broadcast together with remapped shapes "
                             f"[original->remapped]: {shape_text(node.shape)} and requested shape "
                             f"{shape_text(shape)}")
    return compose.broadcast_to(node, shape)


def shape_text(shape):
    """A shape as NumPy's messages write it: (5,3), (5,); -1 (reshape's) as newaxis."""
    dims = ["newaxis" if d == -1 else str(d) for d in shape]
    return "(" + ",".join(dims) + ("," if len(dims) == 1 else "") + ")"


# ---------------------------------------------------------------- promotion

def result_ir_dtype(*operands):
    """np.result_type over operands (weak Python scalars, NEP 50) as an IR dtype name."""
    keys = tuple(dtype_key(x) for x in operands)
    return _result_type(keys)


@functools.lru_cache(maxsize=4096)
def _result_type(keys):
    probes = [0 if k is int else 0.0 if k is float else 0j if k is complex else k
              for k in keys]
    return ir_dtype(np.result_type(*probes))


def nodes_result_dtype(*nodes):
    """np.result_type of IR nodes' dtypes (all strong: they are arrays) as an IR dtype name."""
    return _result_type(tuple(np_dtype(n.dtype) for n in nodes))


def promote(*operands, dtype=None):
    """Operands converted to one dtype and broadcast to one shape: (nodes, shape, dtype)."""
    dtype = dtype or result_ir_dtype(*operands)
    shape = broadcast_shapes(*[shape_of(x) for x in operands])
    return [broadcast_node(as_node(x, dtype), shape) for x in operands], shape, dtype


@functools.lru_cache(maxsize=8192)
def resolve_ufunc(ufunc, keys, signature=None):
    """The loop dtypes NumPy picks for `ufunc` on these operand dtype keys (IR names).

    NumPy's own resolver raises the same TypeError NumPy would for a bad combination.
    """
    nout = ufunc.nout
    if signature is None:
        loop = ufunc.resolve_dtypes(keys + (None,) * nout)
    else:
        loop = ufunc.resolve_dtypes(keys + (None,) * nout, signature=signature)
    return tuple(ir_dtype(d) for d in loop)


# ---------------------------------------------------------------- axes

def axes_tuple(axis, ndim):
    """None -> every axis; an int or a sequence -> sorted non-negative axes (AxisError)."""
    if axis is None:
        return tuple(range(ndim))
    try:
        return tuple(sorted(normalize_axis_tuple(axis, ndim)))
    except ValueError as err:
        if isinstance(err, AxisError):
            raise
        raise ValueError("duplicate value in 'axis'") from None


def axis_index(axis, ndim, prefix=None):
    return normalize_axis_index(operator_index(axis), ndim, prefix)


def operator_index(value):
    import operator
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an "
                        f"integer") from None


# ---------------------------------------------------------------- out=

def _output_casting_error(ufunc, src, dst, index):
    err_type = getattr(getattr(np, "_core", None), "_exceptions", None)
    err_type = getattr(err_type, "_UFuncOutputCastingError", None)
    if err_type is not None:
        return err_type(ufunc, "same_kind", np.dtype(src), np.dtype(dst), index)
    return TypeError(f"Cannot cast ufunc '{ufunc.__name__}' output from dtype('{src}') to "
                     f"dtype('{dst}') with casting rule 'same_kind'")


def assign(out, result, ufunc=None, casting="same_kind", index=0, where=None):
    """Write `result` into `out` (a lazy or NumPy array), as a ufunc's out= does; with a
    boolean `where`, only where it is true (a select on a lazy `out`)."""
    src = result._node.dtype if isinstance(result, LazyArray) else ir_dtype(np.asarray(result).dtype)
    dst_dtype = out.dtype
    if not np.can_cast(np_dtype(src), dst_dtype, casting=casting):
        if ufunc is not None:
            raise _output_casting_error(ufunc, src, dst_dtype.name, index)
        raise TypeError(f"Cannot cast array data from dtype('{src}') to "
                        f"dtype('{dst_dtype.name}') according to the rule '{casting}'")
    res_shape = shape_of(result)
    wanted = broadcast_shapes_or_none(res_shape, out.shape)
    if wanted != tuple(out.shape):
        raise ValueError(f"non-broadcastable output operand with shape "
                         f"{shape_text(out.shape)} doesn't match the broadcast shape "
                         f"{shape_text(wanted or res_shape)}")
    if isinstance(out, LazyArray):
        node = broadcast_node(as_node(result, out._node.dtype), out.shape)
        if where is not None:  # (its shape checked by the caller: _entry._check_where_shape)
            node = ops.select(broadcast_node(as_node(where, "bool"), out.shape), node,
                              out._node)
        _views.write(out, node, "output array is read-only")
    else:
        np.copyto(out, np.asarray(result), casting=casting,
                  where=True if where is None else np.asarray(where))
    return out


def broadcast_shapes_or_none(*shapes):
    try:
        return broadcast_shapes(*[tuple(s) for s in shapes])
    except ValueError:
        return None
