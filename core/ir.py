"""IR nodes: immutable, typed, hashed at construction.

A node's structural hash combines its op, attributes, shape, dtype and its inputs' hashes, so
equal programs hash equally whichever frontend built them. Leaves are:
  data      a backend buffer (hashed by shape and dtype only: new data never recompiles)
  param     a host value fed at run time (a Python scalar, an RNG key): also shape+dtype only
  constant  a value baked into the program (hashed by its bytes; frontends ask for it explicitly)
"""
import zlib

import numpy as np

from . import source as _source

LEAF_OPS = frozenset(("data", "param"))
CREATED = [0]  # nodes built so far; read by metrics and by the runtime's node cap

# Hashes must not depend on the process: Python salts str/bytes hashes (PYTHONHASHSEED) and,
# before 3.12, hashes None by address. Strings and None are replaced by stable integers, so
# a node's hash -- and the canonical operand order derived from it -- is the same every run.
_STABLE = {None: -0x5EED}


def _stable(value):
    if type(value) is str or value is None:
        code = _STABLE.get(value)
        if code is None:
            code = _STABLE[value] = zlib.crc32(value.encode())
        return code
    return value


class Node:
    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "hash", "source", "value",
                 "__weakref__")

    def __init__(self, op, inputs, attrs, shape, dtype, value=None, extra_hash=0):
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.source = _source.user_line(3)
        CREATED[0] += 1
        self.hash = hash((_stable(op), extra_hash, tuple([_stable(v) for v in attrs.values()]),
                          shape, _stable(dtype), tuple([i.hash for i in inputs])))

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


def data(buffer, shape, dtype):
    """A leaf holding a backend buffer."""
    return Node("data", (), _NO_ATTRS, tuple(shape), dtype, value=buffer)


def param(value, dtype):
    """A leaf whose value (host NumPy) is supplied at execution: changing it never recompiles."""
    from .dtypes import to_numpy
    host = np.asarray(value, dtype=to_numpy(dtype))
    return Node("param", (), _NO_ATTRS, host.shape, dtype, value=host)


def constant(value, dtype):
    """A value baked into the compiled program; its bytes are part of the graph's hash."""
    from .dtypes import to_numpy
    host = np.asarray(value, dtype=to_numpy(dtype))
    return Node("constant", (), _NO_ATTRS, host.shape, dtype, value=host,
                extra_hash=zlib.crc32(host.tobytes()))


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
