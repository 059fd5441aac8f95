"""tf.functions and tf.Variables holding a lazy value (between a lazy assign and the sync).

A function traced then must store the lazy value eagerly and read the variable as TF does:
an assign of the value known at tracing, baked into the function graph, would run again at
every call and reset the variable to that stale value (it did: 2 instead of 20 below)."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf

ONES = np.ones(3, np.float32)


def _lazy_add(var, value):
    var.assign_add(ltf.constant(np.asarray(value, np.float32)))


@pytest.mark.parametrize("read", [
    lambda v: tf.identity(v.read_value()) * 2.0,   # a read of the variable
    lambda v: v * 2.0,                             # its operator
    lambda v: tf.gather(v, [0, 1, 2]) * 2.0,      # a gather (sparse_read)
])
def test_a_function_traced_on_a_lazy_variable_reads_it_at_every_call(read):
    v = tf.Variable(np.zeros(3, np.float32))
    f = tf.function(lambda: read(v))
    _lazy_add(v, ONES)                      # v holds a lazy value while f is traced
    np.testing.assert_array_equal(f().numpy(), 2 * ONES)
    np.testing.assert_array_equal(v.numpy(), ONES)
    v.assign(np.full(3, 10, np.float32))    # an eager assign: the function must see it
    np.testing.assert_array_equal(f().numpy(), 20 * ONES)
    np.testing.assert_array_equal(v.numpy(), 10 * ONES)
    _lazy_add(v, ONES)
    ltf.sync()                              # stored at the barrier
    np.testing.assert_array_equal(f().numpy(), 22 * ONES)


@pytest.mark.xfail(strict=True, reason="a function traced before runs without Python: it "
                   "reads the variable's TF buffer, which gets the lazy value only at the "
                   "sync (or at an eager read)")
def test_a_function_traced_before_reads_a_lazy_value_assigned_since():
    v = tf.Variable(np.zeros(3, np.float32))
    f = tf.function(lambda: v * 2.0)
    f()
    _lazy_add(v, ONES)
    np.testing.assert_array_equal(f().numpy(), 2 * ONES)
