"""A float argument that TF reads on the host (tf.linspace's stop, a shape computed from it)
while the same float also feeds the graph: replays follow each call's value, as eager TF."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

X = np.array([3.0, -1.5, 0.25, 7.0, 2.0], dtype=np.float32)


@pytest.mark.parametrize("fn", [
    lambda x, k: x * tf.linspace(0.0, k, 5) + k,
    lambda x, k: tf.reduce_sum(x * tf.linspace(-k, k, 5)) * k,
    lambda x, k: tf.linspace(0.0, k, 5) + tf.reduce_max(x),
], ids=["linspace-and-parameter", "symmetric-linspace", "linspace-only"])
def test_linspace_of_a_float_argument_follows_each_call(fn):
    step = lazyx.compile(fn)
    x = ltf.constant(X)
    for k in [1.0, 2.5, 0.5, 2.5, 4.0]:
        want = fn(tf.constant(X), k).numpy()
        np.testing.assert_allclose(np.asarray(step(x, k)), want, rtol=1e-6,
                                   err_msg=f"at k={k}")
