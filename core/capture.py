"""What lazyx.compile records while it traces a step (core/replay.py uses it).

* Python numbers among the step's arguments are handed to the step as `SymFloat`/`SymInt`
  (core/symbolic.py): real floats and ints that also remember how they were computed from
  the arguments. When
  one becomes a run-time parameter (`ir.param`), the parameter is linked to that expression,
  so a replay computes its new value from the new arguments (a new learning rate never
  recompiles). torch's dispatcher turns numbers into plain floats on the way (`alpha=-lr`),
  and TF's conversions into EagerTensors (`tf.constant(k)`, Keras' ops); such a parameter is
  linked by value to an expression computed in this trace, and the first call with new
  numbers traces once more to confirm the link (a code constant may equal the number). A
  number a frontend converts itself keeps its link (`linked`: TF's `x * k`).
* Every random key is linked to the generator stream and counter it was drawn at.
* A sync inside the step (an observation) raises, naming the line; or, with
  on_observe="split", ends a piece: the cut's roots and results are remembered
  (`Recording.pieces`), and so is each scalar the step reads from them
  (core/split_steps.py).
* Frontends register their tensor types and state containers here; `_discover` finds the
  state a step can reach from what its function refers to; core/capture_args.py flattens
  its arguments and rebuilds its results.

The hooks are installed on the module attributes frontends call (`ir.param`, `ir.splat`,
`compose.random_key`) only while some thread traces, and act only for that thread.
"""
import dis
import threading
import types

import numpy as np

from . import compose, ir, prng, runtime
from .source import format_line
from .symbolic import (SymFloat, SymInt, _local, current, plain, state_number,  # noqa: F401
                       sym)

_lock = threading.Lock()
_active = [0]
_ORIGINAL = {}


class CompileError(RuntimeError):
    """A step lazyx.compile cannot replay (it observes a value, its graph changed)."""


class Recording:
    """One trace's links: parameters to number expressions, keys to generator streams."""

    def __init__(self, on_observe):
        self.on_observe = on_observe
        self.derived = {}     # float value -> expression, for every number derived in this trace
        self.ties = []        # (expression linked, another of the same value): see symbolic.sym
        self.params = {}      # id(param node) -> (node, expression, linked by value)
        self.keys = {}        # id(key param node) -> (node, stream, counter, part, epoch)
        # streams reseeded while traced (torch.manual_seed inside the step), and the reseeds
        # made before it began: a draw after a reseed is fixed, not relative to the stream
        self.reseeded = {}
        self.epoch0 = prng.epoch()
        self.observed = None  # (cause, "file:line") of the first observation (split mode)
        # split mode: each cut inside the step is a piece, replayed in order
        self.pieces = []       # (roots, results) per cut inside the step
        self.piece_of = {}     # id(result data node) -> (piece index, root index)
        self.reads = []        # (piece index, root index, traced value, as a number) per read
        self.read_by_value = {}  # float value read -> expression (a plain float result)
        self.guards = []       # (expression, outcome): what Python decided from a read value
        self.decisions = []    # (expression, outcome): what it decided from the call's numbers
        self.unreplayable = None  # why a split step cannot replay piece by piece
        self.unread = None     # an "item" cut whose value no frontend handed to `observed`
        self.numbers = None   # the call's numbers (lazyx.compile's trace), then state numbers
        self.state_numbers = []  # per state number: a function reading its current value
        self.start_nodes = ()  # ids of the state's and arguments' nodes when the trace began
        self.arg_nodes = ()    # id of each argument tensor's node then, in order
        self.serial0 = 0       # ir.CREATED when it began: older nodes were made before the step
        self.effects = []      # (owners, call, holders): replayed_effect
        self.effects_ok = True  # False: a call like them was made that cannot be replayed
        self.counters = []     # (host tensor, advance): host_counter


# ---------------------------------------------------------------- hooks

def _param(value, dtype, shape=()):
    expr = getattr(value, "_lazyx_expr", None)
    # (made from the plain number: ir.param's np.asarray of a SymInt calls its int(), a
    # decision, which would guard the very value the parameter is there to vary)
    node = _ORIGINAL["param"](plain(value) if expr is not None else value, dtype, shape)
    rec = current()
    if rec is not None:
        if expr is not None:
            rec.params[id(node)] = (node, expr, False)
        elif isinstance(value, (float, np.floating)):
            expr = rec.derived.get(float(value))
            if expr is not None:
                rec.params[id(node)] = (node, expr, True)
    return node


def equal_params(leaves, rec):
    """{leaf index: an earlier leaf index} for the run-time params among `leaves` computed by
    the same expression of the call's numbers as an earlier one: equal at every replay, so
    the program may read them as one (runtime.compile_fixed). An optimizer reads its learning
    rate, betas and weight decay once per parameter: AdamW over 100 parameters fed 700
    scalars of 6 distinct values, each its own input of the program, and XLA compiled it 4x
    slower than the lazy path's program for the same step, which merges them by value."""
    first, same = {}, {}
    for k, leaf in enumerate(leaves):
        link = rec.params.get(id(leaf))
        if link is not None and id(leaf) not in rec.keys:
            j = first.setdefault((id(link[1]), leaf.dtype), k)
            if j != k:
                same[k] = j
    return same


def decided_by(number):
    """A plain number a framework handed on (torch's pow exponent) that decided the graph's
    structure rather than became a parameter (`x ** k` taken as x * x at k = 2.0): if it has
    the value of a number of this call, that number is guarded by value. Otherwise a replay,
    or a trace that linked another op's parameter to the number, computed the trace's
    structure for every new value (x ** 2 at k = 3.0, 4.0, 0.5)."""
    rec = current()
    if rec is None or type(number) not in (float, int) or type(number) is bool:
        return
    expr = rec.derived.get(float(number))
    if expr is not None:
        rec.decisions.append((lambda n, _e=expr: float(_e(n)), float(number)))


def linked(node, number):
    """`node`, a param a frontend made from `number` after its framework converted it (TF's
    convert_to_tensor hands on a plain NumPy scalar), linked to the number's expression as a
    param made from the number itself is: a float argument of the call stays a run-time
    parameter whatever its value (2.0, 0.5: numbers linked by value must not look like code
    constants)."""
    rec = current()
    expr = getattr(number, "_lazyx_expr", None)
    if rec is not None and expr is not None and node.op == "param" and \
            getattr(number, "_lazyx_rec", None) is rec:
        rec.params[id(node)] = (node, expr, False)
    return node


def _splat(scalar, shape):
    # a number's param broadcast to its partner's shape (ops.broadcast_in_dim folds it to a
    # new splat leaf): the leaf in the graph is the splat, so it inherits the number's link
    node = _ORIGINAL["splat"](scalar, shape)
    rec = current()
    if rec is not None:
        link = rec.params.get(id(scalar))
        if link is not None:
            rec.params[id(node)] = (node,) + link[1:]
    return node


def _random_key(seed, counter=0, stream=None):
    node = _ORIGINAL["random_key"](seed, counter, stream)
    if stream is not None:
        linked_draw(node, stream, counter)
    return node


def linked_draw(node, stream, counter, part=None):
    """`node`, a param made for draw number `counter` of `stream`, linked to it: a replay
    feeds it stream.value_at(the stream's counter then + its offset in the trace, part), and
    advances the stream by the trace's draws (prng.Stream's keys; TF's op seeds have two
    parameters per draw, frontends/tf/api_random.py)."""
    rec = current()
    if rec is not None:
        rec.keys[id(node)] = (node, stream, int(counter), part, getattr(stream, "epoch", 0))
    return node


class _Observer:
    """A runtime listener: a sync while this thread traces is an observation inside the step."""

    def on_sync(self, cause, source, program, roots=()):
        rec = current()
        if rec is None:
            return
        if rec.on_observe == "split":
            where = format_line(source) if source else "an unknown line"
            if rec.observed is None:
                rec.observed = (cause, where)
            if rec.unread is not None:  # the last read's value went where we cannot see
                rec.unreplayable = rec.unreplayable or rec.unread
            if cause not in _PIECE_CAUSES:
                rec.unreplayable = rec.unreplayable or (cause, where)
            rec.unread = ("a value read into Python", where) if cause == "item" else None
            return
        if cause in _READS and _fixed_by_the_trace(program, roots, rec):
            return  # every replay would read the same value: nothing to refuse
        where = format_line(source) if source else "an unknown line"
        what = {"fallback": "an op with no lowering runs eagerly there (its inputs are read)",
                "data_dependent": "an op that needs values on the host (a result shape that "
                                  "depends on values -- nonzero, unique, x[mask] -- or a "
                                  "check that raises on them: torch.linalg's singular-matrix "
                                  "check, which solve_ex/inv_ex/cholesky_ex skip)",
                "explicit": "a barrier (lazyx.sync / mark_step) cuts the step"}.get(
                    cause, "a lazy value is read into Python (.item(), float(), print, bool/if)")
        raise CompileError(
            f"lazyx.compile: the step observes a value at {where}: {what}. A compiled step "
            f"is replayed without running Python, so it cannot read values while it runs. "
            f"Move that line out of the compiled function (e.g. return the value and read it "
            f"after the call), or pass lazyx.compile(fn, on_observe='split').")


    def on_read(self, cause, source, handle):
        """A value read with no cut: an argument's or state's value, which a replay would
        never read again -- every replay returned the first call's np.unique(x), x[:int(n)]."""
        rec = current()
        if rec is None or rec.unreplayable is not None:
            return  # (a frontend's host read of state already keeps the step lazy)
        node = handle.node
        if id(node) not in rec.start_nodes and node.serial > rec.serial0:
            return  # made by the step itself (a constant it uploaded, a split piece's result)
        where = format_line(source) if source else "an unknown line"
        if rec.on_observe == "split":
            rec.observed = rec.observed or (cause, where)
            rec.unreplayable = ("the value of an argument or of state read into Python", where)
            return
        raise CompileError(
            f"lazyx.compile: the step observes a value at {where}: the value of an argument "
            f"or of state is read into Python (.item(), float(), int(), np.asarray, an op run "
            f"eagerly on it). A compiled step is replayed without running Python, so every "
            f"replay would reuse this call's value. Pass the number as a Python number, move "
            f"that line out of the compiled function, or pass "
            f"lazyx.compile(fn, on_observe='split').")

    def on_results(self, cause, roots, results):
        rec = current()
        if rec is None or rec.on_observe != "split":
            return
        j = len(rec.pieces)
        rec.pieces.append((list(roots), list(results)))
        for i, out in enumerate(results):
            rec.piece_of[id(out)] = (j, i)


_OBSERVER = _Observer()
_READS = frozenset(("item", "convert", "print"))  # sync causes that only read a value
# cuts a split step can replay as pieces: a scalar read (the value is handed to `observed`),
# a print (the value goes to the screen only), a barrier, the node cap. Any other read hands
# the step an array whose uses cannot be followed: that step runs lazily at every call.
_PIECE_CAUSES = frozenset(("item", "print", "explicit", "node_cap"))


def _fixed_by_the_trace(program, roots, rec):
    """Whether a value read while tracing is the same in every replay: computed from no data
    and no random key, before the trace met any number a replay changes (the call's numbers,
    state numbers such as an optimizer's lr: rec.numbers) -- so from the step's structure and
    the numbers its code spells alone. (HF's BART decoder builds a mask of ones and asks
    whether it is all ones.) A number met earlier could hide in any number of the graph
    (torch folds `ones * lr` into one), so then the read is refused as any other. So is a
    read of state, even state still held as a constant (AveragedModel's `n_averaged == 0`:
    its counter, made by torch.tensor(0), was baked at 0 and every replay copied)."""
    if rec.numbers or any(kind == "data" for kind, _, _ in program.leaves):
        return False
    seen, stack = set(), list(roots)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in rec.keys or id(node) in rec.start_nodes:
            return False
        stack.extend(node.inputs)
    return True


def host_read(what):
    """A frontend read captured state eagerly (on the host) while a step is traced: the value
    would be baked into the replayed program. The step then runs lazily instead of being
    replayed (correct, not faster); lazyx.compile warns, naming `what`."""
    rec = current()
    if rec is not None:
        if rec.observed is None:
            rec.observed = ("host read", what)
        rec.unreplayable = rec.unreplayable or ("host read", what)


class recording:
    """Context manager: record this thread's trace into a new Recording."""

    def __init__(self, on_observe):
        self.rec = Recording(on_observe)

    def __enter__(self):
        with _lock:
            if _active[0] == 0:
                _ORIGINAL["param"], _ORIGINAL["random_key"] = ir.param, compose.random_key
                _ORIGINAL["splat"] = ir.splat
                ir.param, compose.random_key, ir.splat = _param, _random_key, _splat
                runtime.LISTENERS.append(_OBSERVER)
            _active[0] += 1
        self.outer = current()
        _local.recording = self.rec
        return self.rec

    def __exit__(self, *exc):
        _local.recording = self.outer
        with _lock:
            _active[0] -= 1
            if _active[0] == 0:
                ir.param, compose.random_key = _ORIGINAL["param"], _ORIGINAL["random_key"]
                ir.splat = _ORIGINAL["splat"]
                runtime.LISTENERS.remove(_OBSERVER)
        return False


# ---------------------------------------------------------------- frontends' types

_TENSORS = {}     # type -> (is_lazy, handle, wrap, write, takes_grad, has_backward, version,
                  #          memory, base, own_storage)
_CONTAINERS = {}  # type -> children(obj) -> iterable of (name, child, stable)
_MODES = {}       # type -> mode(obj) -> a hashable value the graph depends on (the guard's)
_CHILD = {}       # type -> child(obj, name) -> the child called name, or None
_SET_CHILD = {}   # type -> set_child(obj, name, value) -> whether it could
_CHILDREN_AT = {}  # child function -> children_at(obj, names) -> [child or None per name]
_NUMBERS = set()  # container types whose attributes hold numbers a step reads (a module tree)
_TRACE_HOOKS = []  # context-manager factories entered around every trace
_lookup_cache = {}


def _set_node(tensor, handle, node):
    handle.node = node


def _never(t):
    return False


def _none(t):
    return None


def register_tensor(cls, handle, wrap, is_lazy=None, write=None, takes_grad=None,
                    has_backward=None, version=None, memory=None, base=None,
                    own_storage=None):
    """A frontend's tensor type: `handle(t)` is its current LazyHandle (fast: called per
    replay), `wrap(template, node)` a new tensor like `template` holding `node`, `is_lazy(t)`
    False for instances that are not lazyx tensors (torch CPU tensors), and `write(t, handle,
    node)` stores a replay's new value (default: rebind the handle).
    For a framework whose tensors carry their own autograd (torch): `takes_grad(t)` whether a
    call given `t` as an argument records a backward into it now (its .grad is made by the
    call, which a replay cannot make), `has_backward(t)` whether a result carries a backward
    graph (which a replay's results cannot carry). `version(t)`, for an instance that is not
    lazy (a CPU tensor kept in state), changes whenever it is written in place (torch's
    version counter): a step that writes one cannot be replayed, one written between calls
    traces again. `memory(t)`, for a framework with views, names the memory `t` views (two
    views of one array name the same): a step given two that share it is not replayed when
    it writes an argument (replay._shared_memory). `base(t)`: the tensor whose value `t`
    is regenerated from after a write (torch's `._base` of a view), or None.
    `own_storage(t)` detaches a traced call's result from hidden storage it is regenerated
    from (a torch result an in-place view op reshaped), which replays rebind."""
    _TENSORS[cls] = (is_lazy or (lambda t: True), handle, wrap, write or _set_node,
                     takes_grad or _never, has_backward or _never, version, memory,
                     base or _none, own_storage or _none)
    _lookup_cache.clear()


def register_container(cls, children, mode=None, child=None, set_child=None, numbers=False,
                       children_at=None):
    """Objects holding state: `children(obj)` yields (name, child, stable): `name` says where
    the child is (stable across calls: a parameter's name, not its position), `stable` is
    False for state that a step may legitimately replace each call (a parameter's .grad).
    `mode(obj)`, if given, is a hashable value besides tensors that the traced graph depends
    on (a torch module tree's train/eval flags): it is part of lazyx.compile's guard.
    `child(obj, name)`: the child called `name` now, or None (default: search `children`);
    replays read state through it at every call. `set_child(obj, name, value)` stores state
    a step creates (a .grad): True if it could. `numbers`: the container's attributes (and
    its children's, through them) hold Python numbers the step may read, which lazyx.compile
    guards (host_state.read_numbers: a torch module's `self.temperature`); an optimizer's
    numbers have their own mechanism (state_number), a Keras layer's are in its `mode`.
    `children_at(obj, names)`: `child` of each name, in one call (a replay reads an
    optimizer's 300 state tensors at each call); it must not raise (None where a name has
    no child). Default: `child` per name."""
    _CONTAINERS[cls] = children
    if numbers:
        _NUMBERS.add(cls)
    _CHILD[cls] = child or _search_children
    if children_at is not None or child is None:
        _CHILDREN_AT[_CHILD[cls]] = children_at or _search_children_at
    _SET_CHILD[cls] = set_child
    if mode is not None:
        _MODES[cls] = mode
    _lookup_cache.clear()


# A container without a `child` lookup lists its children once per pass (one replay, one
# trace's locating): a Keras model's 200 variables are not listed again for each of them.
_PASS = [{}]  # {id(container): {name: child}} for the current pass


def new_pass():
    """Forget the children listed so far (state may have changed since)."""
    _PASS[0] = {}


def _search_children(obj, name):
    table = _PASS[0].get(id(obj))
    if table is None:
        table = _PASS[0][id(obj)] = {n: c for n, c, _ in _spec(type(obj))[1](obj)}
    return table.get(name)


def _search_children_at(obj, names):
    _search_children(obj, names[0])  # (lists them once per pass)
    table = _PASS[0][id(obj)]
    return [table.get(name) for name in names]


def _container_fn(table, cls):
    for base in cls.__mro__:
        if base in table:
            return table[base]
    return None


def _mode_of(cls):
    return _container_fn(_MODES, cls)


def register_trace_hook(factory):
    """`factory()` is a context manager entered around each trace (a frontend's setup)."""
    _TRACE_HOOKS.append(factory)


_AMBIENT = []  # functions giving a framework's global modes (torch's grad mode, autocast)


def register_ambient(mode):
    """`mode()` (hashable) is part of every call's guard: a framework's global state that
    changes what a step records (torch.no_grad, torch.autocast around the call)."""
    _AMBIENT.append(mode)


def ambient():
    if not _AMBIENT:
        return ()
    if len(_AMBIENT) == 1:
        return _AMBIENT[0]()
    return tuple([mode() for mode in _AMBIENT])


def holds_numbers(obj):
    """Whether host_state.read_numbers looks through `obj`: a plain object, or a container
    registered with `numbers`; never a tensor."""
    spec = _spec(type(obj))
    if spec is None:
        return True
    if spec[0] != "container":
        return False
    # (the registration that applies: the first registered class in the MRO, as in _spec)
    return next(base for base in type(obj).__mro__ if base in _CONTAINERS) in _NUMBERS


def _spec(cls):
    try:
        return _lookup_cache[cls]
    except KeyError:
        pass
    found = None
    for base in cls.__mro__:
        if base in _TENSORS:
            found = ("tensor", _TENSORS[base])
            break
        if base in _CONTAINERS:
            found = ("container", _CONTAINERS[base])
            break
    _lookup_cache[cls] = found
    return found


# ---------------------------------------------------------------- what the function refers to

def _code_names(code, out):
    """The global names `code` (and the functions defined in it) load."""
    out.update(i.argval for i in dis.get_instructions(code)
               if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_names(const, out)
    return out


def _roots(fn):
    """(getter, object) for everything `fn` refers to: self, closure cells, globals it names,
    defaults. The getters are re-read at each call (the identity guard)."""
    roots = []
    func = fn
    if isinstance(fn, types.MethodType):
        roots.append((lambda f=fn: f.__self__, fn.__self__))
        func = fn.__func__
    if not isinstance(func, types.FunctionType):
        roots.append((lambda f=fn: f, fn))  # a callable object (an nn.Module, a Keras model)
        call = getattr(type(fn), "__call__", None)
        func = call if isinstance(call, types.FunctionType) else None
    if func is None:
        return roots
    for cell in func.__closure__ or ():
        try:
            roots.append((_settable(lambda c=cell: c.cell_contents,
                                    lambda value, c=cell: setattr(c, "cell_contents", value)),
                          cell.cell_contents))
        except ValueError:  # an empty cell
            pass
    g = func.__globals__
    for name in sorted(_code_names(func.__code__, set())):
        if name in g and not isinstance(g[name], types.ModuleType):
            roots.append((_settable(lambda g=g, name=name: g.get(name),
                                    lambda value, g=g, name=name: g.__setitem__(name, value)),
                          g[name]))
    for value in (func.__defaults__ or ()) + tuple((func.__kwdefaults__ or {}).values()):
        roots.append((lambda v=value: v, value))
    return roots


def _settable(getter, setter):
    """`getter`, able to rebind what it reads (`getter.lazyx_set(value)`): a closure cell or
    a global the step rebinds (`global total; total = total + loss`) gets a new tensor at
    each replay too, instead of the traced call's tensor written in place."""
    getter.lazyx_set = setter
    return getter


def root_setter(getter):
    """The function rebinding what a root's getter reads, or None (self, a default)."""
    return getattr(getter, "lazyx_set", None)


def _arg_roots(key):
    """(getter, object) for the non-tensor objects among a call's arguments (a module, an
    optimizer, a params holder passed to the step): their tensors are state, as if the step
    referred to them. `key` is the call's structure key (_flatten), which already guards
    these objects by value, so the getter is the object itself."""
    out = []
    stack = [key]
    while stack:
        k = stack.pop()
        if type(k) is tuple and k:
            if k[0] == "value":
                if not isinstance(k[1], _SKIP):
                    out.append((lambda v=k[1]: v, k[1]))
            elif k[0] in (tuple, list) or k[0] is dict:
                stack.extend(reversed(k[-1]))
            elif all(type(i) is tuple for i in k):  # the (args, kwargs) pair
                stack.extend(reversed(k))
    return out


_SKIP = (types.ModuleType, type, types.BuiltinFunctionType, str, bytes, int, float, bool,
         complex, type(None), np.ndarray, np.generic)


def host_tensor_version(value):
    """The version function of a frontend tensor that is not lazy (a CPU tensor kept in
    state, see register_tensor), else None."""
    spec = _spec(type(value))
    if spec is None or spec[0] != "tensor" or spec[1][6] is None or spec[1][0](value):
        return None
    return spec[1][6]


def _discover(objects, limit=200_000, modes=None, aliases=None, host=None):
    """{path: (tensor, stable)} for the lazy tensors reachable from `objects` (and, into
    `modes`, (object, mode function) for each container with a registered mode; into
    `aliases`, {path: [other paths to the same tensor]}; into `host`, (tensor, its version
    function) for each tensor that is not lazy and has one: a CPU counter in a module).

    State is keyed by where it is found (root, then keys, attributes or positions), so a step
    that rebinds `params["w"] = params["w"] - g` keeps one slot whose tensor is replaced."""
    found, seen, first = {}, set(), {}
    stack = [(obj, True, (i,)) for i, obj in enumerate(objects)]
    stack.reverse()
    while stack and len(seen) < limit:
        obj, stable, path = stack.pop()
        if id(obj) in seen or len(path) > 9 or isinstance(obj, _SKIP) or \
                getattr(type(obj), "_lazyx_compiled", False):
            if aliases is not None and id(obj) in first and len(path) <= 9:
                aliases.setdefault(first[id(obj)], []).append(path)
            continue
        seen.add(id(obj))
        spec = _spec(type(obj))
        if spec is not None:
            if spec[0] == "tensor":
                if spec[1][0](obj):
                    found[path] = (obj, stable)
                    first[id(obj)] = path
                elif host is not None and spec[1][6] is not None:
                    host.append((obj, spec[1][6]))
            else:
                children = [(c, stable and s, path + (k,)) for k, c, s in spec[1](obj)]
                stack.extend(reversed(children))
                mode = _mode_of(type(obj)) if modes is not None else None
                if mode is not None:
                    modes.append((obj, mode))
            continue
        if isinstance(obj, (list, tuple)):
            children = [(c, stable, path + (k,)) for k, c in enumerate(obj)]
        elif isinstance(obj, dict):
            children = [(c, stable, path + (k,)) for k, c in obj.items()]
        elif isinstance(obj, types.FunctionType):
            children = [(o, stable, path + (k,)) for k, (_, o) in enumerate(_roots(obj))]
        elif isinstance(obj, types.MethodType):
            children = [(obj.__self__, stable, path + ("__self__",))]
        else:
            attrs = getattr(obj, "__dict__", None)
            children = [(c, stable, path + (k,)) for k, c in attrs.items()] \
                if type(attrs) is dict else []
        stack.extend(reversed(children))
    return found


# ---------------------------------------------------------------- state by path

def locate(objects, path):
    """How to reach the state `_discover(objects)` found at `path` again: a list of steps
    that `fetch` follows from the same root objects at each replay, so a replay reads (and
    writes) whatever tensor is there now -- a .grad the user set to None or replaced, a
    parameter or array rebound between calls -- not the tensor of the traced call."""
    obj, steps = objects[path[0]], []
    for k in path[1:]:
        spec = _spec(type(obj))
        if spec is not None and spec[0] == "container":
            step = ("child", _container_fn(_CHILD, type(obj)), k,
                    _container_fn(_SET_CHILD, type(obj)))
        elif isinstance(obj, (list, tuple, dict)):
            step = ("item", k)
        elif isinstance(obj, types.FunctionType):  # (its getters, found once: dis is slow)
            step = ("root", k, obj, _roots(obj)[k][0])
        elif isinstance(obj, types.MethodType):
            step = ("self",)
        else:
            step = ("attr", k)
        steps.append(step)
        obj = _follow(obj, step)
    return path[0], steps


def _follow(obj, step):
    kind = step[0]
    if kind == "child":
        return step[1](obj, step[2])
    if kind == "item":
        return obj[step[1]]
    if kind == "attr":
        return obj.__dict__[step[1]]
    if kind == "self":
        return obj.__self__
    return step[3]() if obj is step[2] else _roots(obj)[step[1]][0]()


def fetch(objects, where):
    """The object now at `where` (from `locate`) under `objects`, or None when it is gone."""
    obj = objects[where[0]]
    for step in where[1]:
        obj = fetch_child(obj, step)
    return obj


def fetch_child(parent, step):
    """`fetch` of one step from `parent` (None when it is gone)."""
    if parent is None:
        return None
    try:
        return _follow(parent, step)
    except (LookupError, AttributeError, TypeError):
        return None


def replayed_effect(owners, call, holders):
    """While lazyx.compile traces: `call`, which the step has just made, changes Python numbers
    only -- attributes of the objects `owners` and items of the dicts `holders` (an LR
    scheduler's step: its counters and those of the schedulers it steps, its optimizer's param
    groups). A replay makes it again after its program, where the step would otherwise run
    lazily (its numbers changed while it ran). replay._trace takes the effects only when
    nothing else changed and no result is a plain number."""
    rec = current()
    if rec is not None and rec.numbers is not None:
        rec.effects.append((owners, call, holders))


def host_counter(tensor, advance):
    """While lazyx.compile traces: `tensor`, a tensor off the lazyx device (a torch
    optimizer's CPU step counter), was advanced by the step by a fixed amount, and `advance()`
    does that again to whatever tensor is now where it was found. A replay calls it after its
    program, instead of the step running lazily for writing host state; the numbers the step
    read from the counter must be state numbers (state_number) whose reader adds the amount,
    marked `lazyx_counter` (they change at every call by design)."""
    rec = current()
    if rec is not None and rec.numbers is not None:
        rec.counters.append((tensor, advance))


def effect_spoiled():
    """A call like replayed_effect's was made in a way a replay cannot repeat after its
    program (an LR scheduler stepped before its optimizer, or by another scheduler): the
    trace's effects are not taken, and the step runs lazily as the numbers it changed say."""
    rec = current()
    if rec is not None:
        rec.effects_ok = False


def read_plan(steps):
    """How a replay reads the children at `steps` of one holder (`split`'s last steps): (the
    container's children_at, their names) when they are all children of one container that
    reads many at once, else (None, `steps`)."""
    first = steps[0]
    many = _CHILDREN_AT.get(first[1]) if first[0] == "child" else None
    if many is not None and all(st[0] == "child" and st[1] is first[1] for st in steps):
        return many, [st[2] for st in steps]
    return None, list(steps)


def fetch_planned(parent, how, items):
    """The children of `parent` that `read_plan` planned to read (None where gone)."""
    if parent is None:
        return [None] * len(items)
    if how is not None:
        try:
            return how(parent, items)
        except (LookupError, AttributeError, TypeError):  # (a holder of another kind now)
            return [None] * len(items)
    return [fetch_child(parent, step) for step in items]


def split(wheres):
    """The distinct holders of the states at `wheres` (their parents' wheres), and per where
    (holder index, last step): a replay fetches each holder once (a module holding 12
    tensors), then one step per tensor. A root that is itself the state (a closure cell
    holding a tensor) is (None, root index)."""
    holders, index, out = [], {}, []
    for root, steps in wheres:
        if not steps:
            out.append((None, root))
            continue
        key = (root, tuple([st[:3] if st[0] == "child" else st[:2] for st in steps[:-1]]))
        if key not in index:
            index[key] = len(holders)
            holders.append((root, steps[:-1]))
        out.append((index[key], steps[-1]))
    return holders, out


def store(objects, where, value):
    """Put `value` at `where` (state a step creates, such as a .grad); whether it could."""
    setter = _setter(objects, where)
    return setter is not None and setter(value)


def can_store(objects, where):
    """Whether `store` could put a value at `where` now (a container with a set_child, a list
    or dict item, an attribute)."""
    return _setter(objects, where) is not None


def store_child(parent, step, value):
    """`store` of the last step, from its `parent` (fetched already: split's holder)."""
    setter = _child_setter(parent, step)
    return setter is not None and setter(value)


def _setter(objects, where):
    """A function storing a value at `where` (True if it could), or None when nothing can."""
    if not where[1]:
        return None
    return _child_setter(fetch(objects, (where[0], where[1][:-1])), where[1][-1])


def _child_setter(parent, step):
    if parent is None:
        return None
    kind = step[0]
    if kind == "child" and step[3] is not None:
        return lambda value: step[3](parent, step[2], value)
    if kind == "item" and type(parent) in (list, dict):
        return lambda value: parent.__setitem__(step[1], value) or True
    if kind == "attr":
        return lambda value: setattr(parent, step[1], value) or True
    return None


from .capture_args import (_built, _flatten, _plain_deep, _rebound, _rebuild,  # noqa: E402,F401
                           _spelled, _structured, _substitute)
