"""lazyx.compile(fn, on_observe="split"): a step that reads values while it runs, replayed
piece by piece.

While such a step traces (core/capture.py's Recording), each cut inside it -- at a read, a
print, a barrier -- is a piece: its roots and the data leaves holding their results. A
frontend hands each scalar it reads into Python to `observed` (and torch's `.item()` to
`as_number`): the read is remembered with the piece result it came from. A float from
`.item()` comes back as a symbolic number (core/symbolic.py) that later parameters and the
step's returned numbers are computed from; a bool, an int or a `float()` read is guarded by
value, and what Python decides from a symbolic read (a comparison) is guarded too.

core/replay.py builds an entry of such a trace with its pieces (`Piece`, `compile_piece`),
and a replay runs them in order (`run_pieces`), reading back after each piece what the step
read there, before the last program. An entry replays only once a second trace agrees with
it (`same_pieces`): what Python computed from a read where the guard cannot follow it (a
plain float made a constant) makes two traces differ, and the step then runs lazily.
"""
import time

import numpy as np

from . import capture, ir, metrics, runtime
from .source import user_line
from .symbolic import current, decided_alike, linkable, sym


# ---------------------------------------------------------------- while tracing

def observed(value, handle, number=False):
    """A scalar read into Python from `handle` (`.item()`, `float()`, `int()`, `bool()`), as
    the frontend hands it to the user: while a split step traces, the read is remembered. A
    float that `.item()` returns (`number`) comes back as a symbolic number that a replay
    recomputes from the value it reads then; what Python decides from it (a comparison, an
    int) is guarded. Any other read (a bool, an int, `float(x)`'s plain float) is guarded by
    value: a replay that reads another value traces again. Outside a split trace: `value`."""
    rec = current()
    if rec is None or rec.on_observe != "split":
        return value
    rec.unread = None
    where = rec.piece_of.get(id(handle.node))
    if where is None:  # a value no piece of this step computed (an argument's, state's)
        rec.unreplayable = rec.unreplayable or (
            "a read of a value the step did not compute", "an argument or captured state")
        return value
    if type(value) not in (bool, int, float):  # (a bfloat16 or complex scalar)
        rec.unreplayable = rec.unreplayable or ("a read of a non-real scalar", str(value))
        return value
    k = len(rec.reads)
    as_number = number and linkable(value)
    rec.reads.append(where + (value, as_number))
    if not as_number:
        return value  # guarded by value
    expr = (lambda n, _k=k: n.observed[_k])
    rec.read_by_value.setdefault(value, expr)
    out = sym(value, expr)
    out._lazyx_read = True
    return out


def as_number(value):
    """`value`, the last scalar this thread's split trace read (`observed`, as a value
    guarded by value), as a number its replays recompute instead: torch's `Tensor.item()`,
    whose value the dispatcher returns as a plain float."""
    rec = current()
    if rec is None or rec.on_observe != "split" or not rec.reads or \
            rec.reads[-1][2] is not value and rec.reads[-1][2] != value or \
            not linkable(value) or rec.reads[-1][3]:
        return value
    j, i, _, _ = rec.reads.pop()
    return observed(value, _PieceRef(rec.pieces[j][1][i]), number=True)


class _PieceRef:
    """Stands for a handle whose node is a piece's result (as_number's re-read)."""
    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node


# ---------------------------------------------------------------- entries and replays

class Piece:
    """A cut inside a split step: its program, its inputs (as an entry's: constants in
    `template`, the rest in `dynamic`; `constants` also holds those baked into `exe`), its
    results' metadata, and the scalars the step read from them: (read index, result index,
    Python type, traced value, whether it is a number the later pieces compute from -- else
    it is guarded by value)."""
    __slots__ = ("exe", "program", "template", "dynamic", "feeds", "outs", "reads",
                 "constants")

    def __init__(self, exe, program, outs):
        self.exe, self.program, self.outs = exe, program, outs
        self.template, self.dynamic, self.reads, self.constants = [], [], [], []
        self.feeds = feeds(())


READ_MISSES = 4  # calls in a row that no variant could replay for what the step read: stop


def guarded_reads(entry):
    """What an entry's trace read and decided that its replays must read and decide alike:
    the branches it took."""
    return [(r[0], r[3]) for piece in entry.pieces for r in piece.reads if not r[4]] + \
        [outcome for _, outcome in entry.guards]


def same_pieces(a, b):
    """Whether two traces of a split step made the same programs, fed alike, constants
    included, and read the same scalars the same way."""
    if len(a.pieces) != len(b.pieces) or a.reads != b.reads:
        return False
    parts = list(zip(a.pieces, b.pieces)) + [(a, b)]
    for x, y in parts:
        if (x.program is None) != (y.program is None) or \
                (x.program is not None and x.program.key != y.program.key):
            return False
        if [d[:2] for d in x.dynamic] != [d[:2] for d in y.dynamic] or \
                not same_values([np.asarray(v) for v in x.constants],
                                 [np.asarray(v) for v in y.constants]):
            return False
    if [r[1:3] + r[4:] for p in a.pieces for r in p.reads] != \
            [r[1:3] + r[4:] for p in b.pieces for r in p.reads]:
        return False
    # and return (or write into their list arguments) the same plain values: a number the
    # step computed in Python from a value it read (`float(loss) * 2`) differs
    return same_plan(a.results[1], b.results[1]) and a.results[0] == b.results[0] and \
        [p for p, _ in a.arg_writes] == [p for p, _ in b.arg_writes] and \
        same_plan([h for _, h in a.arg_writes], [h for _, h in b.arg_writes]) and \
        [r[:2] for r in a.arg_rebuilds] == [r[:2] for r in b.arg_rebuilds] and \
        all(same_plan(x[2], y[2]) for x, y in zip(a.arg_rebuilds, b.arg_rebuilds))


_PLAIN_VALUES = (bool, int, float, complex, str, bytes, type(None))


def same_plan(a, b):
    """Whether two traces' results (_build's `any_item`s) are made alike."""
    if len(a) != len(b):
        return False
    for (kind, x, _), (kind2, y, _) in zip(a, b):
        if kind != kind2:
            return False
        if kind == "obj" and x is not y and not (
                type(x) is type(y) and type(x) in _PLAIN_VALUES and x == y):
            return False  # (a tensor other than the same one is another result)
        elif kind in ("new", "arg") and x != y:
            return False
    return True


def compile_piece(roots, rec):
    """A cut inside a split step as a program of its own (its inputs classified by _build)."""
    program, leaves = runtime.linearize(roots)
    source = user_line(4)
    exe, compiled = runtime.compile_fixed(program, leaves, rec.keys | rec.params, "explicit",
                                          source, capture.equal_params(leaves, rec))
    if compiled:
        metrics.record_compile(source)
    piece = Piece(exe, program, [(n.shape, n.dtype, n.source) for n in roots])
    piece.template = leaves  # (until _build replaces them by the inputs' feed)
    return piece


def same_values(a, b):
    """Whether two lists of parameter values (NumPy arrays, or ("key", (offset, part))
    tuples) are the same, NaN equal to NaN."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, tuple) or isinstance(y, tuple):
            if x != y:
                return False
        elif x.shape != y.shape or not np.array_equal(x, y, equal_nan=True):
            return False
    return True


class Numbers(list):
    """A replay's numbers, and the scalars a split step read so far (split_steps.observed)."""
    __slots__ = ("observed",)


def inputs(part, handles, slot_handles, numbers, early):
    """The values a replay feeds an entry's program, or a split step's piece's (`early`: the
    results of the pieces run before it)."""
    values = list(part.template)  # constants in place; fill in what changes per call
    args, slots, computed, copies, outs, keys = part.feeds
    # (one loop per kind: an AdamW replay over 100 parameters feeds about 400 values, and a
    # test of the kind per value cost a fifth of the feed)
    for i, a in slots:
        values[i] = slot_handles[a].node.value
    for i, a in args:
        values[i] = handles[a].node.value
    for i, a, b in computed:
        values[i] = b(a(numbers))
    for i, a in copies:  # the same number as an earlier input (replay_entry._copies)
        values[i] = values[a]
    for i, a in outs:  # a result of a cut earlier in a split step
        values[i] = early[a].value
    for i, a, b in keys:  # a random key (b: its offset among the step's draws, which params)
        values[i] = a.value_at(a.counter + b[0], b[1])
    return values


def feeds(dynamic):
    """`dynamic` (index, kind, a, b) per fed value, grouped by kind for `inputs`: arguments,
    state, numbers, copies of numbers, earlier pieces' results and random keys, each list in
    `dynamic`'s order (keys in the order they are drawn; a copy's source is a number)."""
    kinds = {"arg": [], "slot": [], "number": [], "copy": [], "out": [], "key": []}
    for i, kind, a, b in dynamic:
        kinds[kind].append((i, a, b) if kind in ("number", "key") else (i, a))
    return (kinds["arg"], kinds["slot"], kinds["number"], kinds["copy"], kinds["out"],
            kinds["key"])


def run_pieces(entry, handles, slot_handles, numbers):
    """Run a split step's pieces for a replay: (their results as data leaves, the numbers
    with what the step read, seconds executing, None) -- or, with why, when a value read
    back is not the traced one where the trace took it as part of its guard."""
    numbers = Numbers(numbers)
    numbers.observed = [None] * entry.reads
    to_host = runtime.get_backend().to_host
    data = ir.data
    early, seconds = [], 0.0
    for piece in entry.pieces:
        start = time.perf_counter()
        buffers = piece.exe(inputs(piece, handles, slot_handles, numbers, early))
        seconds += time.perf_counter() - start
        first = len(early)
        early += [data(b, shape, dtype, source) for b, (shape, dtype, source) in
                  zip(buffers, piece.outs)]
        for k, i, cls, traced, as_number in piece.reads:
            host = to_host(early[first + i].value)
            metrics.record_transfer("to_host", host.nbytes)
            value = cls(host.reshape(-1)[0].item())
            if as_number:
                numbers.observed[k] = value
            elif value != traced and not (value != value and traced != traced):
                return early, numbers, seconds, (f"a value the step reads was {traced!r} "
                                                 f"when traced and is {value!r} now")
    if not decided_alike(entry.guards, numbers):
        return early, numbers, seconds, ("what the step decided from a value it reads (a "
                                         "comparison, a conversion) comes out otherwise now")
    return early, numbers, seconds, None
