"""TF functions with no dispatch hook (tf.linalg.slogdet, tf.signal.rfft/irfft and their 2-D/3-D
forms, tf.raw_ops.Bucketize, tf.meshgrid, tf.sparse.sparse_dense_matmul, an eager TensorArray's write), lowered through hooks.py's wrappers; compared with eager TF on the same inputs."""
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

tf = pytest.importorskip("tensorflow")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402
from .conftest import assert_matches  # noqa: E402


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


def test_unlowered_generated_linalg_ops_are_counted_fallbacks():
    # no dispatch hook and no lowering: they used to refuse their lazy operand (a TypeError).
    # banded_triangular_solve is lowered for real matrices (test_linalg_lowered.py); a
    # complex one still takes this way.
    rng = np.random.default_rng(1)
    m = (np.eye(3) * 2 + 0.1 * rng.standard_normal((3, 3))).astype(np.complex64)
    band = rng.uniform(1, 2, (2, 4)).astype(np.complex64)
    rhs = rng.standard_normal((4, 2)).astype(np.complex64)
    lazyx.reset_metrics()
    logm = tf.linalg.logm(ltf.constant(m))
    solved = tf.linalg.banded_triangular_solve(ltf.constant(band), ltf.constant(rhs))
    assert isinstance(logm, ltf.Tensor) and isinstance(solved, ltf.Tensor)
    np.testing.assert_allclose(np.asarray(logm), tf.linalg.logm(m).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(solved),
                               tf.linalg.banded_triangular_solve(band, rhs).numpy(), rtol=1e-5)
    assert lazyx.metrics()["fallback_ops"] == {"tf.linalg.logm": 1,
                                                "tf.linalg.banded_triangular_solve": 1}


def test_eager_calls_are_tf_own():
    x = np.arange(8, dtype=np.float32)
    assert tf.signal.rfft(tf.constant(x)).dtype == tf.complex64
    assert tf.signal.rfft.__wrapped__ is not tf.signal.rfft


_FLOATS = st.floats(-4, 4, width=32)


@settings(max_examples=25, deadline=None)
# subnormals: TF's kernel sees them as zero (its CPU threads flush them)
@example(values=[-7.291096039728456e-41, 1e-39], bounds=[0.0], dtype=np.float32)
@example(values=[-5e-324, 5e-324, -0.0], bounds=[0.0], dtype=np.float64)
@example(values=[0.0, -0.0], bounds=[1.6964119209116235e-41], dtype=np.float32)
@example(values=[0.0, -5.741841477047903e-39], bounds=[1.0158833728790693e-38],
         dtype=np.float64)  # a normal float64 value against a subnormal float32 boundary
@given(values=st.lists(_FLOATS | st.just(float("nan")), min_size=1, max_size=8),
       bounds=st.lists(_FLOATS, max_size=5),
       dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int64]))
def test_bucketize_matches_eager(values, bounds, dtype):
    """keras.ops.digitize and keras.layers.Discretization call tf.raw_ops.Bucketize, which
    converts its input before any dispatch: before the wrapper, a TypeError on lazy input."""
    x = np.asarray(values, np.float64)
    x = np.nan_to_num(x).astype(dtype) if np.dtype(dtype).kind == "i" else x.astype(dtype)
    bounds = sorted(bounds)
    lazyx.reset_metrics()
    got = tf.raw_ops.Bucketize(input=ltf.constant(x), boundaries=bounds)
    assert isinstance(got, ltf.Tensor) and lazyx.metrics()["fallback_ops"] == {}
    want = tf.raw_ops.Bucketize(input=tf.constant(x), boundaries=bounds)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_keras_discretization_stays_lazy():
    keras = pytest.importorskip("keras")
    x = np.random.default_rng(0).uniform(0, 1, (4, 3)).astype(np.float32)
    layer = keras.layers.Discretization(bin_boundaries=[0.25, 0.5, 0.75])
    lazyx.reset_metrics()
    got = layer(ltf.constant(x))
    assert isinstance(got, ltf.Tensor) and lazyx.metrics()["fallback_ops"] == {}
    np.testing.assert_array_equal(np.asarray(got), layer(tf.constant(x)).numpy())


def test_unsorted_boundaries_raise_tf_own_error():
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.raw_ops.Bucketize(input=ltf.constant(np.ones(3, np.float32)), boundaries=[2.0, 1.0])


@settings(max_examples=25, deadline=None)
@given(lengths=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       indexing=st.sampled_from(["xy", "ij"]), dtype=st.sampled_from(["float32", "int32"]),
       matrix_first=st.booleans(), seed=st.integers(0, 99))
def test_meshgrid_matches_eager_and_stays_lazy(lengths, indexing, dtype, matrix_first, seed):
    """tf.meshgrid is replaced in its namespace (TF's body would fall back on tf.stack and size
    first): each input flattened (a 2-D one too, as TF's reshape does) and broadcast."""
    rng = np.random.default_rng(seed)
    arrays = [rng.integers(-9, 9, n).astype(dtype) for n in lengths]
    if matrix_first and lengths[0] % 2 == 0:
        arrays[0] = arrays[0].reshape(2, -1)
    want = tf.meshgrid(*[tf.constant(a) for a in arrays], indexing=indexing)
    lazyx.reset_metrics()
    got = tf.meshgrid(*[ltf.constant(a) for a in arrays], indexing=indexing)
    assert lazyx.metrics()["fallback_ops"] == {}
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_matches(g, w)


def test_meshgrid_errors_and_keras_are_tfs():
    x, n = ltf.constant([1.0, 2.0]), ltf.constant([1, 2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError):  # TF multiplies mixed dtypes
        tf.meshgrid(x, n)
    with pytest.raises(ValueError):
        tf.meshgrid(x, indexing="yx")
    keras = pytest.importorskip("keras")
    lazyx.reset_metrics()
    a, b = keras.ops.meshgrid(x, ltf.constant([3.0, 4.0, 5.0]))
    assert isinstance(a, ltf.Tensor) and lazyx.metrics()["fallback_ops"] == {}
    np.testing.assert_array_equal(b.numpy(), [[3, 3], [4, 4], [5, 5]])
    with tf.GradientTape() as tape:  # the broadcast's gradient sums back onto each input
        v = tf.Variable([1.0, 2.0])
        tape.watch(v)
        gx, _ = tf.meshgrid(v * 1.0, ltf.constant([0.0, 1.0, 2.0]))
        loss = tf.reduce_sum(gx * gx)
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), [6.0, 12.0])


@pytest.mark.parametrize("adjoint_a, adjoint_b", [(False, False), (True, True)])
def test_sparse_dense_matmul_of_a_host_sparse_tensor_is_lazy(adjoint_a, adjoint_b):
    # a gather of b's rows and a scatter-add into the sparse rows (a TypeError deep in TF
    # before); duplicated positions add up, as in TF
    sp = tf.sparse.SparseTensor([[0, 1], [2, 3], [2, 3], [3, 0]], [1.0, 2.0, -0.5, 3.0], [4, 4])
    b = np.random.default_rng(2).standard_normal((2, 4) if adjoint_b else (4, 2)).astype("f4")
    lazyx.reset_metrics()
    got = tf.sparse.sparse_dense_matmul(sp, ltf.constant(b), adjoint_a, adjoint_b)
    assert lazyx.metrics()["fallback_ops"] == {}
    assert_matches(got, tf.sparse.sparse_dense_matmul(sp, tf.constant(b), adjoint_a, adjoint_b))
    x = ltf.constant(b)
    with ltf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.sparse.sparse_dense_matmul(sp, x, adjoint_a, adjoint_b) ** 2)
    y = tf.constant(b)
    with tf.GradientTape() as eager:
        eager.watch(y)
        want = tf.reduce_sum(tf.sparse.sparse_dense_matmul(sp, y, adjoint_a, adjoint_b) ** 2)
    assert_matches(tape.gradient(loss, x), eager.gradient(want, y))
    with pytest.raises(tf.errors.InvalidArgumentError):  # TF's own error, from its kernel
        tf.sparse.sparse_dense_matmul(sp, ltf.constant(np.ones((3, 2), "f4")))


def test_an_eager_tensor_array_takes_lazy_writes():
    # a hand-written RNN loop's ta.write(t, h): TF converted h to an EagerTensor (TypeError)
    def loop(x):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        h = tf.zeros_like(x[0])
        for t in range(3):
            h = tf.tanh(x[t] + h)
            ta = ta.write(t, h)
        return ta.stack(), ta.read(1)
    x = np.random.default_rng(3).standard_normal((3, 4)).astype("f4")
    lazyx.reset_metrics()
    got = loop(ltf.constant(x))
    assert lazyx.metrics()["fallback_ops"] == {} and lazyx.metrics()["syncs"] == 0
    for g, w in zip(got, loop(tf.constant(x))):
        assert_matches(g, w)
    ta = tf.TensorArray(tf.float32, size=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="TensorArray dtype is float32"):
        ta.write(0, ltf.constant([1, 2]))  # TF's own check, at the call
