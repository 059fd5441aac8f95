"""A loop with no barrier: past LAZYX_LOOP_CUT pending nodes the graph is cut as the same call
site of the loop's body begins, so every piece after the first is one graph, compiled once.
Before, such a loop made one graph until the first read (or LAZYX_NODE_CAP, 100,000 nodes),
and XLA's compile time grows faster than its length: a 10,000-step simulation never finished."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

SHAPE = (7, 3)  # (a shape no other test uses: its compiles are this test's)


def _simulate(xp, u, steps):
    for _ in range(steps):
        u = u + 0.01 * (np.tanh(u) - u * 0.5)  # one line, five ops: a piece starts at one
    return u


@pytest.fixture
def loop_cut(monkeypatch):
    def set_to(nodes):
        monkeypatch.setenv("LAZYX_LOOP_CUT", str(nodes))
        lazyx.sync()  # (the mark is read at each cut)
    return set_to


def test_a_loop_with_no_barrier_is_cut_into_one_repeated_graph(loop_cut):
    loop_cut(300)
    u0 = np.random.default_rng(0).standard_normal(SHAPE)
    lazyx.reset_metrics()
    got = np.asarray(_simulate(lnp, lnp.asarray(u0), 600))
    metrics = lazyx.metrics()
    np.testing.assert_allclose(got, _simulate(np, u0, 600), rtol=1e-12)
    pieces = metrics["sync_causes"].get("node_cap", 0)
    assert pieces >= 10  # ~3,000 nodes in pieces of ~300
    # the first piece, the repeated one, the remainder the read cut
    assert metrics["compiles"] + metrics["cache_hits"] == pieces + 1
    assert metrics["compiles"] <= 3


def test_loop_cut_0_leaves_the_graph_whole(loop_cut):
    loop_cut(0)
    u0 = np.random.default_rng(1).standard_normal(SHAPE)
    lazyx.reset_metrics()
    got = np.asarray(_simulate(lnp, lnp.asarray(u0), 100))
    assert lazyx.metrics()["sync_causes"] == {"convert": 1}
    np.testing.assert_allclose(got, _simulate(np, u0, 100), rtol=1e-12)
