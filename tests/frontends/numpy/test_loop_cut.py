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


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _logistic_regression(X, y, p, steps):
    """ML-From-Scratch's LogisticRegression.fit: 13 nodes an iteration, most made by one op."""
    for _ in range(steps):
        y_pred = _sigmoid(X.dot(p))
        p = p - 0.1 * -(y - y_pred).dot(X)
    return p


@pytest.mark.parametrize("body", ["logistic", "dots"])
def test_a_loop_whose_body_lines_up_with_the_looks_is_cut_too(loop_cut, body):
    """The looks for a loop's call sites come every 64 nodes; a body whose ops they lined up
    with saw one site only and was never cut (the whole loop one graph: 21 s of XLA compile
    for 600 iterations of this regression)."""
    loop_cut(300)
    rng = np.random.default_rng(2)
    X, p = rng.standard_normal((40, 5)), rng.uniform(-0.5, 0.5, 5)
    y = (X[:, 0] > 0).astype(float)
    if body == "logistic":
        def run(xp_X, xp_y, xp_p):
            return _logistic_regression(xp_X, xp_y, xp_p, 200)
    else:
        def run(xp_X, xp_y, xp_p):
            for _ in range(400):
                xp_p = xp_X.T.dot(xp_X.dot(xp_p)) * 1e-2  # one line, three ops
            return xp_p
    lazyx.reset_metrics()
    got = np.asarray(run(lnp.asarray(X), lnp.asarray(y), lnp.asarray(p)))
    metrics = lazyx.metrics()
    np.testing.assert_allclose(got, run(X, y, p), rtol=1e-9)
    pieces = metrics["sync_causes"].get("node_cap", 0)
    assert pieces >= 4
    assert metrics["compiles"] <= 3
