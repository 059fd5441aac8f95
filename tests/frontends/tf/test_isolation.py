"""Importing lazyx's TF frontend changes nothing for code that does not use it (issue 18):
the same plain-TensorFlow/Keras program prints the same thing with and without the import,
in fresh processes (the frontend registers a tensor conversion function and a dispatcher
for its own type, and swaps the class of a tf.Variable only when a lazy value is assigned)."""
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import shared  # noqa: E402  (tests/shared.py)

PROGRAM = textwrap.dedent("""
    import os
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf
    import keras
    tf.random.set_seed(0); keras.utils.set_random_seed(0)
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    v.assign_add(tf.ones((2, 2))); v.assign(v * 2)
    print(type(v).__name__, v.numpy().tolist())
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.tanh(tf.matmul(v, v)))
    print(np.round(tape.gradient(y, v).numpy(), 5).tolist())
    f = tf.function(lambda a: tf.nn.softmax(a * 3.0))
    print(np.round(f(tf.constant([1.0, 2.0, 3.0])).numpy(), 5).tolist())
    print(repr(tf.constant([1, 2], tf.int64)))
    try:
        tf.matmul(tf.ones((2, 3)), tf.ones((2, 3)))
    except tf.errors.InvalidArgumentError as e:
        print("InvalidArgumentError")
    try:
        tf.add(tf.ones(2), "x")
    except Exception as e:  # noqa: BLE001 -- which error TF raises is the point
        print(type(e).__name__)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    h = model.fit(np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32), epochs=2, verbose=0)
    print([round(x, 5) for x in h.history["loss"]], type(model.layers[0].kernel).__name__)
    keras.mixed_precision.set_global_policy("mixed_float16")  # kernels read as float16
    mixed = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"),
                              keras.layers.Dense(2, dtype="float32")])
    print(mixed(np.ones((2, 3), np.float32)).dtype.name, mixed.layers[0].kernel.dtype)
    keras.mixed_precision.set_global_policy("float32")
    # Keras' own reads of its variables: a StatelessScope's values, an unbuilt variable's
    # placeholder in a symbolic build (lazyx read the tf.Variable behind them: 2026-11-29)
    out, _ = model.stateless_call([np.ones((3, 2), "f4"), np.ones(2, "f4")], [], np.ones((1, 3)))
    print(np.asarray(out).tolist())
    class Block(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.mha, self.ff = keras.layers.MultiHeadAttention(2, 4), keras.layers.Dense(8)
        def call(self, x):
            return x + self.ff(self.mha(x, x))
    i = keras.Input((5, 8))
    print(keras.Model(i, Block()(i)).output_shape)
""")


def test_plain_tensorflow_code_behaves_the_same_after_importing_the_frontend():
    without = shared.program_output(PROGRAM)
    with_frontend = shared.program_output("import lazyx.frontends.tf\n" + PROGRAM)
    assert len(without) >= 8
    assert with_frontend == without


def test_every_change_to_framework_globals_is_in_hooks_py():
    import lazyx.frontends.tf.hooks as hooks
    with open(hooks.__file__) as f:
        assert len(shared.GLOBAL_HOOK.findall(f.read())) >= 3  # the scan sees the real ones
    assert shared.hooks_outside("tf") == []


def test_einops_finds_the_lazy_backend_when_imported_after_both_frontends():
    # einops picks a backend among its AbstractBackend subclasses; lazyx defines one for its
    # TF tensors when einops is imported (here after lazyx, whose two frontends both wait for
    # it through core/after_import). Before: "Tensor type unknown to einops".
    import pytest
    pytest.importorskip("einops")
    out = shared.program_output(textwrap.dedent("""
        import os
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import numpy as np, tensorflow as tf, lazyx
        import lazyx.frontends.tf as ltf, lazyx.frontends.numpy as lnp
        import einops
        x = np.arange(24, dtype="float32").reshape(2, 3, 4)
        calls = [lambda t: einops.rearrange(t, "b c w -> (b w) c"),
                 lambda t: einops.reduce(t, "b c w -> b w", "max"),
                 lambda t: einops.repeat(t, "b c w -> b c w r", r=2),
                 lambda t: einops.einsum(t, t, "b c w, b d w -> b c d")]
        got = [call(ltf.constant(x)) for call in calls]
        print(lazyx.metrics()["fallback_ops"], lazyx.metrics()["syncs"],
              {type(g).__name__ for g in got}, type(einops.rearrange(lnp.asarray(x), "a b c -> c b a")).__name__)
        print(all(np.allclose(np.asarray(g), call(tf.constant(x)).numpy())
                  for g, call in zip(got, calls)))
    """))
    assert out == ["{} 0 {'LazyTensor'} LazyArray", "True"]
