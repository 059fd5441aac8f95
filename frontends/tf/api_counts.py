"""Counting into a static number of bins: tf.math.bincount when its length is fixed by the
call (maxlength given, minlength >= maxlength: Keras' CategoryEncoding and dense_bincount
pass depth for both) and tf.math.confusion_matrix with num_classes given. Both are one
scatter-add. With the length left to the data (max(arr) + 1) they stay counted fallbacks.
And tf.nn.ctc_unique_labels, per-row unique labels padded to a static width.

TF checks values on the host: a negative bincount input, or a confusion_matrix label or
prediction outside [0, num_classes), raises InvalidArgumentError eagerly. A lazy value cannot
be read without a sync, so lazily such an entry is dropped, as bincount drops values past
maxlength (docs/tf.md)."""
import tensorflow as tf

from ...core import compose, ops
from ...core import dtypes as dt
from .lowering import Reject, operand_nodes, static_ints
from .registry import lower
from .tensor import ir_dtype, wrap

_COUNTED = ("int32", "int64", "float32", "float64")  # TF's DenseBincount output dtypes


def _static_length(minlength, maxlength):
    """The output length when the call fixes it: min(maxlength, max(minlength, data))."""
    if maxlength is None:
        raise Reject()
    top = int(static_ints(maxlength))
    if top < 0:
        raise Reject()
    if top == 0 or minlength is not None and int(static_ints(minlength)) >= top:
        return top
    raise Reject()  # the data decides: a counted fallback


def _scatter_add(values, updates, shape):
    """zeros(shape) with updates[..., k] added at [row, values[..., k]] (a trailing index
    past the end, or negative, dropped)."""
    index = ops.convert(values, dtype="int64") if values.dtype != "int64" else values
    if len(shape) == 2:  # (row, value) pairs
        rows = ops.iota(dtype="int64", shape=values.shape, dimension=0)
        index = ops.concatenate(ops.reshape(rows, new_sizes=(*values.shape, 1)),
                                ops.reshape(index, new_sizes=(*values.shape, 1)),
                                dimension=2)
    else:
        index = ops.reshape(index, new_sizes=(*values.shape, 1))
    return ops.scatter(compose.const(0, updates.dtype, shape), index, updates, mode="add")


@lower(tf.math.bincount, "arr", "weights")
def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=tf.int32, axis=None,
             binary_output=False):
    size = _static_length(minlength, maxlength)
    (x,) = operand_nodes(arr)
    w = operand_nodes(weights)[0] if weights is not None else None
    if not dt.is_int(x.dtype):
        x = ops.convert(x, dtype="int32")  # TF casts bool and floats (truncating) to int32
    out_dtype = w.dtype if w is not None else ir_dtype(dtype)
    if x.dtype not in ("int32", "int64") or out_dtype not in _COUNTED or \
            axis not in (None, 0, -1) or (w is not None and (binary_output or
                                                             w.shape != x.shape)):
        raise Reject()  # TF's error, by replay
    if axis in (None, 0) or x.ndim < 2:
        x = ops.reshape(x, new_sizes=(x.size,))
        w = w if w is None else ops.reshape(w, new_sizes=(w.size,))
    elif x.ndim > 2:
        raise Reject()
    ones = compose.const(1, out_dtype, x.shape) if w is None else w
    counts = _scatter_add(x, ones, (*x.shape[:-1], size))
    if binary_output:
        counts = ops.convert(ops.gt(counts, compose.const(0, out_dtype, counts.shape)),
                             dtype=out_dtype)
    return wrap(counts, *(() if weights is None else (weights,)))


@lower(tf.math.confusion_matrix, "labels", "predictions", "weights")
def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=tf.int32):
    if num_classes is None:
        raise Reject()  # the data decides the size: a counted fallback
    n = int(static_ints(num_classes))
    (lab,), (pred,) = operand_nodes(labels), operand_nodes(predictions)  # dtypes may differ
    lab, pred = _squeezed(lab, pred)
    out_dtype = ir_dtype(dtype)
    if lab.ndim != 1 or pred.shape != lab.shape or n < 0 or out_dtype == dt.BOOL or \
            dt.is_complex(lab.dtype) or dt.is_complex(pred.dtype):
        raise Reject()
    if weights is None:
        values = compose.const(1, out_dtype, lab.shape)
    else:
        (values,) = operand_nodes(weights)
        if values.shape != lab.shape:
            raise Reject()
        values = ops.convert(values, dtype=out_dtype)
    lab, pred = (ops.convert(v, dtype="int64") for v in (lab, pred))
    index = ops.concatenate(ops.reshape(lab, new_sizes=(lab.size, 1)),
                            ops.reshape(pred, new_sizes=(pred.size, 1)), dimension=1)
    out = ops.scatter(compose.const(0, out_dtype, (n, n)), index, values, mode="add")
    return wrap(out, *(() if weights is None else (weights,)))


def _squeezed(lab, pred):
    """TF's remove_squeezable_dimensions: a trailing 1 dropped from whichever rank is one
    more than the other's."""
    if pred.ndim == lab.ndim + 1 and pred.shape[-1] == 1:
        pred = ops.reshape(pred, new_sizes=pred.shape[:-1])
    elif lab.ndim == pred.ndim + 1 and lab.shape[-1] == 1:
        lab = ops.reshape(lab, new_sizes=lab.shape[:-1])
    return lab, pred


@lower(tf.nn.ctc_unique_labels, "labels")
def ctc_unique_labels(labels):
    """Per row: the distinct labels in order of first appearance, zero-padded to the row's
    width (int64), and each label's index among them (int32) -- TF's map_fn of tf.unique, whose
    shapes are static; here from the (n, n) table of equal pairs. Integer labels only (a float
    label's NaN would need unique's own rule): others run on TF, counted."""
    (x,) = operand_nodes(labels)
    if x.ndim != 2 or x.dtype not in ("int32", "int64") or x.shape[0] == 0:
        raise Reject()  # (TF's map_fn gives shape (0,) for no rows)
    b, n = x.shape
    cube = (b, n, n)

    def spread(v, dims):
        return ops.broadcast_in_dim(v, shape=cube, broadcast_dimensions=dims)
    i = ops.iota(dtype="int32", shape=cube, dimension=1)
    j = ops.iota(dtype="int32", shape=cube, dimension=2)
    same = ops.eq(spread(x, (0, 1)), spread(x, (0, 2)))  # [r, i, j]: x[i] == x[j]
    first = ops.not_(ops.reduce_or(ops.and_(same, ops.lt(i, j)), axes=(1,)))  # (b, n)
    first_at = ops.reduce_min(ops.select(same, i, compose.const(n, "int32", cube)), axes=(1,))
    index = ops.reduce_sum(ops.convert(ops.and_(spread(first, (0, 1)),
                                                ops.lt(i, spread(first_at, (0, 2)))),
                                       dtype="int32"), axes=(1,))
    slot = ops.sub(ops.cumsum(ops.convert(first, dtype="int32"), axis=1),
                   compose.const(1, "int32", (b, n)))
    placed = ops.and_(spread(first, (0, 2)), ops.eq(spread(slot, (0, 2)), i))  # [r, k, j]
    wide = ops.convert(x, dtype="int64")
    values = ops.reduce_sum(ops.select(placed, spread(wide, (0, 2)),
                                       compose.const(0, "int64", cube)), axes=(2,))
    return [wrap(values), wrap(index)]
