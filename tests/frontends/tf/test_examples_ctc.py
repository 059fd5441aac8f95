"""keras-io captcha_ocr / handwriting_recognition: the CTC loss builds its labels as
tf.SparseTensor(indices, values, shape) from lazy dense labels. TF's constructor converted the
lazy components implicitly, which lazyx refuses: a TypeError (explore_kio finding 3). Now the
components are materialized, a counted fallback, and the CTC step matches eager TF."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

INDICES = np.array([[0, 1], [1, 0], [1, 2]], np.int64)
VALUES = np.array([1.0, 2.0, 3.0], np.float32)


def test_sparse_tensor_of_lazy_components_is_a_counted_fallback():
    want = tf.sparse.to_dense(tf.SparseTensor(INDICES, VALUES, [2, 3])).numpy()
    lazyx.reset_metrics()
    sparse = tf.SparseTensor(ltf.constant(INDICES), ltf.constant(VALUES), [2, 3])
    assert lazyx.metrics()["fallback_ops"] == {"tf.SparseTensor": 1}
    np.testing.assert_array_equal(tf.sparse.to_dense(sparse).numpy(), want)


def test_sparse_tensor_errors_are_tfs():
    with pytest.raises(ValueError) as want:
        tf.SparseTensor(INDICES, VALUES[:2], [2, 3])
    with pytest.raises(type(want.value)):
        tf.SparseTensor(ltf.constant(INDICES), ltf.constant(VALUES[:2]), [2, 3])


def _ctc_step(constant, tape):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6, 4)), keras.layers.Dense(5, activation="softmax")])
    rng = np.random.default_rng(0)
    x = constant(rng.standard_normal((2, 6, 4)).astype(np.float32))
    labels = constant(np.array([[1, 2, 3], [2, 2, 4]], np.int32))
    with tape() as t:
        y_pred = model(x)
        mask = tf.ones_like(labels, dtype=tf.bool)  # every label counts (dense, fixed length)
        indices = tf.where(mask)                    # host values: no lazy shape is needed
        sparse = tf.SparseTensor(tf.cast(indices, tf.int64), tf.gather_nd(labels, indices),
                                 tf.cast(tf.shape(labels), tf.int64))
        logits = tf.math.log(tf.transpose(y_pred, [1, 0, 2]) + 1e-7)
        loss = tf.reduce_mean(tf.compat.v1.nn.ctc_loss(sparse, logits, [6, 6]))
    grads = t.gradient(loss, model.trainable_variables)
    return float(loss), [np.asarray(g) for g in grads]


@pytest.mark.parametrize("tape", ["ltf", "tf"])
def test_ctc_step_with_lazy_labels_matches_eager(tape):
    want_loss, want_grads = _ctc_step(tf.constant, tf.GradientTape)
    loss, grads = _ctc_step(ltf.constant, ltf.GradientTape if tape == "ltf" else
                            tf.GradientTape)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    for got, want in zip(grads, want_grads):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_compat_v1_gather_nd_is_lowered():
    params = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([[0, 1], [2, 3]], np.int64)
    want = tf.compat.v1.gather_nd(tf.constant(params), tf.constant(indices)).numpy()
    lazyx.reset_metrics()
    got = tf.compat.v1.gather_nd(ltf.constant(params), ltf.constant(indices))
    assert isinstance(got, ltf.Tensor) and lazyx.metrics()["fallback_ops"] == {}
    np.testing.assert_array_equal(got.numpy(), want)
