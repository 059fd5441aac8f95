"""lazyx.compile of a TF step returning its argument's value unchanged under another tensor
(`tf.reshape(x, x.shape)`, `x[:]`): each replay returns this call's value, not the traced
call's tensor (returned at every replay before, silently)."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


@pytest.mark.parametrize("copy", [lambda x: tf.reshape(x, x.shape), lambda x: x[:],
                                  lambda x: tf.identity(x)], ids=["reshape", "slice", "identity"])
def test_a_copy_of_an_argument_returned_is_this_calls_value(copy):
    run = lazyx.compile(lambda x: (copy(x), x * 2.0))
    lazyx.reset_metrics()
    for k in range(4):
        x = np.full((2, 3), float(k), np.float32)
        same, double = run(ltf.constant(x))
        np.testing.assert_array_equal(np.asarray(same), x)
        np.testing.assert_array_equal(np.asarray(double), x * 2)
    assert lazyx.metrics()["replays"] >= 2
