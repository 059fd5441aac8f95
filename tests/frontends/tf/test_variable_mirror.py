"""A lazily updated variable keeps its value on the device after ltf.sync() (its shadow), and
once stored into TF a device copy of what it stored (its mirror), so the next lazy step reads
it without copying it from TF again -- and neither TF nor lazyx ever reads a stale value,
whatever changed or read the variable in between: an eager assign or read, a raw op on its
handle, a tf.function (traced before or after the variable went lazy), a checkpoint save or
restore."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf

from .conftest import STEP_W0 as W0, variable_step

NEW = np.array([2.0, -3.0, 0.5], np.float32)


def _step(w, lazy):
    return float(variable_step(w, lazy))


def test_repeated_step_reads_variables_without_copying_them():
    w, v = tf.Variable(W0), tf.Variable(W0)
    for _ in range(2):
        _step(w, lazy=True)
    before = lazyx.metrics()["transfers_to_device"]
    for _ in range(3):
        _step(w, lazy=True)
    assert lazyx.metrics()["transfers_to_device"] == before + 3  # x only: not the variable
    want = [_step(v, lazy=False) for _ in range(5)]
    np.testing.assert_allclose(w.numpy(), v.numpy(), rtol=1e-6)
    assert want  # the eager run took the same five steps


def _restore(w, folder):
    saved = tf.Variable(NEW)
    path = tf.train.Checkpoint(w=saved).write(str(folder / "ckpt"))
    tf.train.Checkpoint(w=w).read(path).assert_consumed()


WRITES = {
    "assign": lambda w, f, folder: w.assign(NEW),
    "assign_add": lambda w, f, folder: w.assign_add(NEW),
    "scatter": lambda w, f, folder: w.scatter_nd_update([[1]], [NEW[1]]),
    "raw-op": lambda w, f, folder: tf.raw_ops.AssignVariableOp(resource=w.handle, value=NEW),
    "tf.function": lambda w, f, folder: f(),
    "checkpoint": lambda w, f, folder: _restore(w, folder),
}


@pytest.mark.parametrize("traced_first", [False, True], ids=["fn-traced-late", "fn-traced-early"])
@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_tf_write_between_lazy_steps_is_what_the_next_step_reads(write, traced_first,
                                                                   tmp_path):
    def run(lazy):
        w = tf.Variable(W0)
        fn = tf.function(lambda: w.assign_add(tf.constant(NEW)))
        if traced_first:
            fn()  # captured before lazyx ever saw the variable
        losses = [_step(w, lazy), _step(w, lazy)]
        WRITES[write](w, fn, tmp_path)
        losses += [_step(w, lazy)]
        WRITES[write](w, fn, tmp_path)
        losses += [_step(w, lazy), _step(w, lazy)]
        return losses, w.numpy()

    want_losses, want_w = run(lazy=False)
    got_losses, got_w = run(lazy=True)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-5)


def test_eager_reads_keep_the_mirror_and_see_the_stored_value():
    w = tf.Variable(W0)
    _step(w, lazy=True)
    stored = w.numpy()                          # an eager read: the buffer is unchanged
    before = lazyx.metrics()["transfers_to_device"]
    _step(w, lazy=True)
    assert lazyx.metrics()["transfers_to_device"] == before + 1  # x only
    v = tf.Variable(W0)
    _step(v, lazy=False)
    np.testing.assert_allclose(stored, v.numpy(), rtol=1e-6)


def test_an_eager_read_lifted_by_a_lowering_reuses_the_mirror():
    """Keras reads optimizer slots eagerly (convert_to_tensor) before its ops: lifting that
    read needs no copy while the mirror is current, and sees a later eager write."""
    w = tf.Variable(W0)
    _step(w, lazy=True)
    w.numpy()  # the step's value stays on the device until TF reads it: store it now
    before = lazyx.metrics()["transfers_to_device"]
    got = tf.convert_to_tensor(w) * ltf.constant(NEW)
    assert lazyx.metrics()["transfers_to_device"] == before + 1  # NEW only
    np.testing.assert_allclose(got.numpy(), w.numpy() * NEW, rtol=1e-6)
    w.assign(NEW)
    np.testing.assert_allclose((tf.convert_to_tensor(w) * ltf.constant(NEW)).numpy(), NEW * NEW)


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_stored_value_and_its_variable_never_see_each_others_writes(write, tmp_path):
    """ltf.sync() stores a result into its variable without copying it where the backend keeps
    it in host memory (XLA on CPU): TF then holds the program's own buffer. A lazy value of the
    same node kept by the user must not change when TF later writes the variable."""
    w = tf.Variable(W0)
    kept = w - ltf.constant(NEW)                # the lazy value the variable will store
    w.assign(kept)
    ltf.sync()
    stored = w.numpy()
    np.testing.assert_allclose(stored, W0 - NEW, rtol=1e-6)
    fn = tf.function(lambda: w.assign_add(tf.constant(NEW)))
    WRITES[write](w, fn, tmp_path)
    assert not np.allclose(w.numpy(), stored)   # TF's write took place ...
    np.testing.assert_array_equal(kept.numpy(), stored)  # ... and only in the variable
    np.testing.assert_array_equal((kept * 1.0).numpy(), stored)  # also as a program's input


def test_the_store_shares_the_result_buffer_on_xla_cpu():
    """The store itself is not a copy: the variable's TF buffer is the program's result."""
    from lazyx.core import runtime
    if runtime.get_backend().name != "xla":
        pytest.skip("the reference backend keeps results as NumPy arrays: TF copies them")
    import jax
    w = tf.Variable(W0)
    w.assign(w * ltf.constant(NEW))
    ltf.sync()
    w.read_value()  # TF reads it: the store
    shared = runtime.to_host_shared(w._lazyx_mirror._handle)
    assert shared is not None
    got = jax.dlpack.from_dlpack(w.read_value())
    assert got.unsafe_buffer_pointer() == shared.unsafe_buffer_pointer()
    np.testing.assert_allclose(np.asarray(got), W0 * NEW, rtol=1e-6)
