"""A cut's scalar results first: the loss in a program of its own, the rest behind it.

A training loop reads its loss after every step (`loss.item()`, `float(loss)`). A cut makes
one program of the whole step, so that read waits for all of it -- the backward pass and the
optimizer too -- and only then does Python trace the next step: the host and the device take
turns. Here a repeated cut whose results include floating-point scalars runs as two programs:
the first computes those scalars (and the values the rest needs from the same work), the
second everything else, dispatched behind it. A read of the scalar waits for the first only,
and the second runs on the backend's threads while Python traces the next step. (Measured on
W1 in jax alone, 2 CPUs: a step with 0.6 ms of host work took 1.46 ms as one program, 1.06 ms
as two; with no host work 0.77 against 0.78.)

Only where it can pay: the backend runs programs asynchronously, the rest does enough work to
be worth overlapping (`MIN_WORK`), and the program has repeated (`RUNS_BEFORE_SPLIT`): a
one-off cut is not compiled twice. The pair compiles in a background thread while the steps
go on running the single program, so no step waits for it. The two programs compute the same
operations on the same values; XLA fuses each on its own, which may round a result
differently in the last bit than the single program did (the single program also makes no
promise of matching any other fusion).
"""
import math
import warnings

from . import compiling_later
from . import dtypes as dt

# The second program's estimated work (elements produced, a product counted as its
# multiply-adds) below which overlapping it cannot repay a second dispatch (~20 us).
MIN_WORK = 1 << 20
# The run of the single program that starts the pair's compile.
RUNS_BEFORE_SPLIT = 2


class Split:
    """How one Program's instructions divide: `first` computes the early results and the
    values `second` needs from its work (`handoff`); `second` computes the other results."""
    __slots__ = ("first", "second", "first_leaves", "second_leaves", "handoff", "order")

    def __init__(self, first, second, first_leaves, second_leaves, handoff, order):
        self.first, self.second = first, second
        self.first_leaves = first_leaves    # program leaf index per leaf of `first`
        self.second_leaves = second_leaves  # ... of `second`, before its handoff leaves
        self.handoff = handoff              # `first`'s result index per handoff leaf
        self.order = order                  # per program result: (0 or 1, result index)


def plan(program, program_class):
    """A Split of `program`, or None where one would not pay or cannot be made."""
    n_leaves = len(program.leaves)
    insts = program.instructions
    outputs = program.outputs
    if any(s < n_leaves for s in outputs) or any(program.leaf_shardings):
        return None  # (a leaf as a result; a mesh program keeps its layout decisions)
    early = [k for k, s in enumerate(outputs)
             if insts[s - n_leaves][3] == () and insts[s - n_leaves][4] in dt.INEXACT]
    if not early or len(early) == len(outputs):
        return None
    first_slots = _ancestors([outputs[k] for k in early], insts, n_leaves)
    early_set = set(early)
    later = [outputs[k] for k in range(len(outputs)) if k not in early_set]
    second_slots, handoff = _ancestors(later, insts, n_leaves, stop=first_slots)
    if any(type(insts[s - n_leaves][4]) is tuple for s in handoff):
        return None  # (a several-result node crossing over: not a plain array)
    if _work(second_slots, program) < MIN_WORK:
        return None
    handoff = sorted(handoff)
    first_results = [outputs[k] for k in early] + handoff
    first, first_leaves = _part(program, program_class, first_slots, (), first_results, "first")
    second, second_leaves = _part(program, program_class, second_slots, handoff, later, "second")
    at_first = {k: i for i, k in enumerate(early)}
    at_second = iter(range(len(later)))
    order = [(0, at_first[k]) if k in at_first else (1, next(at_second))
             for k in range(len(outputs))]
    n_early = len(early)
    return Split(first, second, first_leaves, second_leaves,
                 list(range(n_early, n_early + len(handoff))), order)


def _ancestors(slots, insts, n_leaves, stop=None):
    """The instruction slots `slots` need (leaves left out). With `stop`: not going past the
    slots in it, which are returned apart, as (needed, reached in stop)."""
    needed, reached, todo = set(), set(), list(slots)
    while todo:
        s = todo.pop()
        if s < n_leaves or s in needed or s in reached:
            continue
        if stop is not None and s in stop:
            reached.add(s)
            continue
        needed.add(s)
        todo.extend(insts[s - n_leaves][2])
    return (needed, reached) if stop is not None else needed


def _size(shape):
    return math.prod(shape) if type(shape) is tuple and all(type(d) is int for d in shape) \
        else 1


def _work(slots, program):
    """Elements produced; a product (dot, convolution) as the geometric mean of its operand
    and result sizes: a plain matrix product's multiply-adds."""
    n_leaves = len(program.leaves)

    def shape_of(slot):
        return program.leaves[slot][1] if slot < n_leaves else \
            program.instructions[slot - n_leaves][3]
    total = 0
    for s in slots:
        op, _, ins, shape, dtype, _ = program.instructions[s - n_leaves]
        size = _size(shape) if type(dtype) is not tuple else 1
        if op in ("dot_general", "conv") and len(ins) >= 2:
            a, b = (_size(shape_of(i)) for i in ins[:2])
            size = max(size, int(math.sqrt(float(a) * b * size)))
        total += size
    return total


def _part(program, program_class, slots, handoff, results, name):
    """A Program of `program`'s instructions at `slots`, in their order, reading the leaves
    they use and, as data leaves after those, the instructions at `handoff`."""
    n_leaves = len(program.leaves)
    insts = sorted(slots)  # (the program's order: a topological one)
    used = sorted({i for s in insts for i in program.instructions[s - n_leaves][2]
                   if i < n_leaves})
    at = {}
    leaves, leaf_sources = [], []
    for i in used:
        at[i] = len(leaves)
        leaves.append(program.leaves[i])
        leaf_sources.append(program.leaf_sources[i])
    for s in handoff:
        _, _, _, shape, dtype, _ = program.instructions[s - n_leaves]
        at[s] = len(leaves)
        leaves.append(("data", shape, dtype))
        leaf_sources.append(program.sources[s - n_leaves])
    instructions, sources = [], []
    for s in insts:
        op, attrs, ins, shape, dtype, const = program.instructions[s - n_leaves]
        instructions.append((op, attrs, tuple(at[i] for i in ins), shape, dtype, const))
        sources.append(program.sources[s - n_leaves])
        at[s] = len(leaves) + len(instructions) - 1
    outputs = tuple(at[s] for s in results)
    part = program_class(leaves, instructions, outputs, (name, program.key), sources,
                         leaf_sources)
    return part, used


class Splitting(compiling_later.CompilingLater):
    """What a lazy cut caches for a program `plan` divides: the single program's executable
    (`whole`), until the pair is compiled -- in a background thread started at its
    RUNS_BEFORE_SPLIT-th run, by `compile_part(part, fixed scalars, self)`, so no step waits for it
    -- and the pair from the call that finds it ready. A caller that binds leaves
    (torch.compile, lazyx.compile) gets the single program's binding: it waits for every
    result anyway. `pair` is published by one assignment: None while it is compiling (or not
    started), False if it failed, else (first, second)."""
    __slots__ = ("split", "compile_part", "scalars", "ready", "pair", "runs")

    def __init__(self, whole, split, compile_part, scalars, ready):
        super().__init__(whole)
        self.split, self.compile_part = split, compile_part
        self.scalars = scalars  # (program, leaf values) -> its scalar leaves' {index: value}
        self.ready = ready      # (self, the pair's bytes), once the pair is compiled
        self.pair, self.runs = None, 0

    @property
    def whole(self):
        return self.single

    def compiling(self):
        return self.pair is None

    def __call__(self, values):
        pair = self.pair
        if not pair:
            if self._thread is None:
                self.runs += 1
                if self.runs >= RUNS_BEFORE_SPLIT:
                    self._start(values)
            return self.whole(values)
        first, second = pair
        split = self.split
        a = first([values[i] for i in split.first_leaves])
        b = second([values[i] for i in split.second_leaves] + [a[k] for k in split.handoff])
        return [a[k] if side == 0 else b[k] for side, k in split.order]

    def _start(self, values):
        split = self.split
        # the scalars' values, read now: the thread keeps no leaf buffer alive
        first = self.scalars(split.first, [values[i] for i in split.first_leaves])
        second = self.scalars(split.second, [values[i] for i in split.second_leaves]
                              + [None] * len(split.handoff))
        self.start(self._compile, (first, second), "lazyx-split-compile")

    def _compile(self, first_fixed, second_fixed):
        split = self.split
        try:
            first = self.compile_part(split.first, first_fixed, self)
            second = self.compile_part(split.second, second_fixed, self)
        except Exception as err:  # noqa: BLE001 -- the single program still does the work
            warnings.warn(f"lazyx: running a step's scalar results ahead of the rest failed "
                          f"to compile ({type(err).__name__}: {err}); the step runs as one "
                          f"program", RuntimeWarning, stacklevel=2)
            self.pair = False
            return
        self.pair = (first, second)  # (published first: `ready` only keeps the books)
        self.ready(self, getattr(first, "nbytes", 0) + getattr(second, "nbytes", 0))

def join_all():
    """Wait for every pair still compiling (tests that count compiles, a benchmark's steady
    state); True if one was."""
    return compiling_later.join_all(Splitting)
