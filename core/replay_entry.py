"""What one trace of a lazyx.compile step leaves for its replays: the entry (core/replay.py's
guard, program and feeds) and how a trace fills it in.

`build_entry` reads one traced call -- which program inputs were the call's arguments, which
captured state (found where the trace found it), which Python numbers, random keys or values a
split step read back, and which outputs update state, arguments or live handles -- into an
`Entry`. core/replay.py decides when an entry applies and replays it.
"""
import warnings
import weakref

import numpy as np

from . import capture, host_state, runtime, split_steps
from . import dtypes as dt
from .capture import _flatten, _spec
from .capture_args import Contents
from .source import format_line


class Entry:
    """One traced variant of the step: its guard, its program, and how to feed and unpack it."""

    def __init__(self):
        self.numbers_by_value = ()  # (k, type, value): numbers guarded by value
        self.unread_numbers = ()    # ints and floats that reached no parameter
        self.ties = ()              # (expression, expression) that must stay equal (_ties)
        self.roots = []             # (getter, object)
        self.slots = []             # Slot per captured state tensor
        self.holders = []           # wheres of the objects holding them (capture.split)
        self.state_reads = []       # (holder index, how, names): how a replay reads them
        self.read_order = []        # _plan_reads
        self.same_reads = []        # (slot, position in found): places that held one tensor
        self.expected = []          # (shape, dtype) per slot, None for state the step creates
        self.exe = None
        self.program = None
        self.feed = []              # per program input: a function (ctx) -> value
        self.template = []          # its constant inputs, None where the call feeds one
        self.dynamic = []           # (index, kind, a, b) per input fed at each call
        self.feeds = split_steps.feeds(())  # the same, grouped by kind
        self.streams = []           # (stream, draws)
        self.reseeds = []           # (stream, seed, counter) the step leaves a reseeded one at
        self.outs = []              # (shape, dtype, source) per computed result
        self.derived = ((), (), ())  # results made from others (runtime.plan_results)
        self.slot_writes = []       # (output index, slot index)
        self.writes_in_place = []   # (output index, slot index, write): _plan_state
        self.writes_stored = []     # (output index, slot index) of new tensors: _plan_state
        self.handle_writes = []     # (output index, weakref to a handle)
        self.effects = []           # calls made after each replay (an LR scheduler's step)
        self.start_values = False   # a result or write is an argument's or state's start value
        self.start_writes = []      # ((arg|slot, index), slot|arg, index): see build_entry
        self.results = None         # (structure key, [(kind, out/object/arg, template)])
        self.arg_writes = []        # (path in (args, kwargs), (kind, ...) as in results)
        self.arg_rebuilds = []      # (path, structure key, [(kind, ...)]): new contents
        self.arg_updates = []       # (argument tensor index, output index): updated in place
        self.value_linked = False   # some parameter was linked by value (checked once)
        # ints and floats that reached a parameter: one may also be an index, a size or a
        # quantile, which C code reads without a decision symbolic.py sees -- a new value is
        # checked once
        self.unverified_numbers = ()
        self.decisions = []         # (expression, outcome) of what Python decided from numbers
        self.host_arrays = []       # (name, getter, copy): host arrays it read (host_state.py)
        self.float_guards = []      # (read, value): floats it read next to it, by value
        self.varying = set()        # keys of such floats seen to change (the Compiled's)
        self.host_tensors = []      # (tensor, version function, version): state off the device
        self.removals = []          # wheres of state the step removed (zero_grad: .grad None)
        self.made_here = []         # (where, tensor): state the step made as a constant
        self.graph_results = False  # the traced results had a backward graph (warned once)
        # results computed outside lazyx (a TF EagerTensor, a NumPy array), as the traced call
        # made them: a replay returns those objects, so the next call traces again to check
        # that the step makes the same values each call (emptied once it does)
        self.host_results = ()
        self.first_numbers = []
        self.state_numbers = []     # functions reading the numbers found in state, in order
        self.modes = []             # (object, mode function, its value when traced): guarded
        # a split step (on_observe="split"): the programs of the cuts inside it, run in order
        # before the last one; their results are outputs len(outs), len(outs) + 1, ...
        self.pieces = []            # _Piece per cut inside the step
        self.constants = []         # the values of its constant inputs, baked ones included
        self.reads = 0              # values read back after the pieces (split_steps.observed)
        self.confirmed = True       # a piecewise entry replays once a second trace agrees
        self.guards = []            # (expression, outcome) of what Python decided from reads
        self.lean = None            # replay._is_lean, decided at the first replay


def handle_of(t):
    return _spec(type(t))[1][1](t)


def _base_of(t):
    return _spec(type(t))[1][8](t)


def is_lazy_tensor(value):
    """Whether `value` is a lazy tensor of a registered frontend."""
    spec = _spec(type(value))
    return spec is not None and spec[0] == "tensor" and spec[1][0](value)


def result_tensors(result):
    """The lazy tensors among a step's results."""
    leaves = []
    _flatten(result, leaves, [], "result", [])
    return [t for t in leaves if is_lazy_tensor(t)]


class _Probe(list):
    """Numbers that record which of them an expression reads."""

    def __init__(self, numbers):
        super().__init__(numbers)
        self.read = set()

    def __getitem__(self, k):
        self.read.add(k)
        return list.__getitem__(self, k)


def _copies(dynamic):
    """`dynamic` with each number computed by the same expression (and converted alike) as an
    earlier one turned into a copy of that value: an optimizer reads its learning rate,
    betas, eps and weight decay once per parameter, 700 evaluations per replay for AdamW
    over 100 parameters, of 6 distinct expressions (capture.equal_params reads them as one
    in the program, too)."""
    first, out = {}, []
    for i, kind, a, b in dynamic:
        if kind == "number":
            j = first.setdefault((id(a), b), i)
            if j != i:
                out.append((i, "copy", j, None))
                continue
        out.append((i, kind, a, b))
    return out


def _plan_state(entry):
    """How a replay reads its state: per holder, all the children it holds in one go
    (capture.read_plan), with `read_order` putting them back in the order `found` lists
    them -- each slot's tensor, then each slot's other places (`same_at`), slot by slot --
    and, per slot, what to expect there ((shape, dtype), or None for state the step
    creates). And how it writes state: into the tensor found (`writes_in_place`, with each
    one's write function), or as a new tensor stored there (`writes_stored`)."""
    at = [slot.at for slot in entry.slots] + \
        [other for slot in entry.slots for other in slot.same_at]
    groups = {}
    for position, (holder, step) in enumerate(at):
        groups.setdefault(holder, []).append((position, step))
    entry.state_reads, order, flat = [], [None] * len(at), 0
    for holder, items in groups.items():
        steps = [step for _, step in items]
        how, names = (None, steps) if holder is None else capture.read_plan(steps)
        entry.state_reads.append((holder, how, names))
        for position, _ in items:
            order[position] = flat
            flat += 1
    entry.read_order = order
    others = iter(range(len(entry.slots), len(at)))
    entry.same_reads = [(s, next(others)) for s, slot in enumerate(entry.slots)
                        for _ in slot.same_at]
    entry.expected = [None if slot.created else (slot.shape, slot.dtype) for slot in entry.slots]
    entry.writes_in_place, entry.writes_stored = [], []
    for k, s in entry.slot_writes:
        slot = entry.slots[s]
        if slot.created or slot.replaced:
            entry.writes_stored.append((k, s))
        else:
            entry.writes_in_place.append((k, s, slot.write))


def _ties(ties, numbers, probe):
    """Of the trace's ties (symbolic.sym), those whose second number the program reads only
    through the first (a parameter linked by value), as (first, second) expressions, and the
    numbers they cover: those are guarded as equal to the first, not by value."""
    kept, tied = [], set()
    for first, second in ties:
        reads = []
        for expr in (first, second):
            p = _Probe(numbers)
            try:
                expr(p)
            except (AttributeError, IndexError, TypeError):  # (a split step's read value)
                break
            reads.append(p.read)
        else:
            extra = reads[1] - probe.read - tied
            if extra and reads[0] and reads[0] <= probe.read:
                kept.append((first, second))
                tied |= extra
    return tuple(kept), tied


def build_entry(entry, numbers, result, tensors, leaves, rec, start_leaf, arg_leaf, serial0,
           before, after, aliases, pending, out_of, slot_out, roots, rebinds, pieces=(),
           early_of=None):
    """Fill `entry` from one trace: where each program input comes from, where each output
    goes. False when it cannot be replayed (state the step creates where it cannot be put).
    `pieces`: a split step's cuts before the last (_compile_piece), whose results are the
    outputs numbered by `early_of` (id(result node) -> output index)."""
    early_of = early_of or {}
    first_early = len(entry.derived[2])  # (the last cut's results, derived ones included)
    entry.roots = [(getter, getter()) for getter, _ in roots]
    entry.first_numbers = list(numbers)
    entry.state_numbers = list(rec.state_numbers)
    objects = [obj for _, obj in entry.roots]
    capture.new_pass()
    slot_index = {}

    def slot_of(tid):
        # state is read and written where it was found (its path), at each replay: the
        # tensor there now, not this trace's (a .grad set to None between calls, a parameter
        # or an array rebound); state the step creates (a .grad) must be absent at a replay
        # and is stored there; other paths that held the same tensor must still hold it
        if tid not in slot_index:
            t = (after.get(tid) or before.get(tid))[0]
            node = handle_of(t).node
            slot_index[tid] = len(entry.slots)
            spec = _spec(type(t))[1]
            same = [capture.locate(objects, p) for p in aliases.get(tid, ())]
            where = capture.locate(objects, tid)
            was, now = before.get(tid), after.get(tid)
            # (where a new tensor cannot be put, the old one is written into)
            replaced = was is not None and now is not None and was[0] is not now[0] and \
                all(_can_store(entry, objects, w) for w in [where] + same)
            entry.slots.append(Slot(t, spec, node.shape, node.dtype, where, was is None, same,
                                     replaced))
        return slot_index[tid]

    probe = _Probe(numbers)
    probe.observed = [r[2] for r in rec.reads]
    streams = {}

    def feed_of(leaves):
        feed = []
        for leaf in leaves:
            nid = id(leaf)
            if leaf.op == "data":
                if nid in early_of:  # a result of a cut earlier in the step
                    feed.append(("out", early_of[nid] - first_early))
                elif nid in arg_leaf:
                    feed.append(("arg", arg_leaf[nid]))
                elif nid in start_leaf:
                    feed.append(("slot", slot_of(start_leaf[nid])))
                else:
                    if leaf.serial <= serial0:
                        unknown.append(format_line(leaf.source) if leaf.source else
                                       "an unknown line")
                    feed.append(("const", leaf.value))
            elif nid in rec.keys and rec.keys[nid][4] > rec.epoch0:
                # drawn after the step (re)seeded its stream (torch.manual_seed(s) inside it,
                # lnp.random.default_rng(s) made in it): every call draws this same key
                feed.append(("baked", leaf.value))
            elif nid in rec.keys:
                _, stream, counter, part, _ = rec.keys[nid]
                lo_hi = streams.setdefault(id(stream), [stream, counter, counter + 1])
                lo_hi[1], lo_hi[2] = min(lo_hi[1], counter), max(lo_hi[2], counter + 1)
                feed.append(("key", stream, (counter, part)))
            elif nid in rec.params:
                _, expr, by_value = rec.params[nid]
                expr(probe)
                entry.value_linked |= by_value
                feed.append(("number", expr, dt.to_numpy(leaf.dtype).type))
            else:
                feed.append(("baked", leaf.value))  # a number of the code, or of a global
        return feed

    unknown = []  # lines of lazy tensors made before the step that it found nowhere
    feeds = [feed_of(piece.template) for piece in pieces] + [feed_of(leaves)]
    if unknown:
        # a replay would read this call's value of it (the base of a view argument,
        # `step(data[i])`, which torch makes the view from; a tensor deeper in an object;
        # one a framework cached from an earlier call): the call stays lazy, and so does the
        # next, which traces again
        warnings.warn(f"lazyx.compile: the step reads a lazy tensor made before this call "
                      f"began, at {unknown[0]}, that it neither received nor found among the "
                      f"objects it refers to (kept in an object lazyx.compile does not search, "
                      f"or in a framework's cache; torch: the base of a view argument, "
                      f"data[i]); a replay would read its value of this call, so calls are "
                      f"not replayed. Pass it as an argument (a torch view: data[i].clone()), "
                      f"or keep it in a module, layer or closure the step refers to",
                      RuntimeWarning, stacklevel=5)
        return False

    def inputs(part, feed):
        # a key is drawn at (the stream's counter at the replay + its offset in the trace),
        # and the stream advances by the trace's draws: the numbers the uncompiled run draws
        feed = [("key", f[1], (f[2][0] - streams[id(f[1])][1], f[2][1])) if f[0] == "key"
                else f for f in feed]
        # every constant it is fed or has baked in: what two traces of a split step must
        # share (split_steps.same_pieces)
        part.constants = [f[1] for f in feed if f[0] in ("const", "baked")]
        run = feed
        # (not any object with a `kept`: the lazy path's cache may hand back its wrapper of
        # the same program, baked_literals.Baking, whose `kept` says something else)
        kept = part.exe.kept if isinstance(part.exe, runtime._Kept) else None
        if kept is not None:  # a program with literals baked: fed the leaves it kept only
            part.exe, run = part.exe.exe, [feed[i] for i in kept]
        part.template = [f[1] if f[0] in ("const", "baked") else None for f in run]
        part.dynamic = [(i, f[0], f[1], f[2] if len(f) > 2 else None)
                        for i, f in enumerate(run) if f[0] not in ("const", "baked")]
        # a stream's draws are asked for in the trace's order: TF's context and kernels hand
        # out seeds and numbers in call order (frontends/tf/api_random.py)
        part.dynamic.sort(key=lambda d: d[3][0] if d[1] == "key" else -1)
        part.dynamic = _copies(part.dynamic)
        part.feeds = split_steps.feeds(part.dynamic)
        return feed

    for piece, feed in zip(pieces, feeds):
        inputs(piece, feed)
    entry.feed = inputs(entry, feeds[-1])
    entry.streams = [(s, hi - lo) for s, lo, hi in streams.values()]
    # a stream the step reseeded is left as the trace left it: (seed, counter) now
    entry.reseeds = [(s, s.seed, s.counter) for s in rec.reseeded.values()]
    entry.pieces = list(pieces)
    for k, (j, i, value, as_number) in enumerate(rec.reads):
        pieces[j].reads.append((k, i, type(value), value, as_number))
    entry.reads = len(rec.reads)
    entry.guards = list(rec.guards)
    entry.confirmed = not pieces
    entry.ties, tied = _ties(rec.ties, numbers, probe)
    # an int or float that reached a parameter may also have been read by C code that
    # baked it (x[:n], np.quantile(x, q), np.linspace(0, k, 5)); one that reached none was
    # either not used at all (a step counter passed for logging) or read only that way, or
    # by Python where lazyx cannot see it (an index into a list). Either way the first call
    # with a new value traces again: the same graph confirms the number is a parameter or
    # unused (left out of the guard), another one guards it by value (Compiled._verify)
    unread = [k for k, v in enumerate(numbers) if k not in probe.read and k not in tied]
    entry.numbers_by_value = tuple((k, type(numbers[k]), numbers[k]) for k in unread
                                   if type(numbers[k]) not in (int, float))
    entry.unread_numbers = tuple(k for k in unread if type(numbers[k]) in (int, float))
    entry.unverified_numbers = tuple(sorted(
        [k for k in probe.read if type(numbers[k]) in (int, float)] +
        list(entry.unread_numbers)))
    entry.decisions = list(rec.decisions)
    slot_by_handle = {id(handle_of(t)): path for path, (t, _) in after.items()}
    result_leaves = []  # tensors and numbers, in order (a number is an item, as a tensor)
    host = []
    result_key = _flatten(result, result_leaves, result_leaves, "result", host)
    # what the step wrote into its list and dict arguments: entries it rebound, and the whole
    # contents of those it added entries to or removed some from
    rebuilt = []  # (path, structure key, leaves)
    rebind_leaves = [value for _, value in rebinds if type(value) is not Contents]
    for path, value in rebinds:
        if type(value) is Contents:
            leaves, odd = [], []
            rebuilt.append((path, _flatten(value.value, leaves, leaves, "result", odd), leaves))
            rebind_leaves += leaves
            if odd:  # (a host array or an object appended: not followed, the step stays lazy)
                return False
    made = {id(handle_of(t)) for t in tensors if is_lazy_tensor(t)} | set(slot_by_handle)
    holder = _object_holding_tensors(result_key, lambda h: id(h) not in made)
    if holder is not None:
        warnings.warn(f"lazyx.compile: the step returns a {type(holder).__module__}."
                      f"{type(holder).__qualname__} object holding lazy tensors; a replay, "
                      f"running no Python, could only return this call's object again, with "
                      f"its tensors overwritten, so calls are not replayed. Return the "
                      f"tensors in a tuple, list, dict, namedtuple or dataclass instead",
                      RuntimeWarning, stacklevel=5)
        return False
    entry.host_results = tuple(map(host_value, host))
    def out_index(t):
        h = handle_of(t)
        k = out_of.get(id(h))
        return k if k is not None else early_of.get(id(h.node))

    host_ids = {id(v) for v in host}
    returned = [t for t in result_leaves + rebind_leaves
                if is_lazy_tensor(t) and id(t) not in host_ids]
    result_outs = {out_index(t) for t in returned}
    # and what a returned view is regenerated from after a write (x.clone()[1:].fill_(a):
    # the clone, held only by the view): rebound by handle_writes below, every replay
    # changed the view the traced call returned
    result_outs |= {out_index(b) for b in map(_base_of, returned) if b is not None}
    written = set()
    for path, k in slot_out.items():
        entry.slot_writes.append((k, slot_of(path)))
        written.add(k)
    # state or an argument the step set, in place, to an argument's or state's starting
    # value (buf.copy_(x), buf[...] = x, x[...] = y): no op computes it, its node is that
    # leaf's, found among no outputs -- replays never wrote it. Written with that value now
    own = {tid: nid for nid, tid in start_leaf.items()}

    def start_source(t, own_node):
        node = id(handle_of(t).node)
        if node == own_node:
            return None
        if node in arg_leaf:
            return ("arg", arg_leaf[node])
        return ("slot", slot_of(start_leaf[node])) if node in start_leaf else None
    entry.start_writes = [(src, "slot", slot_of(path)) for path, (t, _) in after.items()
                          if path not in slot_out and path in before and before[path][0] is t
                          for src in [start_source(t, own.get(path))] if src is not None]
    entry.start_writes += [(src, "arg", k) for k, t in enumerate(tensors)
                           if out_index(t) is None
                           for src in [start_source(t, rec.arg_nodes[k])] if src is not None]
    entry.start_values = bool(entry.start_writes)
    if any(slot.created and not capture.can_store(objects, slot.where) for slot in entry.slots):
        return False
    # state found before the step and gone after it (optimizer.zero_grad() inside the step:
    # each .grad set to None) is removed again after each replay
    for tid in before:
        if tid not in after:
            where = capture.locate(objects, tid)
            if not capture.can_store(objects, where):
                return False
            entry.removals.append(where)
    # state among the results is returned from where it is found at each replay (item)
    for t in result_leaves + rebind_leaves:
        if id(t) not in host_ids and is_lazy_tensor(t) and id(handle_of(t)) in slot_by_handle:
            slot_of(slot_by_handle[id(handle_of(t))])
        elif id(t) not in host_ids and is_lazy_tensor(t) and \
                id(handle_of(t).node) in start_leaf:  # (a copy of state's value: item)
            slot_of(start_leaf[id(handle_of(t).node)])
    # state the step made and stored, computed by no output (a table a Keras build() or a
    # first forward makes, `self.mask = torch.triu(...)`): the program has its value baked,
    # so a replay checks it is still the tensor there; rebound since, the call traces again
    entry.made_here = [(capture.locate(objects, path), t) for path, (t, _) in after.items()
                       if path not in before and path not in slot_index]
    # each holder of state (a module, an optimizer, a dict) is reached once per replay
    wheres = [slot.where for slot in entry.slots]
    counts = [len(slot.same) for slot in entry.slots]
    entry.holders, steps = capture.split(wheres + [w for slot in entry.slots for w in slot.same])
    rest = iter(steps[len(wheres):])
    for slot, at, n in zip(entry.slots, steps, counts):
        slot.at, slot.same_at = at, [next(rest) for _ in range(n)]
    _plan_state(entry)
    # an argument the step updated (an in-place op, a tf.Variable's assign): the new value
    # goes to the tensor passed at that position in each call, not to this trace's tensor
    entry.arg_updates = []
    for k, t in enumerate(tensors):
        out = out_index(t)
        if out is not None and out not in written:
            entry.arg_updates.append((k, out))
            written.add(out)
    for h in pending:
        k = out_of[id(h)]
        if k not in written and k not in result_outs:
            entry.handle_writes.append((k, weakref.ref(h)))
    arg_ids = {id(t): k for k, t in enumerate(tensors)}

    def item(t):
        h = handle_of(t)
        if id(t) in arg_ids:
            return ("arg", arg_ids[id(t)], None)
        if id(h) in slot_by_handle:
            # state: the tensor found where the step found it once the replay wrote its
            # updates (a parameter rebound between calls, `st["w"] = st["w"] - g` and a
            # .grad the step created are new tensors at each call; returning this trace's
            # object handed back the traced call's value)
            return ("slot", slot_of(slot_by_handle[id(h)]), None)
        k = out_index(t)
        if k is None:
            # a new tensor holding an argument's or state's value as the call found it
            # (x.clone(), x.detach(), x.reshape(x.shape), x[...], np.copy(x): the same
            # node): a new tensor of that value at each replay. (Returned as this trace's
            # object, every replay handed back the traced call's value.)
            node = id(h.node)
            if node in arg_leaf:
                entry.start_values = True
                return ("start", ("arg", arg_leaf[node]), t)
            if node in start_leaf:
                entry.start_values = True
                return ("start", ("slot", slot_of(start_leaf[node])), t)
            if h.node.op == "data" and h.node.serial > serial0:
                # made on the host during the call (np.linspace(lo, hi, 4) of its numbers):
                # a host result, checked like one (the next call traces to compare)
                made.append(h.node.value)
            return ("obj", t, None)  # an unchanged value made before the step: the same tensor
        return ("new", k, t)

    def any_item(value):
        if id(value) in host_ids:
            return ("obj", value, None)
        if is_lazy_tensor(value):
            return item(value)
        if isinstance(value, (capture.SymFloat, capture.SymInt)):  # a number of the call's
            return ("number", value._lazyx_expr, float if isinstance(value, float) else int)
        if type(value) is float and value in rec.read_by_value:  # a read torch made plain
            return ("number", rec.read_by_value[value], float)
        return ("obj", capture._plain_deep(value), None)
    made = []
    entry.results = (result_key, [any_item(x) for x in result_leaves])
    entry.arg_writes = [(path, any_item(value)) for path, value in rebinds
                        if type(value) is not Contents]
    entry.arg_rebuilds = [(path, key, [any_item(x) for x in leaves])
                          for path, key, leaves in rebuilt]
    entry.host_results += tuple(map(host_value, made))
    for t in returned:  # (once placed: its handle changes)
        _spec(type(t))[1][9](t)
    return True


def host_value(value):
    """A copy of a result computed outside lazyx, to compare with another call's."""
    try:
        out = np.array(value)
    except Exception:  # noqa: BLE001 - (whatever the object's __array__ raises)
        return value
    return value if out.dtype == object else out


def same_host_values(a, b):
    """Whether two calls' results computed outside lazyx (host_value's) are equal."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
            if not host_state.same_array(x, y):
                return False
            continue
        try:
            if type(x) is not type(y) or not bool(x == y):
                return False
        except Exception:  # noqa: BLE001 - (an object whose == is not a bool)
            return False
    return True


def _can_store(entry, objects, where):
    """Whether a replay can put a new tensor at `where`: in its holder, or as a root (a global
    or closure cell) that entry.roots' getter can rebind."""
    if where[1]:
        return capture.can_store(objects, where)
    return capture.root_setter(entry.roots[where[0]][0]) is not None


def _object_holding_tensors(key, made):
    """The first object among a result's plain values (_flatten's ("value", obj) leaves)
    from which a lazy tensor the step made is reachable (`made(handle)`: neither an argument
    nor state), or None. Such an object is returned as it is at every replay, and its
    tensors are rebound in place (handle_writes): a caller who kept the first call's object
    would see it change. (A module or optimizer returned holds state, which replays update
    as the step does: returning it is fine.)"""
    if type(key) is not tuple or not key:
        return None
    if key[0] == "value":
        found = capture._discover([key[1]], limit=10_000)
        return key[1] if any(made(handle_of(t)) for t, _ in found.values()) else None
    for part in key:
        found = _object_holding_tensors(part, made) if type(part) is tuple else None
        if found is not None:
            return found
    return None


class Slot:
    """A captured state tensor of an entry: `template` is the traced call's tensor (its type
    wraps created state), `where` its path from the entry's roots (capture.locate), `created`
    whether the step made it (it was absent when the step began), `same` the other paths
    that held the same tensor.

    `replaced`: the step left another tensor at `where` than it found there (a .grad after
    `zero_grad(set_to_none=True)` and backward, `params[i] = params[i] - lr * g`). A replay
    then stores a new tensor there too, as the uncompiled step does, instead of writing into
    the one it finds: whoever kept the old tensor keeps its old value, as in eager code, and
    torch need not replay its view updates (writing into a .grad -- a view of the backward's
    result -- queued an update that every 256th replay paid back: a 25 ms step)."""
    __slots__ = ("template", "handle", "wrap", "write", "shape", "dtype", "where", "created",
                 "same", "at", "same_at", "replaced")

    def __init__(self, template, spec, shape, dtype, where, created, same, replaced=False):
        self.template, self.shape, self.dtype = template, shape, dtype
        self.handle, self.wrap, self.write = spec[1], spec[2], spec[3]
        self.where, self.created, self.same = where, created, same
        self.replaced = replaced
