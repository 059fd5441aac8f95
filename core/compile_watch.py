"""A warning printed while a compile is still running, so a long one does not look like a hang.

XLA's compile time grows faster than linearly with a graph's length: an elementwise chain of
2,000 steps takes ~9 s under jax.jit itself, 4,000 about a minute. A loop that never reaches a
barrier (`lazyx.sync()` forgotten) records every iteration into one graph, which is cut only at
the first read, or at LAZYX_NODE_CAP (100,000 nodes: a step of a large model is tens of
thousands). The user then waits minutes with nothing printed. Once a compile has run for
LAZYX_SLOW_COMPILE seconds (default 10; 0 turns this off) a RuntimeWarning says how big the
graph is, which lines of the user's code made most of it, and how to cut it. (jaxlib releases
the GIL while XLA compiles, so a timer thread can speak meanwhile.)
"""

import collections
import contextlib
import threading
import warnings

from . import config, metrics
from .source import format_line

# a line that made this many operations of one graph ran in a loop the graph spans -- unless
# the graph ends at the user's own barrier: then it is one call of a big function (a backward
# pass, an optimizer's step: hundreds of operations from one line) or a loop the user meant to
# be one program (an RNN's time steps), and a cut inside it would split their step
_LOOP_REPEATS = 100


class _Watch:
    def __init__(self, program, cause, source, seconds):
        self._timer = threading.Timer(seconds, _warn, (program, cause, source, seconds))
        self._timer.daemon = True

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()
        return False


def watch(program, cause=None, source=None):
    """A context manager around one compile of `program`, cut by `cause` at `source`."""
    seconds = config.slow_compile_seconds()
    return _Watch(program, cause, source, seconds) if seconds > 0 else \
        contextlib.nullcontext()


def describe(program, cause, source, seconds):
    """The warning's text (kept apart from the timer so that it can be tested directly)."""
    from .explain import CAUSE_TEXT  # (only on this slow path: explain imports much)
    size = len(program.instructions)
    cut = f"cut at {format_line(source)} by {CAUSE_TEXT.get(cause, cause)}" if cause else "cut"
    text = [f"the backend has been compiling one graph for {seconds:g} s ({size:,} operations, "
            f"{cut})."]
    lines = collections.Counter(s for s in program.sources if s)
    top = lines.most_common(3)
    if top:
        made = ", ".join(f"{format_line(line)} ({count:,} operations)" for line, count in top)
        text.append(f"The lines that made most of it: {made}.")
    if top and top[0][1] >= _LOOP_REPEATS and cause != "explicit":
        text.append("A line that made that many operations of one graph is one call of a big "
                    "function (a recurrent layer unrolled over its time steps, a backward pass: "
                    "compiled once, then taken from the cache) or a loop with no barrier in "
                    "it: every iteration is recorded into the same graph, and XLA's compile "
                    "time grows quickly with its length. For a loop, end each iteration with "
                    "lazyx.sync(), or set LAZYX_NODE_CAP (e.g. 2000) to cut long graphs "
                    "automatically.")
    else:
        text.append("A program this big is compiled once and then taken from the cache (and "
                    "the disk cache in later processes); LAZYX_DEBUG=1 explains every "
                    "compile.")
    text.append("(LAZYX_SLOW_COMPILE=0 silences this.)")
    return " ".join(text)


def _warn(program, cause, source, seconds):
    """On the timer's thread: the warning points at the cut's line, not at this thread."""
    metrics.count("slow_compiles")
    message = "lazyx: " + describe(program, cause, source, seconds)
    filename, lineno = source if source else ("<lazyx>", 0)
    warnings.warn_explicit(message, RuntimeWarning, filename, lineno, module="lazyx")
