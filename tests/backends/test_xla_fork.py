"""A process forked after the XLA backend started (multiprocessing's default 'fork' on Linux,
a DataLoader worker) hung forever at its first compile: XLA's threads do not survive a fork.
Its first compile now raises a RuntimeError that says what to do instead."""
import multiprocessing
import os

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

pytestmark = pytest.mark.skipif(os.environ.get("LAZYX_BACKEND", "xla") != "xla",
                                reason="the XLA backend's limit")


def _child(queue):
    try:
        # (a graph no other test compiles: a cached one would run without a compile)
        x = lnp.asarray(np.arange(37.0))
        queue.put(("value", np.asarray(np.cosh(x / 41.0) * 3.25 - np.arctan(x)).tolist()))
    except RuntimeError as err:
        queue.put(("error", str(err)))


def run_forked(target, hang="the forked child hung"):
    """(kind, message) the forked child running target(queue) put on its queue; the test
    fails with `hang` if the child has not finished after 120 s."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=target, args=(queue,))
    child.start()
    child.join(120)
    if child.is_alive():
        child.kill()
        pytest.fail(hang)
    return queue.get(timeout=10)


def test_a_forked_child_gets_a_clear_error_instead_of_hanging():
    np.asarray(lnp.asarray(np.arange(4.0)) * 3)  # the backend has compiled in this process
    lazyx.sync()
    kind, message = run_forked(_child)
    assert kind == "error" and "spawn" in message and "forked" in message
