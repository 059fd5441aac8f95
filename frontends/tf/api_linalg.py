"""tf.linalg's factorizations on the IR's multi-result primitives (core/ir.py): svd, qr, eigh,
eigvalsh, lu. All outputs of one call come from one node, computed once; gradients come from
core/autodiff's rules for those nodes. Inputs lazyx does not lower (complex, half precision,
empty matrices) and bad calls are replayed on real TF (its result or its error)."""
import tensorflow as tf

from ...core import ops
from .lowering import Reject, operand_nodes
from .registry import lower
from .tensor import ir_dtype, wrap


def _matrix(x, square=False):
    (node,) = operand_nodes(x)
    if node.ndim < 2 or node.dtype not in ("float32", "float64") or node.size == 0 or \
            (square and node.shape[-1] != node.shape[-2]):
        raise Reject()
    return node


def _transposed(node):
    perm = list(range(node.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return ops.transpose(node, permutation=tuple(perm))


class _Named(tuple):
    """A tuple with TF's field names (tf.linalg.qr's Qr, lu's Lu, eigh's pair)."""
    _fields = ()

    def __new__(cls, *values):
        return super().__new__(cls, values)

    def __getattr__(self, name):
        if name in self._fields:
            return self[self._fields.index(name)]
        raise AttributeError(name)


class Qr(_Named):
    _fields = ("q", "r")


class Lu(_Named):
    _fields = ("lu", "p")


@lower(tf.linalg.svd, "tensor")
def svd(tensor, full_matrices=False, compute_uv=True):
    a = _matrix(tensor)
    if not compute_uv:
        return wrap(ops.svd(a, compute_uv=False)[0], tensor)
    u, s, vh = ops.svd(a, full_matrices=bool(full_matrices))
    return wrap(s, tensor), wrap(u, tensor), wrap(_transposed(vh), tensor)  # TF gives v


@lower(tf.linalg.qr, "input")
def qr(input, full_matrices=False):  # noqa: A002 - TF's name
    q, r = ops.qr(_matrix(input), full_matrices=bool(full_matrices))
    return Qr(wrap(q, input), wrap(r, input))


@lower(tf.linalg.eigh, "tensor")
def eigh(tensor):
    values, vectors = ops.eigh(_matrix(tensor, square=True), lower=True)  # TF reads the lower
    return wrap(values, tensor), wrap(vectors, tensor)


@lower(tf.linalg.eigvalsh, "tensor")
def eigvalsh(tensor):
    return wrap(ops.eigh(_matrix(tensor, square=True), lower=True)[0], tensor)


@lower(tf.linalg.lu, "input")
def lu(input, output_idx_type=tf.int32):  # noqa: A002 - TF's name
    a = _matrix(input, square=True)
    packed, _pivots, perm = ops.lu(a)
    idx = ir_dtype(output_idx_type)
    return Lu(wrap(packed, input), wrap(perm if idx == "int32" else ops.convert(perm, dtype=idx)))
