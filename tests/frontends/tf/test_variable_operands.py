"""A tf.Variable holding a lazy value (after `assign(lazy)`, as in a lazy training step),
passed to a TF API as an operand. TF reads a variable operand in three ways: Python's
conversion, the C++ fast path of a generated op (straight from its buffer), and variable
methods (gathers, scatters). Every way must see the lazy value -- before these hooks most of
them read the buffer from before the step, a silently stale number -- and every lowered API
stays lazy: until 2026-11-28 only those reached through conversion did, and a generated op
(tf.maximum, or tf.multiply, which Keras' `momentum * variable` calls) stored the variable
first, a sync in the middle of Keras' Muon update."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf

W0 = np.array([0.5, -1.5, 2.0], np.float32)
ONE = np.float32(1.0)

APIS = {
    "add": lambda v: tf.add(v, ONE), "multiply": lambda v: tf.multiply(v, ONE * 2),
    "maximum": lambda v: tf.maximum(v, ONE), "subtract": lambda v: tf.subtract(v, ONE),
    "reduce_sum": tf.reduce_sum, "square": tf.square, "exp": tf.exp, "abs": tf.abs,
    "negative": tf.negative, "pow": lambda v: tf.pow(v, 2.0), "divide": lambda v: v / 2.0,
    "concat": lambda v: tf.concat([v, v], 0), "stack": lambda v: tf.stack([v, v]),
    "reshape": lambda v: tf.reshape(v, (3, 1)), "cast": lambda v: tf.cast(v, tf.float64),
    "identity": tf.identity, "convert": tf.convert_to_tensor,
    "gather": lambda v: tf.gather(v, [2, 0]), "gather_nd": lambda v: tf.gather_nd(v, [[1]]),
    "where": lambda v: tf.where(v > 0, v, 0.0), "matvec": lambda v: tf.linalg.matvec(
        tf.ones((2, 3)), v), "clip": lambda v: tf.clip_by_value(v, -1.0, 1.0),
    "as_string": lambda v: tf.strings.as_string(v),
    # generated ops at their public name (the C++ fast path runs before any dispatch) and
    # lowerings that take their operands without TF's signature
    "tile": lambda v: tf.tile(v, [2]), "l2_loss": tf.nn.l2_loss, "norm": tf.norm,
    "einsum": lambda v: tf.einsum("i,i->", v, v), "rint": tf.math.rint,
    "xlogy": lambda v: tf.math.xlogy(v, ONE * 2), "reverse": lambda v: tf.reverse(v, [0]),
    "multiply_left": lambda v: tf.multiply(ONE * 2, v), "minimum": lambda v: tf.minimum(ONE, v),
}
# every API with a lowering: no run at all (TF's type-based dispatch matches the variable's
# lazy class, a generated op's public name goes straight to the lowering)
STAYS_LAZY = sorted(set(APIS) - {"as_string", "convert"})


def _lazy_variable():
    v = tf.Variable(W0)
    v.assign(ltf.constant(W0) * 3.0)  # v now holds a lazy value; its TF buffer holds W0
    return v


@pytest.mark.parametrize("name", sorted(APIS))
def test_every_read_of_a_lazy_variable_sees_its_lazy_value(name):
    want = APIS[name](tf.constant(W0 * 3.0)).numpy()
    v = _lazy_variable()
    lazyx.reset_metrics()
    got = np.asarray(APIS[name](v))
    if name == "as_string":
        assert [s.decode() for s in got] == [s.decode() for s in want]
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6)
    if name in STAYS_LAZY:
        assert lazyx.metrics()["syncs"] <= 1  # only the np.asarray above
    np.testing.assert_allclose(v.numpy(), W0 * 3.0)


@pytest.mark.parametrize("name", STAYS_LAZY)
def test_lowered_api_on_a_lazy_variable_runs_nothing(name):
    v = _lazy_variable()
    lazyx.reset_metrics()
    got = APIS[name](v)
    assert isinstance(got, ltf.Tensor)
    assert lazyx.metrics()["syncs"] == 0 and lazyx.metrics()["fallback_ops"] == {}


@pytest.mark.parametrize("method,args,expect", [
    ("scatter_add", (tf.IndexedSlices(tf.constant([10.0]), tf.constant([1])),), [0, 10, 0]),
    ("scatter_nd_update", (tf.constant([[2]]), tf.constant([7.0])), None),
])
def test_scatter_into_a_lazy_variable_applies_to_its_lazy_value(method, args, expect):
    v = _lazy_variable()
    getattr(v, method)(*args)
    want = W0 * 3.0
    if expect is not None:
        want = want + np.array(expect, np.float32)
    else:
        want = want.copy()
        want[2] = 7.0
    np.testing.assert_allclose(v.numpy(), want)


def test_plain_tape_reads_the_variable_for_real():
    v = _lazy_variable()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.multiply(v, v))
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), 2 * W0 * 3.0, rtol=1e-6)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.add(v, v))
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), [2.0] * 3)


@pytest.mark.parametrize("lifted_before", range(-2, 3))
def test_plain_tape_gradient_holds_whatever_the_lift_cache_holds(lifted_before):
    """A lowering lifts each eager operand twice (its node, then its tape source): both must
    be one leaf however full the lift cache is. When the op's second operand was the cache's
    512th entry, the cache was cleared between the two lifts of the first, and d(v * v)/dv
    came out as v -- a flake that hung on how many tensors earlier tests had lifted."""
    from lazyx.frontends.tf import tensor as ltf_tensor
    ltf_tensor._lift_cache.clear()
    lazy = ltf.constant(W0)
    seen = [tf.constant(W0 + i) for i in range(ltf_tensor._LIFT_CACHE_SIZE + lifted_before)]
    for t in seen:
        lazy + t  # lifts t (a leaf cached for it)
    test_plain_tape_reads_the_variable_for_real()


def test_tf_function_traced_on_a_lazy_variable_reads_its_lazy_value():
    v = tf.Variable(W0)

    @tf.function
    def f():
        return tf.gather(v, [0]), tf.add(v, 1.0), tf.multiply(v, 2.0)

    v.assign(ltf.constant(W0) * 3.0)
    c, a, b = f()
    np.testing.assert_allclose(np.asarray(a), W0 * 3.0 + 1.0)
    np.testing.assert_allclose(np.asarray(b), W0 * 6.0)
    np.testing.assert_allclose(np.asarray(c), W0[:1] * 3.0)


_SLICES = [(0, slice(None)), (slice(None), 1), (slice(0, 2), slice(1, None)), (-1,),
           (Ellipsis, slice(None, None, 2)), (1, slice(None, None, -1))]


@pytest.mark.parametrize("spec", _SLICES, ids=[str(s) for s in _SLICES])
def test_a_slice_of_a_variable_holding_a_lazy_value_assigns_like_tfs(spec):
    """v[spec].assign(x) (TF's strided-slice assign) on a variable whose value is pending:
    the slice is written lazily, the rest kept, as eager TF writes it (it raised
    AttributeError: the slice was a lazy tensor without `assign`)."""
    start = np.arange(12, dtype=np.float32).reshape(3, 4)
    eager = tf.Variable(tf.zeros((3, 4)))
    eager.assign(start * 2)
    lazy = tf.Variable(tf.zeros((3, 4)))
    lazy.assign(ltf.constant(start) * 2)
    shape = eager[spec].shape
    update = np.full(shape, -5.0, np.float32) - np.arange(int(np.prod(shape)),
                                                          dtype=np.float32).reshape(shape)
    eager[spec].assign(update)
    lazy[spec].assign(ltf.constant(update))
    np.testing.assert_array_equal(lazy.numpy(), eager.numpy())
    with pytest.raises(tf.errors.InvalidArgumentError):
        lazy[spec].assign(np.zeros((7,), np.float32))


class _Dense(tf.Module):
    """The TF guide's intro_to_modules layer: weights made from (here lazy) random values."""

    def __init__(self, w, b):
        super().__init__()
        self.w = tf.Variable(w, name="w")
        self.b = tf.Variable(b, name="b")

    def __call__(self, x):
        return tf.nn.relu(x @ self.w + self.b)


def _train_dense(make):
    """(creation metrics, trained weights) of _Dense made and trained on `make`'s values."""
    rng = np.random.default_rng(0)
    w0, b0 = rng.standard_normal((3, 4)).astype("float32"), np.zeros(4, "float32")
    x = rng.standard_normal((5, 3)).astype("float32")
    lazyx.sync()
    lazyx.reset_metrics()
    layer = _Dense(make(w0) * 0.5, make(b0) + 0.1)
    made = lazyx.metrics()
    assert layer.w.shape == (3, 4) and layer.w.dtype == tf.float32 and layer.w.trainable
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(layer(make(x)) ** 2)
        for v, g in zip(layer.trainable_variables, tape.gradient(loss, layer.trainable_variables)):
            v.assign_sub(0.1 * g)
    return made, [v.numpy() for v in layer.trainable_variables]


def test_variables_made_from_lazy_values_stay_lazy():
    """tf.Variable(lazy value) reads nothing: TF's initialization converted the value on the
    host (a counted fallback and a sync per variable, the most frequent fallback in the TF
    guide's tf.Module notebooks); the variable now holds the value as its shadow. A
    tf.Module trained by hand matches eager TF."""
    made, lazy = _train_dense(ltf.constant)
    assert made["syncs"] == 0 and made["fallbacks"] == 0
    _, eager = _train_dense(tf.constant)
    for a, b in zip(lazy, eager):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):  # TF's own error for a dtype the value is not
        tf.Variable(ltf.constant(np.ones(2, "float32")), dtype=tf.int32)
