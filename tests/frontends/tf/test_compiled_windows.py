"""A window of a lazy tensor at a Python int the compiled step receives (`x[i:i + b]`,
`x[i]`) keeps the int a run-time parameter: a minibatch loop replays for every new start,
and computes what eager TF computes -- windows that clamp or shrink (the last short batch, a
negative start) trace again."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf

N, B = 30, 8
HOST = np.arange(N * 3, dtype=np.float32).reshape(N, 3)


def _calls(step, starts, *args):
    before = lazyx.metrics()["replays"]
    out = [np.asarray(step(*args, i)) for i in starts]
    return out, lazyx.metrics()["replays"] - before


def test_a_minibatch_window_replays_for_every_start():
    x = ltf.constant(HOST)

    @lazyx.compile
    def step(x, i):
        return tf.reduce_sum(x[i:i + B], axis=0) * 0.5

    starts = [0, 8, 16, 4, 12, 20, 1, 9]
    got, replays = _calls(step, starts, x)
    eager = tf.constant(HOST)
    for i, g in zip(starts, got):
        np.testing.assert_allclose(g, (tf.reduce_sum(eager[i:i + B], axis=0) * 0.5).numpy(),
                                   rtol=1e-6)
    # the first call traces, the second traces again to confirm the int's link; no more
    assert replays == len(starts) - 2


@pytest.mark.parametrize("starts", [[0, 8, 26, 28, 16], [0, -8, -3, 5, -40, 40, 3]])
def test_windows_that_clamp_or_shrink_trace_again_and_match_eager(starts):
    x = ltf.constant(HOST)

    @lazyx.compile
    def step(x, i):
        return x[i:i + B] * 2.0

    got, _ = _calls(step, starts, x)
    eager = tf.constant(HOST)
    for i, g in zip(starts, got):
        np.testing.assert_array_equal(g, (eager[i:i + B] * 2.0).numpy())


def test_an_int_index_replays_for_every_index_and_a_strided_window_guards_its_start():
    x = ltf.constant(HOST)

    @lazyx.compile
    def row(x, i):
        return x[i] * 1.0

    starts = [0, 5, 10, -3, 27]
    got, replays = _calls(row, starts, x)
    for i, g in zip(starts, got):
        np.testing.assert_array_equal(g, HOST[i])
    assert replays >= 2

    @lazyx.compile
    def strided(x, i):
        return x[i:i + B:2] + 0.0

    got, _ = _calls(strided, [0, 3, 0, 6], x)
    for i, g in zip([0, 3, 0, 6], got):
        np.testing.assert_array_equal(g, HOST[i:i + B:2])
