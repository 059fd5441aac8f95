"""A window of an array at a Python int the compiled step receives (`X[i:i + b]`, `X[i]`,
`X[i:i + b] = v`) keeps the int a run-time parameter: a minibatch loop replays for every new
start instead of tracing again, and computes what NumPy computes -- the last short batch and
negative starts included, which change the window's size or clamp it, and trace again."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

N, B = 30, 8
HOST = np.arange(N * 3, dtype=np.float32).reshape(N, 3)


def _fresh():
    return lnp.asarray(HOST.copy())


def _calls(step, starts, *args):
    before = lazyx.metrics()
    out = [np.asarray(step(*args, i)) for i in starts]
    after = lazyx.metrics()
    return out, after["replays"] - before["replays"]


def test_a_minibatch_window_replays_for_every_start():
    X = _fresh()

    @lazyx.compile
    def step(X, scale, i):
        return X[i:i + B].sum(axis=0) * scale

    starts = [0, 8, 16, 4, 12, 20, 1, 9]
    got, replays = _calls(step, starts, X, 0.5)
    for i, g in zip(starts, got):
        np.testing.assert_allclose(g, HOST[i:i + B].sum(axis=0) * 0.5, rtol=1e-6)
    # the first call traces, the second traces again to confirm the int's link; no more
    assert replays == len(starts) - 2


@pytest.mark.parametrize("starts", [[0, 8, 26, 28, 16], [0, -8, -3, 5, -40, 40, 3]])
def test_windows_that_clamp_or_shrink_trace_again_and_match_numpy(starts):
    X = _fresh()

    @lazyx.compile
    def step(X, i):
        return X[i:i + B] * 2.0

    got, _ = _calls(step, starts, X)
    for i, g in zip(starts, got):
        np.testing.assert_array_equal(g, HOST[i:i + B] * 2.0)


def test_an_int_index_and_a_window_write_replay_for_every_start():
    X = _fresh()

    @lazyx.compile
    def step(X, i):
        X[i:i + 2] = X[i:i + 2] + 1.0
        return X[i] * 1.0

    want = HOST.copy()
    starts = [0, 5, 10, 3, 27, -3]
    got, replays = _calls(step, starts, X)
    for i, g in zip(starts, got):
        want[i:i + 2] = want[i:i + 2] + 1.0
        np.testing.assert_array_equal(g, want[i])
    np.testing.assert_array_equal(np.asarray(X), want)
    assert replays >= 3


def test_a_strided_window_guards_its_start_by_value():
    """A step other than 1 makes the start a static attribute: a new start traces again
    (correct, never a stale window)."""
    X = _fresh()

    @lazyx.compile
    def step(X, i):
        return X[i:i + B:2] + 0.0

    starts = [0, 3, 0, 6, 3]
    got, _ = _calls(step, starts, X)
    for i, g in zip(starts, got):
        np.testing.assert_array_equal(g, HOST[i:i + B:2])
    # the miss names the argument as the call wrote it (args[1]: the numbers' own count
    # would call it "argument 0")
    reasons = " ".join(lazyx.metrics()["replay_miss_reasons"])
    assert "Python number argument args[1] changed" in reasons, reasons


def test_an_out_of_bounds_int_index_raises_numpys_error():
    X = _fresh()

    @lazyx.compile
    def step(X, i):
        return X[i] * 1.0

    np.testing.assert_array_equal(np.asarray(step(X, 2)), HOST[2])
    with pytest.raises(IndexError, match="out of bounds"):
        step(X, N)
