"""`torch.compile(fn, backend="lazyx")`: graphs captured by TorchDynamo, run by lazyx.

Dynamo captures FX graphs from Python bytecode; AOTAutograd turns each into aten forward and
backward graphs (torch's core ATen decompositions for what the aten table does not lower).
Each graph is lowered once, at compile time, through the same aten table the lazy tensors
use (`tensor.LOWERINGS`; shapes and dtypes from `node.meta['val']`, so no meta kernel runs
again), linearized into a Program and compiled through `runtime.compile_program` (the same
cache, metrics, dumps and explanations as the lazy path). A call binds its inputs as leaf
values and runs the cached executable: no per-op Python.

An FX node with no lowering splits the graph: the IR before it is one program, the node runs
eagerly on CPU torch (counted in `lazyx.metrics()["fallback_ops"]` each time it runs), the
rest is another program. Graph breaks (Dynamo's) are counted as `graph_breaks`.
"""
import operator
import time

import numpy as np
import torch
from torch._decomp import core_aten_decompositions

from ...core import ir, metrics, runtime
from ...core.source import user_line
from ...core import dtypes as ir_dtypes
from . import dtypes, dynamic_shapes, dynamo_host, tensor
from .aten import prims as aten_prims, random as lazy_random


class _Segment:
    """One compiled program: where each leaf's value comes from, where its results go.

    A call fills a copy of `template` (the fixed leaves' values: a graph's literals, 150 of
    them in a 200-op chain) at the slot and key positions only; an XLA executable bound to the
    fixed values (`bind`) packs and transfers those once, not per call."""
    __slots__ = ("exe", "leaves", "out_slots", "program", "template", "slots", "keys")

    def __init__(self, exe, leaves, out_slots, program):
        self.leaves, self.out_slots, self.program = leaves, out_slots, program
        self.template = [v if kind == _FIXED else None for kind, v in leaves]
        self.slots = [(i, v) for i, (kind, v) in enumerate(leaves) if kind == _SLOT]
        self.keys = [i for i, (kind, _) in enumerate(leaves) if kind == _KEY]
        # a binding wherever the backend makes one, even of no leaves: it may run inline
        bind = getattr(exe, "bind", None)
        self.exe = bind(_fixed(leaves)) if bind is not None else exe

    def exe_for_host_caller(self):
        """The executable for a call whose arguments are all CPU tensors and whose results
        all go back to the CPU: where the backend has one, the binding run on the calling
        thread (backends/xla_inline.py: no worker to wake, about 40 us a call on CPU)."""
        inline = getattr(self.exe, "inline", None)
        return inline() if inline is not None else self.exe

    def values(self, env):
        values = self.template.copy()
        for i, slot in self.slots:
            values[i] = env[slot]
        for i in self.keys:
            values[i] = _fresh_key()
        return values


class _Eager:
    """An FX node with no lowering, run on CPU torch at each call."""
    __slots__ = ("func", "args", "kwargs", "out_slots", "name")

    def __init__(self, func, args, kwargs, out_slots):
        self.func, self.args, self.kwargs, self.out_slots = func, args, kwargs, out_slots
        self.name = str(func)


_ASSERTS = (torch.ops.aten._assert_async.default, torch.ops.aten._assert_async.msg)

# Where a leaf's (or an output's) value comes from at a call.
_SLOT, _FIXED, _KEY, _INPUT = range(4)


def _fixed(leaves):
    """{leaf index: value} of a segment's fixed leaves (what its executable is bound to)."""
    return {i: v for i, (kind, v) in enumerate(leaves) if kind == _FIXED}


class CompiledGraph:
    """An FX graph lowered to lazyx programs; calling it runs them on the given inputs."""

    def __init__(self, kind, n_inputs, steps, n_slots, outputs, slot_types, n_user_outputs=None,
                 tangents=None, on_host=None, asserts=()):
        self.kind = kind              # "forward", "backward" or "inference"
        # torch._assert_async calls (one_hot's decomposition checks its class range): their
        # predicates, [((kind, where), assert op, its other arguments)]
        self.asserts = asserts
        # the inputs whose device is the caller's: all, or a backward graph's tangents (its
        # saved activations are lazy even for a CPU caller, see below)
        self.callers_inputs = frozenset(range(n_inputs) if not tangents else tangents)
        # outputs past this index are activations saved for the backward graph: they stay on
        # the device (as lazy tensors) even for CPU callers, so they never make a round trip
        self.n_user_outputs = len(outputs) if n_user_outputs is None else n_user_outputs
        self.n_inputs = n_inputs
        self.steps = steps            # [_Segment | _Eager] in order
        self.n_slots = n_slots
        self.outputs = outputs        # [(kind, where, torch dtype)]
        # the outputs torch computes on the CPU whatever the caller's device: an updated Adam
        # step counter (a CPU tensor beside lt.device parameters) comes back on the CPU, not
        # as a lazy value AOTAutograd's epilogue then copied into it with a read per step
        self.on_host = on_host or [False] * len(outputs)
        self.slot_types = slot_types  # slot -> (shape, ir dtype, torch dtype)
        # outputs whose buffer a CPU caller may take over instead of a copy: large, and the
        # only output of their slot (a value returned twice, or returned and saved for the
        # backward graph, stays unshared: writing one must not change the other)
        uses = {}
        for kind_, where, _ in outputs:
            if kind_ == _SLOT:
                uses[where] = uses.get(where, 0) + 1
        self.lendable = [kind_ == _SLOT and uses[where] == 1 and where >= n_inputs and
                         _nbytes(*slot_types[where][:2]) >= _LEND_MIN_BYTES
                         for kind_, where, _ in outputs]
        # a CPU caller gets every result as a CPU tensor (none saved for backward stays on
        # the device) and no eager step sits between programs: its calls may run inline
        self.host_results = self.n_user_outputs == len(outputs) and \
            all(type(step) is _Segment for step in steps)
        # the call for CPU callers of a one-program graph (dynamo_host.py): made at the first
        # such call, False where the general path must serve them
        self.host_plan = None if self.host_results and len(steps) == 1 else False

    @property
    def programs(self):
        return [s.program for s in self.steps if isinstance(s, _Segment)]

    @property
    def graph_hash(self):
        """lazyx.graph_hash of the graph's one program (None when a fallback split it)."""
        programs = self.programs
        return programs[0].graph_hash if len(programs) == 1 else None

    def __call__(self, args):
        if self.host_plan:
            outputs = self.host_plan(args)
            if outputs is not None:
                return outputs
        backend = runtime.get_backend()
        cpu_inputs = lazy_inputs = lazy_caller = cpu_caller = False
        callers = self.callers_inputs
        env = [None] * self.n_slots
        pending = []
        for i, a in enumerate(args):
            if not isinstance(a, torch.Tensor):
                continue
            if tensor.on_device(a):
                lazy_inputs = True
                lazy_caller = lazy_caller or i in callers
                handle = a.__lazyx_handle__
                if handle.pending:
                    pending.append(handle)
                env[i] = handle
            else:
                cpu_inputs = True
                cpu_caller = cpu_caller or i in callers
                host = dtypes.to_numpy_array(a)
                # borrowed, not copied or put (W1: a copy per parameter was half the step):
                # the programs' results are waited for below, before torch may write `a` again
                env[i] = backend.borrow(host)
                metrics.record_transfer("to_device", host.nbytes)
        if pending:  # a compiled function is a barrier for its own lazy inputs
            runtime.sync(*pending, cause="explicit")
        for i, a in enumerate(args):
            if isinstance(env[i], runtime.LazyHandle):
                env[i] = env[i].node.value
        # host data in, every result back to the host: no worker thread to hand off to
        cpu_caller = cpu_caller and not lazy_caller
        host_only = cpu_inputs and not lazy_inputs and self.host_results
        running = []  # every program's results: waited for once, before the call returns
        for step in self.steps:
            if type(step) is _Segment:
                start = time.perf_counter()
                exe = step.exe_for_host_caller() if host_only else step.exe
                if host_only and self.host_plan is None and exe is not step.exe:
                    self.host_plan = dynamo_host.make(self, step, exe, args) or False
                results = exe(step.values(env))
                metrics.record_time("execute", time.perf_counter() - start)
                metrics.count("executions")
                for slot, buf in zip(step.out_slots, results):
                    env[slot] = buf
                running.extend(results)
            else:  # (it reads its operands on the host, which waits for them)
                self._run_eager(step, env)
        # CPU tensors in, CPU tensors out (like Inductor); lt.device tensors in, lazy ones out
        # -- also beside CPU ones (a CPU scalar the model made, lifted into the graph: Falcon's
        # backward then returned its parameters' gradients on the CPU, which autograd refused)
        n_outputs = len(self.outputs)
        lazy = [k >= self.n_user_outputs for k in range(n_outputs)] if cpu_caller else \
            [not on_host for on_host in self.on_host]
        # the lazy results first, while the programs run: they need buffers, not values (a
        # training forward's saved activations: about 7 us each, which after the wait ran on
        # caches the program had just filled)
        outputs = [self._output(k, env, args, True) if lazy[k] else None
                   for k in range(n_outputs)]
        if cpu_inputs:  # borrowed: torch may write them again once the call returns
            backend.wait(running)
            self._check(env)
        for k in range(n_outputs):
            if not lazy[k]:
                outputs[k] = self._output(k, env, args, False)
        return tuple(outputs)

    def _output(self, k, env, args, lazy):
        kind, where, torch_dtype = self.outputs[k]
        if kind == _INPUT:
            return args[where]
        if kind == _FIXED:
            return where
        shape, ir_dtype, _ = self.slot_types[where]
        if lazy:
            value = env[where]
            if isinstance(value, np.ndarray):  # a borrowed CPU input: give the leaf a buffer
                value = runtime.get_backend().from_host(value)
            lazy_value = tensor.from_node(ir.data(value, shape, ir_dtype), torch_dtype)
            return torch._to_functional_tensor(lazy_value)
        if where < self.n_inputs and isinstance(env[where], np.ndarray):
            # an input's value (x.clone()), borrowed from the caller's tensor: a copy
            return dtypes.from_numpy_array(env[where].copy(), torch_dtype)
        return _to_cpu(env[where], torch_dtype, lend=self.lendable[k])

    def _check(self, env):
        """Run the graph's asserts on CPU torch (its own error) with the values this call
        computed: a CPU caller's results are read now anyway. (A caller on lt.device gets
        lazy results: as the lazy path, a pending value is not read for an assert,
        docs/errors.md.)"""
        for (kind, where), func, extra in self.asserts:
            value = where if kind == _FIXED else _to_cpu(env[where], self.slot_types[where][2])
            func(value, *extra)

    def _run_eager(self, step, env):
        runtime.fallback(step.name, "torch")

        def cpu(x):
            if isinstance(x, tuple) and len(x) == 2 and x[0] is _SLOT:
                value = env[x[1]]
                return None if value is None else _to_cpu(value, self.slot_types[x[1]][2])
            if isinstance(x, (list, tuple)):
                return type(x)(cpu(i) for i in x)
            return x
        out = step.func(*cpu(step.args), **{k: cpu(v) for k, v in step.kwargs.items()})
        flat = out if isinstance(out, (list, tuple)) else (out,)
        backend = runtime.get_backend()
        for slot, value in zip(step.out_slots, flat):
            if slot is not None:
                # None: an undefined tensor (mkldnn_rnn_layer's workspace under no_grad),
                # passed on as None to an eager op that takes it
                env[slot] = None if value is None else \
                    backend.from_host(dtypes.to_numpy_array(value))


# Below this size a copy costs less than DLPack's export and import (a 128 KiB result: 2.5
# against 3.6 us); above it the copy grows with the bytes (a 784x512 float32 gradient: ~50 us).
_LEND_MIN_BYTES = 128 << 10


def _nbytes(shape, ir_dtype):
    return int(np.prod(shape, dtype=np.int64)) * ir_dtypes.ITEMSIZE[ir_dtype]


def _to_cpu(buffer, torch_dtype, lend=False):
    """A CPU tensor of a result. `lend`: no one else holds `buffer` once the call returns, so
    where it lies in host memory the tensor takes it over (DLPack, no copy)."""
    if isinstance(buffer, np.ndarray):  # a borrowed CPU input (backend.borrow)
        return dtypes.from_numpy_array(buffer, torch_dtype)
    backend = runtime.get_backend()
    if lend and hasattr(backend, "lend_to_host"):
        view = backend.lend_to_host(buffer)
        if view is not None:
            out = torch.from_dlpack(view)
            if out.dtype == torch_dtype:
                metrics.record_transfer("to_host", out.nbytes)
                return out
    host = backend.to_host(buffer)
    metrics.record_transfer("to_host", host.nbytes)
    return dtypes.from_numpy_array(host, torch_dtype)


def _fresh_key():
    """A random op's key, drawn anew per call from the lazy frontend's (seed, counter)."""
    return lazy_random._next_key().value


# ---------------------------------------------------------------- lowering an FX graph

class _Capture:
    """Walks an FX graph once, building IR from its nodes; closes a program at each node that
    must run eagerly and at the output."""

    def __init__(self, gm):
        self.gm = gm
        self.env = {}          # fx node -> raw LazyTensor, tuple of them, or a Python value
        self.slot_of = {}      # id(placeholder leaf node) -> slot
        self.slot_types = {}
        self.keys = []         # random-key param leaves drawn while lowering
        self.asserts = []      # [(env key of the predicate, assert op, its other arguments)]
        self.steps = []
        self.n_slots = 0
        nodes = list(gm.graph.nodes)
        self.last_use = {}
        for i, n in enumerate(nodes):
            for inp in n.all_input_nodes:
                self.last_use[inp] = i

    def slot_tensor(self, val):
        """A new slot, as a raw LazyTensor over a data leaf with no buffer yet."""
        leaf = ir.data(None, tuple(val.shape), dtypes.to_ir(val.dtype))
        slot = self.slot_of[id(leaf)] = self.n_slots
        self.slot_types[slot] = (tuple(val.shape), leaf.dtype, val.dtype)
        self.n_slots += 1
        return tensor.from_node(leaf, val.dtype)

    def run(self):
        nodes = list(self.gm.graph.nodes)
        for i, node in enumerate(nodes):
            if node.op == "placeholder":
                val = node.meta.get("val")
                self.env[node] = self.slot_tensor(val) if isinstance(val, torch.Tensor) else val
            elif node.op == "get_attr":
                value = getattr(self.gm, node.target)
                self.env[node] = tensor.from_cpu(value) if isinstance(value, torch.Tensor) \
                    else value
            elif node.op == "call_function":
                self.env[node] = self.call(node, i)
            elif node.op == "output":
                return self.finish(node.args[0], i)
            else:
                raise NotImplementedError(f"lazyx: FX node kind {node.op} ({node})")

    def call(self, node, i):
        args, kwargs = _map(node.args, self.env), _map(node.kwargs, self.env)
        if node.target is operator.getitem:
            return args[0][args[1]]
        func = node.target
        if func in _ASSERTS:  # checked after each call that reads its results (_check)
            key = ("assert", len(self.asserts))
            self.env[key] = args[0]
            self.asserts.append((key, func, tuple(args[1:])))
            return None
        out = node.meta.get("val")
        if isinstance(out, tuple):
            out = tuple(out)  # torch.return_types named tuples are built field by field
        if func is torch.ops.higher_order.with_effects:
            # (token, op, *args) -> (token, *op's results): an op with a side effect (torch's
            # linalg error checks read `info`); the op runs eagerly, the token passes through
            results = self.eager(args[1], node.args[2:], node.kwargs, out[1:] if len(out) > 2
                                 else (out[1] if len(out) == 2 else None), i)
            return (args[0],) + (tuple(results) if isinstance(results, tuple) else (results,))
        try:
            if not isinstance(func, torch._ops.OpOverload):
                raise tensor.NeedsEager(func)
            return _lower(func, args, kwargs, out)
        except tensor.NeedsEager:
            return self.eager(func, node.args, node.kwargs, out, i)

    def eager(self, func, fx_args, fx_kwargs, out, i):
        """Close the program so far (its values still needed become slots), then run `func`
        on CPU torch at each call; its results are new slots."""
        self.close(lambda n: self.last_use.get(n, -1) >= i or n in self.assert_keys)
        args, kwargs = _map(fx_args, self.env), _map(fx_kwargs, self.env)
        flat = out if isinstance(out, (list, tuple)) else (out,)
        if any(not isinstance(v, torch.Tensor) for v in flat if v is not None):
            raise NotImplementedError(f"lazyx: {func} returns non-tensors and has no "
                                      "lowering; it cannot run inside a compiled graph")
        made = [self.slot_tensor(v) if v is not None else None for v in flat]
        self.steps.append(_Eager(func, self.template(args), self.template(kwargs),
                                 [self.slot_of[id(m._lazyx_handle.node)] if m is not None
                                  else None for m in made]))
        return type(out)(made) if isinstance(out, (list, tuple)) else made[0]

    @property
    def assert_keys(self):
        return {key for key, _, _ in self.asserts}

    def template(self, x):
        if isinstance(x, tensor.LazyTensor):
            node = x._lazyx_handle.node
            if id(node) in self.slot_of:
                return (_SLOT, self.slot_of[id(node)])
            return _host_value(x) if node.value is not None else x
        if isinstance(x, (list, tuple)):
            return type(x)(self.template(i) for i in x)
        if isinstance(x, dict):
            return {k: self.template(v) for k, v in x.items()}
        if isinstance(x, torch.device) and x.type == "lazyx":
            return torch.device("cpu")
        return x

    def close(self, still_needed, roots_from=None):
        """Compile the pending IR that `roots_from` (else the live env values) need into one
        program whose results are new slots; rebind those values to the slots."""
        wanted = []
        for n, value in self.env.items():
            if still_needed(n):
                wanted.extend(t for t in _tensors(value))
        roots, seen = [], set()
        for t in wanted:
            node = t._lazyx_handle.node
            if not node.is_leaf and node.op != "constant" and id(node) not in seen:
                seen.add(id(node))
                roots.append(node)
        if not roots:
            return
        program, leaf_nodes = runtime.linearize(roots)
        keys = {id(k) for k in self.keys}
        # the graph's literals are the same at every call: constants of the executed program
        # (`program`, the IR as lowered, keeps them as leaves: its graph_hash is the lazy
        # path's for the same code)
        literals = runtime.literal_leaves(program, leaf_nodes, set(self.slot_of) | keys)
        leaf_nodes = [leaf for i, leaf in enumerate(leaf_nodes) if i not in literals]
        leaves = []
        for leaf in leaf_nodes:
            if id(leaf) in self.slot_of:
                leaves.append((_SLOT, self.slot_of[id(leaf)]))
            elif id(leaf) in keys:
                leaves.append((_KEY, None))
            else:
                leaves.append((_FIXED, leaf.value))
        # the other fixed leaves are bound (_Segment): compiled for them from the start
        # (named at the compiled function's call, as a lazy cut is at its line)
        exe, _ = runtime.compile_program(runtime.bake(program, literals), _fixed(leaves),
                                         "explicit", user_line(1))
        slots = {}
        for root in roots:
            made = self.slot_tensor(_Meta(root))
            slots[id(root)] = made
        self.steps.append(_Segment(exe, leaves, [self.slot_of[id(slots[id(r)]._lazyx_handle.node)]
                                                 for r in roots], program))
        rebound = {}
        for t in wanted:
            node = t._lazyx_handle.node
            if id(node) in slots:
                rebound[id(t)] = slots[id(node)]
        for n in list(self.env):
            self.env[n] = _replace(self.env[n], rebound)

    def _where(self, value):
        """(kind, where) of an assert's predicate: a slot, or a value fixed at lowering."""
        node = value._lazyx_handle.node
        if id(node) in self.slot_of:
            return _SLOT, self.slot_of[id(node)]
        return _FIXED, _host_value(value)

    def finish(self, results, i):
        outputs = list(results) if isinstance(results, (list, tuple)) else [results]
        marker = object()
        self.env[marker] = tuple(_map(outputs, self.env))
        self.close(lambda n: n is marker or n in self.assert_keys)
        self.assert_spec = [(self._where(self.env[key]), func, extra)
                            for key, func, extra in self.asserts]
        spec = []
        # an output that *is* an input is handed back as it is; one computed to the same
        # value (x.clone(): no op in the IR) is a slot, a new tensor -- resize_ on the clone
        # resized the caller's input
        placeholders = {n: k for k, n in enumerate(n for n in self.gm.graph.nodes
                                                   if n.op == "placeholder")}
        # an input handed through an op unchanged, the very tensor (with_effects' token,
        # which AOTAutograd passes in as None or an empty tensor: no value to read back)
        passed = {id(self.env[n]): k for n, k in placeholders.items()}
        for fx_node, value in zip(outputs, self.env[marker]):
            if isinstance(value, tensor.LazyTensor):
                node = value._lazyx_handle.node
                if isinstance(fx_node, torch.fx.Node) and fx_node in placeholders:
                    spec.append((_INPUT, placeholders[fx_node], value.dtype))
                elif id(value) in passed:
                    spec.append((_INPUT, passed[id(value)], value.dtype))
                elif id(node) in self.slot_of:
                    spec.append((_SLOT, self.slot_of[id(node)], value.dtype))
                else:  # a constant: made once, handed out at every call
                    spec.append((_FIXED, _host_value(value), value.dtype))
            else:
                spec.append((_FIXED, value, None))
        return spec


def _host_value(t):
    """A CPU copy of a lazy leaf made while lowering (a constant, a run-time param, data)."""
    node = t._lazyx_handle.node
    host = runtime.get_backend().to_host(node.value) if node.op == "data" else node.value
    if host.shape != node.shape:  # a splat param: one scalar for its whole shape
        host = np.full(node.shape, host)
    return dtypes.from_numpy_array(host, t.dtype)


class _Meta:
    """Shape and torch dtype of an IR node, in the form slot_tensor reads."""

    def __init__(self, node):
        self.shape, self.dtype = node.shape, dtypes.to_torch(node.dtype)


def _tensors(value):
    if isinstance(value, tensor.LazyTensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _replace(value, rebound):
    if isinstance(value, tensor.LazyTensor):
        return rebound.get(id(value), value)
    if isinstance(value, (list, tuple)):
        items = [_replace(v, rebound) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value


def _map(x, env):
    """FX arguments with nodes replaced by their values; devices become the lazyx device
    (every value of the graph lives in the IR, whatever device the user's tensors are on)."""
    if isinstance(x, torch.fx.Node):
        return env[x]
    if isinstance(x, (list, tuple)):
        return type(x)(_map(i, env) for i in x)
    if isinstance(x, dict):
        return {k: _map(v, env) for k, v in x.items()}
    if isinstance(x, torch.device):
        return tensor.DEVICE
    return x


def _lower(func, args, kwargs, out):
    """The aten table with FX's recorded output metadata; what it does not cover goes
    through the lazy dispatcher (decompositions), which raises NeedsEager for a CPU fallback."""
    lowering = tensor.LOWERINGS.get(func) or aten_prims.GRAPH_ONLY.get(func)
    if lowering is not None and func not in tensor.EAGER_ONLY and _static(out):
        meta = tensor._as_meta(out)  # what lowerings read: shape, torch and IR dtypes
        try:
            return tensor._wrap(lowering(meta, *args, **kwargs), meta)
        except tensor.Unsupported:
            pass
        except tensor.ViewWrite:
            raise tensor.NeedsEager(func) from None
        except (TypeError, ValueError) as err:
            if "lazyx" in str(err) or ": " not in str(err):
                raise
            raise tensor.NeedsEager(func) from None
    with tensor.capturing():
        return tensor.dispatch(func, args, kwargs)


def _static(out):
    for v in out if isinstance(out, (list, tuple)) else (out,):
        if isinstance(v, torch.Tensor) and any(not isinstance(d, int) for d in v.shape):
            return False
        if v is not None and not isinstance(v, torch.Tensor):
            return False
    return out is not None


RECENT = []  # the last compiled graphs (for graph-hash comparisons and debugging)
_RECENT_MAX = 64
COMPILED = [0]  # graphs compiled in this process: a mark for compiled_since


def compiled_since(mark):
    """The graphs compiled since COMPILED[0] was `mark` (RECENT is capped: an index into it
    taken before found nothing once 64 graphs had been compiled)."""
    n = COMPILED[0] - mark
    return RECENT[max(len(RECENT) - n, 0):] if n > 0 else []


def compile_graph(gm, example_inputs, kind="inference", n_user_outputs=None):
    """Lower one aten FX graph (AOTAutograd's) to lazyx programs; returns the callable."""
    capture = _Capture(gm)
    before = {id(h) for h in runtime.live_handles()}
    drawn = []
    original_next_key = lazy_random._next_key

    def recording_key():
        key = original_next_key()
        drawn.append(key)
        return key
    lazy_random._next_key = recording_key
    try:
        # AOTAutograd calls compilers inside its fake-tensor mode; lowering needs real ops
        # (a constant's bytes, meta kernels of decompositions on our tensors)
        with torch.utils._python_dispatch._disable_current_modes(), tensor.capturing():
            capture.keys = drawn
            outputs = capture.run()
    finally:
        lazy_random._next_key = original_next_key
        # handles made while lowering stand on leaves with no buffer: a later cut must not
        # run them, so they become (empty) data, which a cut skips
        for h in runtime.live_handles():
            if id(h) not in before and h.pending:
                h.node = ir.data(None, h.node.shape, h.node.dtype)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    tangents = [i for i, n in enumerate(placeholders) if n.name.startswith("tangents")] \
        if kind == "backward" else None  # (AOTAutograd's names for the incoming gradients)
    results = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    results = results if isinstance(results, (list, tuple)) else [results]
    on_host = [isinstance(n, torch.fx.Node) and isinstance(n.meta.get("val"), torch.Tensor)
               and n.meta["val"].device.type == "cpu" for n in results]
    compiled = CompiledGraph(kind, len(placeholders), capture.steps, capture.n_slots, outputs,
                             capture.slot_types, n_user_outputs, tangents, on_host,
                             capture.assert_spec)
    RECENT.append(compiled)
    del RECENT[:-_RECENT_MAX]
    COMPILED[0] += 1
    return compiled


# ---------------------------------------------------------------- the Dynamo backend

def _decompositions():
    """torch's core ATen decompositions, minus what the aten table lowers itself (so a
    captured graph keeps the ops the lazy path sees, and hashes like it)."""
    return {op: fn for op, fn in core_aten_decompositions().items()
            if op not in tensor.LOWERINGS}


def _compiler(kind):
    def compile_(gm, example_inputs):
        n_user = None
        context = torch._guards.TracingContext.try_get()
        if kind == "forward" and context is not None and context.fw_metadata is not None:
            n_user = context.fw_metadata.num_forward  # then come the saved activations
        try:
            compiled = compile_graph(gm, example_inputs, kind, n_user)
        except Exception as err:  # never a compile error the user cannot act on
            return _graph_fallback(gm, err)

        def run(args):  # a function: torch.compiler.disable copies its attributes
            return compiled(args)
        run._boxed_call = True  # AOTAutograd hands the arguments as one list
        run.compiled_graph = compiled
        return run
    return compile_


def _graph_fallback(gm, err):
    """An ATen graph lazyx could not lower (an op returning Python values, a lowering's
    limit): torch runs it as AOTAutograd gave it (CPU inputs eagerly, lt.device inputs
    through the lazy frontend), counted as a fallback at each call, explained once."""
    name = f"torch.compile graph lazyx could not lower ({type(err).__name__}: " \
           f"{str(err).splitlines()[0][:120] if str(err) else ''})"

    def run(args):
        runtime.fallback(name, "torch")
        return gm(*args)
    run._boxed_call = True
    return run


def _note_graph_break(gm):
    reason = getattr(gm, "compile_subgraph_reason", None)
    if reason is None or not getattr(reason, "graph_break", False):
        return
    where = None
    stack = getattr(reason, "user_stack", None)
    if stack:
        frame = stack[-1]
        where = f"{frame.filename}:{frame.lineno}"
    _record_graph_break(reason.reason, where)


def note_skipped_function(exc):
    """Count a function Dynamo gave up on (hooks._log_graph_break): it never reaches this
    backend and runs eagerly at every call, none of it through lazyx."""
    stack = getattr(exc, "real_stack", None)
    where = f"{stack[-1].filename}:{stack[-1].lineno}" if stack else None
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    _record_graph_break("Dynamo skipped the whole function, which runs eagerly (not through "
                        f"lazyx): {first}", where)


def _record_graph_break(reason, where):
    metrics.record_graph_break(reason, where)
    for listener in runtime.LISTENERS:  # LAZYX_DEBUG=1 / lazyx.explain() say why
        if hasattr(listener, "on_graph_break"):
            listener.on_graph_break(reason, where)


def _unwrap(x, fake_mode):
    """Dynamo hands lt.device tensors as FunctionalTensorWrappers (around our LazyTensor, not
    a fake one); AOTAutograd adds its own functionalization and refuses them: give it a plain
    fake tensor of the same shape, dtype, device and requires_grad."""
    if isinstance(x, torch.Tensor) and torch._is_functional_tensor(x):
        with fake_mode:
            fake = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
        return fake.requires_grad_(x.requires_grad)
    return x


def backend(gm, example_inputs, **kwargs):
    """The `lazyx` TorchDynamo backend: `torch.compile(model, backend="lazyx")`."""
    aten_prims.lower_inductor_prims()
    _note_graph_break(gm)
    if dynamic_shapes.symbolic(example_inputs):
        return dynamic_shapes.per_shape(gm)
    from torch._guards import detect_fake_mode
    gm, lifted = _lift_lazy_attributes(gm)
    compiled = _compile_static(gm, list(example_inputs) + lifted,
                               detect_fake_mode(example_inputs))
    if not lifted:
        return compiled
    return lambda *args: compiled(*args, *lifted)


def _lift_lazy_attributes(gm):
    """(gm, []) -- or, when gm holds lt.device tensors as attributes (the parameters an
    optimizer step updates, which Dynamo installs on the graph module as static tensors), a
    graph taking them as its last inputs instead, and those tensors. AOTAutograd fakes a
    graph's attributes itself, and refused these (they are functional tensors already); as
    inputs they are faked by _unwrap, and their in-place updates reach them."""
    attrs = {n.target: n for n in gm.graph.nodes if n.op == "get_attr"}
    lazy = []
    for target, node in attrs.items():
        value = gm
        for part in target.split("."):
            value = getattr(value, part)
        if isinstance(value, torch.Tensor) and torch._is_functional_tensor(value):
            lazy.append((node, value))
    if not lazy:
        return gm, []
    # on a copy: Dynamo reads its own graph's placeholders after the backend returns
    import copy
    graph = copy.deepcopy(gm.graph)
    copies = {n.target: n for n in graph.nodes if n.op == "get_attr"}
    lazy = [(copies[node.target], value) for node, value in lazy]
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    anchor = placeholders[-1] if placeholders else None
    for node, _ in lazy:
        with graph.inserting_after(anchor) if anchor is not None else \
                graph.inserting_before(next(iter(graph.nodes))):
            placeholder = graph.placeholder(f"lazyx_{node.name}")
        anchor = placeholder
        placeholder.meta.update(node.meta)
        node.replace_all_uses_with(placeholder)
        graph.erase_node(node)
    graph.lint()
    return torch.fx.GraphModule(gm, graph), [value for _, value in lazy]


def _compile_static(gm, example_inputs, fake_mode):
    """AOTAutograd's forward/backward (or inference) graphs of gm, lowered by lazyx."""
    from torch._dynamo.backends.common import aot_autograd
    aot = aot_autograd(fw_compiler=_compiler("forward"), bw_compiler=_compiler("backward"),
                       inference_compiler=_compiler("inference"),
                       decompositions=_decompositions())
    inputs = [_unwrap(x, fake_mode) for x in example_inputs]
    # Attention as plain math ops (as the lazy path's _fused_sdp_choice picks): on CPU torch
    # would trace its flash kernel, whose backward has no decomposition (a CPU fallback)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.MATH]):
        return aot(gm, inputs)
