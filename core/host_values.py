"""Values a frontend can read at the call without a sync, so that it can raise there.

A lazy value is usually not known until a barrier, so a bad index or a zero divisor inside
it cannot raise where eager code would. But many such operands are already known: Python
numbers and constants are host values, and a data leaf (a tensor uploaded from the host, or
a result that has finished) holds a finished buffer. `known(node)` returns those as NumPy
arrays -- never waiting on a computation, never syncing -- and None otherwise.

LAZYX_CHECK_INDICES=off turns these reads off (the reads cost a device-to-host copy on a GPU);
values that are still being computed are never read (docs/errors.md says what they give).
"""
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


def known(node, max_elements=MAX_ELEMENTS):
    """The node's value as a NumPy array if it exists on the host or in a finished buffer."""
    if not _ENABLED or node.size > max_elements:
        return None
    if node.op in ("param", "constant"):
        return node.value
    if node.op in _LAYOUT:  # an index reshaped or broadcast (one_hot's unsqueeze) is known too
        inner = known(node.inputs[0], max_elements)
        return None if inner is None else _LAYOUT[node.op](inner, **node.attrs)
    if node.op != "data":
        return None
    buffer = node.value
    is_ready = getattr(buffer, "is_ready", None)  # jax.Array: reading an unfinished one waits
    if is_ready is not None and not is_ready():
        return None
    try:
        return np.asarray(buffer)
    except Exception:  # noqa: BLE001 - a buffer that cannot be read is simply not known
        return None


def out_of_range(values, low, high, ignore=None):
    """Whether any value lies outside [low, high) (values equal to `ignore` excepted)."""
    values = np.asarray(values)
    if values.size == 0 or values.dtype.kind not in "iu":
        return False
    bad = (values < low) | (values >= high)
    if ignore is not None:
        bad &= values != ignore
    return bool(bad.any())
