"""Helpers every lowering shares: TF's operand rules (no implicit promotion, NumPy-style
broadcasting, Python scalars take the tensor's dtype) expressed as explicit IR."""
import weakref

import numpy as np
import tensorflow as tf

from ...core import compose, host_values
from .tensor import LazyTensor, ir_dtype, node_of, scalar_splat, sources_of

TENSORS = (LazyTensor, tf.Tensor, tf.Variable)


# TF's gradients of Relu, Relu6 and LeakyRelu are ops of their own (ReluGrad(g, features))
# whose gradient to `features` is registered as zeros: a second-order gradient through them
# is zeros, connected, where one through tf.maximum or tf.where (the same IR) is None. Their
# lowerings note the activation here, {id(result node): (weak result, input node)}, so that
# tape.py can keep a first-order gradient connected to their inputs (core/autodiff's rule
# cannot tell them from tf.maximum: the graphs are the same by design, torch.relu's too).
GRAD_KEEPS_INPUT = {}


def gradient_keeps_input(result, x):
    """Note `result` (an IR node) as an activation of `x` whose TF gradient keeps x connected."""
    key = id(result)
    gone = lambda _, k=key: GRAD_KEEPS_INPUT.pop(k, None)  # noqa: E731
    GRAD_KEEPS_INPUT[key] = (weakref.ref(result, gone), x)
    return result


class Reject(Exception):
    """A lowering found the call invalid: the registry replays it on real TF for TF's error."""


def as_tensor(value):
    """A lazy tensor as it is (tf.convert_to_tensor would read it); anything else converted:
    for lowerings written with TF calls on lazy tensors, which dispatch back to lazyx."""
    return value if isinstance(value, LazyTensor) else tf.convert_to_tensor(value)


def operand_nodes(*values):
    """IR nodes of one dtype for TF's element-wise operands, or Reject (mixed dtypes)."""
    dtype = None
    for v in values:
        if type(v) is LazyTensor or isinstance(v, TENSORS):  # (LazyTensor is an ABC: slow)
            dtype = v.dtype
            break
    try:
        nodes = [node_of(v, dtype) for v in values]
    except (TypeError, ValueError) as err:
        raise Reject() from err
    first = nodes[0].dtype
    for n in nodes:
        if n.dtype != first:
            raise Reject()
    return nodes


def broadcast_shapes(*shapes):
    known = _BROADCAST.get(shapes)
    if known is not None:
        return known
    try:
        out = tuple(np.broadcast_shapes(*shapes))
    except ValueError as err:
        raise Reject() from err
    if len(_BROADCAST) > 4096:  # bounded: a program's variety of shapes, not its length
        _BROADCAST.clear()
    _BROADCAST[shapes] = out
    return out


_BROADCAST = {}  # operand shapes -> their broadcast shape (NumPy's rule, computed once)


def broadcast_to(node, shape):
    if node.shape == shape or node.shape == tuple(shape):
        return node
    if len(shape) < node.ndim:
        raise Reject()
    return compose.broadcast_to(node, shape)


def binary_operands(x, y):
    """operand_nodes(x, y) broadcast to one shape. A lazy tensor with a Python number (the
    common `x * 0.5`) makes the number's splat at the tensor's shape directly: one node, not
    a rank-0 param that broadcasting then folds (the same graph either way)."""
    if type(x) is LazyTensor and type(y) in (float, int):
        a = x.node
        b = scalar_splat(y, a)
        if b is None:
            b = _splat_or_none(y, x.dtype, a)
        if b is not None:
            return [a, b]
    elif type(y) is LazyTensor and type(x) in (float, int):
        b = y.node
        a = scalar_splat(x, b)
        if a is None:
            a = _splat_or_none(x, y.dtype, b)
        if a is not None:
            return [a, b]
    return broadcast_all(*operand_nodes(x, y))


def _splat_or_none(number, dtype, like):
    try:
        node = node_of(number, dtype, like.shape)
    except (TypeError, ValueError):  # the general path gives TF's error
        return None
    return node if node.shape == like.shape and node.dtype == like.dtype else None


def broadcast_all(*nodes):
    shape = broadcast_shapes(*[n.shape for n in nodes])
    return [broadcast_to(n, shape) for n in nodes]


# a Python number as a run-time param, and a fixed number (part of the op's definition), of
# like's dtype and shape: the shared rules, under the names the TF lowerings use
scalar = compose.scalar_like
const = compose.const_like


def axes_of(axis, ndim, allow_none=True):
    """Normalized non-negative axes (sorted, unique) or Reject when TF would raise."""
    if axis is None:
        if not allow_none:
            raise Reject()
        return tuple(range(ndim))
    if isinstance(axis, LazyTensor):
        raise Reject()
    if isinstance(axis, (tf.Tensor, np.ndarray)):
        axis = np.asarray(axis).tolist()
    items = axis if isinstance(axis, (list, tuple)) else [axis]
    out = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise Reject()
        a = compose.wrap_axis(int(a), ndim)
        if a is None:
            raise Reject()
        out.append(a)
    return tuple(sorted(set(out)))


def static_ints(value):
    """A shape-like argument as Python ints: a lazy one only when its value is known on the
    host without running anything (a lazy constant, the TF guide's `shape=tf.constant([10])`
    made lazy); else it would need a sync: Reject."""
    if isinstance(value, LazyTensor):
        value = host_values.known(value.node)
        if value is None:
            raise Reject()
    if isinstance(value, (tf.Tensor, tf.Variable)):
        value = value.numpy()
    if isinstance(value, tf.TensorShape):
        value = value.as_list()
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" and arr.size:
        raise Reject()
    return [int(v) for v in arr.reshape(-1)] if arr.ndim else int(arr)


def pack(values):
    """A (nested) list or tuple holding lazy tensors as one lazy tensor, as TF packs one it
    converts (array_ops._autopacking_conversion_function): in the dtype of the first tensor
    met depth first, which Python numbers and arrays take (with TF's conversion errors); a
    tensor of another dtype, or elements of unequal shapes: Reject (TF's own error)."""
    dtype = _first_dtype(values)
    if dtype is None:
        raise Reject()
    flat = tf.nest.flatten(values)
    return LazyTensor(_packed(values, dtype), sources_of(*flat))


def _packed(values, dtype):
    nodes = [_packed(v, dtype) if isinstance(v, (list, tuple)) and _first_dtype(v) is not None
             else node_of(v, dtype) for v in values]  # (a tensor keeps its own dtype)
    if not nodes or any(n.shape != nodes[0].shape or n.dtype != ir_dtype(dtype) for n in nodes):
        raise Reject()
    return compose.stack(nodes, 0)


def _first_dtype(values):
    for v in values:
        if type(v) is LazyTensor or isinstance(v, TENSORS):
            return v.dtype.base_dtype
        if isinstance(v, (list, tuple)):
            found = _first_dtype(v)
            if found is not None:
                return found
    return None
