"""IR nodes: immutable, typed, hashed at construction.

A node's structural hash combines its op, attributes, shape, dtype and its inputs' hashes, so
equal programs hash equally whichever frontend built them. Leaves are:
  data      a backend buffer (hashed by shape, dtype and, when it spans several devices, its
            sharding: new data never recompiles, data laid out differently does)
  param     a host value fed at run time (a Python scalar, an RNG key): also shape+dtype only
  constant  a value baked into the program (hashed by its bytes; frontends ask for it explicitly)
"""
import hashlib
import zlib

import numpy as np

from . import source as _source

LEAF_OPS = frozenset(("data", "param"))
CREATED = [0]  # nodes built so far; read by metrics and by the runtime's node cap

# Exact structure, interned: each distinct (op, attrs, shape, dtype[, constant digest]) gets a
# small int once. Compile-cache keys are built from these ids, so two graphs share a compiled
# program only if they are really equal -- never because Python's hash() collided (it does:
# hash(-1) == hash(-2), so pad configs (-1, -2, 0) and (-2, -1, 0) used to share a program).
_LOCAL_IDS = {}
# ...and a process-independent hash per interned structure. Python salts str/bytes hashes
# (PYTHONHASHSEED) and, before 3.12, hashes None by address; node hashes feed the canonical
# operand order and graph_hash, which must be the same in every run, so strings and None are
# replaced by stable integers (once per distinct structure, off the hot path).
_LOCAL_HASHES = []
_OP_KEYS = {}


def _stable(value):
    if type(value) is str:
        return zlib.crc32(value.encode())
    if value is None:
        return -0x5EED
    if type(value) is tuple:
        return tuple(_stable(v) for v in value)
    if type(value) is bytes:
        return int.from_bytes(value, "little")
    return value


class Node:
    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "hash", "local", "serial", "source",
                 "value", "order", "__weakref__")

    def __init__(self, op, inputs, attrs, shape, dtype, value=None, extra_hash=0):
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.source = _source.user_line(3) if _source.ENABLED else None
        CREATED[0] += 1
        self.serial = CREATED[0]  # creation order is a topological order: inputs come first
        signature = (op, tuple(attrs.items()) if attrs else None, shape, dtype, extra_hash)
        local = _LOCAL_IDS.get(signature)
        if local is None:
            local = _LOCAL_IDS[signature] = len(_LOCAL_IDS)
            _LOCAL_HASHES.append(hash(_stable(signature)))
        self.local = local  # exact id of this node's own structure (inputs excluded)
        # structural hash of the whole expression (for graph identity; keys use `local`)
        stable = _LOCAL_HASHES[local]
        self.hash = hash((stable, tuple([i.hash for i in inputs]))) if inputs else stable
        # ops alone, no shapes or attributes: the key that orders a commutative op's operands,
        # so a new input shape does not flip the order (and a recompile reads as one)
        op_key = _OP_KEYS.get(op)
        if op_key is None:
            op_key = _OP_KEYS[op] = zlib.crc32(op.encode())
        self.order = hash((op_key, tuple([i.order for i in inputs]))) if inputs else op_key

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def is_leaf(self):
        return self.op in LEAF_OPS

    def __repr__(self):
        return f"Node({self.op}, shape={self.shape}, dtype={self.dtype})"


_NO_ATTRS = {}


# Once a mesh exists (core/sharding.activate), the backend's buffer -> Sharding-or-None:
# a data leaf laid out over several devices keeps its layout in its attrs, so it is part of
# the compile-cache key and the backend compiles for that input sharding.
LAYOUT_OF = [None]


def data(buffer, shape, dtype, sharding=None):
    """A leaf holding a backend buffer (and, for a multi-device buffer, its sharding)."""
    if sharding is None and LAYOUT_OF[0] is not None:
        sharding = LAYOUT_OF[0](buffer)
    attrs = _NO_ATTRS if sharding is None else {"sharding": sharding}
    return Node("data", (), attrs, tuple(shape), dtype, value=buffer)


def param(value, dtype):
    """A leaf whose value (host NumPy) is supplied at execution: changing it never recompiles."""
    from .dtypes import to_numpy
    host = np.asarray(value, dtype=to_numpy(dtype))
    return Node("param", (), _NO_ATTRS, host.shape, dtype, value=host)


def constant(value, dtype):
    """A value baked into the compiled program; its bytes are part of the graph's hash."""
    from .dtypes import to_numpy
    host = np.asarray(value, dtype=to_numpy(dtype))
    # a digest rather than the bytes: the interned structure table must not keep big arrays
    digest = hashlib.blake2b(host.tobytes(), digest_size=16).digest()
    return Node("constant", (), _NO_ATTRS, host.shape, dtype, value=host, extra_hash=digest)


def topo_order(roots):
    """Nodes reachable from roots, inputs before users; each node once (shared by identity)."""
    order, seen = [], set()
    stack = [(r, False) for r in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for inp in reversed(node.inputs):
            if id(inp) not in seen:
                stack.append((inp, False))
    return order
