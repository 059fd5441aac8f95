"""Helpers several test directories share (imported after putting tests/ on sys.path, as
tests/bad_calls.py is)."""
import os
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
