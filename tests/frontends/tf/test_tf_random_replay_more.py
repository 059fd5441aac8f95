"""lazyx.compile replays TF's draws beyond tf.random.normal / uniform without an op seed
(test_tf_random_stream.py): a draw with an op seed (its cached kernel continues one stream
from call to call), truncated_normal, gamma, poisson, a categorical or shuffle of a host
tensor, tf.nn.dropout with an op seed -- the numbers a replay feeds are TF's kernel's, drawn
under the seeds TF's context hands out at that call (api_random.compiled_draw) -- and
keras.random without a seed, whose global SeedGenerator a step does not refer to (its seed
was baked in: every replay drew the traced call's numbers, silently). Every test compares
with eager TF run the same way under the same seeds."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402
from lazyx.frontends.tf.tensor import LazyTensor  # noqa: E402

_DRAWS = {
    "normal, op seed": lambda: tf.random.normal((3, 5), seed=3),
    "normal float64, op seed": lambda: tf.random.normal((5,), 1.0, 2.0, tf.float64, seed=9),
    "uniform, op seed": lambda: tf.random.uniform((7,), -1.0, 4.0, seed=3),
    "uniform int32, op seed": lambda: tf.random.uniform((6,), -3, 50, tf.int32, seed=4),
    "truncated_normal": lambda: tf.random.truncated_normal((3, 5)),
    "truncated_normal, op seed": lambda: tf.random.truncated_normal((4,), seed=3),
    "gamma": lambda: tf.random.gamma((4,), 2.0),
    "poisson, op seed": lambda: tf.random.poisson((4,), 3.0, seed=2),
    "categorical of host logits": lambda: tf.random.categorical(
        tf.math.log([[0.2, 0.3, 0.5]]), 6),
    "shuffle of a host tensor": lambda: tf.random.shuffle(tf.range(10)),
    "truncated_normal float64, 2 seeds set": lambda: tf.random.truncated_normal(
        (9,), 1.0, 3.0, tf.float64),
}


def _run(compiled, step, seed, calls=4, between=None):
    """What `step` returns at each call (as NumPy), after tf.random.set_seed(seed);
    `between()` runs after each call, its results appended too."""
    tf.random.set_seed(seed)
    f = lazyx.compile(step) if compiled else step
    out = []
    for _ in range(calls):
        got = f(ltf.constant(np.float32(0)))
        out.append(np.asarray(ltf.to_tf(got) if isinstance(got, LazyTensor) else got))
        if between is not None:
            out.append(between().numpy())
    return out


@pytest.mark.parametrize("seed", [1, 7])
@pytest.mark.parametrize("kind", sorted(_DRAWS))
def test_a_compiled_step_replays_eager_tfs_numbers(kind, seed):
    def step(x):
        return _DRAWS[kind]()
    eager = _run(False, step, seed)
    lazyx.reset_metrics()
    compiled = _run(True, step, seed)
    assert lazyx.metrics()["replays"] == 3 and lazyx.metrics()["replay_misses"] == 0
    assert len({e.tobytes() for e in eager}) == 4  # (fresh numbers at each call)
    for got, want in zip(compiled, eager):
        assert got.dtype == want.dtype
        # (TF's kernel's numbers; then times (max - min) plus min, fused on XLA: an ulp)
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("sizes", [(3, 2), (2, 5, 1, 4), (6, 1, 3)])
def test_an_op_seeds_kernel_continues_across_replays_and_draws_outside_the_step(sizes):
    """Several draws of one kernel (same op, dtype and seeds) in the step, in the trace's
    order whatever the program's order of parameters, and that kernel drawing between the
    calls: one stream, as eager TF's."""
    def step(x):
        draws = [tf.random.normal((n,), seed=5) for n in sizes]
        return [d * (k + 1) + x for k, d in reversed(list(enumerate(draws)))]

    def run(f):
        tf.random.set_seed(3)
        out = []
        for _ in range(4):
            out += [np.asarray(v) for v in f(ltf.constant(np.float32(0)))]
            out.append(tf.random.normal((4,), seed=5).numpy())
        return out
    eager = run(step)
    lazyx.reset_metrics()
    compiled = run(lazyx.compile(step))
    assert lazyx.metrics()["replays"] == 3
    for got, want in zip(compiled, eager):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_set_seed_between_replays_restarts_the_kernels_as_in_eager_tf():
    def step(x):
        return tf.random.truncated_normal((3,), seed=8) + x
    f = lazyx.compile(step)
    lazyx.reset_metrics()
    compiled, eager = [], []
    for s in (2, 2, 5):
        tf.random.set_seed(s)
        compiled += [np.asarray(f(ltf.constant(np.float32(0)))) for _ in range(2)]
        tf.random.set_seed(s)
        eager += [step(tf.constant(np.float32(0))).numpy() for _ in range(2)]
    assert lazyx.metrics()["replays"] == 5
    np.testing.assert_array_equal(np.array(compiled), np.array(eager))


def test_dropout_with_an_op_seed_replays_eager_tfs_masks():
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)

    def step(v):
        return tf.nn.dropout(v, 0.4, seed=6)
    tf.random.set_seed(4)
    eager = [step(tf.constant(x)).numpy() for _ in range(4)]
    tf.random.set_seed(4)
    lazyx.reset_metrics()
    f = lazyx.compile(step)
    compiled = [np.asarray(f(ltf.constant(x))) for _ in range(4)]
    assert lazyx.metrics()["replays"] == 3
    np.testing.assert_array_equal(np.array(compiled), np.array(eager))


@pytest.mark.parametrize("draw", ["normal", "uniform", "truncated_normal", "dropout"])
def test_keras_random_without_a_seed_replays_the_uncompiled_runs_numbers(draw):
    """keras.random without a seed draws under seeds from Keras' global SeedGenerator."""
    def step(x):
        if draw == "dropout":
            return keras.random.dropout(tf.ones((8,)) + x, 0.5)
        return getattr(keras.random, draw)((5,)) + x

    def run(compiled):
        keras.utils.set_random_seed(3)
        f = lazyx.compile(step) if compiled else step
        return [np.asarray(f(ltf.constant(np.float32(0)))) for _ in range(4)]
    plain = run(False)
    lazyx.reset_metrics()
    compiled = run(True)
    assert lazyx.metrics()["replays"] == 3
    assert len({p.tobytes() for p in plain}) == 4
    for got, want in zip(compiled, plain):
        np.testing.assert_allclose(got, want, rtol=1e-6)


# ---------------------------------------------------------------- the truncated normal

@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.float16, tf.bfloat16])
@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 5), (7, 9, 11), (1001,)])
@pytest.mark.parametrize("seed", [(1, 2), (-5, 77), (2**31 - 1, -2**31)])
def test_a_truncated_normal_from_a_lazy_seed_is_tfs(seed, shape, dtype):
    """TF's groups of 4 (2 doubles) numbers, each from its own run of Philox blocks, the
    Box-Muller normals outside (-2, 2) rejected (philox.truncated_normal)."""
    want = tf.random.stateless_truncated_normal(shape, seed, 0.5, 2.0, dtype=dtype)
    lazyx.reset_metrics()
    got = tf.random.stateless_truncated_normal(shape, ltf.constant(tf.constant(seed, tf.int64)),
                                               0.5, 2.0, dtype=dtype)
    assert lazyx.metrics()["fallback_ops"] == {}  # (drawn lazily, not by TF's op)
    assert isinstance(got, LazyTensor) and got.dtype == dtype and got.shape == want.shape
    tol = {tf.float64: 1e-12, tf.float32: 2e-6, tf.float16: 2e-3, tf.bfloat16: 1e-2}[dtype]
    np.testing.assert_allclose(tf.cast(ltf.to_tf(got), tf.float64).numpy(),
                               tf.cast(want, tf.float64).numpy(), rtol=tol, atol=tol)


def test_a_keras_truncated_normal_initializer_in_a_compiled_step_is_eager_kerass():
    """A SeedGenerator's lazy state seeds stateless_truncated_normal (it had no lowering: the
    compiled step raised, reading the seed)."""
    def run(compiled):
        keras.utils.set_random_seed(5)
        gen = keras.random.SeedGenerator(9)

        def step(x):
            return keras.random.truncated_normal((4, 3), seed=gen) + x
        f = lazyx.compile(step) if compiled else step
        return [np.asarray(f(ltf.constant(np.float32(0)))) for _ in range(4)]
    plain = run(False)
    lazyx.reset_metrics()
    compiled = run(True)
    assert lazyx.metrics()["replays"] == 3
    for got, want in zip(compiled, plain):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def test_keras_set_random_seed_between_replays_reseeds_as_eager():
    """keras.utils.set_random_seed makes a new global SeedGenerator: a replay asks the one in
    place at its call."""
    def step(x):
        return keras.random.normal((3,)) + x

    def run(f):
        out = []
        for s in (1, 1, 2):
            keras.utils.set_random_seed(s)
            out += [np.asarray(f(ltf.constant(np.float32(0)))) for _ in range(2)]
        return out
    plain = run(step)
    lazyx.reset_metrics()
    compiled = run(lazyx.compile(step))
    assert lazyx.metrics()["replays"] == 5
    np.testing.assert_allclose(np.array(compiled), np.array(plain), rtol=1e-6)


def test_a_seed_generator_made_in_the_step_draws_the_same_numbers_each_call_as_eager():
    def step(x):
        return keras.random.normal((3,), seed=keras.random.SeedGenerator(4)) + x
    plain = [np.asarray(step(ltf.constant(np.float32(0)))) for _ in range(3)]
    f = lazyx.compile(step)
    compiled = [np.asarray(f(ltf.constant(np.float32(0)))) for _ in range(3)]
    np.testing.assert_allclose(np.array(compiled), np.array(plain), rtol=1e-6)
