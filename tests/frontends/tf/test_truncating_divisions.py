"""Integer divisions and powers as TF does them. tf.truncatediv and tf.truncatemod (C's
division and remainder: the quotient rounds toward zero, the remainder takes the dividend's
sign) ran eagerly on TF as counted fallbacks, a sync each; they are lowered now, against
TF's own results. An integer to a known negative power is TF's error."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf

_CASES = [(np.array([-7, 7, -8, 9, 0], np.int32), np.array([2, -2, 3, -4, 5], np.int32)),
          (np.array([-7, 7, 100, -128], np.int8), np.array([3, -3, 7, 2], np.int8)),
          (np.array([-7.5, 7.5, -8.25, 0.5], np.float32), np.array([2.0, -2.0, 3.0, -0.25],
                                                                   np.float32))]


@pytest.mark.parametrize("api", [tf.truncatediv, tf.truncatemod])
@pytest.mark.parametrize("case", range(len(_CASES)))
def test_truncating_divisions_are_lazy_and_tfs(api, case):
    x, y = _CASES[case]
    try:
        want = api(tf.constant(x), y).numpy()
    except tf.errors.InvalidArgumentError:  # (truncatemod has no int8 kernel)
        with pytest.raises(tf.errors.InvalidArgumentError):
            api(ltf.constant(x) * 1, y)
        return
    before = dict(lazyx.metrics().get("fallback_ops", {}))
    got = api(ltf.constant(x) * 1, y)
    assert dict(lazyx.metrics().get("fallback_ops", {})) == before
    np.testing.assert_array_equal(got.numpy(), want)


def test_a_known_zero_divisor_is_tfs_error():
    x, y = np.array([7, -7], np.int32), np.array([0, 2], np.int32)
    with pytest.raises(Exception) as eager:
        tf.truncatediv(tf.constant(x), tf.constant(y))
    with pytest.raises(type(eager.value)):
        tf.truncatediv(ltf.constant(x), ltf.constant(y))


@pytest.mark.parametrize("exponent", [-1, 2, np.array([1, -2], np.int32),
                                      np.array([1, 2], np.int32)])
def test_an_integer_to_a_known_negative_power_is_tfs_error(exponent):
    # TF refuses it ("Integers to negative integer powers are not allowed"); lazily it gave
    # numbers ([1, 0])
    def run(make):
        x = make(np.array([1, 2], np.int32))
        y = exponent if isinstance(exponent, int) else make(exponent)
        try:
            return (x ** y).numpy().tolist()
        except tf.errors.InvalidArgumentError as err:
            return type(err)
    assert run(ltf.constant) == run(tf.constant)
