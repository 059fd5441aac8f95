"""Common TF calls that used to be counted fallbacks (one sync and host round-trip each):
einsum with an ellipsis or a repeated index, tf.gather with batch_dims, conv2d with explicit
padding, tf.convert_to_tensor of a list of lazy values, and tf.image's simple ops. Each is
compared with eager TF on the same inputs (values, gradients through both tapes) and must
record no fallback."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf
from .conftest import assert_matches

_RNG = np.random.default_rng(7)


def _normal(*shape):
    return _RNG.standard_normal(shape).astype(np.float32)


def _no_fallback(fn, *values):
    before = dict(lazyx.metrics()["fallback_ops"])
    out = fn(*values)
    assert dict(lazyx.metrics()["fallback_ops"]) == before, lazyx.metrics()["fallback_ops"]
    return out


def check(fn, *arrays, rtol=1e-5, atol=1e-5, grad=True):
    """fn on lazy inputs equals fn on eager ones, with no fallback; with `grad`, so do the
    gradients of sum(fn * weights) from tf.GradientTape and ltf.GradientTape."""
    want = fn(*[tf.constant(a) for a in arrays])
    got = _no_fallback(fn, *[ltf.constant(a) for a in arrays])
    assert_matches(got, want, rtol=rtol, atol=atol)
    if not grad:
        return
    weights = _RNG.standard_normal(tuple(want.shape)).astype(want.dtype.as_numpy_dtype)

    def gradients(make, Tape):
        values = [make(a) for a in arrays]
        with Tape() as tape:
            for v in values:
                tape.watch(v)
            y = tf.reduce_sum(fn(*values) * weights)
        return [np.asarray(g) for g in tape.gradient(y, values)]
    expected = gradients(tf.constant, tf.GradientTape)
    for Tape in (tf.GradientTape, ltf.GradientTape):
        got = _no_fallback(gradients, ltf.constant, Tape)
        for g, w in zip(got, expected):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- einsum

@pytest.mark.parametrize("equation, shapes", [
    ("...qd,...kd->...qk", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    ("...qd,...kd->...qk", [(2, 1, 5, 4), (3, 6, 4)]),  # ellipses broadcast
    ("...ij->...ji", [(2, 3, 4)]),
    ("ab...,b...->a...", [(2, 3, 4), (3, 4)]),
    ("bii->b", [(3, 4, 4)]),
    ("ii->", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(3, 3)]),  # implicit output
    ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),  # three operands
    ("ij,jk", [(2, 3), (3, 4)]),
])
def test_einsum_ellipsis_diagonal_and_more_operands(equation, shapes):
    check(lambda *xs: tf.einsum(equation, *xs), *[_normal(*s) for s in shapes])


def _raises_without_fallback(error, fn, *args, **kwargs):
    """TF's own error at the call, raised by the lowering (not by running TF: no fallback)."""
    before = dict(lazyx.metrics()["fallback_ops"])
    with pytest.raises(error):
        fn(*args, **kwargs)
    assert dict(lazyx.metrics()["fallback_ops"]) == before, lazyx.metrics()["fallback_ops"]


@pytest.mark.parametrize("equation, shapes", [
    ("...ij,...jk->...ik", [(2, 2, 3), (2, 4, 2)]), ("bii->b", [(2, 3, 4)])])
def test_einsum_bad_shapes_are_tfs_error(equation, shapes):
    _raises_without_fallback(tf.errors.InvalidArgumentError, tf.einsum, equation,
                             *[ltf.constant(_normal(*s)) for s in shapes])


# ---------------------------------------------------------------- gather with batch_dims

@pytest.mark.parametrize("indices_shape, high, kwargs", [
    ((3, 2), 4, dict(axis=1, batch_dims=1)),
    ((3, 4, 6), 5, dict(axis=2, batch_dims=2)),
    ((3, 2, 2), 5, dict(axis=2, batch_dims=1)),
    ((3, 4, 5, 3), 2, dict(batch_dims=-1)),
    ((3, 7), 2, dict(axis=-1, batch_dims=1)),
    ((3,), 4, dict(axis=1, batch_dims=1)),
])
def test_gather_batch_dims(indices_shape, high, kwargs):
    params = _normal(3, 4, 5, 2)
    indices = tf.constant(_RNG.integers(0, high, indices_shape).astype(np.int32))
    check(lambda p: tf.gather(p, indices, **kwargs), params)
    check(lambda p, i: tf.gather(p, i, **kwargs), params, indices.numpy(), grad=False)


@pytest.mark.parametrize("params_shape", [(3, 4), (3, 4, 2)])
def test_gather_batch_dims_bad_index_is_tfs_error(params_shape):
    _raises_without_fallback(tf.errors.InvalidArgumentError, tf.gather,
                             ltf.constant(_normal(*params_shape)), ltf.constant([[9], [0], [0]]),
                             axis=1, batch_dims=1)


# ---------------------------------------------------------------- explicit conv padding

_PADS = [[0, 0], [1, 2], [2, 0], [0, 0]]


@pytest.mark.parametrize("kwargs", [dict(), dict(strides=[1, 2, 2, 1]), dict(dilations=2)])
def test_conv2d_explicit_padding(kwargs):
    kwargs = {"strides": 1, **kwargs}
    # (TF's CPU kernels have no gradient of a dilated convolution to compare with)
    check(lambda x, w: tf.nn.conv2d(x, w, padding=_PADS, **kwargs), _normal(2, 7, 8, 3),
          _normal(3, 2, 3, 4), rtol=1e-4, atol=1e-4, grad="dilations" not in kwargs)


def test_depthwise_conv2d_explicit_padding():
    check(lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], _PADS), _normal(2, 7, 8, 3),
          _normal(3, 3, 3, 2),
          rtol=1e-4, atol=1e-4)


def test_conv2d_bad_explicit_padding_is_tfs_error():
    x, w = ltf.constant(_normal(1, 5, 6, 2)), ltf.constant(_normal(3, 3, 2, 4))
    _no_fallback(tf.nn.conv2d, x, w, 1, [[0, 0], [1, 1], [2, 2], [0, 0]])  # (the valid one)
    for pads, error in [
            ([[1, 0], [1, 1], [2, 2], [0, 0]], tf.errors.InvalidArgumentError),  # batch axis
            ([[0, 0], [-1, 1], [2, 2], [0, 0]], tf.errors.InvalidArgumentError),
            ([[1, 1], [2, 2]], ValueError)]:
        _raises_without_fallback(error, tf.nn.conv2d, x, w, 1, pads)
