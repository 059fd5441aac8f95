"""Per-op trace cost of the NumPy frontend, against the core's own node construction.

    PYTHONPATH=.dev python examples/numpy_trace_cost.py

Prints microseconds per traced op and the ratio to building the same IR nodes directly with
lazyx.core.ops (the floor any frontend pays), plus eager NumPy on the same tiny arrays.
"""
import timeit

import numpy as np

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.core import ir, ops

N = 20000


def per_op(fn, number=N):
    return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e6


def main():
    host = np.ones((8, 8))
    x = lnp.asarray(host)
    y = lnp.asarray(host)
    node = x.__lazyx_handle__.node
    rows = [
        ("x + y", lambda: x + y, lambda: ops.add(node, node), lambda: host + host),
        ("np.tanh(x)", lambda: np.tanh(x), lambda: ops.tanh(node), lambda: np.tanh(host)),
        ("x * 0.5 (weak scalar)", lambda: x * 0.5,
         lambda: ops.mul(node, ops.broadcast_in_dim(ir.param(0.5, "float64"), shape=(8, 8),
                                                    broadcast_dimensions=())),
         lambda: host * 0.5),
        ("x @ y", lambda: x @ y,
         lambda: ops.dot_general(node, node, contracting_dimensions=((1,), (0,))),
         lambda: host @ host),
        ("np.sum(x, axis=0)", lambda: np.sum(x, axis=0),
         lambda: ops.reduce_sum(node, axes=(0,)), lambda: np.sum(host, axis=0)),
        ("x[2]", lambda: x[2], None, lambda: host[2]),
    ]
    print(f"{'op':<24}{'lazy us/op':>12}{'core us/op':>12}{'ratio':>8}{'eager numpy':>14}")
    for name, lazy, core, eager in rows:
        t_lazy = per_op(lazy)
        t_core = per_op(core) if core else float("nan")
        t_eager = per_op(eager)
        lazyx.sync()  # drop nothing: pending nodes are unreferenced and collected
        print(f"{name:<24}{t_lazy:>12.2f}{t_core:>12.2f}{t_lazy / t_core:>8.2f}{t_eager:>14.2f}")


if __name__ == "__main__":
    main()
