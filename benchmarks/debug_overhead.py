"""What the debugging tools cost a cached training step (run: python benchmarks/debug_overhead.py).

A step traces a small MLP-like graph (about 30 ops), syncs it (a cache hit) and reads one
scalar back, the usual shape of a loop that logs its loss. Prints the median step time with the
tools off, then with each tool on, as a ratio to the plain run measured in the same process.
"""
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".dev"))
import lazyx  # noqa: E402
from lazyx.core import explain, ir, ops, runtime  # noqa: E402
from lazyx.core.dump import Dumper  # noqa: E402

STEPS, REPEATS = 100, 15
rng = np.random.default_rng(0)
W = [runtime.LazyHandle(runtime.from_host(rng.standard_normal((64, 64), dtype=np.float32)))
     for _ in range(4)]
X = runtime.LazyHandle(runtime.from_host(rng.standard_normal((32, 64), dtype=np.float32)))


def step(lr):
    h = X.node
    for w in W:
        h = ops.dot_general(h, w.node, contracting_dimensions=((1,), (0,)))
        h = ops.max_(h, ops.broadcast_in_dim(ir.param(0.0, "float32"), shape=h.shape,
                                             broadcast_dimensions=()))
    loss = ops.reduce_sum(ops.mul(h, h), axes=(0, 1))
    for w in W:  # a stand-in for an update that keeps the weights pending until the sync
        scale = ops.broadcast_in_dim(ir.param(1.0 - lr, "float32"), shape=w.node.shape,
                                     broadcast_dimensions=())
        w.set(ops.mul(w.node, scale))
    loss = runtime.LazyHandle(loss)
    lazyx.sync()
    return float(runtime.to_host(loss, cause="item"))


def seconds_per_step():
    start = time.perf_counter()
    for _ in range(STEPS):
        step(1e-3)
    return (time.perf_counter() - start) / STEPS


def main():
    print(f"backend {lazyx.backend()}, median of {REPEATS} blocks of {STEPS} cached steps, "
          f"conditions interleaved")
    step(1e-3)  # compile outside the timing
    with tempfile.TemporaryDirectory() as folder:
        tools = {
            "tools off": contextlib.nullcontext,
            "explain (silent recording)": lambda: explain.Explainer(None),
            "explain (LAZYX_DEBUG text)": lambda: explain.Explainer(io.StringIO()),
            "profile timeline": lambda: lazyx.profile(os.path.join(folder, "t.json")),
            "LAZYX_DUMP_DIR dumper": lambda: _Started(Dumper(folder)),
        }
        times = {name: [] for name in tools}
        for _ in range(REPEATS):
            for name, make in tools.items():
                with make():
                    times[name].append(seconds_per_step())
    plain = statistics.median(times["tools off"])
    for name, values in times.items():
        t = statistics.median(values)
        print(f"  {name:<28}{t * 1e6:9.1f} us/step  {t / plain:.2f}x")


class _Started:
    def __init__(self, listener):
        self.listener = listener

    def __enter__(self):
        return self.listener.start()

    def __exit__(self, *exc):
        self.listener.stop()


if __name__ == "__main__":
    main()
