"""Regression tests for the lowerings the coverage report (docs/tf_coverage.md) asked for:
each against eager TF on the same inputs, with no fallback."""
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.tf as ltf
from .conftest import assert_matches, gradients_both_ways

FLOATS = st.floats(-3, 3, width=32, allow_subnormal=False)


def lazy_and_eager(fn, *arrays):
    before = dict(lazyx.metrics()["fallback_ops"])
    lazy = fn(*[ltf.constant(a) for a in arrays])
    assert dict(lazyx.metrics()["fallback_ops"]) == before, lazyx.metrics()["fallback_ops"]
    return lazy, fn(*[tf.constant(a) for a in arrays])


def check(fn, *arrays, rtol=1e-4, atol=1e-5):
    lazy, eager = lazy_and_eager(fn, *arrays)
    lazy, eager = (lazy, eager) if isinstance(eager, (list, tuple)) else ([lazy], [eager])
    for a, b in zip(lazy, eager):
        assert_matches(a, b, rtol=rtol, atol=atol)


@settings(max_examples=20, deadline=None)
@given(x=hnp.arrays(np.float32, (3, 5), elements=st.sampled_from([0.0, -1.5, 0.5, 2.0, 1.0])),
       exclusive=st.booleans(), reverse=st.booleans(), axis=st.sampled_from([0, 1, -1]))
def test_cumprod_with_zeros(x, exclusive, reverse, axis):
    check(lambda t: tf.math.cumprod(t, axis=axis, exclusive=exclusive, reverse=reverse), x)


def test_cumprod_gradient_through_zeros():
    x = np.array([1.5, 0.0, 2.0, -1.0, 0.5], np.float32)

    def grad(t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = tf.reduce_sum(tf.math.cumprod(t) * tf.math.xlogy(t, t + 2.0))
        return tape.gradient(y, t)
    eager = grad(tf.constant(x))
    with ltf.GradientTape() as tape:
        v = tf.Variable(x)
        y = tf.reduce_sum(tf.math.cumprod(v * 1.0) * tf.math.xlogy(v * 1.0, v + 2.0))
    lazy = tape.gradient(y, v)
    np.testing.assert_allclose(np.asarray(lazy), eager.numpy(), rtol=1e-5, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(x=hnp.arrays(np.float32, (4, 6), elements=FLOATS), direction=st.sampled_from(
    ["ASCENDING", "DESCENDING"]), axis=st.sampled_from([0, -1]))
def test_sort_argsort(x, direction, axis):
    check(lambda t: tf.sort(t, axis=axis, direction=direction), x)
    x = x + np.arange(x.size, dtype=np.float32).reshape(x.shape) * 1e-3  # no ties
    check(lambda t: tf.argsort(t, axis=axis, direction=direction), x)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side):
    s = np.array([[0.0, 1, 1, 3], [-2, 0, 2, 2]], np.float32)
    v = np.array([[1.0, -1, 3, 4, 1], [2, 2.5, -3, 0, 9]], np.float32)
    check(lambda a, b: tf.searchsorted(a, b, side=side), s, v)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "sqrt_n"])
def test_unsorted_segments(name):
    data = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    ids = np.array([0, 3, 0, 1, 3], np.int32)  # segment 2 is empty
    fn = getattr(tf.math, "unsorted_segment_" + name)
    check(lambda d, i: fn(d, i, 4), data, ids)
    if name in ("sum", "prod", "max", "min", "mean"):
        check(lambda d, i: getattr(tf.math, "segment_" + name)(d, i),
              data, np.array([0, 0, 2, 2, 3], np.int32))


@pytest.mark.parametrize("tape", ["ltf", "tf"])
@pytest.mark.parametrize("name", ["unsorted_segment_max", "unsorted_segment_min",
                                  "segment_max", "segment_min"])
def test_segment_extremum_gradients_split_ties_like_tf(name, tape):
    """core/autodiff.py's scatter max/min rule (NotImplementedError before): each segment's
    cotangent goes to the elements equal to its result, split evenly among ties."""
    data = np.array([[1, 5], [3, 5], [3, 2], [0, 9], [7, 7]], np.float32)
    fn = getattr(tf.math, name)
    ids = np.array([0, 0, 1, 1, 3] if name.startswith("unsorted") else [0, 0, 1, 1, 2])

    def loss_of(d):
        out = fn(d, tf.constant(ids), 4) if name.startswith("unsorted") else \
            fn(d, tf.constant(ids))
        weights = np.arange(1, 1 + out.shape.num_elements(), dtype=np.float32)
        return tf.reduce_sum(out * weights.reshape(tuple(out.shape)))
    grads = gradients_both_ways(loss_of, data, tape)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
    assert grads[0][0, 1] == grads[0][1, 1] != 0  # (a tie, shared)


def test_scatter_nd_family():
    t = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 1], [2, 3], [0, 1]], np.int32)  # a repeated index: scatter_nd sums
    upd = np.array([1.0, 2.0, 3.0], np.float32)
    check(lambda u, i: tf.scatter_nd(i, u, (3, 4)), upd, idx)
    check(lambda a, i, u: tf.tensor_scatter_nd_add(a, i, u), t, idx, upd)
    check(lambda a, i, u: tf.tensor_scatter_nd_max(a, i, u), t, idx, upd)
    rows = np.array([[2], [0]], np.int32)
    check(lambda a, i, u: tf.tensor_scatter_nd_update(a, i, u), t, rows, t[:2] * -1)
    check(lambda a, i, u: tf.tensor_scatter_nd_sub(a, i, u), t, idx, upd)
    check(lambda a, i, u: tf.tensor_scatter_nd_sub(a, i, u), t.astype(np.int32), idx,
          upd.astype(np.int32))


def test_scatter_nd_of_a_known_lazy_shape_and_sub_stay_lazy():
    """tf.scatter_nd's `shape` given as a lazy constant (the TF guide's tensor_slicing cells,
    its tf.constant made lazy) is read from the host value it holds, no sync; and
    tensor_scatter_nd_sub is the scatter's add of the negated updates. Both were fallbacks."""
    lazyx.sync()
    lazyx.reset_metrics()
    indices = ltf.constant([[1], [3], [5], [7], [9]])
    data = ltf.constant([2, 4, 6, 8, 10])
    got = tf.scatter_nd(indices=indices, updates=data, shape=ltf.constant([10]))
    t = ltf.constant([[2, 7, 0], [9, 0, 1], [0, 3, 8]])
    sub = tf.tensor_scatter_nd_sub(t, indices=[[0, 2], [2, 2]], updates=[1, 1])
    assert lazyx.metrics()["fallbacks"] == 0 and lazyx.metrics()["syncs"] == 0
    np.testing.assert_array_equal(got.numpy(), [0, 2, 0, 4, 0, 6, 0, 8, 0, 10])
    np.testing.assert_array_equal(sub.numpy(), [[2, 7, -1], [9, 0, 1], [0, 3, 7]])
    with pytest.raises(Exception):  # a shape only the device knows: TF's own call, its error
        tf.scatter_nd(indices, data, shape=ltf.constant([10]) * ltf.constant([0]))


def test_layout_functions():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    check(lambda t: tf.roll(t, shift=[1, -2, 5], axis=[0, 2, 2]), x)
    check(lambda t: tf.slice(t, [0, 1, 1], [-1, 2, 2]), x)
    check(lambda t: tf.repeat(t, 2, axis=1), x)
    check(lambda t: tf.repeat(t, 3), x)
    img = np.arange(2 * 4 * 4 * 8, dtype=np.float32).reshape(2, 4, 4, 8)
    check(lambda t: tf.nn.depth_to_space(t, 2), img)
    check(lambda t: tf.nn.space_to_depth(t, 2), img)


def test_bitwise_and_bitcast():
    a = np.array([[5, -3, 7], [0, 12, -128]], np.int32)
    b = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    for fn in (tf.bitwise.bitwise_and, tf.bitwise.bitwise_or, tf.bitwise.bitwise_xor,
               tf.bitwise.left_shift, tf.bitwise.right_shift):
        check(fn, a, b)
    check(tf.bitwise.invert, a)
    # counts outside [0, width): TF's kernels clamp them (-2 shifts by 0, 40 by 31)
    check(tf.bitwise.left_shift, a, np.array([[-2, 40, 31], [0, -32768, 33]], np.int32))
    check(tf.bitwise.right_shift, a, np.array([[-2, 40, 31], [0, -32768, 33]], np.int32))
    check(tf.bitwise.left_shift, np.array([200, 3], np.uint8), np.array([255, 9], np.uint8))
    check(lambda t: tf.bitwise.right_shift(t, tf.constant(2, tf.uint8)),
          np.array([255, 128, 7], np.uint8))
    check(lambda t: tf.bitcast(t, tf.int32), np.array([1.5, -0.0, np.inf], np.float32))


def test_linalg():
    r = np.random.default_rng(2)
    m = r.standard_normal((2, 3, 3)).astype(np.float32)
    spd = (m @ np.swapaxes(m, -1, -2) + 3 * np.eye(3)).astype(np.float32)
    b = r.standard_normal((2, 3, 2)).astype(np.float32)
    check(tf.linalg.det, m)
    check(tf.linalg.inv, m, rtol=1e-3)
    check(tf.linalg.solve, m, b, rtol=1e-3)
    check(lambda a, c: tf.linalg.solve(a, c, adjoint=True), m, b, rtol=1e-3)
    check(lambda a, c: tf.linalg.cholesky_solve(tf.linalg.cholesky(a), c), spd, b, rtol=1e-3)
    check(tf.linalg.logdet, spd)
    check(tf.linalg.eigvalsh, spd)
    check(lambda a: tf.linalg.band_part(a, 1, 0), m)
    check(lambda a: tf.linalg.band_part(a, -1, 0), m)
    check(tf.linalg.adjoint, m)
    check(tf.linalg.diag, b[..., 0])
    check(lambda a, d: tf.linalg.set_diag(a, d), m, b[..., 0] * 0 + 7)
    check(tf.linalg.pinv, m[0], rtol=1e-3)
    check(tf.linalg.matrix_rank, np.array([[1, 2], [2, 4]], np.float32))
    check(lambda a: tf.linalg.cross(a, a[::-1]), r.standard_normal((4, 3)).astype(np.float32))
    # factors are unique up to signs: compare what they reconstruct, and |entries|
    q, rr = lazy_and_eager(tf.linalg.qr, m)[0]
    np.testing.assert_allclose((q @ rr).numpy(), m, rtol=1e-4, atol=1e-5)
    s, u, v = lazy_and_eager(tf.linalg.svd, m)[0]
    np.testing.assert_allclose((u * s[..., None, :]) @ tf.linalg.adjoint(v).numpy(), m,
                               rtol=1e-4, atol=1e-4)
    lu, p = lazy_and_eager(tf.linalg.lu, m)[0]
    eager_lu, eager_p = tf.linalg.lu(m)
    np.testing.assert_allclose(lu.numpy(), eager_lu.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(p.numpy(), eager_p.numpy())


def test_small_math():
    x = np.array([[0.0, 0.5, 2.0], [1.5, 0.0, -1.0]], np.float32)
    y = np.array([[0.0, 2.0, 0.25], [3.0, 0.5, 2.0]], np.float32)
    for fn in (tf.math.xlogy, tf.math.xdivy, tf.math.multiply_no_nan):
        check(fn, x, np.abs(y))
    check(tf.math.xlog1py, x, y)
    check(tf.math.reciprocal_no_nan, x)
    check(tf.math.nextafter, x, y)
    check(tf.math.rint, x * 1.25)
    check(lambda a, b: tf.math.add_n([a, b, a]), x, y)
    check(lambda a: tf.math.count_nonzero(a, axis=1), x)
    check(tf.math.zero_fraction, x)
    check(tf.nn.l2_loss, x)
    check(lambda a: tf.math.reduce_euclidean_norm(a, axis=0, keepdims=True), x)
    check(lambda a: tf.math.cumulative_logsumexp(a, axis=1, reverse=True), x)
    check(tf.math.lbeta, np.abs(y) + 0.5)
    check(tf.math.ndtri, np.array([0.1, 0.5, 0.9], np.float32), rtol=1e-3)
    check(tf.math.erfcinv, np.array([0.1, 0.5, 1.9], np.float32), rtol=1e-3)
    check(lambda a: tf.math.polyval([a, a * 2.0, 3.0], a), x)
    check(tf.math.is_strictly_increasing, np.array([1.0, 2.0, 2.0], np.float32))
    check(tf.math.invert_permutation, np.array([2, 0, 3, 1], np.int32))
    check(lambda t, p: tf.math.in_top_k(t, p, 2), np.array([0, 2, 1], np.int32),
          np.array([[0.1, 0.5, 0.4], [0.3, 0.3, 0.3], [0.9, 0.05, 0.05]], np.float32))


def test_nn_functions():
    r = np.random.default_rng(3)
    x = r.standard_normal((2, 4, 4, 6)).astype(np.float32)
    check(tf.nn.crelu, x)
    check(lambda t: tf.nn.local_response_normalization(t, depth_radius=2, bias=0.5), x)
    z = (r.uniform(size=(3, 4)) > 0.5).astype(np.float32)
    logits = r.standard_normal((3, 4)).astype(np.float32)
    check(lambda a, b: tf.nn.weighted_cross_entropy_with_logits(a, b, 2.5), z, logits)
    check(lambda a, b: tf.nn.log_poisson_loss(a, b, compute_full_loss=True), z * 3, logits)
    check(lambda p, i: tf.nn.embedding_lookup(p, i), logits, np.array([2, 0, 2], np.int32))
    seq = r.standard_normal((2, 8, 3)).astype(np.float32)
    check(lambda t: tf.nn.max_pool1d(t, 2, 2, "VALID"), seq)
    check(lambda t: tf.nn.avg_pool1d(t, 3, 1, "SAME"), seq)
    vol = r.standard_normal((1, 4, 4, 4, 2)).astype(np.float32)
    check(lambda t: tf.nn.max_pool3d(t, 2, 2, "VALID"), vol)
    k = r.standard_normal((2, 2, 2, 2, 3)).astype(np.float32)
    check(lambda t, w: tf.nn.conv3d(t, w, [1, 1, 1, 1, 1], "SAME"), vol, k, rtol=1e-3)


@pytest.mark.parametrize("kw", [
    dict(sizes=[1, 3, 2, 1], strides=[1, 2, 3, 1], rates=[1, 1, 1, 1], padding="VALID"),
    dict(sizes=[1, 3, 2, 1], strides=[1, 2, 3, 1], rates=[1, 2, 1, 1], padding="SAME"),
    dict(sizes=[1, 2, 2, 1], strides=[1, 1, 1, 1], rates=[1, 1, 2, 1], padding="SAME")])
def test_extract_patches(kw):
    x = np.random.default_rng(4).standard_normal((2, 7, 9, 3)).astype(np.float32)
    check(lambda t: tf.image.extract_patches(t, **kw), x)


@pytest.mark.parametrize("kw", [dict(frame_length=4, frame_step=3),
                                dict(frame_length=4, frame_step=3, pad_end=True, pad_value=2.0),
                                dict(frame_length=2, frame_step=1, axis=0)])
def test_signal_frame(kw):
    check(lambda t: tf.signal.frame(t, **kw),
          np.random.default_rng(5).standard_normal((3, 11)).astype(np.float32))


@pytest.mark.parametrize("start", [(1, 2), (3, 4), (0, 0)])  # (3, 4) clamps, as XLA does
def test_keras_slice_update(start):
    keras = pytest.importorskip("keras")
    x = np.random.default_rng(6).standard_normal((4, 5)).astype(np.float32)
    check(lambda t, u: keras.ops.slice_update(t, start, u), x, np.ones((2, 2), np.float32))


@pytest.mark.parametrize("size", [(3, 4), (14, 5), (7, 9), (1, 1), (20, 31)])
def test_image_resize_bilinear(size):
    x = np.random.default_rng(7).uniform(size=(2, 7, 9, 3)).astype(np.float32)
    check(lambda t: tf.image.resize(t, size), x)
    check(lambda t: tf.image.resize(t, size), x[0])


@pytest.mark.parametrize("dims", [[2, 3], (4,), [], [0, 2], "tensor"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_fill_with_a_lazy_value_matches_eager(dims, dtype):
    dims = tf.constant([2, 2]) if isinstance(dims, str) else dims
    value = np.asarray(1, dtype) if dtype != "float32" else np.float32(2.5)
    lazyx.reset_metrics()
    assert_matches(tf.fill(dims, ltf.constant(value)), tf.fill(dims, tf.constant(value)))
    assert lazyx.metrics()["fallback_ops"] == {}


def test_fill_errors_and_lazy_dims_are_tfs():
    for dims, value in (([2], [1.0, 2.0]), ([-1], 1.0)):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.fill(dims, tf.constant(value))
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.fill(dims, ltf.constant(value))
    lazyx.reset_metrics()  # dims held lazily whose values the host knows: read there
    np.testing.assert_array_equal(tf.fill(ltf.constant([3]), ltf.constant(1.0)).numpy(), [1, 1, 1])
    assert lazyx.metrics()["fallback_ops"] == {}



@pytest.mark.parametrize("shape", [(3, 5), (None, 5), [3, None], tf.TensorShape(None)])
def test_ensure_shape(shape):
    """A lazy value's shape is static: checked at the call, the value is x's (tf.data and
    Keras' preprocessing layers call it; it was a fallback, a sync)."""
    check(lambda t: tf.ensure_shape(t * 2.0, shape), np.arange(15, dtype=np.float32).reshape(3, 5))


def test_ensure_shape_of_another_shape_is_tfs_error_at_the_call():
    with pytest.raises(tf.errors.InvalidArgumentError, match="not compatible"):
        tf.ensure_shape(ltf.constant(np.zeros((3, 5), np.float32)), (3, 4))


def test_shape_n_and_psnr_which_checks_shapes_with_it():
    """tf.image.psnr checks its images' shapes with tf.shape_n: a fallback (a sync of both
    images) and an Assert on its result, another."""
    rng = np.random.default_rng(5)
    a, b = (rng.uniform(size=(2, 6, 6, 3)).astype(np.float32) for _ in range(2))
    check(lambda s, t: tf.image.psnr(s, t, 1.0), a, b, rtol=1e-5)
    lazy, eager = lazy_and_eager(lambda s, t: tf.shape_n([s, t[0]], out_type=tf.int64), a, b)
    assert [(v.dtype, v.numpy().tolist()) for v in lazy] == \
        [(v.dtype, v.numpy().tolist()) for v in eager]  # (eager tensors, as tf.shape's)


@pytest.mark.parametrize("fn", [tf.image.random_flip_left_right, tf.image.random_flip_up_down],
                         ids=["left_right", "up_down"])
@pytest.mark.parametrize("shape", [(4, 5, 3), (6, 4, 5, 3)], ids=["image", "batch"])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
@pytest.mark.parametrize("seed", [None, 7])
def test_random_flips_draw_tfs_numbers_and_stay_lazy(fn, shape, dtype, seed):
    """TF's own draws (the same random_uniform call), so eager TF's flips under the same
    global seed; the flip itself lazy (it was a fallback: a sync of the image per call)."""
    images = (np.random.default_rng(2).uniform(0, 200, shape)).astype(dtype)
    got = _seeded_calls_match_eager(lambda t: fn(t, seed=seed), images, 6)
    assert len({g.tobytes() for g in got}) > 1  # the draws differ from call to call


def _seeded_calls_match_eager(call, array, times):
    """`call` made `times` times on tf.constant(array), then on ltf.constant(array), each
    series after one tf.random.set_seed: equal results and no fallback; the lazy ones."""
    def run(make):
        tf.random.set_seed(11)
        return [np.asarray(call(make(array))) for _ in range(times)]
    want = run(tf.constant)
    before = dict(lazyx.metrics()["fallback_ops"])
    got = run(ltf.constant)
    assert dict(lazyx.metrics()["fallback_ops"]) == before
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    return got


@pytest.mark.parametrize("size", [(2, 3, 3), (4, 5, 1), (1, 1, 1)])
@pytest.mark.parametrize("seed", [None, 3])
def test_random_crop_draws_tfs_offsets_and_stays_lazy(size, seed):
    """tf.image.random_crop: TF's own draw, so eager TF's crops under the same global seed;
    the crop a lazy slice (it was a fallback: a sync per call)."""
    image = np.arange(60, dtype=np.float32).reshape(4, 5, 3)
    _seeded_calls_match_eager(lambda t: tf.image.random_crop(t, size, seed=seed), image, 5)


def test_random_crop_larger_than_the_image_is_tfs_error():
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError)):
        tf.image.random_crop(ltf.constant(np.zeros((4, 5, 3), np.float32)), (5, 5, 3))
