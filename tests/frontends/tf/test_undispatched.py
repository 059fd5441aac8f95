"""TF functions with no dispatch hook (tf.linalg.slogdet, tf.signal.rfft/irfft and their 2-D/3-D
forms), lowered through hooks.py's wrappers; compared with eager TF on the same inputs."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


@settings(max_examples=15, deadline=None)
@given(batch=st.lists(st.integers(1, 2), max_size=2), n=st.integers(1, 5),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**31 - 1))
def test_slogdet_matches_eager(batch, n, dtype, seed):
    a = np.random.default_rng(seed).standard_normal(tuple(batch) + (n, n)).astype(dtype)
    lazyx.reset_metrics()
    sign, logabs = tf.linalg.slogdet(ltf.constant(a))
    assert isinstance(sign, ltf.Tensor) and lazyx.metrics()["fallback_ops"] == {}
    want_sign, want_log = tf.linalg.slogdet(tf.constant(a))
    np.testing.assert_array_equal(np.asarray(sign), want_sign.numpy())
    np.testing.assert_allclose(np.asarray(logabs), want_log.numpy(), rtol=1e-4, atol=1e-5)


def test_slogdet_of_a_singular_matrix():
    a = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    got = [np.asarray(t) for t in tf.linalg.slogdet(ltf.constant(a))]
    want = [t.numpy() for t in tf.linalg.slogdet(tf.constant(a))]
    assert got[0] == want[0] == 0 and np.isneginf(got[1]) and np.isneginf(want[1])


@pytest.mark.parametrize("rank, suffix", [(1, ""), (2, "2d"), (3, "3d")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rfft_and_irfft_match_eager(rank, suffix, dtype):
    x = np.random.default_rng(rank).standard_normal((2, 4, 6, 8)[-rank - 1:]).astype(dtype)
    rfft, irfft = getattr(tf.signal, "rfft" + suffix), getattr(tf.signal, "irfft" + suffix)
    lazyx.reset_metrics()
    got, want = rfft(ltf.constant(x)), rfft(tf.constant(x))
    back, want_back = irfft(got), irfft(want)
    assert isinstance(back, ltf.Tensor) and lazyx.metrics()["fallback_ops"] == {}
    assert got.dtype == want.dtype and back.dtype == want_back.dtype
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(back), want_back.numpy(), rtol=tol, atol=tol)


def test_an_fft_length_that_pads_or_crops_is_a_counted_fallback():
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    lazyx.reset_metrics()
    got = tf.signal.rfft(ltf.constant(x), fft_length=[6])
    np.testing.assert_allclose(np.asarray(got), tf.signal.rfft(x, fft_length=[6]).numpy(),
                               rtol=1e-4, atol=1e-4)
    assert lazyx.metrics()["fallback_ops"] == {"tf.signal.rfft": 1}


def test_eager_calls_are_tf_own():
    x = np.arange(8, dtype=np.float32)
    assert tf.signal.rfft(tf.constant(x)).dtype == tf.complex64
    assert tf.signal.rfft.__wrapped__ is not tf.signal.rfft
