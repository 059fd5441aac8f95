"""Lazy handles, the live registry, cutting graphs, the compile cache.

A frontend tensor owns a LazyHandle whose `node` is either pending IR or a `data` leaf. A cut
(`sync`) gathers the pending roots, linearizes them into a Program, looks the program up in an
LRU cache keyed by structure (a hit is one dict lookup), runs it, and swaps each handle's node
for a data leaf holding the result. On the XLA backend the run is dispatched asynchronously:
`sync` returns before the numbers exist, and only reading them on the host waits.
"""
import collections
import hashlib
import operator
import time
import warnings
import weakref

import numpy as np

from . import config, ir, metrics
from . import dtypes as dt
from .source import user_line

# Why a sync happened; frontends pass one of these as `cause`.
CAUSES = ("explicit",        # lazyx.sync(), mark_step(), ltf.sync()
          "print",           # repr / str / print / tf.print
          "item",            # .item(), float(), int(), bool(), len() of a lazy value
          "convert",         # conversion to the host framework: np.asarray, .numpy(), .cpu()
          "data_dependent",  # an op whose output shape depends on values (nonzero, masks)
          "node_cap",        # the pending graph grew past LAZYX_NODE_CAP
          "fallback")        # an op without a lowering ran eagerly on the real framework
# Objects with optional on_sync(cause, source, program), on_cache_miss(program, cached_programs),
# on_compile(program, exe, start, seconds), on_execute(program, start, seconds),
# on_transfer(direction, nbytes, start, seconds), on_fallback(op_name, source): registered only
# while explanations, dumps or a timeline are on, so a plain run pays nothing for them.
LISTENERS = []
# While KEEP_ORIGINS[0] > 0 (a frontend's lazy gradient tape records), each data leaf a sync
# makes remembers the graph it realized, so a gradient can still flow through a value that
# was observed (printed, handed to an eager op) mid-step. Off otherwise: an origin keeps its
# whole graph alive.
KEEP_ORIGINS = [0]
ORIGINS = weakref.WeakKeyDictionary()  # realized data leaf -> the node it was computed as


class LazyHandle:
    """A mutable cell pointing at a node; frontends wrap one per tensor."""
    __slots__ = ("node", "__weakref__")

    def __init__(self, node):
        self.node = node
        if node.op != "data":
            _live.add(self)

    def set(self, node):
        """Rebind (in-place ops); a pending node registers the handle for the next sync."""
        self.node = node
        if node.op != "data":
            _live.add(self)

    @property
    def pending(self):
        return self.node.op != "data"


class _OrderedWeakSet:
    """Live pending handles in registration order.

    A WeakSet iterates in hash (address) order, which changes from step to step; the roots of
    a cut would then come out in a different order each time and the same training step would
    linearize into a different program (a recompile per step). Registration order is the
    program's own order, so it repeats exactly.
    """

    def __init__(self):
        self._refs = {}

    def add(self, obj):
        key = id(obj)
        if key not in self._refs:
            self._refs[key] = weakref.ref(obj, lambda _ref, key=key: self._refs.pop(key, None))

    def discard(self, obj):
        self._refs.pop(id(obj), None)

    def clear(self):
        self._refs.clear()

    def __iter__(self):
        return iter([obj for obj in (ref() for ref in list(self._refs.values()))
                     if obj is not None])

    def __len__(self):
        return len(self._refs)


_live = _OrderedWeakSet()


def handle_of(obj):
    """The LazyHandle behind a lazyx tensor of any frontend."""
    if isinstance(obj, LazyHandle):
        return obj
    handle = getattr(obj, "__lazyx_handle__", None)
    if handle is None:
        raise TypeError(f"lazyx: expected a lazy tensor, got {type(obj).__name__}")
    return handle() if callable(handle) else handle


# ---------------------------------------------------------------- backend

_backend = None


def get_backend():
    global _backend
    if _backend is None:
        from ..backends import load
        _backend = load(config.backend_name())
    return _backend


def backend():
    """The active backend's name ('xla' or 'reference'), from LAZYX_BACKEND."""
    return get_backend().name


# ---------------------------------------------------------------- host transfers

def from_host(array, dtype=None):
    """A data leaf holding `array` (NumPy-convertible) on the backend's device."""
    host = np.asarray(array)
    dtype = dtype or dt.from_numpy(host.dtype)
    host = np.asarray(host, dtype=dt.to_numpy(dtype), order="C")  # ascontiguousarray makes 0-d 1-d
    start = time.perf_counter()
    buffer = get_backend().from_host(host)
    metrics.count("transfers_to_device")
    metrics.count("bytes_to_device", host.nbytes)
    _notify("on_transfer", "to_device", host.nbytes, start, time.perf_counter() - start)
    return ir.data(buffer, host.shape, dtype)


def to_host(handle, cause="observe", source=None):
    """The handle's value as a NumPy array, syncing first if it is pending."""
    if handle.pending:
        sync(handle, cause=cause, source=source or user_line(2))
    start = time.perf_counter()
    host = get_backend().to_host(handle.node.value)
    metrics.count("transfers_to_host")
    metrics.count("bytes_to_host", host.nbytes)
    _notify("on_transfer", "to_host", host.nbytes, start, time.perf_counter() - start)
    return host


# ---------------------------------------------------------------- programs

class Program:
    """A linearized graph with no data in it, safe to keep in the cache.

    Slots 0..len(leaves)-1 are the leaves (data and params, in first-visit order); then one
    slot per instruction. An instruction is (op, attrs, input slots, shape, dtype, const).
    """
    __slots__ = ("leaves", "instructions", "outputs", "key", "sources", "leaf_sources", "_digest",
                 "leaf_shardings")

    def __init__(self, leaves, instructions, outputs, key, sources, leaf_sources=None,
                 leaf_shardings=None):
        self.leaves = leaves              # [(kind, shape, dtype)]
        self.instructions = instructions
        self.outputs = outputs
        self.key = key
        self.sources = sources            # user source line per instruction (or None)
        # user source line per leaf: where the input was made (debug output names inputs so)
        self.leaf_sources = leaf_sources or [None] * len(leaves)
        self._digest = None
        # per leaf: a core.sharding.Sharding for a multi-device data leaf, else None
        self.leaf_shardings = leaf_shardings or (None,) * len(leaves)

    @property
    def graph_hash(self):
        """A stable hex digest of the structure (the same in every process and frontend)."""
        if self._digest is None:
            h = hashlib.blake2b(digest_size=8)
            h.update(repr((self.leaves, self.outputs)).encode())
            if any(self.leaf_shardings):
                h.update(repr(self.leaf_shardings).encode())
            for op, attrs, ins, shape, dtype, const in self.instructions:
                h.update(repr((op, tuple(attrs.items()), ins, shape, dtype)).encode())
                if const is not None:
                    h.update(const.tobytes())
            self._digest = h.hexdigest()
        return self._digest

    def needs_x64(self):
        wide = ("int64", "uint64", "float64", "complex128")
        return any(leaf[2] in wide for leaf in self.leaves) or \
            any(ins[4] in wide for ins in self.instructions)


def _walk(roots):
    """One post-order pass over the graph behind `roots`: (cache key, leaf nodes, inner nodes).

    The key is exact: per node its interned structure id (`Node.local`) and the slots of its
    inputs, so graphs differing only in which leaf feeds which input, or in a node being
    realized (a data leaf) or pending, get different keys. During the walk leaf i has slot
    -1-i and inner node k has slot k; `_program` renumbers them leaves-first.
    """
    slot = {}
    leaves, inner, signature = [], [], []
    stack = list(reversed(roots))
    push, pop = stack.append, stack.pop
    leaf_ops = ir.LEAF_OPS
    while stack:
        node = stack[-1]
        if id(node) in slot:
            pop()
            continue
        waiting = False
        for inp in reversed(node.inputs):  # reversed: the first operand is visited first
            if id(inp) not in slot:
                push(inp)
                waiting = True
        if waiting:
            continue
        pop()
        if node.op in leaf_ops:
            slot[id(node)] = -1 - len(leaves)
            leaves.append(node)
            signature.append(node.local)
        else:
            ins = tuple([slot[id(i)] for i in node.inputs])
            slot[id(node)] = len(inner)
            inner.append((node, ins))
            signature.append((node.local, ins))
    outputs = tuple([slot[id(r)] for r in roots])
    return (tuple(signature), outputs), leaves, inner


_by_serial = operator.attrgetter("serial")


def _walk_fast(roots):
    """Like _walk, for the cut's hot path: gather the reachable nodes breadth-first (one visit
    each), then order the inner nodes by creation serial -- a topological order, since inputs
    always exist before their users. About twice as fast as the post-order walk.

    Leaves are numbered in order of first use, not by serial: a training step's parameters
    are data leaves made by the previous cut, in whatever order it produced them, while the
    step's own ops are built in the same order every time -- so the key repeats from step 2
    on. A different build order of an equal graph merely compiles once more; graph_hash uses
    the order-independent _walk."""
    seen = {id(r) for r in roots}
    nodes = list(roots)
    add = seen.add
    for node in nodes:
        for inp in node.inputs:
            if id(inp) not in seen:
                add(id(inp))
                nodes.append(inp)
    leaf_ops = ir.LEAF_OPS
    nodes = sorted([n for n in nodes if n.op not in leaf_ops], key=_by_serial)
    slot = {}
    leaves, inner, signature = [], [], []
    get = slot.get

    def leaf_slot(leaf):
        s = slot[id(leaf)] = -1 - len(leaves)
        leaves.append(leaf)
        signature.append(leaf.local)
        return s

    for node in nodes:
        ins = []
        for i in node.inputs:
            s = get(id(i))
            ins.append(leaf_slot(i) if s is None else s)
        ins = tuple(ins)
        slot[id(node)] = len(inner)
        inner.append((node, ins))
        signature.append((node.local, ins))
    outputs = tuple([get(id(r)) if id(r) in slot else leaf_slot(r) for r in roots])
    return (tuple(signature), outputs), leaves, inner


def _program(key, leaves, inner):
    """The cacheable Program for a walk (built only when the cache misses)."""
    n_leaves = len(leaves)

    def at(s):
        return -1 - s if s < 0 else n_leaves + s

    instructions, sources = [], []
    for node, ins in inner:
        const = node.value if node.op == "constant" else None
        instructions.append((node.op, node.attrs, tuple(at(s) for s in ins), node.shape,
                             node.dtype, const))
        sources.append(node.source)
    outputs = tuple(at(s) for s in key[1])
    return Program([(n.op, n.shape, n.dtype) for n in leaves], instructions, outputs, key,
                   sources, [n.source for n in leaves],
                   tuple(n.attrs.get("sharding") for n in leaves))


def linearize(roots):
    """(Program, leaf nodes) for the graph behind `roots` (a list of distinct nodes)."""
    key, leaves, inner = _walk(list(roots))
    return _program(key, leaves, inner), leaves


def program_of(*tensors):
    """(Program, leaf nodes) for the graph behind `tensors` of any frontend, without running it."""
    nodes = []
    for t in tensors:
        node = handle_of(t).node
        if all(node is not n for n in nodes):
            nodes.append(node)
    return linearize(nodes)


class _Cache:
    def __init__(self):
        self.entries = collections.OrderedDict()

    def get(self, key):
        exe = self.entries.get(key)
        if exe is not None:
            self.entries.move_to_end(key)
        return exe

    def put(self, key, exe):
        self.entries[key] = exe
        while len(self.entries) > config.cache_size():
            self.entries.popitem(last=False)

    def programs(self):
        return [exe.program for exe in self.entries.values()]


CACHE = _Cache()
_last_cut_end = [time.perf_counter()]
_next_cut = [config.node_cap()]  # ir.CREATED value past which maybe_cut() cuts


def _notify(event, *args):
    for listener in LISTENERS:
        fn = getattr(listener, event, None)
        if fn is not None:
            fn(*args)


def compile_program(program):
    """Compile (or fetch from the cache) an executable for `program`."""
    exe = CACHE.get(program.key)
    if exe is not None:
        metrics.count("cache_hits")
        return exe, False
    if LISTENERS:  # listing the cache is for explanations only
        _notify("on_cache_miss", program, CACHE.programs())
    start = time.perf_counter()
    exe = get_backend().compile(program)
    elapsed = time.perf_counter() - start
    exe.program = program
    metrics.count("compiles")
    metrics.record_time("compile", elapsed)
    _notify("on_compile", program, exe, start, elapsed)
    CACHE.put(program.key, exe)
    return exe, True


def sync(*handles, cause="explicit", source=None):
    """Cut and run pending work: for `handles`, or for every live pending handle when none.

    A repeated step costs one walk over its nodes, one dict lookup and one dispatch: the
    Program (instructions, source lines) is only built when the cache misses.
    """
    start = time.perf_counter()
    if source is None:
        source = user_line(2)
    if handles:
        handles = list({id(h): h for h in map(handle_of, handles)}.values())  # each once
    else:
        handles = list(_live)
        _live.clear()
    # Roots in structural-hash order (stable: ties keep registration order), so the same step
    # linearizes to the same program key however its values were created.
    pending = sorted((h for h in handles if h.node.op != "data"), key=lambda h: h.node.hash)
    _next_cut[0] = ir.CREATED[0] + config.node_cap()
    if not pending:
        return
    metrics.record_time("trace", start - _last_cut_end[0])
    roots, index = [], {}
    for h in pending:
        if id(h.node) not in index:
            index[id(h.node)] = len(roots)
            roots.append(h.node)
    key, leaf_nodes, inner = _walk_fast(roots)
    exe = CACHE.get(key)
    if exe is not None:
        program = exe.program
    else:
        program = _program(key, leaf_nodes, inner)
        # the fast walk's order depends on build order; graph_hash must not (dumps, explanations
        # and lazyx.graph_hash name a graph by the same digest), so take it from the canonical walk
        program._digest = linearize(roots)[0].graph_hash
    metrics.record_sync(cause, source)
    if LISTENERS:
        _notify("on_sync", cause, source, program)
    if exe is None:
        exe, _ = compile_program(program)
        metrics.record_compile(source)
    else:
        metrics.count("cache_hits")
    run_start = time.perf_counter()
    results = exe([n.value for n in leaf_nodes])
    elapsed = time.perf_counter() - run_start
    metrics.count("executions")
    metrics.record_time("execute", elapsed)
    if LISTENERS:
        _notify("on_execute", program, run_start, elapsed)
    outs = [ir.data(buf, r.shape, r.dtype) for buf, r in zip(results, roots)]
    for out, root in zip(outs, roots):
        out.source = root.source  # a result is "made" where its value was computed, not synced
        if KEEP_ORIGINS[0]:
            ORIGINS[out] = root
    for h in pending:
        h.node = outs[index[id(h.node)]]
        _live.discard(h)
    _last_cut_end[0] = time.perf_counter()


def maybe_cut():
    """Frontends call this as an op begins: past the node cap, cut everything pending first.

    The cap (LAZYX_NODE_CAP) is read at each cut, not per op, so this call stays one compare.
    """
    if ir.CREATED[0] > _next_cut[0]:
        sync(cause="node_cap", source=user_line(2))



def graph_hash(*tensors):
    """The structural hash (hex) of the graph behind `tensors` (any frontend): equal programs
    built by different frontends hash equally. Data leaves count by shape and dtype only."""
    return program_of(*tensors)[0].graph_hash


_warned_fallbacks = set()


def fallback(op_name, framework):
    """Frontends call this when an op runs eagerly on the real framework: counted, warned once."""
    source = user_line(2)
    metrics.record_fallback(op_name, source)
    _notify("on_fallback", op_name, source)
    if op_name not in _warned_fallbacks:
        _warned_fallbacks.add(op_name)
        warnings.warn(f"lazyx: {op_name} has no lowering; it runs eagerly on {framework} "
                      f"(inputs are materialized; counted in lazyx.metrics()['fallback_ops'])",
                      RuntimeWarning, stacklevel=3)
