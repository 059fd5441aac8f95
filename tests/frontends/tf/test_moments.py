"""tf.nn.weighted_moments, tf.nn.sufficient_statistics and tf.nn.compute_average_loss on lazy
tensors (frontends/tf/api_nn.py, api_losses.py) against eager TF: values, shapes and dtypes with
no fallback, TF's own errors for what it refuses, and a loss gradient through the scaling."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import lazyx.frontends.tf as ltf

from .conftest import gradients_both_ways, same_as_eager

FLOATS = st.floats(-5, 5, width=32, allow_subnormal=False)


def _same(fn, *arrays, **kwargs):
    same_as_eager(fn, *arrays, **{"rtol": 2e-5, "atol": 1e-5, **kwargs})


def _axes(data, rank):
    return data.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank,
                              unique_by=lambda a: a % rank))


@settings(max_examples=30, deadline=None)
@given(st.data(), st.sampled_from([np.float32, np.float64]), st.booleans())
def test_weighted_moments(data, dtype, keepdims):
    x = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                             elements=FLOATS))
    # weights of x's shape, or with some axes 1 (broadcast), possibly all zero (div_no_nan)
    shape = tuple(d if data.draw(st.booleans()) else 1 for d in x.shape)
    w = data.draw(hnp.arrays(dtype, shape, elements=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])))
    axes = _axes(data, x.ndim)
    _same(lambda t, v: tf.nn.weighted_moments(t, axes, v, keepdims=keepdims), x, w)


@settings(max_examples=30, deadline=None)
@given(st.data(), st.sampled_from([None, 0.5, "tensor"]), st.booleans())
def test_sufficient_statistics(data, shift, keepdims):
    x = data.draw(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                             elements=FLOATS))
    axes = _axes(data, x.ndim)
    if shift == "tensor":
        _same(lambda t, s: tf.nn.sufficient_statistics(t, axes, s, keepdims), x,
              np.float32(0.25), constants=(0,))
    else:  # (the count: TF's constant too; a Python shift comes back as TF converted it)
        _same(lambda t: tf.nn.sufficient_statistics(t, axes, shift, keepdims), x,
              constants=(0, 3))


@settings(max_examples=30, deadline=None)
@given(st.data(), st.sampled_from(["none", "scalar", "same", "trailing 1", "rank less"]),
       st.sampled_from([None, 8, 0]))
def test_compute_average_loss(data, weighting, batch):
    losses = data.draw(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=2,
                                                               max_side=4), elements=FLOATS))
    weight_shape = {"scalar": (), "same": losses.shape, "trailing 1": losses.shape + (1,),
                    "rank less": losses.shape[:-1]}.get(weighting)
    if weighting == "rank less" and not weight_shape:
        weight_shape = ()
    arrays = [losses]
    if weight_shape is not None:
        arrays.append(data.draw(hnp.arrays(np.float32, weight_shape, elements=FLOATS)))

    def fn(loss, weights=None):
        return tf.nn.compute_average_loss(loss, sample_weight=weights, global_batch_size=batch)
    _same(fn, *arrays)


def test_compute_average_loss_errors_are_tfs():
    with pytest.raises(ValueError):  # a scalar is not a per-example loss
        tf.nn.compute_average_loss(ltf.constant(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError):
        np.asarray(tf.nn.compute_average_loss(ltf.constant([1.0, 2.0]), global_batch_size=-1))


def test_a_scaled_loss_gradient_is_tfs():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(6, 2)
    w0 = np.array([[0.5], [-1.5]], np.float32)

    def grad(make, tape_cls, variable):
        w = variable(w0)
        with tape_cls() as tape:
            per_example = tf.reduce_sum(tf.square(tf.matmul(make(x), w)), axis=1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=12)
        return loss, tape.gradient(loss, w)
    want = grad(tf.constant, tf.GradientTape, tf.Variable)
    got = grad(ltf.constant, ltf.GradientTape, tf.Variable)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-6)


@pytest.mark.parametrize("stats", [(3,), (1, 1, 1, 3)])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_batch_normalization_takes_tfs_formula(stats, affine):
    """tf.nn.batch_normalization of lazy tensors: eager TF's values and gradient, and TF's
    formula -- the rsqrt taken once per channel, at the statistics' shape, not per element of
    x (which also made its gradient reduce full-size products)."""
    import lazyx
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5, 5, 3)).astype(np.float32)
    mean, offset, scale = (rng.standard_normal(stats).astype(np.float32) for _ in range(3))
    var = np.abs(rng.standard_normal(stats)).astype(np.float32) + 0.1
    given = [a for a, keep in zip((offset, scale), affine) if keep]

    def norm(t, m, v, *rest):
        it = iter(rest)
        off, sc = (next(it) if keep else None for keep in affine)
        return tf.nn.batch_normalization(t, m, v, off, sc, 1e-3)

    _same(norm, x, mean, var, *given)
    lazy = norm(*[ltf.constant(a) for a in (x, mean, var, *given)])
    rsqrt = [line for line in lazyx.ir_text(lazy).splitlines() if "= rsqrt(" in line]
    assert len(rsqrt) == 1 and f"float32[{','.join(map(str, stats))}]" in rsqrt[0], rsqrt
    want, got = gradients_both_ways(
        lambda t: tf.reduce_sum(tf.tanh(norm(t, mean, var, *given))), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
