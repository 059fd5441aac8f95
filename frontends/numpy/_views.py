"""NumPy views of lazy arrays: a write into a view changes its base, and a write into a base
changes its live views, as shared memory does in NumPy (docs/numpy.md, "Views").

A lazy array holds a value, not memory. Where NumPy returns a view (basic indexing, `.T`,
`reshape` without a copy, `.real`, `view(dtype)` ...), the result is linked to its parent
with two functions of IR nodes: `derive(parent) -> view` and `put(parent, view) -> parent`.
After any write into an array of a family, the write is carried up (each view put into its
parent) and every other live view of the root is derived again, parents before children.

Arrays outside every family pay one truthiness test of `_STATE` per write (and one dict
lookup while any view is alive): the C fast paths make lazy arrays without `__init__`, so
nothing is stored on the array itself. A view keeps its parent alive (NumPy's `.base` does
too); a parent finds its views through weak references.

Whether NumPy would copy instead (a reshape of a transposed view) is decided as NumPy
decides it: the same view operations are applied to a "stride shadow", an ndarray made by
`as_strided` over a one-element buffer with the root's C strides. A shadow is never read
(every operation applied to it is a view, or refuses: `reshape(copy=False)`); it also gives
`strides`, `flags` (whose `writeable` a user may clear) and `np.shares_memory`.
"""
import weakref

import numpy as np

from ._base import LazyArray

_STATE = {}  # id(array) -> _Entry, for arrays in a view family or made read-only


class _Ref(weakref.ref):
    __slots__ = ("key",)


def _forget(ref):
    """(a member died: it leaves its parent's views; a view keeps its parent alive, so a
    parent outlives its views' entries)"""
    entry = _STATE.pop(ref.key, None)
    if entry is not None and entry.parent is not None:
        parent = _STATE.get(id(entry.parent))
        if parent is not None:
            parent.kids.pop(ref.key, None)


class _Entry:
    __slots__ = ("ref", "parent", "derive", "put", "shadow_op", "shadow", "kids", "readonly")

    def __init__(self, array):
        self.ref = ref = _Ref(array, _forget)
        ref.key = id(array)
        self.parent = None     # the array this is a view of (a strong reference), or None
        self.derive = self.put = self.shadow_op = None
        self.shadow = None     # made on demand
        self.kids = {}         # id(view) -> _Entry of the live views made from this array
        self.readonly = False  # NumPy's read-only views (broadcast_to, diagonal)


def _entry(array):
    entry = _STATE.get(id(array))
    if entry is None:
        entry = _STATE[id(array)] = _Entry(array)
    return entry


def link(parent, view, derive, put, shadow_op, readonly=False):
    """Record that `view` (a new lazy array) is a view of `parent`; `put` None: read-only.
    Returns `view`."""
    if type(parent) is not LazyArray:
        return view  # a view of a temporary made from a list or a host array: nothing to write
    up = _entry(parent)
    entry = _STATE[id(view)] = _Entry(view)  # (a new array: no entry yet)
    entry.parent, entry.derive, entry.put, entry.shadow_op = parent, derive, put, shadow_op
    entry.readonly = readonly or put is None or _is_readonly(up)
    up.kids[id(view)] = entry
    return view


def _is_readonly(entry):
    return entry.readonly or (entry.shadow is not None and not entry.shadow.flags.writeable)


def write(x, node, message="assignment destination is read-only"):
    """Rebind `x` to `node` (every write of the NumPy frontend comes here), carrying it
    through `x`'s view family."""
    if not _STATE:
        x.__lazyx_handle__.set(node)
        return
    entry = _STATE.get(id(x))
    if entry is None:
        x.__lazyx_handle__.set(node)
        return
    if _is_readonly(entry):
        raise ValueError(message)
    x.__lazyx_handle__.set(node)
    _spread(x, entry)


def check_writeable(x, message="assignment destination is read-only"):
    """NumPy's refusal, before a write that does work first (a fallback's host copy)."""
    if _STATE:
        entry = _STATE.get(id(x))
        if entry is not None and _is_readonly(entry):
            raise ValueError(message)


def _spread(x, entry):
    # up: each view into its parent, so the root holds the write
    path = {id(x)}
    child = x
    while entry.parent is not None:
        parent = entry.parent
        parent.__lazyx_handle__.set(entry.put(parent.__lazyx_handle__.node,
                                              child.__lazyx_handle__.node))
        path.add(id(parent))
        child, entry = parent, _STATE[id(parent)]
    # down: every other live view derived again from its (already updated) parent
    stack = [(child, entry)]
    while stack:
        parent, entry = stack.pop()
        node = parent.__lazyx_handle__.node
        for key, kid_entry in list(entry.kids.items()):
            kid = kid_entry.ref()
            if kid is None:
                continue
            if key not in path:
                kid.__lazyx_handle__.set(kid_entry.derive(node))
            if kid_entry.kids:
                stack.append((kid, kid_entry))


# ---------------------------------------------------------------- facts for NumPy's API

def base(x):
    """NumPy's `.base` of a view: the array at the top of its family (None for the top)."""
    entry = _STATE.get(id(x)) if _STATE else None
    if entry is None or entry.parent is None:
        return None
    while entry.parent is not None:
        top = entry.parent
        entry = _STATE[id(top)]
    return top


def is_view(x):
    entry = _STATE.get(id(x)) if _STATE else None
    return entry is not None and entry.parent is not None


def _c_strides(shape, itemsize):
    step, out = itemsize, []
    for n in reversed(shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


def _root_shadow(x):
    return np.lib.stride_tricks.as_strided(np.zeros(1, x.dtype), x.shape,
                                           _c_strides(x.shape, x.dtype.itemsize))


def shadow(x, keep=False):
    """The stride shadow of `x` (kept in x's entry when `keep`: its flags may be changed)."""
    entry = _STATE.get(id(x)) if _STATE else None
    if entry is None:
        if not keep:
            return _root_shadow(x)
        entry = _entry(x)
    if entry.shadow is None:
        made = _root_shadow(x) if entry.parent is None else entry.shadow_op(shadow(entry.parent))
        if entry.readonly and made.flags.writeable:
            made.flags.writeable = False
        entry.shadow = made
    return entry.shadow


def set_writeable(x, write):
    """`x.setflags(write=...)`, `x.flags.writeable = ...`: NumPy's rules, on x's shadow."""
    if not write:
        shadow(x, keep=True).setflags(write=False)
        return
    entry = _STATE.get(id(x))
    if entry is not None and entry.readonly:
        raise ValueError("cannot set WRITEABLE flag to True of this array")
    if entry is None or entry.shadow is None or entry.shadow.flags.writeable:
        return
    # NumPy keeps an as_strided array read-only once cleared: a fresh shadow is writeable
    # where the array's ancestors are
    made = _root_shadow(x) if entry.parent is None else entry.shadow_op(shadow(entry.parent))
    if not made.flags.writeable:
        raise ValueError("cannot set WRITEABLE flag to True of this array")
    entry.shadow = made


def has_views(x):
    entry = _STATE.get(id(x)) if _STATE else None
    return entry is not None and any(k.ref() is not None for k in entry.kids.values())


def detach(x):
    """Take `x` out of its view family: it and its former views keep their values."""
    entry = _STATE.get(id(x)) if _STATE else None
    if entry is None:
        return
    if entry.parent is not None:
        up = _STATE.get(id(entry.parent))
        if up is not None:
            up.kids.pop(id(x), None)
        entry.parent = entry.derive = entry.put = entry.shadow_op = None
    for kid in entry.kids.values():  # (each keeps its shadow, if made: its strides, flags)
        kid.parent = kid.derive = kid.put = kid.shadow_op = None
    entry.kids = {}
    entry.shadow = None  # (its shape changed)


def shares_memory(a, b, exact=True):
    """np.shares_memory / np.may_share_memory of lazy arrays: their shadows' answer when both
    are of one family (a shadow's bounds are computed, never read)."""
    if a is b:
        return a.size > 0
    if _root(a) is not _root(b):
        return False
    sa, sb = shadow(a), shadow(b)
    return np.shares_memory(sa, sb) if exact else np.may_share_memory(sa, sb)


def _root(x):
    entry = _STATE.get(id(x)) if _STATE else None
    while entry is not None and entry.parent is not None:
        x = entry.parent
        entry = _STATE.get(id(x))
    return x


def reshape_is_view(x, shape, order):
    """Whether NumPy's reshape of `x` to `shape` is a view (else it copies)."""
    if order == "C" and not is_view(x):
        return True  # a C-contiguous array: always a view
    try:
        np.reshape(shadow(x), shape, order=order, copy=False)
    except ValueError:
        return False
    return True


def readonly(x):
    """Mark `x` (a new array) read-only, as NumPy makes some results (`.imag` of a real
    array). Returns `x`."""
    _entry(x).readonly = True
    return x
