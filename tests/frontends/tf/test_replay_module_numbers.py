"""lazyx.compile and a Python number a tf.Module's own code reads: an annealed
`self.temperature` of an inner module, read in its __call__, which the step only calls. The
step's code never spells it, and each replay divided by the traced call's value (silently)
before host_state.read_numbers walked tf.Module trees."""
import numpy as np
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf


class _Inner(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.arange(9.0, dtype=np.float32).reshape(3, 3))
        self.temperature = 1.0

    def __call__(self, x):
        return tf.matmul(x, self.w) / self.temperature


class _Outer(tf.Module):
    def __init__(self):
        super().__init__()
        self.inner = _Inner()

    def __call__(self, x):
        return tf.nn.softmax(self.inner(x))


def test_an_annealed_float_an_inner_module_reads_is_a_number_of_each_call():
    model = _Outer()
    compiled = lazyx.compile(lambda x: model(x))
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    lazyx.reset_metrics()
    for i in range(6):
        model.inner.temperature = 1.0 + 0.5 * i
        want = model(tf.constant(x)).numpy()
        got = np.asarray(compiled(ltf.constant(x)))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert lazyx.metrics()["replays"] >= 3  # (a run-time parameter after its first change)
