"""tf.train.Checkpoint around lazy training steps, against eager TF: a save right after a
lazy step stores the updated weights, and a restore right after one rolls them back. Both
went through the variables' handles under their pending lazy updates (a save stored the old
weights; a restore was undone by the pending update)."""
import numpy as np
import tensorflow as tf

import keras
import lazyx.frontends.tf as ltf

_X = np.ones((4, 3), np.float32)


def _run(make, Tape, directory):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    opt = keras.optimizers.SGD(0.1)
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt)

    def step():
        with Tape() as tape:
            loss = tf.reduce_sum(model(make(_X)) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    step()
    saved = ckpt.save(str(directory / "ck"))  # right after a step: its weights
    after_save = model.layers[0].kernel.numpy().copy()
    step()
    ckpt.restore(saved)  # right after another: rolled back
    restored = model.layers[0].kernel.numpy().copy()
    return after_save, restored


def test_save_and_restore_right_after_lazy_steps(tmp_path):
    want = _run(tf.constant, tf.GradientTape, tmp_path / "eager")
    for name, Tape in (("plain", tf.GradientTape), ("ltf", ltf.GradientTape)):
        got = _run(ltf.constant, Tape, tmp_path / name)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)
        np.testing.assert_allclose(got[1], got[0], rtol=1e-6)  # the restore took
