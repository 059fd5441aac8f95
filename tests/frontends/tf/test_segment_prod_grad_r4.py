"""The gradient of tf.math.unsorted_segment_prod / segment_prod on lazy values (it raised
"no gradient for scatter mode 'mul'", explore_tf4 finding 6), against eager TF's rule: a
segment with one zero, one with two zeros, a single-element segment that is zero, and empty
segments; through tf.GradientTape and ltf.GradientTape, on the backend under test."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf

_RNG = np.random.default_rng(5)


def _data():
    a = _RNG.standard_normal((6, 3)).astype(np.float32)
    a[1, 0] = 0.0                  # segment 0 (rows 1, 4), column 0: one zero
    a[1, 2] = a[4, 2] = 0.0        # segment 0, column 2: two zeros
    a[3, 1] = 0.0                  # segment 1 holds row 3 only: a zero alone
    a[5, 1] = 0.0                  # segment 2 (rows 0, 2, 5), column 1: one zero
    return a


_IDS = [2, 0, 2, 1, 0, 2]
_CASES = {
    "unsorted": lambda x: tf.math.unsorted_segment_prod(x, tf.constant(_IDS), 3),
    "unsorted_empty_segments": lambda x: tf.math.unsorted_segment_prod(x, _IDS, 5),
    "sorted": lambda x: tf.math.segment_prod(x, [0, 0, 1, 1, 1, 3]),
    "unsorted_2d_ids": lambda x: tf.math.unsorted_segment_prod(
        tf.reshape(x, (3, 2, 3)), [[1, 0], [1, 1], [3, 0]], 4),
}


@pytest.mark.parametrize("name", sorted(_CASES))
@pytest.mark.parametrize("tape", ["tf", "ltf"])
def test_segment_prod_gradient(name, tape):
    fn, data = _CASES[name], _data()
    weights = _RNG.standard_normal(tuple(fn(tf.constant(data)).shape)).astype(np.float32)

    def gradient(make, Tape):
        x = make(data)
        with Tape() as t:
            t.watch(x)
            loss = tf.reduce_sum(fn(x) * weights)
        return np.asarray(t.gradient(loss, x))
    want = gradient(tf.constant, tf.GradientTape)
    got = gradient(ltf.constant, ltf.GradientTape if tape == "ltf" else tf.GradientTape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
