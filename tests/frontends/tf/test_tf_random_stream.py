"""TF's stateless random ops draw TF's own numbers lazily (Philox, frontends/tf/philox.py),
whether their seed is a host value or lazy. A lazy seed -- a Keras SeedGenerator's state
captured by lazyx.compile, or assigned inside a training step -- drew keyed Threefry
instead: a compiled step's keras.random draws differed from the uncompiled run's (which ran
TF's kernel on the plain seed), breaking issue 13's "a replay draws exactly the uncompiled
run's numbers", and Keras' Dropout masks differed from eager Keras'. Every test compares with
eager TF."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402
from lazyx.core import prng, runtime  # noqa: E402
from lazyx.frontends.tf import philox  # noqa: E402
from lazyx.frontends.tf.tensor import LazyTensor  # noqa: E402

seeds = st.tuples(st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1))
shapes = st.sampled_from([(), (1,), (5,), (3, 5), (2, 3, 4)])
float_types = st.sampled_from([tf.float32, tf.float64, tf.float16, tf.bfloat16])


def _lazy_seed(seed, dtype):
    return ltf.constant(tf.constant(seed, dtype))


def _host(x):
    assert isinstance(x, LazyTensor)  # drawn lazily, not by TF's kernel
    return tf.cast(ltf.to_tf(x), tf.float64).numpy() if x.dtype.is_floating else x.numpy()


def _tf(x):
    return tf.cast(x, tf.float64).numpy() if x.dtype.is_floating else x.numpy()


@settings(max_examples=25, deadline=None)
@given(seed=st.tuples(st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1)),
       dtype=st.sampled_from(["int32", "int64"]))
def test_a_lazy_seeds_key_and_counter_are_tfs(seed, dtype):
    """The program scrambles a lazy seed as the host does (prng.tf_key_counter), and the
    host as TF's own kernel does."""
    if dtype == "int32":
        seed = tuple((s + 2**31) % 2**32 - 2**31 for s in seed)
    from tensorflow.python.ops import gen_stateless_random_ops_v2
    tf_key, tf_counter = gen_stateless_random_ops_v2.stateless_random_get_key_counter(
        tf.constant(seed, dtype))
    key, counter = prng.tf_key_counter(seed)
    assert int(key[0]) | int(key[1]) << 32 == int(tf_key.numpy()[0])
    assert [int(counter[0]) | int(counter[1]) << 32, int(counter[2]) | int(counter[3]) << 32] \
        == [int(c) for c in tf_counter.numpy()]
    traced = philox.traced_key_counter(runtime.from_host(np.array(seed, dtype)))
    for node, want in zip(traced, (key, counter)):
        np.testing.assert_array_equal(runtime.to_host(runtime.LazyHandle(node)), want)


@settings(max_examples=30, deadline=None)
@given(seed=seeds, shape=shapes, dtype=float_types,
       seed_type=st.sampled_from([tf.int32, tf.int64]))
def test_uniform_from_a_lazy_seed_is_tfs_bit_for_bit(seed, shape, dtype, seed_type):
    want = tf.random.stateless_uniform(shape, tf.constant(seed, seed_type), dtype=dtype)
    got = tf.random.stateless_uniform(shape, _lazy_seed(seed, seed_type), dtype=dtype)
    np.testing.assert_array_equal(_host(got), _tf(want))


@settings(max_examples=20, deadline=None)
@given(seed=seeds, shape=shapes, dtype=float_types, bounds=st.sampled_from(
    [(0, 1), (-2.5, 3.0), (0.1, 0.7), (-1e3, 1e-3)]))
def test_uniform_between_bounds_is_tfs(seed, shape, dtype, bounds):
    low, high = bounds
    want = tf.random.stateless_uniform(shape, seed, low, high, dtype=dtype)
    got = tf.random.stateless_uniform(shape, _lazy_seed(seed, tf.int32), low, high, dtype=dtype)
    # (XLA may fuse u * span + low into one rounding: the last place can differ)
    eps = _EPSILON[dtype]
    np.testing.assert_allclose(_host(got), _tf(want), rtol=eps, atol=eps * max(-low, high))


_EPSILON = {tf.float64: 2.0**-52, tf.float32: 2.0**-23, tf.float16: 2.0**-10,
            tf.bfloat16: 2.0**-7}


@settings(max_examples=20, deadline=None)
@given(seed=seeds, shape=shapes, dtype=float_types)
def test_normal_from_a_lazy_seed_is_tfs(seed, shape, dtype):
    want = tf.random.stateless_normal(shape, seed, mean=0.5, stddev=2.0, dtype=dtype)
    got = tf.random.stateless_normal(shape, _lazy_seed(seed, tf.int64), 0.5, 2.0, dtype=dtype)
    # (TF's sin, cos and log and XLA's may differ in the last place of a float32)
    tol = {tf.float64: 1e-12, tf.float32: 2e-6, tf.float16: 2e-3, tf.bfloat16: 1e-2}[dtype]
    np.testing.assert_allclose(_host(got), _tf(want), rtol=tol, atol=tol)


@settings(max_examples=20, deadline=None)
@given(seed=seeds, shape=shapes, dtype=st.sampled_from([tf.int32, tf.int64]),
       bounds=st.sampled_from([(0, 10), (-5, 3), (-2**31, 2**31 - 1), (7, 8)]))
def test_integers_from_a_lazy_seed_are_tfs(seed, shape, dtype, bounds):
    low, high = bounds
    want = tf.random.stateless_uniform(shape, seed, low, high, dtype=dtype)
    got = tf.random.stateless_uniform(shape, _lazy_seed(seed, tf.int32), low, high, dtype=dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(_host(got), _tf(want))


def test_integer_bounds_out_of_order_raise_tfs_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval"):
        tf.random.stateless_uniform((3,), _lazy_seed((1, 2), tf.int32), 5, 3, dtype=tf.int32)


@pytest.mark.parametrize("noise_shape", [None, (1, 6)])
@pytest.mark.parametrize("rate", [0.0, 0.3, 0.5])
def test_stateless_dropout_of_a_lazy_input_is_tfs(rate, noise_shape):
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    want = tf.nn.experimental.stateless_dropout(x, rate, seed=[3, 9], noise_shape=noise_shape)
    for seed in ([3, 9], _lazy_seed((3, 9), tf.int32)):
        got = tf.nn.experimental.stateless_dropout(ltf.constant(x), rate, seed=seed,
                                                   noise_shape=noise_shape)
        np.testing.assert_array_equal(_host(got), want.numpy())


def test_a_new_host_seed_is_a_run_time_parameter():
    """Keras draws a new seed for each dropout call: one program serves them all."""
    x = ltf.constant(np.ones((8,), np.float32))
    graphs = {lazyx.graph_hash(tf.nn.experimental.stateless_dropout(x, 0.5, seed=[1, k]))
              for k in range(4)}
    assert len(graphs) == 1


def _train(mode, steps=4):
    """A Keras model with Dropout and GaussianNoise, SGD: eager Keras, lazyx uncompiled, or
    lazyx.compile'd. Returns (losses, weights, replays)."""
    rng = np.random.default_rng(1)
    data = [(rng.standard_normal((8, 5)).astype(np.float32),
             rng.standard_normal((8, 2)).astype(np.float32)) for _ in range(steps)]
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dropout(0.4, seed=7),
                              keras.layers.GaussianNoise(0.2, seed=3), keras.layers.Dense(2)])
    opt = keras.optimizers.SGD(0.1)
    tape_type = tf.GradientTape if mode == "eager" else ltf.GradientTape

    def step(x, y):
        with tape_type() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    run = lazyx.compile(step) if mode == "compiled" else step
    convert = tf.constant if mode == "eager" else ltf.constant
    lazyx.reset_metrics()
    losses = [float(np.asarray(run(convert(x), convert(y)))) for x, y in data]
    return losses, [v.numpy() for v in model.trainable_variables], lazyx.metrics()["replays"]


def test_keras_training_with_dropout_and_noise_matches_eager_keras():
    eager = _train("eager")
    for mode in ("lazy", "compiled"):
        losses, weights, replays = _train(mode)
        np.testing.assert_allclose(losses, eager[0], rtol=1e-5)
        for got, want in zip(weights, eager[1]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        if mode == "compiled":
            assert replays >= 2  # (replayed, with each replay's fresh draws)


def test_keras_random_in_a_compiled_step_draws_eager_tfs_numbers():
    def draws(mode):
        keras.utils.set_random_seed(0)
        seeds = keras.random.SeedGenerator(11)
        x = tf.ones((3,)) if mode == "eager" else ltf.constant(tf.ones((3,)))

        def f(x):
            return x * keras.random.uniform((3,), seed=seeds) + keras.random.normal(
                (3,), seed=seeds)
        run = lazyx.compile(f) if mode == "compiled" else f
        return [np.asarray(run(x)) for _ in range(4)]
    eager = draws("eager")
    for mode in ("lazy", "compiled"):
        np.testing.assert_allclose(draws(mode), eager, rtol=2e-6, atol=2e-6)


def _generator_step(mode, shape, dtype, steps=4):
    """A step drawing from a tf.random.Generator: its numbers, and the generator's state
    after, under eager TF, lazyx uncompiled, or lazyx.compile'd."""
    gen = tf.random.Generator.from_state([-700, 3, 0x1234_5678_9ABC_DEF], alg="philox")

    def step(x):
        if dtype.is_integer:
            return x + tf.cast(gen.uniform(shape, -3, 40, dtype=dtype), x.dtype)
        return x * gen.normal(shape, 0.5, 2.0, dtype=dtype) + gen.uniform(shape, -1, 1, dtype)
    run = lazyx.compile(step) if mode == "compiled" else step
    x = np.ones(shape, dtype.as_numpy_dtype if not dtype.is_integer else np.float32)
    x = tf.constant(x) if mode == "eager" else ltf.constant(x)
    lazyx.reset_metrics()
    out = [np.asarray(run(x)).astype(np.float64) for _ in range(steps)]
    return out, gen.state.numpy(), lazyx.metrics()["replays"]


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.int32, tf.int64])
@pytest.mark.parametrize("shape", [(), (3,), (2, 5)])
def test_a_compiled_step_draws_from_a_generator_at_every_replay_as_tf(shape, dtype):
    """Its state is captured and moved on in the program (TF's 256 blocks per number, the
    counter's carry included: its low half starts 700 blocks short of 2**64): each replay draws new
    numbers, TF's, and the state ends where eager TF leaves it."""
    eager = _generator_step("eager", shape, dtype)
    compiled = _generator_step("compiled", shape, dtype)
    assert compiled[2] >= 2
    assert len({o.tobytes() for o in compiled[0]}) == len(compiled[0]) or not shape
    tol = 1e-12 if dtype == tf.float64 else 1e-5
    np.testing.assert_allclose(compiled[0], eager[0], rtol=tol, atol=tol)
    np.testing.assert_array_equal(compiled[1], eager[1])


# ---------------------------------------------------------------- TF's global random ops

_DRAWS = {
    "normal": lambda shape, dtype: tf.random.normal(shape, dtype=dtype),
    "normal(2, 3)": lambda shape, dtype: tf.random.normal(shape, 2.0, 3.0, dtype=dtype),
    "uniform": lambda shape, dtype: tf.random.uniform(shape, dtype=dtype),
    "uniform(-1, 4)": lambda shape, dtype: tf.random.uniform(shape, -1.0, 4.0, dtype=dtype),
    "uniform int32": lambda shape, dtype: tf.random.uniform(shape, -3, 50, dtype=tf.int32),
    "uniform int64": lambda shape, dtype: tf.random.uniform(shape, 0, 2**40, dtype=tf.int64),
}


def _global_draws(compiled, kind, shape, dtype, calls=4, between=False):
    """The numbers a step drawing from TF's global RNG returns at each call, seeded by
    tf.random.set_seed(11); `between`: an uncompiled draw of TF's own after each call."""
    tf.random.set_seed(11)

    def step(x):
        return _DRAWS[kind](shape, dtype), x + 1

    f = lazyx.compile(step) if compiled else step
    out, others = [], []
    for _ in range(calls):
        drawn = f(ltf.constant(np.float32(0)))[0]  # (eager TF's tensor, uncompiled)
        out.append(_tf(ltf.to_tf(drawn) if isinstance(drawn, LazyTensor) else drawn))
        if between:
            others.append(tf.random.normal((2,)).numpy())
    return out, others


@pytest.mark.parametrize("kind", sorted(_DRAWS))
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.float16])
def test_a_compiled_step_draws_tfs_global_numbers_at_every_replay(kind, dtype):
    """tf.random.normal / uniform without an op seed: TF's kernel under the seed pair TF's
    context hands out per call. A replay asks the context for the next pairs, so the
    compiled step draws the uncompiled run's numbers, call after call."""
    if "int" in kind and dtype != tf.float32:
        pytest.skip("(the dtype is the kind's)")
    lazyx.reset_metrics()
    compiled, _ = _global_draws(True, kind, (3, 5), dtype)
    assert lazyx.metrics()["replays"] == 3 and lazyx.metrics()["replay_misses"] == 0
    plain, _ = _global_draws(False, kind, (3, 5), dtype)
    assert len({c.tobytes() for c in plain}) == 4  # (fresh numbers at each call)
    for got, want in zip(compiled, plain):
        assert got.dtype == want.dtype
        # normals: TF's sin, cos and log and XLA's differ in the last place
        np.testing.assert_allclose(got, want, rtol=4e-3 if dtype == tf.float16 else 1e-6)


def test_draws_outside_the_step_between_replays_keep_tfs_sequence():
    lazyx.reset_metrics()
    compiled = _global_draws(True, "normal", (4,), tf.float32, between=True)
    assert lazyx.metrics()["replays"] == 3
    plain = _global_draws(False, "normal", (4,), tf.float32, between=True)
    for got, want in zip(compiled[0] + compiled[1], plain[0] + plain[1]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_without_a_global_seed_every_replay_draws_new_numbers():
    tf.random.set_seed(None)  # (what a fresh process has: TF picks the seeds)
    step = lazyx.compile(lambda x: tf.random.uniform((64,)) + x)
    lazyx.reset_metrics()
    out = [np.asarray(step(ltf.constant(np.float32(0)))) for _ in range(4)]
    assert lazyx.metrics()["replays"] == 3
    assert len({o.tobytes() for o in out}) == 4
    assert all(0 <= o.min() and o.max() < 1 and o.std() > 0.2 for o in out)


@pytest.mark.parametrize("noise_shape", [None, (3, 1)])
def test_dropout_of_a_lazy_tensor_is_lazy_and_tfs(noise_shape):
    """tf.nn.dropout read its lazy input (a counted fallback): now TF's steps run lazily on
    it, the mask from TF's kernel -- or, compiled, from TF's stream -- as eager TF's."""
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    tf.random.set_seed(3)
    want = [tf.nn.dropout(x, 0.4, noise_shape=noise_shape).numpy() for _ in range(3)]
    tf.random.set_seed(3)
    lazyx.reset_metrics()
    lazy = [tf.nn.dropout(ltf.constant(x) * 1, 0.4, noise_shape=noise_shape) for _ in range(3)]
    assert all(isinstance(v, LazyTensor) for v in lazy)
    assert lazyx.metrics()["fallback_ops"] == {} and lazyx.metrics()["syncs"] == 0
    tf.random.set_seed(3)
    step = lazyx.compile(lambda v: tf.nn.dropout(v, 0.4, noise_shape=noise_shape))
    compiled = [step(ltf.constant(x)) for _ in range(3)]
    assert lazyx.metrics()["replays"] == 2
    for got in (lazy, compiled):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)
