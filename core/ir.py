"""IR nodes: immutable, typed, keyed at construction.

Leaves are:
  data      a backend buffer (keyed by shape, dtype and, when it spans several devices, its
            sharding: new data never recompiles, data laid out differently does)
  param     a host value fed at run time (a Python scalar, an RNG key): also shape+dtype only;
            a "splat" param (attrs {"splat": True}) has one scalar value standing for its
            whole shape: how a Python number operand is broadcast to its partner, in one node
  constant  a value baked into the program (keyed by its bytes; frontends ask for it explicitly)

Every node carries three identities, all computed when it is made, in O(its inputs):
  local  an exact id of its own structure (op, attrs, shape, dtype), interned;
  eid    an exact id of the whole expression below it, interned from `local` and its inputs'
         eids, where a leaf counts as "the k-th leaf first used in this trace" (see below);
         two nodes with the same eid compute the same function of the trace's leaves, so a
         cut keys its compile cache by its roots' eids and walks no graph on a hit;
  hash   a process-independent structural hash (canonical operand order, root order).

The trace ("epoch") is per thread: it starts empty after a cut leaves nothing of it pending,
numbers leaves in first-use order, and is what makes a repeated step repeat its eids. A node
whose inputs come from another thread's or an older trace gets eid None: cuts involving it
take the graph walk instead (correct, just not O(1)).

Nodes with several results (a factorization's factors, a sort's values and indices) are two
kinds of node, so that only one of them is ever visible outside the IR:
  multi       op "lu", "qr", "geqrf", "ldl", "eigh", "svd", "top_k", "sort_with_indices",
              "ctc_loss" (core/ops.py's @multi_primitive): `shape` is a tuple of shapes and
              `dtype` a tuple of dtypes, one per result (`is_multi`). Backends evaluate it
              once, to a tuple of values.
  projection  op "result", attrs {"index": i}, whose one input is a multi node: an ordinary
              single-result node with result i's shape and dtype. Backends index the tuple.
A multi node's builder returns its projections, and `result` is the only op that accepts a
multi node as input (ops.primitive refuses it elsewhere), so everything downstream -- cut
roots, live handles, buffers, frontends' tensors, autodiff's outputs -- sees single-result
nodes only. Identities need nothing new: the multi node's `local` covers its op, attrs and all
result types; a projection's `local` covers its index and its eid is made from the multi node's
eid. So equal programs still key the cache exactly (LU's pivots and permutation, one type, are
told apart by index), and every projection of one multi node reads one computation. A builder
asked twice in one trace for the same op, attrs and inputs returns the same multi node.

Interning tables are bounded: when one fills up it is emptied, and since ids come from a
counter that never repeats, an old id can never be mistaken for a new structure -- the cost
of a reset is at most one recompile per graph.
"""
import hashlib
import itertools
import math
import threading
import zlib

import numpy as np

from . import config, source as _source
from .dtypes import to_numpy

_OP_CURRENT = _source.CURRENT  # the running frontend op's user line (see source.op_line)
LEAF_OPS = frozenset(("data", "param"))
CREATED = [0]  # nodes built so far, all threads; read by metrics and by the node cap

# Exact structure -> (local id, stable hash). Cache keys are built from interned ids, so two
# graphs share a compiled program only if they are really equal -- never because Python's
# hash() collided (hash(-1) == hash(-2): pad configs (-1, -2, 0) and (-2, -1, 0) once shared
# one). The stable hash replaces salted str/bytes hashes (PYTHONHASHSEED) and None's
# address-based hash, so node hashes are the same in every run.
_LOCALS = {}
_EIDS = {}  # (local, input eids...) or ("leaf", local, k) -> eid
_next_id = itertools.count(1).__next__  # atomic under the GIL: ids are never handed out twice
TABLE_LIMIT = 1 << 19  # entries per interning table (about 50 MB each when full)
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


# Bumped when _LOCALS is emptied: memos of interned entries (core/ops.py's per-op rule memo)
# drop theirs then, so one structure never has two live ids (which would cost recompiles).
LOCALS_GENERATION = [0]


def _intern_local(signature):
    if len(_LOCALS) >= TABLE_LIMIT:
        _LOCALS.clear()
        LOCALS_GENERATION[0] += 1
    entry = (_next_id(), hash(_stable(signature)), _op_key(signature[0]))
    return _LOCALS.setdefault(signature, entry)  # a racing thread's entry wins; both are exact


def _intern_eid(key):
    if len(_EIDS) >= TABLE_LIMIT:
        _EIDS.clear()
    return _EIDS.setdefault(key, _next_id())


class Trace(threading.local):
    """This thread's current trace: its serial and its leaves in first-use order."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.serial = _next_id()       # never 0: epoch 0 marks leaf-free (universal) nodes
        self.leaves = []               # leaf nodes, by first-use position k
        self.leaf_eids = {}            # id(leaf) -> its eid in this trace (leaves stay alive)
        self.leaf_positions = {}       # id(leaf) -> k

    def leaf_eid(self, leaf):
        eid = self.leaf_eids.get(id(leaf))
        if eid is None:
            k = len(self.leaves)
            eid = _EIDS.get(("leaf", leaf.local, k))
            if eid is None:
                eid = _intern_eid(("leaf", leaf.local, k))
            self.leaf_eids[id(leaf)] = eid
            self.leaf_positions[id(leaf)] = k
            self.leaves.append(leaf)
        return eid


TRACE = Trace()


class _PyNodeBase:
    """A node's fields and their construction: the reference implementation. core/_native.c
    (built by `pip install`, optional) does the same in C, and is used when it imports."""
    __slots__ = ("op", "inputs", "attrs", "shape", "dtype", "hash", "local", "eid", "epoch",
                 "serial", "source", "value", "order", "__weakref__")

    def __init__(self, op, inputs, attrs, shape, dtype, value=None, extra_hash=0, source=False,
                 entry=None):
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.shape = shape
        self.dtype = dtype
        self.value = value
        if source is False:  # not given: the user's line making this node (found once per op)
            current = _OP_CURRENT
            source = current.line if current.depth else _source.user_line(3)
        self.source = source
        CREATED[0] += 1
        self.serial = CREATED[0]  # creation order is a topological order: inputs come first
        if entry is None:  # else the caller's memo of local_entry(op, attrs, shape, dtype)
            entry = local_entry(op, attrs, shape, dtype, extra_hash)
        self.local, stable, op_key = entry
        n = len(inputs)
        if not n:
            self.hash = stable
            self.order = op_key
            if op in LEAF_OPS:  # numbered per trace when first used
                self.epoch, self.eid = None, None
            else:  # constant, iota, ...: the same in every trace
                self.epoch = 0
                eid = _EIDS.get((self.local,))
                self.eid = eid if eid is not None else _intern_eid((self.local,))
            return
        # (unrolled for the one- and two-input nodes that most ops make; same values)
        if n == 1:
            a = inputs[0]
            self.hash = hash((stable, (a.hash,)))
            self.order = hash((op_key, (a.order,)))
        elif n == 2:
            a, b = inputs
            self.hash = hash((stable, (a.hash, b.hash)))
            self.order = hash((op_key, (a.order, b.order)))
        else:
            self.hash = hash((stable, tuple([i.hash for i in inputs])))
            self.order = hash((op_key, tuple([i.order for i in inputs])))
        trace = TRACE
        serial = trace.serial
        epoch = 0
        key = [self.local]
        for i in inputs:
            e = i.epoch
            if e == serial or e == 0:
                key.append(i.eid)
                epoch |= e
            elif e is None:  # a leaf
                key.append(trace.leaf_eid(i))
                epoch = serial
            else:  # an input from another trace: no exact key, cuts walk this graph
                self.epoch, self.eid = -1, None
                return
        key = tuple(key)
        eid = _EIDS.get(key)
        self.eid = eid if eid is not None else _intern_eid(key)
        self.epoch = epoch


_NATIVE = config.native()
NATIVE_BASE = None if _NATIVE is None else _NATIVE.NodeBase

# Types of node values (a backend's buffers) that hold no reference a cycle could pass
# through: the C node leaves the cyclic GC's sight when its fields are all of this kind
# (core/_native.c, "nodes and the cyclic GC"). Backends add their buffer types at import.
INERT_VALUE_TYPES = set()


class Node(NATIVE_BASE or _PyNodeBase):
    """An IR node (see the module docstring); its fields are set once, at construction."""
    __slots__ = ()
    _IR_GLOBALS = globals()  # where the C constructor finds this module's tables

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
    def is_multi(self):
        """True for a node with several results (see the module docstring)."""
        return type(self.dtype) is tuple

    @property
    def is_leaf(self):
        return self.op in LEAF_OPS

    def __repr__(self):
        return f"Node({self.op}, shape={self.shape}, dtype={self.dtype})"

    def __reduce__(self):
        # copy and pickle see a Python class's slots, not the C base's fields: name them all
        names = dict.fromkeys(_PyNodeBase.__slots__)
        for klass in type(self).__mro__:
            names.update(dict.fromkeys(klass.__dict__.get("__slots__", ())))
        names.pop("__weakref__")
        return _rebuilt, (type(self), {n: getattr(self, n) for n in names if hasattr(self, n)})


def _rebuilt(cls, fields):
    if fields.get("epoch") not in (None, 0):
        # a copy of a pending node has copies of its leaves, which this thread's trace has
        # not numbered: it keeps no exact key in the trace (cuts walk its graph)
        fields = dict(fields, epoch=-1, eid=None)
    node = cls.__new__(cls)
    for name, value in fields.items():
        setattr(node, name, value)
    return node


# Node(op, inputs, attrs, shape, dtype[, value, extra_hash, source, entry]) with positional
# arguments only: the C constructor skips the class call's argument parsing (~0.3 us a node)
new_node = Node if _NATIVE is None else _NATIVE.configure(globals())


def local_entry(op, attrs, shape, dtype, extra_hash=0):
    """The interned (local id, stable hash) of a node's own structure."""
    signature = (op, tuple(attrs.items()) if attrs else None, shape, dtype, extra_hash)
    entry = _LOCALS.get(signature)
    return entry if entry is not None else _intern_local(signature)


def _op_key(op):
    # ops alone, no shapes or attributes: the key that orders a commutative op's operands,
    # so a new input shape does not flip the order (and a recompile reads as one)
    key = _OP_KEYS.get(op)
    if key is None:
        key = _OP_KEYS[op] = zlib.crc32(op.encode())
    return key


_NO_ATTRS = {}


# Once a mesh exists (core/sharding.activate), the backend's buffer -> Sharding-or-None:
# a data leaf laid out over several devices keeps its layout in its attrs, so it is part of
# its `local` id (the compile-cache key) and the backend compiles for that input sharding.
LAYOUT_OF = [None]


def data(buffer, shape, dtype, source=False, sharding=None):
    """A leaf holding a backend buffer (`source`: where it was made, if not the caller; for a
    multi-device buffer, its sharding)."""
    if sharding is None and LAYOUT_OF[0] is not None:
        sharding = LAYOUT_OF[0](buffer)
    attrs = _NO_ATTRS if sharding is None else {"sharding": sharding}
    return new_node("data", (), attrs, tuple(shape), dtype, buffer, 0, source)


def data_nodes(buffers, metas):
    """A data leaf per buffer, `metas` giving each one's (shape, dtype, source): a replay's
    results, hundreds per call for an optimizer step."""
    if LAYOUT_OF[0] is not None:
        return [data(b, shape, dtype, source) for b, (shape, dtype, source) in zip(buffers, metas)]
    return [new_node("data", (), _NO_ATTRS, tuple(shape), dtype, b, 0, source)
            for b, (shape, dtype, source) in zip(buffers, metas)]


_VALUE = Node.value  # the slot itself, under Derived's property


class SameAs:
    """In a `fixed` mapping (backend.compile, executable.bind: leaf index -> the value it
    keeps): a leaf that is not fixed -- its caller passes a new value at each call -- but
    whose value always equals leaf `leaf`'s (a replay's parameters computed from one number
    of the call: an optimizer's learning rate, read once per parameter). A backend may read
    the two as one."""
    __slots__ = ("leaf",)

    def __init__(self, leaf):
        self.leaf = leaf


class Derived(Node):
    """A data leaf whose buffer is made from another data leaf's on first read, by a transpose
    or reshape (runtime.plan_results: a cut computes one of two results that differ only in
    layout, and derives the other). To everything else it is an ordinary data leaf."""
    __slots__ = ("_base", "_how")

    def __init__(self, base, op, attrs, shape, dtype, source):
        Node.__init__(self, "data", (), _NO_ATTRS, shape, dtype, source=source)
        self._base, self._how = base, (op, attrs)

    def _read(self):
        value = _VALUE.__get__(self)
        if value is None:
            op, attrs = self._how
            base = self._base.value  # a NumPy array or a jax.Array: both have these methods
            value = base.transpose(attrs["permutation"]) if op == "transpose" else \
                base.reshape(attrs["new_sizes"])
            _VALUE.__set__(self, value)
            self._base = None  # the base's buffer may go once nothing else holds it
        return value

    value = property(_read, _VALUE.__set__)


def param(value, dtype, shape=()):
    """A leaf whose value (host NumPy) is supplied at execution: changing it never recompiles.
    With a `shape`, a scalar `value` is a splat of that shape (see splat)."""
    if type(value) in _PY_NUMBERS:
        # (-0.0 == 0.0 as a key, yet its bytes differ: negative zero has a key of its own)
        key = (value, dtype) if value or not _negative_zero(value) else (_NEG_ZERO, dtype)
        host = _HOSTS.get(key)
        if host is None:
            host = _host_number(value, dtype, key)
        return new_node("param", (), _SPLAT if shape else _NO_ATTRS, tuple(shape), dtype, host)
    host = np.asarray(value, dtype=to_numpy(dtype))
    if shape and not host.ndim:
        return new_node("param", (), _SPLAT, tuple(shape), dtype, host)
    if shape and tuple(shape) != host.shape:
        raise ValueError(f"param: a value of shape {host.shape} given for shape {tuple(shape)}")
    return new_node("param", (), _NO_ATTRS, host.shape, dtype, host)


# A Python number's host value per (number, IR dtype), shared by every param made of it: a
# scalar operand is the commonest leaf there is (`x * 0.5`), and np.asarray cost a third of
# its node. Read-only, since nodes share it. Equal keys give equal arrays: True, 1 and 1.0
# convert alike to any one dtype; only negative zero (-0.0 == 0.0) needs a key of its own.
_PY_NUMBERS = (float, int, bool)
_HOSTS = {}
_HOSTS_LIMIT = 4096
_NEG_ZERO = "-0.0"


def _negative_zero(value):
    return type(value) is float and math.copysign(1.0, value) < 0


def _host_number(value, dtype, key):
    host = np.asarray(value, dtype=to_numpy(dtype))  # (its OverflowError for an int too big)
    host.flags.writeable = False
    if len(_HOSTS) >= _HOSTS_LIMIT:
        _HOSTS.clear()
    _HOSTS[key] = host
    return host


# A splat param: one host scalar standing for a whole array of it. The executable receives
# the scalar (packed with the others, backends/xla.py) and broadcasts it inside the program,
# so `x * 0.5` costs one leaf instead of a rank-0 param plus a broadcast_in_dim (a third of
# all nodes in chains of scalar arithmetic). The attribute keeps it apart, in the cache key,
# from a param holding a whole array of the same shape.
_SPLAT = {"splat": True}


def splat(scalar, shape):
    """The scalar-valued param `scalar` (rank 0, or a splat itself) as a param of `shape`;
    ops.broadcast_in_dim folds to this. core/capture.py hooks it to keep replay's links."""
    return new_node("param", (), _SPLAT, tuple(shape), scalar.dtype, scalar.value, 0,
                    scalar.source)


def is_splat(node):
    """Whether `node` is a param whose host value is one scalar standing for its whole shape."""
    return node.attrs.get("splat", False) and node.op == "param"


def constant(value, dtype):
    """A value baked into the compiled program; its bytes are part of the graph's key."""
    host = np.asarray(value, dtype=to_numpy(dtype))
    # a digest rather than the bytes: the interned structure table must not keep big arrays
    digest = hashlib.blake2b(host.tobytes(), digest_size=16).digest()
    return new_node("constant", (), _NO_ATTRS, host.shape, dtype, host, digest)


def interned_entries():
    """Sizes of the interning tables (for the soak benchmark and memory tests)."""
    return {"structures": len(_LOCALS), "expressions": len(_EIDS)}


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
