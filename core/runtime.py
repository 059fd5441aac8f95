"""Lazy handles, the live registry, cutting graphs, the compile cache.

A frontend tensor owns a LazyHandle whose `node` is either pending IR or a `data` leaf. A cut
(`sync`) gathers the pending roots, linearizes them into a Program, looks the program up in an
LRU cache keyed by structure (a hit is one dict lookup), runs it, and swaps each handle's node
for a data leaf holding the result. On the XLA backend the run is dispatched asynchronously:
`sync` returns before the numbers exist, and only reading them on the host waits.
"""
import collections
import hashlib
import inspect
import operator
import sys
import threading
import time
import weakref

import numpy as np

from . import baked_literals, compile_watch, config, early_results, ir, metrics, observation
from . import dtypes as dt
from . import source as source_lines
from .source import user_line
from .symbolic import current as recording_now

# Why a sync happened; frontends pass one of these as `cause`.
CAUSES = ("explicit",        # lazyx.sync(), mark_step(), ltf.sync()
          "print",           # repr / str / print / tf.print
          "item",            # .item(), float(), int(), bool(), len() of a lazy value
          "convert",         # conversion to the host framework: np.asarray, .numpy(), .cpu()
          "data_dependent",  # an op whose output shape depends on values (nonzero, masks)
          "node_cap",        # past LAZYX_NODE_CAP nodes (or LAZYX_LOOP_CUT in a loop)
          "fallback")        # an op without a lowering ran eagerly on the real framework
# Objects with optional on_sync(cause, source, program, roots: the IR nodes it computes),
# on_cache_miss(program, cached_programs, source: the line whose cut compiles, or None),
# on_compile(program, exe, start, seconds), on_execute(program, start, seconds),
# on_results(cause, roots, the data leaves holding their values: after a cut ran),
# on_transfer(direction, nbytes, start, seconds), on_fallback(op_name, source): registered only
# while explanations, dumps, a timeline or a lazyx.compile trace are on, so a plain run pays
# nothing for them.
LISTENERS = []
# While KEEP_ORIGINS[0] > 0 (a frontend's lazy gradient tape records), each data leaf a sync
# makes remembers the graph it realized, so a gradient can still flow through a value that
# was observed (printed, handed to an eager op) mid-step. Off otherwise: an origin keeps its
# whole graph alive.
KEEP_ORIGINS = [0]
# Frontends' own answers to "is a gradient tape recording now?" (TF's plain tf.GradientTape,
# which lazyx does not enter): while one says yes, a sync's data leaves remember their graphs
# too -- else a value realized under the plain tape (a tf.cond on a lazy predicate, a NaN
# check) cut the gradient of everything before it, silently (zeros).
TAPE_RECORDING = []
ORIGINS = weakref.WeakKeyDictionary()  # realized data leaf -> the node it was computed as


class _OrderedWeakSet:
    """Live pending handles in registration order.

    A WeakSet iterates in hash (address) order, which changes from step to step; the roots of
    a cut would then come out in a different order each time and the same training step would
    linearize into a different program (a recompile per step). Registration order is the
    program's own order, so it repeats exactly.

    Dead handles are dropped when the set is read (at a cut), not by weakref callbacks: a
    callback per short-lived pending tensor cost more than the cut itself.
    """

    def __init__(self):
        self._refs = {}

    def add(self, obj):
        refs = self._refs
        key = id(obj)
        ref = refs.get(key)
        if ref is None:
            refs[key] = weakref.ref(obj)
        elif ref() is not obj:  # a dead handle's address, reused: register anew, at the end
            del refs[key]
            refs[key] = weakref.ref(obj)

    def discard(self, obj):
        self._refs.pop(id(obj), None)

    def surely_empty(self):
        """True when nothing was ever left registered (dead entries make it False: then
        iterate, which drops them)."""
        return not self._refs

    def __iter__(self):
        alive = []
        dead = []
        for key, ref in list(self._refs.items()):
            obj = ref()
            if obj is None:
                dead.append(key)
            else:
                alive.append(obj)
        for key in dead:
            self._refs.pop(key, None)
        return iter(alive)

    def __len__(self):
        return sum(1 for _ in self)


# core/_native_live.c does _OrderedWeakSet's and _PyHandleBase's work in C (LAZYX_NATIVE=0: not)
_NATIVE = config.native()
_LiveSet = _OrderedWeakSet if _NATIVE is None else _NATIVE.LiveSet


def _first_mark():
    """Nodes a pending graph grows by before maybe_cut calls _at_node_mark."""
    cap, loop = config.node_cap(), config.loop_cut()
    return min(cap, loop) if loop else cap


class _ThreadState(threading.local):
    """What one thread is tracing: its pending handles and its node-cap mark.

    Threading model: every thread records and cuts its own pending graph (lazy values made in
    one thread may be read in another: such a graph is cut by the walk, not the O(1) key);
    the compile cache, the interning tables and the metrics are shared, and safe to share.
    """

    def __init__(self):
        self.live = _LiveSet()
        self.cut_base = ir.CREATED[0]  # nodes made when the pending graph began
        self.next_cut = self.cut_base + _first_mark()
        self.last_cut_end = time.perf_counter()
        self.loop = None  # a _LoopWatch once a pending graph passed LAZYX_LOOP_CUT nodes


_thread = _ThreadState()


def live_handles():
    """This thread's pending handles, in registration order."""
    return list(_thread.live)


class _PyHandleBase:
    """LazyHandle's fields and construction: the reference implementation (core/_native_live.c's
    HandleBase does the same in C, and is used when it imports)."""
    __slots__ = ("node", "__weakref__")

    def __init__(self, node):
        self.node = node
        if node.op != "data":
            self._thread_state.live.add(self)

    def set(self, node):
        """Rebind (in-place ops); a pending node registers the handle for the next sync."""
        self.node = node
        if node.op != "data":
            self._thread_state.live.add(self)

    @property
    def pending(self):
        return self.node.op != "data"

    def __reduce__(self):  # a copy is made as a handle is: a pending one registers
        return type(self), (self.node,)


class LazyHandle(_PyHandleBase if _NATIVE is None else _NATIVE.HandleBase):
    """A mutable cell pointing at a node; frontends wrap one per tensor. A pending handle
    registers in its thread's live set, which the next sync cuts."""
    __slots__ = ()
    _thread_state = _thread  # (a class attribute: the C base finds the registry through it)


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
    start = time.perf_counter() if LISTENERS else 0.0
    buffer = get_backend().from_host(host)
    _transferred("to_device", host.nbytes, start)
    return ir.data(buffer, host.shape, dtype)


def to_host(handle, cause="observe", source=None):
    """The handle's value as a NumPy array, syncing first if it is pending."""
    if handle.pending:
        sync(handle, cause=cause, source=source or user_line(2), sharing=True)
    elif LISTENERS:  # (lazyx.compile: reading an argument's value needs no cut, but it is read)
        _notify("on_read", cause, source or user_line(2), handle)
    start = time.perf_counter() if LISTENERS else 0.0
    host = get_backend().to_host(handle.node.value)
    _transferred("to_host", host.nbytes, start)
    return host


def to_host_shared(handle, cause="observe"):
    """The handle's buffer itself, DLPack-exportable, when the backend keeps it in host memory
    (XLA on one CPU device), for a caller that reads it or copies before writing (a tf.Variable
    does: it copies a buffer it does not own on write); None elsewhere: use to_host. Sharing is
    safe from XLA's side because it never writes a buffer a program has returned (lazyx donates
    none, and PJRT refuses to donate one with a DLPack reference)."""
    lend = getattr(get_backend(), "lend_to_host", None)
    if lend is None:
        return None
    if handle.pending:
        sync(handle, cause=cause, source=user_line(2), sharing=True)
    elif LISTENERS:
        _notify("on_read", cause, user_line(2), handle)
    buffer = lend(handle.node.value)
    if buffer is None:
        return None
    start = time.perf_counter() if LISTENERS else 0.0
    get_backend().wait((buffer,))
    _transferred("to_host", buffer.nbytes, start)
    return buffer


def _transferred(direction, nbytes, start):
    """Count a transfer; tell the listeners (the timeline, a profiler) how long it took, from
    `start` -- which callers take only when someone listens."""
    metrics.record_transfer(direction, nbytes)
    if LISTENERS:
        _notify("on_transfer", direction, nbytes, start, time.perf_counter() - start)


# ---------------------------------------------------------------- programs

WIDE = ("int64", "uint64", "float64", "complex128")  # dtypes jax makes only under x64


class Program:
    """A linearized graph with no data in it, safe to keep in the cache.

    Slots 0..len(leaves)-1 are the leaves (data, param and splat -- a param whose value is one
    scalar broadcast to its shape -- in first-visit order); then one
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
        return any(leaf[2] in WIDE for leaf in self.leaves) or \
            any(_wide(ins[4]) for ins in self.instructions)


def _wide(dtype):
    # a multi-result node's dtype is a tuple (a sort's values and int64 indices): any wide
    # result needs x64, or jax truncates it (with a warning) even when only the values are used
    return any(d in WIDE for d in dtype) if type(dtype) is tuple else dtype in WIDE


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
_by_hash = operator.attrgetter("hash")


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
    # a splat param's kind tells the backend that its value is one scalar for the whole shape
    return Program([("splat" if n.attrs.get("splat") else n.op, n.shape, n.dtype) for n in leaves],
                   instructions, outputs, key,
                   sources, [n.source for n in leaves],
                   tuple(n.attrs.get("sharding") for n in leaves))


def linearize(roots):
    """(Program, leaf nodes) for the graph behind `roots` (a list of distinct nodes)."""
    key, leaves, inner = _walk(list(roots))
    return _program(key, leaves, inner), leaves


def literal_leaves(program, leaves, run_time=()):
    """{leaf index: value} of the scalar params among `leaves` (a splat's is its scalar) that
    `bake` may turn into constants: not the nodes whose ids are in `run_time`, and only those
    whose every use is an operand of an op in _BAKE_USES.

    XLA rewrites by structure: `x / sqrt(c)` becomes `x * rsqrt(c)` for a constant `c` but
    stays a division for a sliced-out parameter; LLVM turns pow with a known exponent into
    sqrt or a product. A literal that only meets additions, products, comparisons and selects
    is one operand of one rounding either way (chains of them are bitwise equal, checked in
    tests/core/test_bake.py, also next to divisions, roots, powers and exponentials of
    other literals in replays). That holds on XLA:CPU, where replays bake (`compile_fixed`);
    elsewhere only callers without a bitwise promise (torch.compile graphs) bake.
    """
    unsafe = _unsafe_literals(program)
    return {i: leaf.value for i, leaf in enumerate(leaves)
            if leaf.op == "param" and id(leaf) not in run_time and i not in unsafe and
            (leaf.shape == () or ir.is_splat(leaf)) and not _identity_like(leaf.value)}


def bakeable(program, scalars):
    """The leaf indices among `scalars` (a lazy cut's {index: value}, runtime._scalars) that
    a lazy cut may bake while their values hold (core/baked_literals.py): literal_leaves'
    rule, and not a NaN (never equal to itself, so never the same value again)."""
    unsafe = _unsafe_literals(program)
    return [i for i, v in sorted(scalars.items())
            if i not in unsafe and not _identity_like(v) and v == v]


def _unsafe_literals(program):
    """The leaf indices that reach an op outside _BAKE_USES, or a result (literal_leaves)."""
    n = len(program.leaves)
    reaches = {}  # instruction slot -> the leaf whose value it is (through _PASSES only)
    unsafe = set()
    for k, (op, _, ins, _, _, _) in enumerate(program.instructions):
        if op in _PASSES:
            reaches[n + k] = ins[0] if ins[0] < n else reaches.get(ins[0])
            continue
        for i in ins:
            leaf = i if i < n else reaches.get(i)
            if leaf is not None and op not in _BAKE_USES:
                unsafe.add(leaf)
    for s in program.outputs:  # a literal returned as such stays what it is
        unsafe.add(s if s < n else reaches.get(s))
    return unsafe


def _identity_like(value):
    """0, 1 and -1: LLVM sees a baked constant's value once XLA has fused the program (the
    barrier only hides it from XLA's own simplifier) and drops `* 1`, turns `* -1` into a
    negation, `+ 0` into nothing, which brings a product next to a sum it then fuses into one
    rounding: (x * 3) * -1 + 0.5 became fma(x, -3, 0.5), an ulp off the parameters' result
    (found by test_bake's hypothesis test). Other values leave the ops as they are."""
    try:
        return bool(np.any(np.isin(value, (0, 1, -1))))
    except TypeError:
        return False


_PASSES = ("broadcast_in_dim", "convert", "reshape")
_BAKE_USES = frozenset(("add", "sub", "mul", "max", "min", "select", "clamp", "eq", "ne", "lt",
                        "le", "gt", "ge"))


# A baked literal's constant instruction carries this attribute: the XLA backend puts all of
# them behind one optimization barrier, so XLA's simplifier cannot fold them into each other
# or into their users ((x * 0.9) * 2 -> x * 1.8 rounds otherwise).
LITERAL = {"literal": True}


def bake(program, values):
    """`program` with the scalar leaves at `values` (leaf index -> host scalar) made constants.

    For a caller whose values for them never change -- a torch.compile graph's literals --
    XLA then fuses the ops that use them as jax.jit fuses a Python constant's, instead of
    slicing each out of a packed argument at every run (W3's chain: 23 fusions instead of 1).
    The lazy path keeps them run-time parameters (a new scalar must not recompile);
    lazyx.compile replays bake where that keeps the uncompiled run's bits (`compile_fixed`).
    The values are part of the new key, so programs baked with other values never share an
    executable. The kept leaves keep their order.
    """
    if not values:
        return program
    n = len(program.leaves)
    kept = [i for i in range(n) if i not in values]
    slot_of = {i: k for k, i in enumerate(kept)}
    instructions, sources, baked = [], [], []
    # one constant per distinct value (bit for bit), one broadcast per value and shape: W4's
    # 150 literals are 3 values, and each literal is an operand of the fusions that use it
    # (XLA:CPU's YNNPACK fusion takes fewer than ~20; see backends/xla.merge_fixed)
    made = {}
    for i in sorted(values):
        kind, shape, dtype = program.leaves[i]
        host = np.asarray(values[i], dtype=dt.to_numpy(dtype))
        if host.ndim:
            raise ValueError(f"bake: leaf {i} is not a scalar (shape {host.shape})")
        bits = host.tobytes()
        scalar = made.get((dtype, bits))
        if scalar is None:
            instructions.append(("constant", LITERAL, (), (), dtype, host))
            sources.append(program.leaf_sources[i])
            scalar = made[(dtype, bits)] = len(kept) + len(instructions) - 1
        slot = scalar
        if shape != ():  # a splat: one scalar standing for its whole shape
            slot = made.get((scalar, shape))
            if slot is None:
                instructions.append(("broadcast_in_dim",
                                     {"shape": shape, "broadcast_dimensions": ()},
                                     (scalar,), shape, dtype, None))
                sources.append(program.leaf_sources[i])
                slot = made[(scalar, shape)] = len(kept) + len(instructions) - 1
        slot_of[i] = slot
        baked.append((i, host.dtype.str, bits))
    offset = len(kept) + len(instructions) - n

    def at(s):
        return slot_of[s] if s < n else s + offset
    for op, attrs, ins, shape, dtype, const in program.instructions:
        instructions.append((op, attrs, tuple([at(s) for s in ins]), shape, dtype, const))
    return Program([program.leaves[i] for i in kept], instructions,
                   tuple([at(s) for s in program.outputs]),
                   ("baked", program.key, tuple(baked)), sources + list(program.sources),
                   [program.leaf_sources[i] for i in kept],
                   tuple([program.leaf_shardings[i] for i in kept]))


def program_of(*tensors):
    """(Program, leaf nodes) for the graph behind `tensors` of any frontend, without running it."""
    nodes = []
    for t in tensors:
        node = handle_of(t).node
        if all(node is not n for n in nodes):
            nodes.append(node)
    return linearize(nodes)


class _Alias:
    """A cache entry reached by a trace key (the roots' eids): the executable, and which leaf
    of the trace (by first-use position) feeds each of its inputs."""
    __slots__ = ("exe", "leaf_positions")

    def __init__(self, exe, leaf_positions):
        self.exe = exe
        self.leaf_positions = leaf_positions


class _Cache:
    """Compiled executables, LRU, bounded by entries (LAZYX_CACHE_SIZE) and by bytes
    (LAZYX_CACHE_BYTES, the backends' estimates). Shared by all threads, under one lock.

    Two kinds of keys lead to an executable: a program's exact structure key (from a walk)
    and, as aliases, the trace keys of the cuts that ran it (no walk). An alias goes when its
    executable does, so evicted programs are really freed.
    """

    def __init__(self):
        self.entries = collections.OrderedDict()  # structure key -> executable
        self.aliases = collections.OrderedDict()  # trace key -> _Alias
        self.nbytes = 0
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            exe = self.entries.get(key)
            if exe is not None:
                self.entries.move_to_end(key)
            return exe

    def get_alias(self, key):
        with self.lock:
            alias = self.aliases.get(key)
            if alias is not None:
                main = alias.exe.program.key
                if main not in self.entries:  # its program was dropped (entries.clear())
                    del self.aliases[key]
                    return None
                self.aliases.move_to_end(key)
                self.entries.move_to_end(main)
            return alias

    def put(self, key, exe):
        with self.lock:
            if key in self.entries:  # another thread compiled it meanwhile: keep theirs
                return self.entries[key]
            exe.aliases = []
            self.entries[key] = exe
            self.nbytes += getattr(exe, "nbytes", 0)
            limit, byte_limit = config.cache_size(), config.cache_bytes()
            while len(self.entries) > 1 and (len(self.entries) > limit or
                                             self.nbytes > byte_limit):
                self._evict()
            return exe

    def grow(self, exe, nbytes):
        """`exe` (cached) holds `nbytes` more than when it was put (a split cut's pair)."""
        with self.lock:
            exe.nbytes = getattr(exe, "nbytes", 0) + nbytes
            if self.entries.get(exe.program.key) is exe:
                self.nbytes += nbytes

    def put_alias(self, key, exe, leaf_positions):
        with self.lock:
            if exe.program.key not in self.entries:
                return
            self.aliases[key] = _Alias(exe, leaf_positions)
            exe.aliases.append(key)
            while len(self.aliases) > 2 * config.cache_size():
                old_key, old = self.aliases.popitem(last=False)
                old.exe.aliases.remove(old_key)

    def _evict(self):
        _, exe = self.entries.popitem(last=False)
        self.nbytes -= getattr(exe, "nbytes", 0)
        for key in exe.aliases:
            self.aliases.pop(key, None)
        exe.aliases = []

    def shed(self):
        """Drop the least recently used half (the backend's code mappings ran short)."""
        with self.lock:
            for _ in range(len(self.entries) // 2):
                self._evict()

    def clear(self):
        with self.lock:
            self.entries.clear()
            self.aliases.clear()
            self.nbytes = 0

    def programs(self):
        with self.lock:
            return [exe.program for exe in self.entries.values()]


CACHE = _Cache()


def _notify(event, *args):
    for listener in LISTENERS:
        fn = getattr(listener, event, None)
        if fn is not None:
            fn(*args)


def _takes_fixed(backend):
    """Whether backend.compile takes the leaves its caller will never change (XLA's does: see
    its compile); asked of the method itself, so that a backend wrapping another one answers
    for itself."""
    try:
        params = inspect.signature(backend.compile).parameters
    except (TypeError, ValueError):
        return False
    return len(params) > 1 or any(p.kind == p.VAR_POSITIONAL for p in params.values())


def compile_fixed(program, leaves, run_time, cause=None, source=None, same=None):
    """(executable, whether it compiled) for a caller that runs `program` again and again with
    the same values at every scalar leaf whose node is not in `run_time` (ids): a replayed
    step's literals, its numbers of the code. The executable takes all of `program`'s leaf
    values, as `program` orders them. `same` (leaf index -> an earlier leaf index): run-time
    leaves the caller always feeds the other's value (ir.SameAs), read as one.

    Where the backend computes a baked program bit for bit as it computes the program itself
    (`bakes_bitwise`: XLA:CPU), the literals `literal_leaves` allows become constants (`bake`):
    XLA:CPU's kernels for a run-time scalar are slower than for a constant (W3's chain,
    replayed: 1.15x jax.jit's step with run-time literals). The others are bound (`bind_fixed`)."""
    fixed = {i: leaf.value for i, leaf in enumerate(leaves)
             if leaf.op != "data" and id(leaf) not in run_time}
    baked = {}
    if fixed and getattr(get_backend(), "bakes_bitwise", lambda: False)():
        baked = literal_leaves(program, leaves, run_time)
    if not baked:
        fixed.update({i: ir.SameAs(j) for i, j in (same or {}).items()})
        exe, compiled = compile_program(program, fixed, cause, source)
        return bind_fixed(exe, fixed), compiled
    kept = [i for i in range(len(leaves)) if i not in baked]
    kept_fixed = {k: fixed[i] for k, i in enumerate(kept) if i in fixed}
    if same:  # (run-time leaves are never baked: each one is kept, at a new position)
        position = {i: k for k, i in enumerate(kept)}
        kept_fixed.update({position[i]: ir.SameAs(position[j]) for i, j in same.items()})
    exe, compiled = compile_program(bake(program, baked), kept_fixed, cause, source)
    return _Kept(bind_fixed(exe, kept_fixed), kept), compiled


class _Kept:
    """The executable (`exe`) of a baked program, called with the unbaked program's leaf
    values; `kept`: the positions among those that `exe` takes (a replay builds only those,
    replay_entry.build_entry)."""
    __slots__ = ("exe", "kept")

    def __init__(self, exe, kept):
        self.exe, self.kept = exe, kept

    def __call__(self, leaf_values):
        return self.exe([leaf_values[i] for i in self.kept])


def bind_fixed(exe, fixed):
    """`exe` for a caller whose leaves at `fixed` (leaf index -> value) never change: the
    backend's binding where it has one (XLA packs and transfers them once), else `exe`."""
    bind = getattr(exe, "bind", None)
    return bind(fixed) if bind is not None and fixed else exe


def compile_program(program, fixed=None, cause=None, source=None, lazy_cut=False):
    """Compile (or fetch from the cache) an executable for `program`; `fixed` (leaf index ->
    value): the values of leaves its first call passes -- a binding caller's (exe.bind), which
    it never changes, or a lazy cut's scalars -- which the backend may lay out the executable
    it compiles first for (XLA reads equal ones as one). `cause` and `source`
    (the cut's) go into the warning about a compile that runs long (core/compile_watch.py).
    `lazy_cut`: for a cut, whose scalar results may later run ahead (core/early_results.py)."""
    exe = CACHE.get(program.key)
    if exe is not None:
        metrics.count("cache_hits")
        return exe, False
    if LISTENERS:  # listing the cache is for explanations only
        _notify("on_cache_miss", program, CACHE.programs(), source)
    backend = get_backend()
    if backend.code_mappings_short():
        CACHE.shed()
        metrics.count("cache_sheds")
    exe = _compile_timed(program, fixed, "compiles", cause, source)
    # (not on a mesh, whose handed-over values would need layouts; not while tiered
    # compiles would run the pair on the interpreter instead of the compiled whole)
    if lazy_cut and getattr(backend, "asynchronous", False) and ir.LAYOUT_OF[0] is None \
            and not config.tiered() and config.scalars_first():
        split = early_results.plan(program, Program)
        if split is not None:
            exe = early_results.Splitting(exe, split, _compile_part, _scalars,
                                          _compiled_later)
    if lazy_cut and fixed and type(exe) is not early_results.Splitting:
        exe = _baking(exe, program, fixed, backend)
    return CACHE.put(program.key, exe), True


def _baking(exe, program, scalars, backend, ready=None):
    """A lazy cut's `exe`, wrapped to bake its unchanged literals later (core/baked_literals.py)
    where that keeps every bit: on XLA:CPU (`bakes_bitwise`), not on a mesh (a constant may
    change how XLA partitions the program, and with it a reduction's order across devices),
    not while tiered compiles run the interpreter; `scalars`: the first call's. `ready`: the
    Baking's callback once its baked program is compiled (for the cache entry itself: its
    bytes counted, its single program kept the newest on disk, _compiled_later)."""
    if not config.bake_literals() or config.tiered() or ir.LAYOUT_OF[0] is not None or \
            any(program.leaf_shardings) or \
            not getattr(backend, "bakes_bitwise", lambda: False)():
        return exe
    indices = bakeable(program, scalars)
    if not indices:
        return exe
    return baked_literals.Baking(exe, indices, len(program.leaves), _baker(program),
                                 ready or _compiled_later)


def _baker(program):
    """compile_baked for a Baking of `program`: its baked program's executable, compiled like
    a cut's (laid out for the kept scalars' values), counted apart (`bake_compiles`)."""
    def compile_baked(baked, kept_values):
        baked_program = bake(program, baked)
        return _compile_timed(baked_program, _scalars(baked_program, kept_values),
                              "bake_compiles")
    return compile_baked


def _compile_part(part, fixed, splitting):
    """An executable for one program of a split cut (`splitting`, an early_results.Splitting;
    `fixed`: the part's scalar leaves' values at the call that started it): compiled like a
    cut's, counted apart (`split_compiles`: no new graph was traced), and baking its unchanged
    literals later as a cut does (its baked program's bytes count for `splitting`, the cache
    entry, and the cut's single program stays the newest on disk)."""
    exe = _compile_timed(part, fixed, "split_compiles")
    if not fixed:
        return exe
    return _baking(exe, part, fixed, get_backend(),
                   lambda baking, nbytes: _compiled_later(splitting, nbytes))


def _compiled_later(cached, nbytes):
    """`cached` (core/compiling_later.py: a split cut's pair, a cut's baked program) compiled
    more programs (`nbytes`) behind its single one: the cache counts their bytes, and the disk
    cache sees the single one used after them (a new process's first step needs that one
    first: the warm-start preloader loads the newest entries first)."""
    CACHE.grow(cached, nbytes)
    mark_used = getattr(get_backend(), "mark_used", None)
    if mark_used is not None:
        mark_used(cached.single)


def _compile_timed(program, fixed, counter, cause=None, source=None):
    """The backend's executable for `program`, timed, counted under `counter`, announced."""
    backend = get_backend()
    start = time.perf_counter()
    with compile_watch.watch(program, cause, source):
        exe = backend.compile(program, fixed) if fixed and _takes_fixed(backend) else \
            backend.compile(program)
    elapsed = time.perf_counter() - start
    exe.program = program
    metrics.count(counter)
    metrics.record_time("compile", elapsed)
    _notify("on_compile", program, exe, start, elapsed)
    return exe


def _scalars(program, values):
    """{leaf index: value} of `program`'s inexact scalar leaves (Python floats, splats).
    Integer ones are left out: those are the indices and counters a loop changes (a minibatch
    start 0 at the first step, as a literal 0 is), whose equality a later call would part."""
    return {i: values[i] for i, (kind, shape, dtype) in enumerate(program.leaves)
            if (kind == "splat" or (kind == "param" and shape == ())) and dtype in dt.INEXACT}


def _trace_key(roots):
    """The roots' eids in this thread's trace, or None when some root has no exact key here."""
    trace = ir.TRACE
    serial = trace.serial
    key = []
    for r in roots:
        epoch = r.epoch
        if epoch is None:  # a leaf as a root (a pending param)
            key.append(trace.leaf_eid(r))
        elif epoch == serial or epoch == 0:
            key.append(r.eid)
        else:
            return None
    return tuple(key)


def _lookup(roots):
    """(executable or None, leaf values, program, alias) for a cut of `roots`.

    On a trace-key hit this walks no graph: the key is the roots' eids, and the leaves are
    read off the trace by position. Otherwise one walk gives the exact structure key (which
    is how a step traced in a different order, or across threads, still hits the cache) and,
    when the cache misses there too, the program to compile. `alias` is the (trace key, leaf
    positions) under which the executable should also be found next time, or None.
    """
    trace = ir.TRACE
    tkey = _trace_key(roots)
    if tkey is not None:
        hit = CACHE.get_alias(tkey)
        if hit is not None:
            leaves = trace.leaves
            return hit.exe, [leaves[k].value for k in hit.leaf_positions], hit.exe.program, None
    key, leaf_nodes, inner = _walk_fast(roots)
    metrics.count("nodes_walked", len(leaf_nodes) + len(inner))
    alias = None
    if tkey is not None:
        positions = trace.leaf_positions
        alias = (tkey, tuple([positions[id(n)] for n in leaf_nodes]))
    values = [n.value for n in leaf_nodes]
    exe = CACHE.get(key)
    if exe is not None:
        return exe, values, exe.program, alias
    program = _program(key, leaf_nodes, inner)
    # the fast walk's order depends on build order; graph_hash must not (dumps, explanations
    # and lazyx.graph_hash name a graph by the same digest), so take it from the canonical walk
    program._digest = linearize(roots)[0].graph_hash
    return None, values, program, alias


def sync(*handles, cause="explicit", source=None, sharing=False):
    """Cut and run pending work: for `handles`, or for every live pending handle when none.
    With `sharing` (an observation), also the live pending values whose graphs share computed
    nodes with the handles' (core/observation.py: they would compute that part again).

    A repeated step costs one lookup of its roots' trace key and one dispatch: no graph walk,
    and the Program is only built when the cache misses. If running fails (a compile or
    execution error, KeyboardInterrupt), every value is still pending and a retry computes it;
    when several values were cut together, each is then tried alone, so values that had
    nothing to do with the failure are computed (and the error is raised only if some value
    still fails alone).
    """
    start = time.perf_counter()
    state = _thread
    if handles:
        handles = list({id(h): h for h in map(handle_of, handles)}.values())  # each once
        if sharing:
            handles = _with_sharing(handles, state.live)
    elif state.live.surely_empty():  # a barrier with nothing pending (a replayed step's)
        state.cut_base = ir.CREATED[0]
        state.next_cut = state.cut_base + _first_mark()
        _new_trace_if_done(state)
        return
    else:
        handles = list(state.live)
    pending = [h for h in handles if h.node.op != "data"]
    state.cut_base = ir.CREATED[0]
    state.next_cut = state.cut_base + _first_mark()
    if cause != "node_cap":  # a barrier of the user's: a loop is found again from scratch
        state.loop = None
    if not pending:
        _new_trace_if_done(state)  # a barrier with nothing to run still ends the trace
        return
    if source is None:
        source = user_line(2)
    trace_seconds = start - state.last_cut_end
    roots, index = [], {}
    for h in pending:
        if id(h.node) not in index:
            index[id(h.node)] = len(roots)
            roots.append(h.node)
    # Roots in structural-hash order (stable: ties keep registration order), so the same step
    # cuts to the same key however its values were registered -- and whatever its trace
    # numbering, which eids depend on: the walk's key must repeat too.
    if len(roots) > 1:
        roots.sort(key=_by_hash)
        index = {id(r): i for i, r in enumerate(roots)}
    try:
        outs = _run(roots, cause, source, trace_seconds)
    except Exception:
        if len(pending) == 1 or _sync_each(pending, cause, source):
            raise
        return  # each value computed on its own: the barrier did its job
    for h in pending:
        h.node = outs[index[id(h.node)]]
        state.live.discard(h)
    _end_cut(state)


# ---------------------------------------------------------------- derived results

# Roots that are a transpose or reshape of another root: torch's functionalization keeps a
# view's base alive with the view (a Linear layer's weight gradient is `t()` of an `mm`
# result, and the mm result stays in the view's storage), so a training step's cut had both
# as results. Computing both cost the program a transposed copy per pair and kept XLA from
# folding the transpose into the dot that makes it: W1's torch step ran 2.45 ms instead of
# 1.63. Now only the view is computed; the base becomes a data leaf (ir.Derived) whose buffer
# is made from the view's if something reads it -- usually nothing does.
_LAYOUT_OPS = ("transpose", "reshape")


def plan_results(roots):
    """(indices of the roots to compute, derivations): each derivation is (i, j, op, attrs):
    root i is made from root j's result by `op`. Derivations come in an order where j's
    result exists before i's is made."""
    if len(roots) < 2 or ir.LAYOUT_OF[0] is not None:  # (a sharded buffer keeps its layout)
        return range(len(roots)), ()
    index = None
    derived = {}
    for j, view in enumerate(roots):
        if view.op in _LAYOUT_OPS and view.dtype not in WIDE:  # (jax: x64 only)
            if index is None:
                index = {id(r): k for k, r in enumerate(roots)}
            i = index.get(id(view.inputs[0]))
            if i is not None and i not in derived:
                base = roots[i]
                if view.op == "transpose":
                    perm = view.attrs["permutation"]
                    inverse = [0] * len(perm)
                    for k, p in enumerate(perm):
                        inverse[p] = k
                    derived[i] = (i, j, "transpose", {"permutation": tuple(inverse)})
                else:
                    derived[i] = (i, j, "reshape", {"new_sizes": base.shape})
    if not derived:
        return range(len(roots)), ()
    # a base may itself be the view of another root: make the later node's result first
    order = sorted(derived.values(), key=lambda d: -roots[d[0]].serial)
    return [k for k in range(len(roots)) if k not in derived], order


def expand_results(outs, computed, derivations, metas):
    """Every root's result from the computed ones' (`metas`: (shape, dtype, source) per root)."""
    if not derivations:
        return outs
    full = [None] * len(metas)
    for k, out in zip(computed, outs):
        full[k] = out
    for i, j, op, attrs in derivations:
        shape, dtype, source = metas[i]
        full[i] = ir.Derived(full[j], op, attrs, shape, dtype, source)
    return full


def _with_sharing(handles, live):
    live = [h for h in live if h.pending]
    extra = {}
    for h in handles:
        if h.pending:
            for c in observation.companions(h, live):
                extra[id(c)] = c
    for h in handles:
        extra.pop(id(h), None)
    return handles + list(extra.values())


def _sync_each(pending, cause, source):
    """After a failed joint cut: compute each value alone. True if some value still fails
    (it stays pending, and the caller re-raises). The values sharing computed nodes with one
    that failed alone are not tried one by one: they stay pending too (a failing compile of
    a step's shared part was tried once per live value, 102 compiles for 101 values); those
    sharing nothing with a failing one are still computed."""
    failed, todo = False, list(pending)
    while todo:
        h = todo.pop(0)
        if not h.pending:  # (computed with an earlier one)
            continue
        try:
            sync(h, cause=cause, source=source)
        except Exception:  # noqa: BLE001 -- the joint error is the one raised
            failed = True
            alike = {id(c) for c in observation.companions(h, [t for t in todo if t.pending])}
            todo = [t for t in todo if id(t) not in alike]
    return failed


def _run(roots, cause, source, trace_seconds=0.0):
    """Compile (on a miss) and run the program behind `roots`; data leaves for its results."""
    computed, derivations = plan_results(roots)
    run_roots = [roots[k] for k in computed] if derivations else roots
    exe, values, program, alias = _lookup(run_roots)
    if LISTENERS:
        _notify("on_sync", cause, source, program, run_roots)
    hit = exe is not None
    if not hit:
        # the first call's scalars: the backend may lay out equal ones as one (XLA: see
        # backends/xla._LazyLayout), compiling the layout this call runs
        exe, _ = compile_program(program, _scalars(program, values), cause=cause, source=source,
                                 lazy_cut=True)
        metrics.record_compile(source)
    if alias is not None:
        CACHE.put_alias(alias[0], exe, alias[1])
    run_start = time.perf_counter()
    results = exe(values)
    elapsed = time.perf_counter() - run_start
    metrics.record_cut(cause, source, trace_seconds, elapsed, hit)
    if LISTENERS:
        _notify("on_execute", program, run_start, elapsed)
    keep = KEEP_ORIGINS[0] or TAPE_RECORDING and any(f() for f in TAPE_RECORDING)
    # a result is "made" where its value was computed, not where it was synced
    outs = [ir.data(buf, r.shape, r.dtype, source=r.source) for buf, r in zip(results, run_roots)]
    if derivations:
        outs = expand_results(outs, computed, derivations,
                              [(r.shape, r.dtype, r.source) for r in roots])
    if keep:
        for out, root in zip(outs, roots):
            ORIGINS[out] = root
    if LISTENERS:  # (lazyx.compile's split steps: a cut inside the step is a piece)
        _notify("on_results", cause, roots, outs)
    return outs


def _end_cut(state):
    _new_trace_if_done(state)
    state.last_cut_end = time.perf_counter()


def _new_trace_if_done(state):
    """Start a new trace once nothing pending in this thread belongs to the current one (so a
    repeated step numbers its leaves from 0 again and repeats its keys)."""
    trace = ir.TRACE
    serial = trace.serial
    live = state.live
    if len(trace.leaves) > ir.TABLE_LIMIT // 16 or live.surely_empty() or \
            not any(h.node.epoch == serial for h in live):
        trace.reset()


def _at_node_mark():
    """maybe_cut's call once the pending graph is past its mark, as an op begins.

    Past LAZYX_NODE_CAP nodes everything pending is cut. Past LAZYX_LOOP_CUT nodes (fewer), a
    graph that a loop with no barrier is making is cut too: XLA's compile time grows faster
    than linearly with a graph's length, and such a graph only grows (a NumPy simulation loop
    of 10,000 steps made one graph of the node cap's size, which never finished compiling).
    The cut comes as the same call site of the loop's body begins, every time, so every piece
    after the first is the same graph: compiled once, then taken from the cache.
    """
    state = _thread
    created = ir.CREATED[0]
    grown = created - state.cut_base
    cap, loop = config.node_cap(), config.loop_cut()
    if grown >= cap or not loop:
        sync(cause="node_cap", source=user_line(2))
        return
    if recording_now() is not None:
        # lazyx.compile is tracing a step: it replays as one program whatever its loops, and
        # a cut inside would make values the trace proves fixed into data it cannot follow
        state.next_cut = state.cut_base + cap
        return
    watch = state.loop
    if watch is None:
        watch = state.loop = _LoopWatch()
    site = _call_site()
    if watch.site is None:
        # looking for a loop: a call site of the user's met again after another one (one
        # call that makes many nodes -- model(x), loss.backward() -- is one site throughout)
        if site is not None and site != watch.last and site in watch.seen:
            watch.site, watch.previous = site, site  # (mid-visit: wait for the next to begin)
        else:
            # Looking at every op as it begins finds a loop within one visit of its body.
            # (A look every _SAMPLE_EVERY nodes could keep landing on one site of a loop whose
            # body it lined up with -- ML-From-Scratch's logistic regression, 13 nodes an
            # iteration, most made by one op -- and the watch gave up at 3x LAZYX_LOOP_CUT.)
            # One call making many nodes is one site at each op: after _SAME_SITE_LOOKS
            # looks finding it, one look every _SAMPLE_EVERY nodes.
            watch.repeats = watch.repeats + 1 if site == watch.last else 0
            if site is not None:
                watch.seen.add(site)
                watch.last = site
            state.next_cut = created + (
                _SAMPLE_EVERY if watch.repeats >= _SAME_SITE_LOOKS else 0)
            return
    elif watch.previous is None:  # the first look after a cut: where are we in the body?
        watch.previous = site
        state.next_cut = created
        return
    if site == watch.site and watch.previous != site:  # a visit of the loop's site begins
        watch.previous = None
        sync(cause="node_cap", source=site[:2])
        return
    watch.previous = site
    if grown > 3 * loop:  # the site did not come back (the loop has ended, or its body is
        state.loop = None  # too big to cut whole): no more looks until the node cap
        state.next_cut = state.cut_base + cap
        return
    state.next_cut = created  # look again as the next op begins (within one iteration)


_SAMPLE_EVERY = 64  # nodes between two looks for a loop's call sites (a look walks frames)
_SAME_SITE_LOOKS = 64  # looks in a row finding one site before looking every _SAMPLE_EVERY


class _LoopWatch:
    """What _at_node_mark knows of the loop making this thread's graph: the call sites seen
    (`seen`, the `last` one, how many looks running found it: `repeats`), the site where each
    piece begins, and the site of the op before."""
    __slots__ = ("seen", "last", "repeats", "site", "previous")

    def __init__(self):
        self.seen, self.last, self.site, self.previous = set(), None, None, None
        self.repeats = 0


def _call_site():
    """(filename, lineno, bytecode offset) of the user's frame now running: one line may make
    several ops (x * a + b), and a piece must begin at the same one every time."""
    if not source_lines.ENABLED:
        return None
    frame = sys._getframe(2)
    while frame is not None:
        if not source_lines.is_internal(frame.f_code.co_filename):
            return (frame.f_code.co_filename, frame.f_lineno, frame.f_lasti)
        frame = frame.f_back
    return None


def _py_maybe_cut():
    """Frontends call this as an op begins: past the pending graph's mark, _at_node_mark.

    The marks (LAZYX_NODE_CAP, LAZYX_LOOP_CUT) are read at each cut, not per op, so this call
    stays one compare.
    """
    if ir.CREATED[0] > _thread.next_cut:
        _at_node_mark()


# the same compare in C (core/_native_live.c), without a Python frame per op
maybe_cut = _py_maybe_cut if _NATIVE is None else \
    _NATIVE.CutCheck(ir.CREATED, _thread, _at_node_mark)


def graph_hash(*tensors):
    """The structural hash (hex) of the graph behind `tensors` (any frontend): equal programs
    built by different frontends hash equally. Data leaves count by shape and dtype only."""
    return program_of(*tensors)[0].graph_hash


_warned_fallbacks = set()


def fallback(op_name, framework, read=False):
    """Frontends call this when an op runs eagerly on the real framework, or (`read`) when the
    framework's own code inside `op_name` reads a lazy value on the host: counted, warned once."""
    source = user_line(2)
    metrics.record_fallback(op_name, source)
    _notify("on_fallback", op_name, source)
    if op_name not in _warned_fallbacks:
        _warned_fallbacks.add(op_name)
        if read:
            text = (f"{framework}'s own code in {op_name} reads a lazy value on the host; that "
                    f"value is computed now, not at the next barrier; counted in "
                    f"lazyx.metrics()['fallback_ops']")
        else:
            text = (f"{op_name} has no lowering; it runs eagerly on {framework} (inputs are "
                    f"materialized; counted in lazyx.metrics()['fallback_ops'])")
        source_lines.warn(f"lazyx: {text}", RuntimeWarning, source)


# ---------------------------------------------------------------- replay (core/replay.py)

def bind_results(handles, nodes):
    """Point `handles` at `nodes` (data leaves a compiled step produced outside `sync`), as a
    cut does: they leave this thread's pending set, and a new trace starts when nothing of
    the current one is pending any more."""
    state = _thread
    for handle, node in zip(handles, nodes):
        handle.node = node
        state.live.discard(handle)
    _end_cut(state)
