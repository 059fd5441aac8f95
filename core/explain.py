"""Why a graph recompiled, why a sync happened, and an end-of-run analysis (LAZYX_DEBUG).

A recompile is explained by comparing the program that missed the cache with the cached
program it most resembles: the same ops wired the same way but an input of another shape or
dtype names that input with its old and new type; otherwise the first op that differs is named
with its source line. An `Explainer` is a runtime listener: it exists only while explanations
are on (LAZYX_DEBUG=1 or `lazyx.explain()`), so a plain run pays nothing for it.
"""
import atexit
import collections
import difflib
import sys

from . import config, metrics, runtime
from .buckets import suggest_buckets
from .debug import graph_id, leaf_text, type_text
from .source import format_line

CAUSE_TEXT = {
    "explicit": "explicit barrier (lazyx.sync / mark_step)",
    "print": "print/repr of a lazy value",
    "item": "a value read into Python (.item(), float(), int(), bool())",
    "convert": "conversion to the host framework (np.asarray, .numpy(), .cpu())",
    "data_dependent": "an op whose output shape depends on values",
    "node_cap": "the pending graph grew past LAZYX_NODE_CAP nodes (or LAZYX_LOOP_CUT in a loop)",
    "fallback": "an op with no lowering ran eagerly on the real framework",
}
_RECENT = 16       # cached programs compared by op sequence (the exact-skeleton match sees all)
_RESEMBLES = 0.5   # difflib ratio of op sequences from which two graphs "resemble" each other
_MAX_LISTED = 4    # changed inputs named in one explanation
_ADVISE_AFTER = 3  # compiles of one graph family before its varying dimension is named
_SHOWN_SIZES = 8   # sizes listed in that advice


class _Canonical:
    """A program's nodes in an order that does not depend on the order its cut listed its
    roots or traced its ops (a cut returns the live values in the live registry's order, which
    may change from step to step): depth-first from the outputs, sorted by structure. Two
    programs that differ only in shapes, dtypes or attributes get the same `skeleton`, and
    `order` pairs their nodes. `interned` is shared by the programs compared."""

    def __init__(self, program, interned):
        n = len(program.leaves)
        sig = [interned.setdefault(("leaf", kind, program.leaf_sources[slot]), len(interned))
               for slot, (kind, _shape, _dtype) in enumerate(program.leaves)]
        for op, _attrs, ins, *_rest in program.instructions:
            sig.append(interned.setdefault((op, tuple([sig[i] for i in ins])), len(interned)))

        def shape(i):
            return program.leaves[i][1] if i < n else program.instructions[i - n][3]
        # (ties between alike subgraphs, such as two parameters' optimizer updates, are broken
        # by their shapes, which usually stay put when an input's shape changes)
        roots = sorted(program.outputs, key=lambda i: (sig[i], str(shape(i))))
        number, order = {}, []
        for root in [*roots, *range(len(sig))]:  # (then anything no output reaches)
            stack = [(root, False)]
            while stack:
                i, expanded = stack.pop()
                if i in number:
                    continue
                if expanded or i < n:
                    number[i] = len(order)
                    order.append(i)
                    continue
                stack.append((i, True))
                stack.extend((x, False) for x in reversed(program.instructions[i - n][2]))
        self.order = order
        self.skeleton = (
            tuple([program.leaves[i][0] if i < n else
                   (program.instructions[i - n][0],
                    tuple([number[x] for x in program.instructions[i - n][2]]))
                   for i in order]),
            tuple(sorted(number[i] for i in program.outputs)))
        self.n = n

    def leaves(self):
        return [i for i in self.order if i < self.n]

    def instructions(self):
        return [i - self.n for i in self.order if i >= self.n]


def _leaf_changes(new, old, new_canon, old_canon):
    changes = []
    # (inputs first: a parameter's shape usually changes because an input's did)
    pairs = sorted(zip(new_canon.leaves(), old_canon.leaves()),
                   key=lambda pair: (new.leaves[pair[0]][0] != "data", pair[0]))
    for slot, old_slot in pairs:
        new_leaf, old_leaf = new.leaves[slot], old.leaves[old_slot]
        new_layout, old_layout = new.leaf_shardings[slot], old.leaf_shardings[old_slot]
        if new_leaf == old_leaf and new_layout != old_layout:
            changes.append(f"{leaf_text(new, slot)} is laid out differently: "
                           f"{_layout_text(old_layout)} -> {_layout_text(new_layout)}")
            continue
        if new_leaf == old_leaf:
            continue
        what = [w for w, i in (("shape", 1), ("dtype", 2)) if new_leaf[i] != old_leaf[i]]
        changes.append(f"{leaf_text(new, slot)} changed {' and '.join(what)}: "
                       f"{type_text(*old_leaf[1:])} -> {type_text(*new_leaf[1:])}")
    return changes


def _layout_text(sharding):
    return "one device" if sharding is None else f"sharded {sharding!r}"


def _where(program, k):
    return f" at {format_line(program.sources[k])}" if program.sources[k] else ""


def _instruction_change(new, old, new_canon, old_canon):
    """The first instruction whose attributes, type or constant differ (same skeleton)."""
    base = len(new.leaves)
    for k, old_k in sorted(zip(new_canon.instructions(), old_canon.instructions())):
        op, attrs, _ins, shape, dtype, const = new.instructions[k]
        _op, old_attrs, _old_ins, old_shape, old_dtype, old_const = old.instructions[old_k]
        diffs = [f"{key} {old_attrs.get(key)!r} -> {attrs.get(key)!r}"
                 for key in dict.fromkeys([*old_attrs, *attrs])
                 if old_attrs.get(key) != attrs.get(key)]
        if (shape, dtype) != (old_shape, old_dtype):
            diffs.append(f"type {type_text(old_shape, old_dtype)} -> {type_text(shape, dtype)}")
        if const is not None and (old_const is None or const.tobytes() != old_const.tobytes()):
            diffs.append("its constant value changed")
        if diffs:
            return f"op %{base + k} `{op}`{_where(new, k)} differs: {'; '.join(diffs)}"
    return "it differs in a way lazyx cannot name (same ops, inputs and attributes)"


def _op_change(new, old, new_canon, old_canon):
    """The first place where the op sequences of two different-looking programs part."""
    new_ks, old_ks = new_canon.instructions(), old_canon.instructions()
    new_ops = [new.instructions[k][0] for k in new_ks]
    old_ops = [old.instructions[k][0] for k in old_ks]
    matcher = difflib.SequenceMatcher(None, old_ops, new_ops, autojunk=False)
    for tag, i1, _i2, j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old_at = f" (was at {format_line(old.sources[old_ks[i1]])})" if i1 < len(old_ops) \
            else ""
        if tag == "replace":
            return (f"op %{len(new.leaves) + new_ks[j1]} is `{new_ops[j1]}`"
                    f"{_where(new, new_ks[j1])} where the cached graph had `{old_ops[i1]}`"
                    f"{old_at}")
        if tag == "insert":
            return (f"new op %{len(new.leaves) + new_ks[j1]} `{new_ops[j1]}`"
                    f"{_where(new, new_ks[j1])}")
        return f"op `{old_ops[i1]}`{old_at} is gone"
    if len(new.leaves) != len(old.leaves):
        return f"the same ops take {len(new.leaves)} leaves instead of {len(old.leaves)}"
    new_sk, old_sk = new_canon.skeleton, old_canon.skeleton
    for (k, a), b in zip(zip(new_canon.order, new_sk[0]), old_sk[0]):
        if a != b and k >= len(new.leaves):
            k -= len(new.leaves)
            return (f"op %{len(new.leaves) + k} `{new.instructions[k][0]}`{_where(new, k)} "
                    f"takes other operands")
    return "the same ops return other values"


def explain_recompile(program, cached_programs):
    """(why, resembled program) for a program that missed the cache, or (None, None) when no
    cached program resembles it. `cached_programs` is in least-recently-used-first order."""
    recent = list(reversed(cached_programs))
    interned = {}
    canon = _Canonical(program, interned)
    same = [(p, c) for p in recent
            for c in [_Canonical(p, interned)] if c.skeleton == canon.skeleton]
    if same:
        # fewest changed inputs wins; min() keeps the most recently used on ties
        old, old_canon = min(same, key=lambda pc: len(_leaf_changes(program, pc[0], canon,
                                                                    pc[1])))
        changes = _leaf_changes(program, old, canon, old_canon)
        if not changes:
            return _instruction_change(program, old, canon, old_canon), old
        more = len(changes) - _MAX_LISTED
        return "; ".join(changes[:_MAX_LISTED]) + (f"; and {more} more" if more > 0 else ""), old
    best, best_ratio, best_canon = None, 0.0, None
    for old in recent[:_RECENT]:
        old_canon = _Canonical(old, interned)
        ratio = difflib.SequenceMatcher(
            None, [old.instructions[k][0] for k in old_canon.instructions()],
            [program.instructions[k][0] for k in canon.instructions()],
            autojunk=False).ratio()
        if ratio > best_ratio:
            best, best_ratio, best_canon = old, ratio, old_canon
    if best_ratio < _RESEMBLES:
        return None, None
    return _op_change(program, best, canon, best_canon), best


def _sizes_text(values):
    sizes = sorted(set(values))
    shown = ", ".join(map(str, sizes[:_SHOWN_SIZES]))
    return shown + (f", ... ({len(sizes)} sizes)" if len(sizes) > _SHOWN_SIZES else "")


class ShapeFamilies:
    """Graphs compiled at one sync line whose inputs have the same kinds, dtypes and ranks: a
    family. When a family keeps compiling because some input dimension takes new sizes (a
    sequence length, a short last batch), `add` returns advice naming the input, the dimension
    and the sizes seen, with buckets to pad to -- after _ADVISE_AFTER compiles, then each time
    the count doubles."""

    def __init__(self):
        self.families = {}  # (source, leaf signature) -> [leaf shapes of each compile]

    def add(self, program, source):
        key = (source, tuple((kind, dtype, len(shape)) for kind, shape, dtype in program.leaves))
        seen = self.families.setdefault(key, [])
        seen.append([shape for _kind, shape, _dtype in program.leaves])
        n = len(seen)
        rounds, rest = divmod(n, _ADVISE_AFTER)
        if rest or rounds & (rounds - 1):  # after 3, 6, 12, 24, ... compiles: not every one
            return None
        varying = {}  # the sizes a dimension took, per compile -> [(input slot, dimension)]
        for slot, shapes in enumerate(zip(*seen)):
            for dim, sizes in enumerate(zip(*shapes)):
                if len(set(sizes)) > 1:
                    varying.setdefault(sizes, []).append((slot, dim))
        if not varying:
            return None  # same input shapes: something else changes (attributes, ops)
        sizes, where = max(varying.items(), key=lambda kv: len(set(kv[0])))
        slot, dim = where[0]
        also = f" (and the same dimension of {len(where) - 1} more inputs)" if len(where) > 1 \
            else ""
        others = len(varying) - 1
        buckets = suggest_buckets(sizes)
        return (f"graphs synced at {format_line(source)} compiled {n} times because "
                f"{leaf_text(program, slot)} keeps changing dimension {dim}{also}: sizes "
                f"{_sizes_text(sizes)} were seen"
                f"{f'; {others} other dimensions vary too' if others else ''}. Pad it to a few "
                f"sizes so that each compiles once: lazyx.pad_to_bucket(x, axis={dim}, "
                f"buckets={buckets}) before the value becomes lazy (lt./lnp./ltf.pad_to_bucket "
                f"in each frontend) returns the padded value and a mask to apply (attention "
                f"mask, loss weights)")


class Explainer:
    """A runtime listener that explains syncs, recompiles and fallbacks as they happen.

    Writes one line per event to `stream` (None: record silently) and keeps what it saw for
    `analysis()`. Use as a context manager, or `start()` / `stop()`."""

    def __init__(self, stream=None):
        self.stream = stream
        self.syncs = []       # (cause, source, graph hash)
        self.recompiles = []  # (why or None, source of the sync, graph hash)
        self.advice = []      # changing-shape advice given, latest last
        self._families = ShapeFamilies()
        self._sync_source = None

    def _say(self, text):
        if self.stream is not None:
            print(f"lazyx: {text}", file=self.stream, flush=True)

    def on_sync(self, cause, source, program, roots=()):
        self._sync_source = source
        graph = graph_id(program)
        self.syncs.append((cause, source, graph))
        self._say(f"sync at {format_line(source)}: {CAUSE_TEXT.get(cause, cause)} -> runs graph "
                  f"{graph} ({len(program.instructions)} ops)")

    def on_cache_miss(self, program, cached_programs, source=None):
        # (a lazyx.compile trace compiles without a sync: it names its call's line)
        source = source or self._sync_source
        why, old = explain_recompile(program, cached_programs)
        self.recompiles.append((why, source, program.graph_hash))
        where = format_line(source)
        if why is None:
            self._say(f"compile at {where}: graph {program.graph_hash} is new"
                      f"{' (no cached graph resembles it)' if cached_programs else ''}")
        else:
            self._say(f"recompile at {where}: graph {program.graph_hash} resembles cached graph "
                      f"{old.graph_hash}, but {why}")
        advice = self._families.add(program, source)
        if advice:
            self.advice.append(advice)
            self._say(f"changing shapes: {advice}")

    def on_fallback(self, op_name, source):
        self._say(f"fallback at {format_line(source)}: {op_name} has no lowering and ran eagerly")

    def on_graph_break(self, reason, where):
        """A capture mechanism (torch.compile's Dynamo) split the user's code here."""
        self._say(f"graph break{' at ' + where if where else ''}: {reason} -> the code before "
                  "it is one captured graph, the rest runs in Python up to the next one (each "
                  "compiled separately; rewrite that line to keep one graph)")

    def start(self):
        if self not in runtime.LISTENERS:
            runtime.LISTENERS.append(self)
        _active.append(self)
        return self

    def stop(self):
        if self in runtime.LISTENERS:
            runtime.LISTENERS.remove(self)
        if self in _active:
            _active.remove(self)

    __enter__ = start

    def __exit__(self, *exc):
        self.stop()


_active = []


def explain(stream=None):
    """Explain every sync, recompile and fallback on `stream` (default: stderr) from now on, as
    LAZYX_DEBUG=1 does; returns the Explainer: call its stop(), or use it in a `with` block."""
    return Explainer(sys.stderr if stream is None else stream).start()


# ---------------------------------------------------------------- end-of-run analysis

_MIN_STEPS = 3        # a run of one or two graphs compiling every time is normal
_MOST = 0.5           # "most": more than half
_TOP = 5              # source lines listed per finding


def _top(counts, indent="      "):
    rows = sorted(counts.items(), key=lambda kv: -kv[1])[:_TOP]
    return [f"{indent}{n:>6}  {what}" for what, n in rows]


def analysis():
    """Findings about the run so far, as text (printed to stderr at exit with LAZYX_DEBUG=1):
    warns when most graph runs compiled, when .item()/print syncs dominate, when ops fell back
    to eager execution and when lazyx.compile mostly traced again -- with counts and the top
    source lines."""
    m = metrics.metrics()
    runs, compiles, syncs = m["executions"], m["compiles"], m["syncs"]
    lines = [f"lazyx analysis: {runs} graph runs, {compiles} compiles "
             f"({m['compile_seconds_total']:.3f} s), {syncs} syncs, {m['fallbacks']} fallbacks"]
    if runs >= _MIN_STEPS and compiles > _MOST * runs:
        lines.append(f"! most steps compile: {compiles} of {runs} graph runs compiled a new "
                     f"program ({100 * compiles / runs:.0f}%). Syncs that compiled:")
        lines += _top(m["compile_sources"])
        reasons = collections.Counter(why for e in _active for why, _s, _h in e.recompiles if why)
        if reasons:
            lines.append("  why (compared with the most similar cached graph):")
            lines += _top(dict(reasons))
        elif not _active:
            lines.append("  (set LAZYX_DEBUG=1 or call lazyx.explain() to see why each one "
                         "recompiled)")
    advice = {e.advice[-1] for e in _active if e.advice}
    for text in sorted(advice):
        lines.append(f"! shapes keep changing: {text}")
    by_cause = m["sync_sources_by_cause"]
    observing = {f"{where}  ({cause})": n for cause in ("item", "print")
                 for where, n in by_cause.get(cause, {}).items()}
    observed = sum(observing.values())
    if syncs >= _MIN_STEPS and observed > _MOST * syncs:
        lines.append(f"! syncs from .item()/print dominate: {observed} of {syncs} syncs "
                     f"({100 * observed / syncs:.0f}%) read a value into Python, and each one "
                     f"cuts the graph and waits for it. Where:")
        lines += _top(observing)
    if m["fallbacks"]:
        lines.append(f"! fallbacks: {m['fallbacks']} ops ran eagerly on the real framework "
                     f"(their inputs were synced and copied to the host). Where:")
        lines += _top({f"{op} at {where}": n for op, sites in m["fallback_sources"].items()
                       for where, n in sites.items()})
    misses, calls = m["replay_misses"], m["replays"] + m["replay_misses"]
    if misses >= _MIN_STEPS and misses > _MOST * calls:
        lines.append(f"! lazyx.compile rarely replays: {misses} of {calls} calls after the "
                     f"first traced the step again (running its Python) instead of replaying "
                     f"it. Why, and where:")
        lines += _top(m["replay_miss_reasons"])
    if m["graph_breaks"]:
        lines.append(f"! graph breaks: torch.compile split the code {m['graph_breaks']} "
                     "time(s); each piece is compiled and run separately. Where and why:")
        lines += _top(m["graph_break_reasons"])
    if len(lines) == 1:
        lines.append("  no problems found")
    if m["sync_causes"]:
        lines.append("  syncs by cause: " + ", ".join(
            f"{cause} {n}" for cause, n in sorted(m["sync_causes"].items(), key=lambda kv: -kv[1])))
    return "\n".join(lines)


def install_from_env():
    """LAZYX_DEBUG=1: explain on stderr from import on, and print the analysis at exit."""
    if config.debug() and not _active:
        explain()
        atexit.register(lambda: print(analysis(), file=sys.stderr, flush=True))
