"""TF/Keras functions that ran as counted fallbacks and are now lowered (accumulate_n,
approx_max_k, keras gcd/lcm, bincount/CategoryEncoding/confusion_matrix with a static size):
lazy against eager TF on the same inputs, no fallback counted, TF's errors for bad calls."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

RNG = np.random.default_rng(0)


def lazily(fn, *args, **kwargs):
    """fn on lazy copies of the array arguments, with the fallbacks it counted."""
    lazyx.reset_metrics()
    lazy = [ltf.constant(a) if isinstance(a, np.ndarray) else a for a in args]
    out = fn(*lazy, **kwargs)
    return out, lazyx.metrics()["fallbacks"]


def same(got, want):
    assert isinstance(got, ltf.Tensor), type(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


def raises_like(fn, *args, **kwargs):
    with pytest.raises(Exception) as eager:
        fn(*args, **kwargs)
    with pytest.raises(type(eager.value)) as lazy:
        fn(*[ltf.constant(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    assert str(lazy.value).split("\n")[0][-60:] == str(eager.value).split("\n")[0][-60:]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_accumulate_n(dtype):
    xs = [(RNG.standard_normal((3, 4)) * 5).astype(dtype) for _ in range(3)]
    got, fallbacks = lazily(lambda *v: tf.math.accumulate_n(list(v), shape=[3, 4]), *xs)
    same(got, tf.math.accumulate_n(xs, shape=[3, 4]))
    assert fallbacks == 0


def test_accumulate_n_bad_calls():
    x = np.ones((2, 3), np.float32)
    raises_like(lambda a, b: tf.math.accumulate_n([a, b]), x, x[0])
    raises_like(lambda a: tf.math.accumulate_n([a], tensor_dtype=tf.int32), x)
    raises_like(lambda a: tf.math.accumulate_n([a, a], shape=[3, 2]), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("k", [0, 2, 7])
def test_approx_max_k(dtype, k):
    x = np.array([[3., 1., 3., -np.inf, 2., 0., np.inf],
                  [-0., 0., 5., 5., 5., -1., 1e4]], dtype)
    got, fallbacks = lazily(tf.math.approx_max_k, x, k)
    want = tf.math.approx_max_k(x, k)
    same(got.values, want.values)
    same(got.indices, want.indices)
    assert fallbacks == 0
    assert tf.nn.approx_max_k is tf.math.approx_max_k


def test_approx_max_k_gradient():
    x0 = RNG.standard_normal((3, 6)).astype(np.float32)

    def grad(const, tape_cls):
        v = tf.Variable(x0)
        with tape_cls() as tape:
            y = tf.reduce_sum(tf.math.approx_max_k(const(x0) * v, 3).values * [1., 2., 3.])
        return np.asarray(tape.gradient(y, v))
    np.testing.assert_array_equal(grad(ltf.constant, ltf.GradientTape),
                                  grad(tf.constant, tf.GradientTape))


def test_approx_max_k_bad_calls():
    x = np.ones((2, 3), np.float32)
    raises_like(tf.math.approx_max_k, x, 4)
    raises_like(tf.math.approx_max_k, x, 2, reduction_dimension=0)  # no CPU kernel in TF
    raises_like(tf.math.approx_max_k, x.astype(np.int32), 2)


keras = pytest.importorskip("keras")


@pytest.mark.parametrize("fn", ["gcd", "lcm"])
def test_keras_gcd_lcm_every_int8_pair(fn):
    # every pair, INT_MIN (whose abs stays negative) included: Keras' floor_mod loop exactly
    v = np.arange(-128, 128, dtype=np.int8)
    a, b = np.meshgrid(v, v)
    got, fallbacks = lazily(getattr(keras.ops, fn), a, b)
    same(got, getattr(keras.ops, fn)(tf.constant(a), tf.constant(b)))
    assert fallbacks == 0


@pytest.mark.parametrize("fn", ["gcd", "lcm"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.uint32])
def test_keras_gcd_lcm_wide_and_unsigned(fn, dtype):
    info = np.iinfo(dtype)
    # consecutive Fibonacci numbers: Euclid's longest run for their size
    v = np.array([info.min, 0, 1, 6, 4, info.max, 1836311903 % info.max,
                  1134903170 % info.max, 233, 144], dtype)
    if info.min < 0:
        v = np.concatenate([v, -v[2:5]])
    a, b = np.meshgrid(v, v)
    got, fallbacks = lazily(getattr(keras.ops, fn), a, b[:1])  # broadcast, as Keras does
    same(got, getattr(keras.ops, fn)(tf.constant(a), tf.constant(b[:1])))
    assert fallbacks == 0


def test_keras_gcd_rejects_floats_as_keras():
    with pytest.raises(TypeError, match="Arguments to gcd must be integers"):
        keras.ops.gcd(ltf.constant([1.5]), ltf.constant([2.0]))
