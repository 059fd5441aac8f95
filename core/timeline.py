"""`with lazyx.profile(path):` -- a Chrome / Perfetto trace of tracing, compiling, executing and
transfers, step by step (open the file in ui.perfetto.dev or chrome://tracing).

A step is one graph run (one sync). Its "trace" span is the Python time spent recording ops
since the previous step ended, then come its "compile" span (only when the cache missed) and
its "execute" span; a "step N" span on its own track covers all three. On the XLA backend
execution is asynchronous, so "execute" is the dispatch and the wait shows up in the
"to_host" transfer that reads the result.
"""
import json
import os
import time

from . import runtime
from .debug import graph_id
from .source import format_line

_TRACKS = {"steps": 1, "lazyx": 2, "transfers": 3}  # thread ids: one row each in the viewer


class Timeline:
    """A runtime listener collecting trace events; a context manager that writes them at exit."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.events = []
        self.steps = 0
        self.t0 = self._last_end = time.perf_counter()
        self._step = None  # (number, start, args) of the step being run

    def _span(self, name, track, start, seconds, args=None):
        self.events.append({"name": name, "cat": name.split(" ")[0], "ph": "X", "pid": 1,
                            "tid": _TRACKS[track], "ts": (start - self.t0) * 1e6,
                            "dur": max(seconds, 0.0) * 1e6, "args": args or {}})

    def on_sync(self, cause, source, program, roots=()):
        now = time.perf_counter()
        self.steps += 1
        args = {"step": self.steps, "cause": cause, "line": format_line(source),
                "graph": graph_id(program), "ops": len(program.instructions)}
        self._span("trace", "lazyx", self._last_end, now - self._last_end,
                   {"step": self.steps, "ops": len(program.instructions)})
        self._step = (self.steps, self._last_end, args)

    def on_compile(self, program, exe, start, seconds):
        self._span("compile", "lazyx", start, seconds,
                   {"step": self.steps, "graph": program.graph_hash})

    def on_execute(self, program, start, seconds):
        self._span("execute", "lazyx", start, seconds, {"step": self.steps})
        self._last_end = start + seconds
        if self._step is not None:
            number, step_start, args = self._step
            self._span(f"step {number}", "steps", step_start, self._last_end - step_start, args)
            self._step = None

    def on_transfer(self, direction, nbytes, start, seconds):
        # inputs go to the device while the next step is traced; results come back after a run
        step = self.steps + 1 if direction == "to_device" else self.steps
        self._span(f"transfer {direction}", "transfers", start, seconds,
                   {"step": step, "bytes": nbytes})
        if direction == "to_host":  # reading a result is observation, not tracing
            self._last_end = max(self._last_end, start + seconds)

    def trace(self):
        """The Chrome trace-event JSON object."""
        names = [{"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}
                 for name, tid in _TRACKS.items()]
        names.append({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "lazyx"}})
        return {"traceEvents": names + sorted(self.events, key=lambda e: e["ts"]),
                "displayTimeUnit": "ms", "otherData": {"backend": runtime.backend()}}

    def __enter__(self):
        self.t0 = self._last_end = time.perf_counter()
        runtime.LISTENERS.append(self)
        return self

    def __exit__(self, *exc):
        if self in runtime.LISTENERS:
            runtime.LISTENERS.remove(self)
        folder = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(folder, exist_ok=True)
        with open(self.path, "w") as f:
            json.dump(self.trace(), f)


def profile(path):
    """`with lazyx.profile("trace.json"):` records a timeline of the block and writes it there."""
    return Timeline(path)
