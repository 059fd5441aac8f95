"""The reference interpreter drops each intermediate after its last use (backends/reference.py,
_Interpreter.dead_after): a long chain keeps a few values alive, not all of them, so a first
step (LAZYX_TIERED=1) reuses the memory it freed. Runs on either backend: the interpreter is
compiled directly."""
import weakref

import numpy as np

from lazyx.backends import reference
from lazyx.core import ops, runtime


def test_a_chain_keeps_only_its_live_values():
    alive, peak = [], [0]

    def counting(fn):
        def run_and_count(*args, **attrs):
            out = fn(*args, **attrs)
            peak[0] = max(peak[0], sum(r() is not None for r in alive))
            alive.append(weakref.ref(out))
            return out
        return run_and_count
    host = np.linspace(-1, 1, 1000, dtype=np.float32)
    x = runtime.from_host(host)
    y, kept = x, []
    for k in range(40):
        y = ops.sin(y)
        if k == 10:
            kept.append(y)  # an output from the middle of the chain stays
    program, leaves = runtime.linearize([y, kept[0]])
    run = reference.ReferenceBackend().compile(program)
    run.steps = [(counting(fn), *rest) for fn, *rest in run.steps]
    got_y, got_mid = run([np.asarray(leaf.value) for leaf in leaves])
    want = host
    for k in range(40):
        want = np.sin(want)
        if k == 10:
            want_mid = want
    np.testing.assert_allclose(got_y, want, rtol=1e-6)
    np.testing.assert_allclose(got_mid, want_mid, rtol=1e-6)
    assert len(alive) == 40
    # when each sin runs: its input (the previous sin's result) and the kept output
    assert peak[0] <= 2, peak[0]
