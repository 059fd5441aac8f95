"""tf.strided_slice on lazy tensors (frontends/tf/api_array.strided_slice) against eager TF:
every combination of bounds (negative, out of range), strides and the five masks gives TF's
values and shape with no fallback, or TF's own error; its gradient is TF's."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.tf as ltf


def _eager_or_error(fn):
    try:
        return fn(), None
    except (tf.errors.InvalidArgumentError, ValueError, TypeError) as err:
        return None, type(err)


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_strided_slice_is_tfs(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    n = data.draw(st.integers(0, len(shape) + 1))
    bound = st.integers(-7, 7)
    begin = data.draw(st.lists(bound, min_size=n, max_size=n))
    end = data.draw(st.lists(bound, min_size=n, max_size=n))
    strides = data.draw(st.lists(st.sampled_from([-3, -2, -1, 1, 2, 3]), min_size=n, max_size=n))
    masks = {name: data.draw(st.integers(0, 2 ** n - 1)) if n else 0 for name in (
        "begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")}
    if data.draw(st.booleans()) and masks["ellipsis_mask"]:  # one ellipsis, TF's common case
        masks["ellipsis_mask"] &= -masks["ellipsis_mask"]

    def call(t):
        return tf.strided_slice(t, begin, end, strides if n else None, **masks)
    want, error = _eager_or_error(lambda: call(tf.constant(x)))
    lazyx.reset_metrics()
    if error is not None:
        with pytest.raises(error):
            np.asarray(call(ltf.constant(x)))
        return
    got = call(ltf.constant(x))
    assert isinstance(got, ltf.Tensor)
    assert lazyx.metrics()["fallback_ops"] == {}
    np.testing.assert_array_equal(np.asarray(got), want.numpy())
    assert tuple(got.shape) == tuple(want.shape)


def test_strided_slice_gradient_is_tfs():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    def grad(make, tape_cls):
        t = make(x)
        with tape_cls() as tape:
            tape.watch(t)
            y = tf.strided_slice(t, [0, 2, 3], [2, 0, 0], [1, -1, -2], shrink_axis_mask=1,
                                 new_axis_mask=0, end_mask=2)
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, t)
    want = grad(tf.constant, tf.GradientTape)
    got = grad(ltf.constant, ltf.GradientTape)
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_lazy_bounds_are_tfs_own():
    """A bound that is itself lazy would need its value: TF's op runs (a counted fallback) --
    unless the host holds it (a lazy constant), which is read there."""
    x = ltf.constant(np.arange(6, dtype=np.float32))
    lazyx.reset_metrics()
    got = tf.strided_slice(x, ltf.constant([1]), [5], [2])
    assert lazyx.metrics()["fallback_ops"] == {}
    np.testing.assert_array_equal(np.asarray(got), [1, 3])
    computed = tf.reduce_sum(ltf.constant([[1]]), axis=0)  # a bound only the device knows
    lazyx.reset_metrics()
    got = tf.strided_slice(x, computed, [5], [2])
    assert lazyx.metrics()["fallback_ops"] == {"tf.strided_slice": 1}
    np.testing.assert_array_equal(np.asarray(got), [1, 3])
