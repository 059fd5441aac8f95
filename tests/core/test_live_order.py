"""A repeated step must linearize to the same program: pending roots keep their order."""
import gc

import numpy as np

import lazyx
from lazyx.core import ops, runtime


def _step(state):
    outs = []
    for i, h in enumerate(state):
        h.set(ops.add(h.node, ops.mul(h.node, h.node)))
        outs.append(runtime.LazyHandle(ops.neg(h.node)))
    return outs


def test_same_step_same_program_whatever_the_addresses():
    state = [runtime.LazyHandle(runtime.from_host(np.full((3,), 0.1 * i))) for i in range(12)]
    lazyx.reset_metrics()
    for _ in range(6):
        junk = [object() for _ in range(50)]  # shuffle the allocator between steps
        outs = _step(state)
        lazyx.sync()
        del outs, junk
        gc.collect()
    assert lazyx.metrics()["compiles"] == 1
    assert lazyx.metrics()["cache_hits"] == 5


def test_dead_handles_leave_the_live_set():
    handle = runtime.LazyHandle(ops.neg(runtime.from_host(np.ones(2))))
    before = len(runtime.live_handles())
    del handle
    gc.collect()
    assert len(runtime.live_handles()) == before - 1
