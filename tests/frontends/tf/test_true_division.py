"""`x / s` on a lazy TF tensor is eager TF's correctly rounded quotient, bit for bit.

XLA's algebraic simplifier made a division by a broadcast value a product with its
reciprocal: a third of `range(1, 400) / 10.0` came back one ulp off eager TF's result
(backends/xla.py, _exact_divisions)."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf


@pytest.mark.parametrize("dtype", [tf.float64, tf.float32])
def test_division_by_a_broadcast_value_is_tfs(dtype):
    values = np.arange(1, 400, dtype=np.float64) / 7.3 - 20.0
    x = tf.constant(values, dtype)
    y = tf.reverse(tf.abs(x) + 0.5, [0])
    cases = {
        "x / 10.0": lambda x, y: x / 10.0,
        "floor(x / 0.1)": lambda x, y: tf.floor(x / 0.1),
        "x / reduce_max(y)": lambda x, y: x / tf.reduce_max(y),
        "rows": lambda x, y: tf.reshape(x[:399], (21, 19)) / tf.reshape(y[:21], (21, 1)),
        "tf.math.divide": lambda x, y: tf.math.divide(x, 3.0),
        "x / sqrt(y)": lambda x, y: x / tf.sqrt(y),
    }
    lazy_x, lazy_y = ltf.constant(x), ltf.constant(y)
    for name, fn in cases.items():
        np.testing.assert_array_equal(fn(lazy_x, lazy_y).numpy(), fn(x, y).numpy(), err_msg=name)
