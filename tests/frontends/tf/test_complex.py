"""Complex tensors in the TF frontend: lazy, against eager TF, with TF's no-promotion rule."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.tf as ltf
from .conftest import assert_matches, gradients_both_ways

# Parts are 0 or at least 1e-30 in magnitude: at float32's smallest normals eager TF's
# vectorized complex sqrt gives inf (measured: sqrt(1.18e-38j) -> inf j on 4 of 6 elements, 0 on
# the other 2), while lazyx gives NumPy's exact 7.67e-20(1+j); that is TF's edge, not ours.
PARTS = st.floats(-3, 3, width=32, allow_subnormal=False).filter(lambda v: v == 0 or abs(v) > 1e-30)
SHAPES = st.sampled_from([(3,), (2, 3), (2, 2, 4)])


def complex_arrays(dtype=np.complex64, shape=SHAPES):
    real = np.float32 if dtype == np.complex64 else np.float64
    return shape.flatmap(lambda s: st.tuples(hnp.arrays(real, s, elements=PARTS),
                                             hnp.arrays(real, s, elements=PARTS))).map(
        lambda p: (p[0] + 1j * p[1]).astype(dtype))


def no_fallback(fn):
    before = dict(lazyx.metrics()["fallback_ops"])
    out = fn()
    assert dict(lazyx.metrics()["fallback_ops"]) == before, lazyx.metrics()["fallback_ops"]
    return out


def both(fn, *arrays):
    lazy = no_fallback(lambda: fn(*[ltf.constant(a) for a in arrays]))
    return lazy, fn(*[tf.constant(a) for a in arrays])


ELEMENTWISE = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (b + 4),
    lambda a, b: a * 2.5 - 1, lambda a, b: tf.math.real(a) + tf.math.imag(b),
    lambda a, b: tf.math.conj(a), lambda a, b: tf.math.abs(a), lambda a, b: tf.math.angle(a),
    lambda a, b: tf.exp(a), lambda a, b: tf.math.sqrt(a), lambda a, b: tf.math.tanh(b),
    lambda a, b: tf.math.square(a), lambda a, b: tf.math.negative(a), lambda a, b: a == b,
    lambda a, b: tf.complex(tf.math.real(a), tf.math.imag(b)),
    lambda a, b: tf.cast(a, tf.float32) if a.dtype == tf.complex64 else tf.math.real(a),
]


@pytest.mark.parametrize("i", range(len(ELEMENTWISE)))
@settings(max_examples=15, deadline=None)
@given(st.sampled_from([np.complex64, np.complex128]).flatmap(
    lambda d: st.tuples(complex_arrays(d, st.just((2, 3))), complex_arrays(d, st.just((2, 3))))))
def test_elementwise(i, pair):
    assert_matches(*both(ELEMENTWISE[i], *pair), rtol=2e-5, atol=2e-5)


REDUCTIONS = [tf.reduce_sum, tf.reduce_mean, lambda a: tf.reduce_sum(a, axis=-1),
              lambda a: tf.reduce_prod(a, axis=0)]


@pytest.mark.parametrize("i", range(len(REDUCTIONS)))
@settings(max_examples=15, deadline=None)
@given(x=complex_arrays())
def test_reductions(i, x):
    assert_matches(*both(REDUCTIONS[i], x), rtol=1e-4, atol=1e-4)


@settings(max_examples=15, deadline=None)
@given(x=complex_arrays(shape=st.just((3, 4))), y=complex_arrays(shape=st.just((4, 2))))
def test_matmul_and_adjoint(x, y):
    assert_matches(*both(tf.matmul, x, y), rtol=1e-4, atol=1e-4)
    assert_matches(*both(lambda a: tf.linalg.matmul(a, a, adjoint_a=True), x), rtol=1e-4,
                   atol=1e-4)
    assert_matches(*both(lambda a: tf.linalg.adjoint(a), x))
    assert_matches(*both(lambda a: tf.transpose(a, conjugate=True), x))


FFTS = [tf.signal.fft, tf.signal.ifft, tf.signal.fft2d, tf.signal.ifft2d, tf.signal.fft3d]


@pytest.mark.parametrize("fn", FFTS, ids=lambda f: f.__name__)
@settings(max_examples=10, deadline=None)
@given(x=complex_arrays(shape=st.just((2, 2, 4))))
def test_fft(fn, x):
    assert_matches(*both(fn, x), rtol=1e-4, atol=1e-4)


def test_no_implicit_promotion():
    c = ltf.constant(np.array([1 + 2j], np.complex64))
    for other in (ltf.constant(np.array([1.0], np.float32)),
                  ltf.constant(np.array([1 + 0j], np.complex128))):
        with pytest.raises(tf.errors.InvalidArgumentError):
            c + other
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError)):
        tf.complex(ltf.constant([1.0]), ltf.constant([1.0], tf.float64))


def test_ordering_is_refused_like_tf():
    c = np.array([1 + 2j], np.complex64)
    with pytest.raises(Exception) as eager:
        tf.constant(c) < tf.constant(c)
    with pytest.raises(type(eager.value)):
        ltf.constant(c) < ltf.constant(c)


SPECTRAL_LOSSES = {
    # a real signal's spectrum (audio losses), its round trip, complex transforms both ways
    "abs_rfft": lambda x: tf.reduce_sum(tf.abs(tf.signal.rfft(x)) * tf.range(1.0, 6.0)),
    "real_rfft": lambda x: tf.reduce_sum(tf.math.real(tf.signal.rfft(x))),
    "irfft_rfft": lambda x: tf.reduce_sum(tf.signal.irfft(tf.signal.rfft(x) * 1.5) * x),
    "fft": lambda x: tf.reduce_sum(tf.abs(tf.signal.fft(tf.complex(x, x * x))) ** 2),
    "ifft2d": lambda x: tf.reduce_sum(
        tf.math.imag(tf.signal.ifft2d(tf.complex(x * x, x))) * tf.range(8.0)),
    "irfft": lambda x: tf.reduce_sum(
        tf.signal.irfft(tf.complex(x[..., :5], x[..., 3:])) ** 2),
}


@pytest.mark.parametrize("tape", ["ltf", "tf"])
@pytest.mark.parametrize("name", sorted(SPECTRAL_LOSSES))
def test_spectral_loss_gradients_match_tf(name, tape):
    """Gradients through tf.signal's transforms (core/autodiff_math.py's fft rule; before it,
    NotImplementedError), under both tapes, against eager TF."""
    x = np.random.default_rng(4).standard_normal((2, 8)).astype(np.float32)
    want, got = gradients_both_ways(SPECTRAL_LOSSES[name], x, tape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


COMPLEX_SOURCE_LOSSES = {
    "lazy_ops": lambda z: tf.reduce_sum(tf.math.real(z * tf.math.conj(z)) + tf.math.imag(z)),
    "abs_square": lambda z: tf.reduce_sum(tf.abs(z * z + 1j)),
    # tf.linalg.det of a complex matrix runs eagerly (a fallback): TF's tape carries its
    # part of the gradient, in TF's convention, and the IR's part joins it
    "with_fallback": lambda z: tf.abs(tf.linalg.det(z)) + tf.reduce_sum(tf.math.real(z * z)),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_SOURCE_LOSSES))
def test_gradients_for_complex_sources_match_tf(name):
    """A watched complex tensor under ltf.GradientTape got None (only float sources were
    differentiated); its gradient is TF's (the conjugate of the IR's JAX convention)."""
    rng = np.random.default_rng(5)
    z0 = (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))).astype(np.complex64)
    want, got = gradients_both_ways(COMPLEX_SOURCE_LOSSES[name], z0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
