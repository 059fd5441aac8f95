"""tf.nn.ctc_unique_labels is lowered (a map_fn of tf.unique was a counted fallback; its
shapes are static: each row's distinct labels zero-padded to the row's width, and indices):
lazy against eager TF for int32 and int64 labels, repeats, negatives and all-equal rows."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("labels", [
    [[3, 1, 3, 0, 1, 7], [0, 0, 0, 0, 0, 0]],
    RNG.integers(-3, 4, (5, 9)).tolist(),
    [[2], [5]],
    [[], []],
], ids=["repeats", "random", "one-column", "no-columns"])
def test_ctc_unique_labels_matches_tf(labels, dtype):
    x = np.array(labels, dtype).reshape(len(labels), -1)
    lazyx.reset_metrics()
    got = tf.nn.ctc_unique_labels(ltf.constant(x))
    assert lazyx.metrics()["fallbacks"] == 0
    want = tf.nn.ctc_unique_labels(x)
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        assert isinstance(g, ltf.Tensor) and g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.asarray(g), w.numpy())


def test_no_rows_stays_tf_own():
    x = np.zeros((0, 4), np.int32)
    got = tf.nn.ctc_unique_labels(ltf.constant(x))
    assert [tuple(g.shape) for g in got] == [tuple(w.shape) for w in tf.nn.ctc_unique_labels(x)]
