"""Values a frontend can read at the call without a sync, so that it can raise there.

A lazy value is usually not known until a barrier, so a bad index or a zero divisor inside
it cannot raise where eager code would. But many such operands are already known: Python
numbers and constants are host values, a data leaf holds a buffer (a tensor uploaded from the
host, or a result of a graph a sync already started), and layout ops of those -- pads and
concatenations, and a few integer element-wise ops, exact on the host -- are cheap to
replay. `known(node)` returns those as NumPy arrays -- never cutting a graph -- and None for
values still pending in the graph (docs/errors.md says what those give).

LAZYX_CHECK_INDICES=off turns these reads off (each costs a device-to-host copy on a GPU).
"""
import weakref

import numpy as np

from . import config

MAX_ELEMENTS = 1 << 16  # bigger operands are not read (a copy per call would cost too much)
_ENABLED = config.check_indices() != "off"


def _broadcast(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for d, size in zip(broadcast_dimensions, x.shape):
        expanded[d] = size
    return np.broadcast_to(x.reshape(expanded), shape)


def _convert(x, *, dtype):
    # integer -> integer only (wraps identically everywhere); other conversions are not read
    target = np.dtype(dtype) if dtype[:3] in ("int", "uin") else None
    return x.astype(target) if target is not None and x.dtype.kind in "iu" else None


# layout ops read on the host: the value they give is exact and cheap (no arithmetic)
_LAYOUT = {
    "reshape": lambda x, *, new_sizes: x.reshape(new_sizes),
    "transpose": lambda x, *, permutation: x.transpose(permutation),
    "broadcast_in_dim": _broadcast,
    "slice": lambda x, *, start_indices, limit_indices, strides: x[tuple(
        slice(a, b, c) for a, b, c in zip(start_indices, limit_indices, strides))],
    "convert": _convert,
}


def pad_array(x, value, *, padding_config):
    """The IR's pad on a NumPy array (the reference backend's too): interior padding first,
    then low/high, negative values cropping."""
    if not padding_config:
        return x.copy()  # rank 0: nothing to pad (np.pad rejects an empty width list)
    shape = [d + max(d - 1, 0) * i for d, (_, _, i) in zip(x.shape, padding_config)]
    out = np.full(shape, value, dtype=x.dtype)
    out[tuple(slice(None, None, i + 1) for _, _, i in padding_config)] = x
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in padding_config]
    out = np.pad(out, widths, constant_values=value)
    crop = tuple(slice(-min(lo, 0), out.shape[k] + min(hi, 0))
                 for k, (lo, hi, _) in enumerate(padding_config))
    return out[crop]


def clamped_starts(shape, sizes, starts):
    """The IR's dynamic starts: each clamped so a window of `sizes` fits in `shape`."""
    return [int(min(max(int(s), 0), d - n)) for s, d, n in zip(starts, shape, sizes)]


def dynamic_slice_array(x, *starts, slice_sizes):
    """The IR's dynamic_slice on a NumPy array (the reference backend's too)."""
    starts = clamped_starts(x.shape, slice_sizes, starts)
    return x[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))]


# assembly of several known operands, exact as layout ops are: HF's causal-LM loss shifts its
# labels by F.pad(labels, (0, 1), value=-100)[..., 1:] (or a torch.cat), and a bad label must
# still raise at the loss
_ASSEMBLY = {
    "pad": pad_array,
    "concatenate": lambda *xs, dimension: np.concatenate(xs, axis=dimension),
    "dynamic_slice": dynamic_slice_array,  # (x[1:] in torch, TF and NumPy: a run-time start)
}


# integer and bool element-wise ops read on the host: exact (integers wrap alike everywhere),
# so an index fixed up on the device is still known -- Keras' take computes
# where(i < 0, i + n, i) before every Embedding's gather
_EXACT = {
    "add": np.add, "sub": np.subtract, "neg": np.negative, "max": np.maximum,
    "min": np.minimum, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
    "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "and_": np.logical_and,
    "or_": np.logical_or, "not_": np.logical_not, "select": np.where,
}
_EXACT_DEPTH = 4  # nested computed ops followed (each a host op; Keras' fix-up needs 2)


def _exact(node, max_elements, depth):
    if depth >= _EXACT_DEPTH or any(x.dtype[:3] not in ("int", "uin", "boo")
                                    for x in node.inputs):
        return None
    values = []
    for x in node.inputs:
        value = known(x, max_elements, depth + 1)
        if value is None:
            return None
        values.append(value)
    with np.errstate(over="ignore"):
        return np.asarray(_EXACT[node.op](*values)).astype(np.dtype(node.dtype), copy=False)


def known(node, max_elements=MAX_ELEMENTS, depth=0):
    """The node's value as a NumPy array if it exists on the host or in a finished buffer."""
    if not _ENABLED or node.size > max_elements:
        return None
    if node.op in ("param", "constant"):
        value = node.value  # a splat param holds one scalar for its whole shape
        return value if value.shape == node.shape else np.broadcast_to(value, node.shape)
    if node.op in _LAYOUT:  # an index reshaped or broadcast (one_hot's unsqueeze) is known too
        inner = known(node.inputs[0], max_elements, depth)
        return None if inner is None else _LAYOUT[node.op](inner, **node.attrs)
    if node.op in _EXACT:
        return _exact(node, max_elements, depth)
    if node.op in _ASSEMBLY:
        values = [known(x, max_elements, depth) for x in node.inputs]
        return None if any(v is None for v in values) else \
            _ASSEMBLY[node.op](*values, **node.attrs)
    if node.op != "data" or node.value is None:  # (a compiled graph's input slot: no buffer)
        return None
    # A data leaf is either uploaded from the host or the result of a graph already started
    # (by a sync); reading the latter waits for it -- a wait, never a new sync -- so that
    # whether a bad index raises does not depend on timing.
    try:
        return np.asarray(node.value)
    except Exception:  # noqa: BLE001 - a buffer that cannot be read is simply not known
        return None


def out_of_range(values, low, high, ignore=None):
    """Whether any value lies outside [low, high) (values equal to `ignore` excepted)."""
    values = np.asarray(values)
    if values.size == 0 or values.dtype.kind not in "iu":
        return False
    if values.min() >= low and values.max() < high:  # the common case: two reductions
        return False
    if ignore is not None:
        values = values[values != ignore]
        return bool(values.size) and bool(values.min() < low or values.max() >= high)
    return True


# data leaf -> the (low, high, ignore) ranges it was found to lie in. A data leaf's buffer
# never changes, so a check that passed once passes again: a training step whose targets
# stay on the device (or an embedding's index batch read by several ops) reads them once.
_IN_RANGE = weakref.WeakKeyDictionary()


def known_in_range(node, low, high, ignore=None):
    """True when `node` is a data leaf already found to lie in [low, high) (remember_in_range)."""
    ranges = _IN_RANGE.get(node) if node.op == "data" else None
    return ranges is not None and (low, high, ignore) in ranges


def remember_in_range(node, low, high, ignore=None):
    """Note that data leaf `node`'s values lie in [low, high) (`known_in_range` answers)."""
    if node.op == "data":
        _IN_RANGE.setdefault(node, set()).add((low, high, ignore))
