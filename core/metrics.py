"""Counters and timers: what ran, what compiled, what forced a sync and from where."""
import statistics
import threading

from . import ir
from .source import format_line

_lock = threading.Lock()
_formatted = {}  # source (file, line) -> "relative/path.py:line": relpath is slow per sync
COUNTERS = ("compiles", "cache_hits", "executions", "syncs", "fallbacks", "graph_breaks",
            "nodes_traced",
            "transfers_to_device", "bytes_to_device", "transfers_to_host", "bytes_to_host")
TIMERS = ("trace", "compile", "execute")


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
        self.timers = {name: [] for name in TIMERS}
        self.nodes_base = ir.CREATED[0]


_state = _State()


def count(name, n=1):
    _state.counters[name] += n


def record_time(timer, seconds):
    _state.timers[timer].append(seconds)


def _tally(table, key, n=1):
    table[key] = table.get(key, 0) + n


def record_sync(cause, source):
    with _lock:
        _state.counters["syncs"] += 1
        _tally(_state.sync_causes, cause)
        where = _formatted.get(source)
        if where is None:
            where = _formatted[source] = format_line(source)
        _tally(_state.sync_sources, where)
        _tally(_state.sync_sources_by_cause.setdefault(cause, {}), where)


def record_compile(source):
    with _lock:
        _tally(_state.compile_sources, format_line(source))


def record_fallback(op_name, source=None):
    with _lock:
        _state.counters["fallbacks"] += 1
        _tally(_state.fallback_ops, op_name)
        _tally(_state.fallback_sources.setdefault(op_name, {}), format_line(source))


def record_graph_break(reason, where=None):
    """A capture mechanism (TorchDynamo) split the user's code into two graphs here."""
    with _lock:
        _state.counters["graph_breaks"] += 1
        _tally(_state.graph_break_reasons, f"{reason} at {where}" if where else reason)


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
        snap["fallback_sources"] = {op: dict(v) for op, v in _state.fallback_sources.items()}
        for name, values in _state.timers.items():
            snap[f"{name}_seconds_total"] = float(sum(values))
            snap[f"{name}_seconds_median"] = float(statistics.median(values)) if values else 0.0
            snap[f"{name}_count"] = len(values)
    return snap


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
                       ("graph breaks by reason", "graph_break_reasons")):
        if m[key]:
            lines.append(f"  {title}:")
            for name, n in sorted(m[key].items(), key=lambda kv: -kv[1]):
                lines.append(f"    {n:>8}  {name}")
    return "\n".join(lines)
