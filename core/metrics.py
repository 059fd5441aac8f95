"""Counters and timers: what ran, what compiled, what forced a sync and from where.

Shared by all threads: updates take one lock (a counter bump is a read-modify-write), and
timers are running statistics -- a total, a count and a bounded window for the median -- so
a long run's metrics stay the same size.
"""
import collections
import statistics
import threading

from . import ir
from .source import format_line

_lock = threading.Lock()
_formatted = {}  # source (file, line) -> "relative/path.py:line": relpath is slow per sync
# disk_hits/disk_misses: the persistent compile cache (a miss compiles and stores);
# disk_preloaded: the hits whose executable the warm-start thread had loaded and run already;
# interpreted_steps: runs on the reference interpreter while XLA compiled (LAZYX_TIERED=1);
# cache_sheds: halvings of the compile cache because compiled code neared the process's limit
# on memory mappings (backends/code_maps.py); slow_compiles: compiles still running after
# LAZYX_SLOW_COMPILE seconds, each warned about as it ran (core/compile_watch.py);
# split_compiles: programs compiled to run a repeated cut's scalar results ahead of the rest
# (core/early_results.py; the cut's own program is one of `compiles`); bake_compiles: programs
# compiled for a repeated cut with its unchanged Python numbers as constants
# (core/baked_literals.py; likewise apart from `compiles`)
COUNTERS = ("compiles", "cache_hits", "executions", "syncs", "fallbacks", "graph_breaks",
            "nodes_traced",
            "nodes_walked", "transfers_to_device", "bytes_to_device", "transfers_to_host",
            "bytes_to_host", "disk_hits", "disk_misses", "disk_preloaded", "interpreted_steps",
            "replays", "replay_misses", "cache_sheds", "slow_compiles", "split_compiles",
            "bake_compiles")
# compile = the backend's whole compile call; on XLA it splits into lower (jax tracing our
# program and lowering it to StableHLO) and xla_compile, or disk_load on a disk hit
TIMERS = ("trace", "compile", "execute", "lower", "xla_compile", "disk_load")
MEDIAN_WINDOW = 1024  # the median is over the latest this many samples


class _Timer:
    __slots__ = ("total", "count", "recent")

    def __init__(self):
        self.total = 0.0
        self.count = 0
        self.recent = collections.deque(maxlen=MEDIAN_WINDOW)


class _State:
    def __init__(self):
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.sync_causes = {}
        self.sync_sources = {}
        self.sync_sources_by_cause = {}  # cause -> {file:line: n}, for the end-of-run analysis
        self.compile_sources = {}        # file:line of the sync that compiled a new program
        self.fallback_ops = {}
        self.fallback_sources = {}       # op -> {file:line: n}
        self.graph_break_reasons = {}    # "reason at file:line" -> n (torch.compile)
        self.replay_miss_reasons = {}    # "reason at file:line" -> n (lazyx.compile)
        self.timers = {name: _Timer() for name in TIMERS}
        self.nodes_base = ir.CREATED[0]


_state = _State()


def count(name, n=1):
    with _lock:
        _state.counters[name] += n


def record_transfer(direction, nbytes):
    """One transfer of `nbytes` ("to_host" or "to_device"): both counters under one lock (every
    .item() and float() of a step pays this)."""
    with _lock:
        counters = _state.counters
        counters["transfers_" + direction] += 1
        counters["bytes_" + direction] += nbytes


def record_time(timer, seconds):
    with _lock:
        t = _state.timers[timer]
        t.total += seconds
        t.count += 1
        t.recent.append(seconds)


def _tally(table, key, n=1):
    table[key] = table.get(key, 0) + n


def _where(source):
    where = _formatted.get(source)
    if where is None:
        if len(_formatted) > 65536:  # one entry per distinct line: bounded all the same
            _formatted.clear()
        where = _formatted[source] = format_line(source)
    return where


def record_cut(cause, source, trace_seconds, execute_seconds, hit):
    """Everything one cut records, under one lock: the sync, its cause and line, the trace
    time before it, the execution time, and a cache hit (a miss counts as a compile)."""
    with _lock:
        counters = _state.counters
        counters["syncs"] += 1
        counters["executions"] += 1
        if hit:
            counters["cache_hits"] += 1
        _tally(_state.sync_causes, cause)
        where = _where(source)
        _tally(_state.sync_sources, where)
        _tally(_state.sync_sources_by_cause.setdefault(cause, {}), where)
        for name, seconds in (("trace", trace_seconds), ("execute", execute_seconds)):
            t = _state.timers[name]
            t.total += seconds
            t.count += 1
            t.recent.append(seconds)


def record_replay(execute_seconds):
    """A compiled step (lazyx.compile) replayed: one execution, no trace, no cut."""
    with _lock:
        counters = _state.counters
        counters["replays"] += 1
        counters["executions"] += 1
        t = _state.timers["execute"]
        t.total += execute_seconds
        t.count += 1
        t.recent.append(execute_seconds)


def record_host_call(execute_seconds, n_in, bytes_in, n_out, bytes_out):
    """A torch.compile graph called with CPU tensors (frontends/torch/dynamo_host.py): its
    inputs' transfers, one execution and its results' transfers, under one lock."""
    with _lock:
        counters = _state.counters
        counters["transfers_to_device"] += n_in
        counters["bytes_to_device"] += bytes_in
        counters["executions"] += 1
        counters["transfers_to_host"] += n_out
        counters["bytes_to_host"] += bytes_out
        t = _state.timers["execute"]
        t.total += execute_seconds
        t.count += 1
        t.recent.append(execute_seconds)


def record_compile(source):
    with _lock:
        _tally(_state.compile_sources, _where(source))


def record_fallback(op_name, source=None):
    with _lock:
        _state.counters["fallbacks"] += 1
        _tally(_state.fallback_ops, op_name)
        _tally(_state.fallback_sources.setdefault(op_name, {}), _where(source))


def record_graph_break(reason, where=None):
    """A capture mechanism (TorchDynamo) split the user's code into two graphs here."""
    with _lock:
        _state.counters["graph_breaks"] += 1
        _tally(_state.graph_break_reasons, f"{reason} at {where}" if where else reason)


def record_replay_miss(reason, where=None):
    """A lazyx.compile call traced again instead of replaying, and why."""
    with _lock:
        _state.counters["replay_misses"] += 1
        _tally(_state.replay_miss_reasons, f"{reason} at {where}" if where else reason)


def metrics():
    """A snapshot: integer counters, per-cause / per-line / per-op dicts, and timer summaries."""
    with _lock:
        snap = dict(_state.counters)
        snap["nodes_traced"] = ir.CREATED[0] - _state.nodes_base
        snap["sync_causes"] = dict(_state.sync_causes)
        snap["sync_sources"] = dict(_state.sync_sources)
        snap["fallback_ops"] = dict(_state.fallback_ops)
        snap["sync_sources_by_cause"] = {c: dict(v) for c, v in _state.sync_sources_by_cause.items()}
        snap["compile_sources"] = dict(_state.compile_sources)
        snap["graph_break_reasons"] = dict(_state.graph_break_reasons)
        snap["replay_miss_reasons"] = dict(_state.replay_miss_reasons)
        snap["fallback_sources"] = {op: dict(v) for op, v in _state.fallback_sources.items()}
        for name, t in _state.timers.items():
            snap[f"{name}_seconds_total"] = float(t.total)
            snap[f"{name}_seconds_median"] = float(statistics.median(t.recent)) if t.recent else 0.0
            snap[f"{name}_count"] = t.count
    snap["memory_per_device"] = _memory_per_device()
    return snap


def _memory_per_device():
    """{device: bytes of its live buffers}, from a backend that can tell (XLA); {} otherwise
    or before any backend started (a snapshot must not start one)."""
    from . import runtime  # runtime imports this module
    backend = runtime._backend
    report = getattr(backend, "memory_per_device", None)
    return report() if report is not None else {}


def reset_metrics():
    global _state
    with _lock:
        _state = _State()


def metrics_report():
    """The metrics as a short human-readable text."""
    m = metrics()
    lines = ["lazyx metrics"]
    for key in COUNTERS:
        lines.append(f"  {key:<22}{m[key]:>12}")
    for name in TIMERS:
        lines.append(f"  {name + ' seconds':<22}{m[name + '_seconds_total']:>12.4f} total, "
                     f"{m[name + '_seconds_median'] * 1e3:.3f} ms median over "
                     f"{m[name + '_count']}")
    for title, key in (("syncs by cause", "sync_causes"), ("syncs by source line", "sync_sources"),
                       ("fallbacks by op", "fallback_ops"),
                       ("live buffer bytes per device", "memory_per_device"),
                       ("graph breaks by reason", "graph_break_reasons"),
                       ("compile misses by reason", "replay_miss_reasons")):
        if m[key]:
            lines.append(f"  {title}:")
            for name, n in sorted(m[key].items(), key=lambda kv: -kv[1]):
                lines.append(f"    {n:>8}  {name}")
    return "\n".join(lines)
