"""A repeated cut's Python numbers as constants, while they stay what they were.

Every Python number a lazy step uses is a run-time parameter of its program, so a new value
never recompiles. On XLA:CPU that costs the fusion a constant gets: W3's chain of 50 ops
with 30 literals ran as 23 fusions instead of jax.jit's one, 1.09-1.14x jax.jit's program
alone (benchmarks/w3_programs.py). Most such numbers are literals of the user's code,
equal at every step. So a cut whose floating-point literals have kept their values for
`RUNS_BEFORE_BAKING` runs gets a second program with them baked in (runtime.bake), compiled
in a background thread while the steps go on running the general one -- no step waits for
it -- and run from the call that finds it ready, for as long as every baked value is still
the same. The first call with another value runs the general program again, for good: a
learning rate that changes every step costs one background compile, never a recompile per
value.

Only literals `bakeable` names are baked: those whose every use XLA:CPU computes bit for
bit as it computes the run-time form (runtime.literal_leaves' rule), so which program runs
moves no number (tests/core/test_baked_literals.py). Values are compared with `==`: the
zeros, ones and minus ones that could tell `0.0` from `-0.0` or compare equal across a
change of sign are never baked, and a NaN never equals itself (so it is never baked either).
"""
import operator
import warnings

from . import compiling_later

# The run of the general program that starts the baked one's compile (the first call counts):
# a short loop (a test's few calls, an evaluation of a few batches) is not compiled twice.
RUNS_BEFORE_BAKING = 8


class Baking(compiling_later.CompilingLater):
    """What a lazy cut caches for a program with bakeable literals: the general executable
    (`single`), and the baked one once compiled. `indices`: the leaves to bake, read from
    each call's leaf values; `compile_baked(baked {index: value}, kept leaf values)` returns
    the baked executable (taking the other leaves, in order); `ready(self, its bytes)` keeps
    the books. `baked` is published by one assignment: None while not compiled (or
    compiling), False once the values changed or the compile failed, else the executable --
    which runs only for a call whose values equal those it baked (compared at every call)."""
    __slots__ = ("indices", "kept", "compile_baked", "ready", "values", "runs", "baked",
                 "_pick", "_pick_kept")

    def __init__(self, general, indices, n_leaves, compile_baked, ready):
        super().__init__(general)
        self.indices = tuple(indices)
        baked = set(self.indices)
        self.kept = tuple(i for i in range(n_leaves) if i not in baked)
        self.compile_baked, self.ready = compile_baked, ready
        self._pick = _picker(self.indices)
        self._pick_kept = _picker(self.kept)
        self.values, self.runs, self.baked = None, 0, None

    def compiling(self):
        return self.baked is None

    def __call__(self, values):
        baked = self.baked
        if baked is False:
            return self.single(values)
        now = self._pick(values)
        if self.values is None:
            self.values = now
        elif now != self.values:
            self.baked = False  # for good (a compile under way finds this and drops its work)
            return self.single(values)
        if baked is not None:
            return baked(self._pick_kept(values))
        self.runs += 1
        if self.runs >= RUNS_BEFORE_BAKING and self._thread is None:
            self._start(values)
        return self.single(values)

    def _start(self, values):
        # the values read now: the thread keeps no leaf buffer alive
        baked = dict(zip(self.indices, self.values))
        leaves = self.program.leaves
        kept = [None if leaves[i][0] == "data" else values[i] for i in self.kept]
        self.start(self._compile, (baked, kept), "lazyx-bake-compile")

    def _compile(self, baked, kept):
        try:
            exe = self.compile_baked(baked, kept)
        except Exception as err:  # noqa: BLE001 -- the general program still does the work
            warnings.warn(f"lazyx: compiling a step with its Python numbers as constants "
                          f"failed ({type(err).__name__}: {err}); it keeps running them as "
                          f"run-time values", RuntimeWarning, stacklevel=2)
            self.baked = False
            return
        if self.baked is None:  # (False: the values changed meanwhile)
            self.baked = exe
            self.ready(self, getattr(exe, "nbytes", 0))


def _picker(indices):
    """A function of a call's leaf values giving the tuple of those at `indices` (C speed)."""
    if not indices:
        return lambda values: ()
    if len(indices) == 1:
        i = indices[0]
        return lambda values: (values[i],)
    return operator.itemgetter(*indices)


def join_all():
    """Wait for every baked program still compiling (a benchmark's steady state, tests that
    count compiles); True if one was."""
    return compiling_later.join_all(Baking)
