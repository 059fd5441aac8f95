"""Helpers several test directories share (imported after putting tests/ on sys.path, as
tests/bad_calls.py is)."""
import os
import re
import subprocess
import sys
import threading

import lazyx


def run_in_threads(fn, n):
    """[fn(0), ..., fn(n-1)], each in its own thread, all at once; the first error re-raised."""
    results, errors = [None] * n, []

    def worker(t):
        try:
            results[t] = fn(t)
        except BaseException as e:  # noqa: BLE001 -- re-raised in the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    return results


def program_output(source):
    """The lines a Python program prints, run in a fresh process that imports this lazyx."""
    path = os.pathsep.join([os.path.dirname(os.path.dirname(lazyx.__file__)),
                            os.environ.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=path), timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


# What changes a framework's global state: an assignment to one of its attributes, setattr on
# it, or one of TF's registration calls. Each frontend keeps all of these in its hooks.py.
GLOBAL_HOOK = re.compile(r"^\s*(torch|tf|keras)\.[\w.]+\s*=[^=]|setattr\((torch|tf|keras)\."
                         r"|register_tensor_conversion_function\(|register_dispatchable_type\("
                         r"|\)\.register\(\)", re.M)


def hooks_outside(frontend):
    """Lines of `frontend`'s sources that change framework global state outside hooks.py."""
    root = os.path.join(os.path.dirname(lazyx.__file__), "frontends", frontend)
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if not name.endswith(".py") or path == os.path.join(root, "hooks.py"):
                continue
            with open(path) as f:
                text = f.read()
            found += [f"{os.path.relpath(path, root)}: {m.group(0).strip()}"
                      for m in GLOBAL_HOOK.finditer(text)]
    return found


class ProgramResults:
    """`with ProgramResults() as seen:` -- seen.counts is the number of results of each
    program a cut runs meanwhile (runtime's on_sync event)."""

    def __init__(self):
        self.counts = []

    def on_sync(self, cause, source, program, roots=()):
        self.counts.append(len(program.outputs))

    def __enter__(self):
        from lazyx.core import runtime
        runtime.LISTENERS.append(self)
        return self

    def __exit__(self, *exc):
        from lazyx.core import runtime
        runtime.LISTENERS.remove(self)


def empty_the_interning_table(monkeypatch):
    """Make the next new structure empty ir's interning table (bumping
    ir.LOCALS_GENERATION), then make one: memos of interned entries must follow."""
    import itertools

    import numpy as np

    from lazyx.core import ir, ops
    generation = ir.LOCALS_GENERATION[0]
    # a structure no earlier test of this process made (exp of a length not interned yet)
    n = next(n for n in itertools.count(5)
             if not any(sig[0] == "exp" and sig[2] == (n,) for sig in ir._LOCALS))
    monkeypatch.setattr(ir, "TABLE_LIMIT", len(ir._LOCALS))  # the next new structure empties it
    ops.exp(ir.data(np.ones(n, np.float32), (n,), "float32"))
    monkeypatch.undo()
    assert ir.LOCALS_GENERATION[0] == generation + 1
