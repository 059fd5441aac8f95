"""np.partition, np.argpartition and np.lexsort, lowered on lazyx's stable sort. A partition's
contract is only that the k-th element is in its sorted place, smaller ones before it and
larger ones after, in an unspecified order: a full sort meets it (NumPy's introselect leaves
the other elements in another order, so compare partitions by that contract, not element by
element). NaNs sort last, as in NumPy."""
import operator

import numpy as np

from ._fallback import run_eagerly
from ._promote import as_lazy


def _kth_checked(x, kth, axis):
    """The axis (None: the flattened array) after NumPy's checks of kth."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    n = x.shape[np.lib.array_utils.normalize_axis_index(axis, x.ndim)]  # (0-d: AxisError)
    for k in np.atleast_1d(kth).tolist():
        k = operator.index(k)
        if not -n <= k < n:
            raise ValueError(f"kth(={k}) out of bounds ({n})")
    return x, axis


def partition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        return run_eagerly(np.partition, "numpy.partition", (a, kth), dict(
            axis=axis, kind=kind, order=order))
    x, axis = _kth_checked(as_lazy(a), kth, axis)
    return np.sort(x, axis=axis)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        return run_eagerly(np.argpartition, "numpy.argpartition", (a, kth), dict(
            axis=axis, kind=kind, order=order))
    x = as_lazy(a)
    if x.ndim == 0:  # NumPy partitions a 0-d array as the 1-d array of its element
        x = x.reshape(1)
    x, axis = _kth_checked(x, kth, axis)
    return np.argsort(x, axis=axis, kind="stable")


def lexsort(keys, axis=-1):
    """Indices sorting by the last key, ties by the one before, ...: stable sorts by each key
    from the first (least significant) to the last."""
    if isinstance(keys, (list, tuple)):
        keys = list(keys)
    else:  # an array: its rows are the keys
        stacked = as_lazy(keys)
        keys = [stacked[i] for i in range(stacked.shape[0])] if stacked.ndim else []
    if not keys:
        return run_eagerly(np.lexsort, "numpy.lexsort", (keys,), dict(axis=axis))
    keys = np.broadcast_arrays(*[as_lazy(k) for k in keys])
    if keys[0].ndim == 0:
        return run_eagerly(np.lexsort, "numpy.lexsort", (keys,), dict(axis=axis))
    order = np.argsort(keys[0], axis=axis, kind="stable")
    for key in keys[1:]:
        inner = np.argsort(np.take_along_axis(key, order, axis), axis=axis, kind="stable")
        order = np.take_along_axis(order, inner, axis)
    return order


FUNCTIONS = {np.partition: partition, np.argpartition: argpartition, np.lexsort: lexsort}
