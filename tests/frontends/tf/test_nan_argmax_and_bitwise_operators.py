"""Two places where lazy TF was not TF (found writing one program in three frameworks):
`tf.argmax`/`tf.argmin` picked a NaN as NumPy does, where TF's kernel never picks one; and
`~`, `&`, `|`, `^` of integer tensors were always logical (an error), where TF's are bitwise."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx.frontends.tf as ltf

_ROWS = np.array([[1.0, np.nan, 3.0], [np.nan, 1.0, 2.0], [np.nan, np.nan, np.nan],
                  [-np.inf, np.nan, -np.inf], [2.0, 2.0, np.nan]])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("api", [tf.math.argmax, tf.math.argmin])
def test_arg_reductions_skip_nan_as_tf_does(api, dtype):
    x = _ROWS.astype(dtype)
    for axis in (0, 1):
        want = api(tf.constant(x), axis=axis).numpy()
        np.testing.assert_array_equal(api(ltf.constant(x), axis=axis).numpy(), want)


_INTS = (np.array([6, -3, 5], np.int32), np.array([3, 5, -1], np.int32))


@pytest.mark.parametrize("expr", ["~x", "x & y", "x | y", "x ^ y", "x & 3", "6 | y", "x ^ -1",
                                  "(x > 0) & (y > 0)", "~(x > 0)", "(x > 0) ^ (y > 0)"])
def test_operators_are_bitwise_on_integers_and_logical_on_bools(expr):
    def run(make):
        x, y = (make(v) for v in _INTS)
        return eval(expr).numpy()  # noqa: S307 -- the expressions above
    np.testing.assert_array_equal(run(ltf.constant), run(tf.constant))
