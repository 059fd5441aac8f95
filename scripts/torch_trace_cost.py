"""Trace cost per aten op on lazyx tensors (no execution): a small MLP step traced N times.

    python scripts/torch_trace_cost.py
Prints microseconds per traced op, and eager CPU torch's time per op for scale.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                ".dev"))
import torch  # noqa: E402

import lazyx  # noqa: E402
import lazyx.frontends.torch as lt  # noqa: E402
from lazyx.frontends.torch import tensor  # noqa: E402


def count_ops(fn):
    seen = [0]
    original = tensor.dispatch

    def counting(func, args, kwargs):
        seen[0] += 1
        return original(func, args, kwargs)
    tensor.dispatch = counting
    try:
        fn()
    finally:
        tensor.dispatch = original
    return seen[0]


def main(repeats=200):
    x = torch.randn(64, 64)
    lazy = x.to(lt.device)
    lt.mark_step()

    def elementwise(t):
        for _ in range(20):
            t = t * 1.5 + 0.25
            t = torch.tanh(t)
        return t

    n_ops = count_ops(lambda: elementwise(lazy))
    for _ in range(3):
        elementwise(lazy)   # warm the meta cache
    start = time.perf_counter()
    for _ in range(repeats):
        out = elementwise(lazy)
    lazy_us = (time.perf_counter() - start) / (repeats * n_ops) * 1e6
    del out
    start = time.perf_counter()
    for _ in range(repeats):
        elementwise(x)
    eager_us = (time.perf_counter() - start) / (repeats * n_ops) * 1e6
    lazyx.sync()
    print(f"aten ops per trace: {n_ops}")
    print(f"lazy trace cost: {lazy_us:.1f} us/op   eager CPU torch: {eager_us:.1f} us/op   "
          f"ratio {lazy_us / eager_us:.1f}x")


if __name__ == "__main__":
    main()
