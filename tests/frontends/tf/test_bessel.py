"""tf.math.special's modified Bessel functions (I0, I0e, I1, I1e, K0, K0e, K1, K1e) on lazy
tensors, through the Cephes compositions every frontend shares (core/cephes.py): equal to
eager TF to float rounding in float16/32/64 across the series' switch points (2, 8) and tails,
with no fallback. J0/J1/Y0/Y1 stay TF's own kernels, counted as fallbacks."""
import math

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.tf as ltf

MODIFIED = ["bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e",
            "bessel_k0", "bessel_k0e", "bessel_k1", "bessel_k1e"]
TOL = {tf.float16: 2e-3, tf.float32: 5e-6, tf.float64: 1e-12}
# (not within 1e-30 of 0: there TF's float32 kernel flushes x / 2 to zero and answers inf
# where the value is finite, K0e(1.2e-38) = 87.45)
X = st.one_of(st.floats(-30, 30, width=32, allow_subnormal=False).filter(
    lambda v: v == 0 or abs(v) > 1e-30),
              st.sampled_from([0.0, -0.0, 2.0, 8.0, -8.0, 1e-3, 80.0, math.inf, -math.inf]))


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.float16], ids=lambda d: d.name)
@pytest.mark.parametrize("name", MODIFIED)
@settings(max_examples=15, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(1, 8), elements=X))
def test_modified_bessel_functions_match_eager_tf(name, dtype, x):
    fn = getattr(tf.math.special, name)
    eager = tf.constant(x, dtype)
    want = fn(eager).numpy()
    lazyx.reset_metrics()
    got = fn(ltf.convert(eager))
    assert lazyx.metrics()["fallbacks"] == 0, lazyx.metrics()["fallback_ops"]
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol * 1e-3, equal_nan=True)


def test_bessel_i0_alias_and_the_j_family_stay_tf_kernels():
    x = tf.constant([0.5, 5.1, 8.6], tf.float64)
    lazyx.reset_metrics()
    np.testing.assert_allclose(np.asarray(tf.math.bessel_i0(ltf.convert(x))),
                               tf.math.bessel_i0(x).numpy(), rtol=1e-12)
    assert lazyx.metrics()["fallbacks"] == 0
    j0 = tf.math.special.bessel_j0(ltf.convert(x))
    assert lazyx.metrics()["fallbacks"] == 1
    np.testing.assert_array_equal(np.asarray(j0), tf.math.special.bessel_j0(x).numpy())


def test_gradients_through_the_lowered_functions_match_tf():
    """The lazy tape differentiates the compositions themselves: TF's gradients (from its
    identities, i0e' = i1e - sign(x) i0e and the like) agree to float32 rounding."""
    w = tf.Variable([0.5, 1.5, 2.0])
    x = np.array([1.0, 2.0, 3.0], np.float32)

    def loss_of(t):
        h = t * w + 0.25
        return tf.reduce_sum(tf.math.bessel_i0e(h * h) * tf.math.bessel_i1e(h)
                             + tf.math.special.bessel_k0e(h + 0.1) * tf.math.special.bessel_k1(h))

    with tf.GradientTape() as tape:
        want = tape.gradient(loss_of(tf.constant(x)), w)
    lazyx.reset_metrics()
    with ltf.GradientTape() as tape:
        got = tape.gradient(loss_of(ltf.constant(x)), w)
    assert lazyx.metrics()["fallbacks"] == 0
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=2e-5, atol=1e-7)
