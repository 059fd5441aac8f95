"""lnp.random: keyed generators; the same numbers on every backend; new keys never recompile."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.backends.reference import ReferenceBackend
from lazyx.core import runtime


def on_reference(x):
    """Run the graph behind the pending lazy array `x` on the reference interpreter."""
    program, leaves = runtime.linearize([x.__lazyx_handle__.node])
    values = [np.asarray(leaf.value) for leaf in leaves]
    return np.asarray(ReferenceBackend().compile(program)(values)[0])


DRAWS = [
    ("random", lambda g: g.random((3, 4)), True),
    ("random32", lambda g: g.random(5, dtype=np.float32), True),
    ("uniform", lambda g: g.uniform(-2.0, 3.0, size=(4,)), False),  # XLA may fuse an FMA
    ("integers", lambda g: g.integers(0, 10, size=(50,)), True),
    ("integers_endpoint", lambda g: g.integers(-3, 3, size=(6,), endpoint=True), True),
    ("permutation", lambda g: g.permutation(9), True),
    ("choice", lambda g: g.choice(7, size=4, replace=False), True),
    ("normal", lambda g: g.normal(1.0, 2.0, size=(2, 3)), False),
    ("standard_normal", lambda g: g.standard_normal(7), False),
    ("exponential", lambda g: g.exponential(2.0, size=5), False),
]


@pytest.mark.parametrize("name,draw,exact", DRAWS, ids=[d[0] for d in DRAWS])
def test_same_numbers_on_both_backends(name, draw, exact):
    x = draw(lnp.random.default_rng(42))
    expected = on_reference(x)
    got = np.asarray(x)
    if exact:
        np.testing.assert_array_equal(got, expected)
    else:  # log/cos/sqrt (and fused multiply-adds) may differ in the last ulp
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_seeded_streams_repeat_and_differ():
    a = np.asarray(lnp.random.default_rng(1).random(6))
    b = np.asarray(lnp.random.default_rng(1).random(6))
    c = np.asarray(lnp.random.default_rng(2).random(6))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    g = lnp.random.default_rng(1)
    first, second = np.asarray(g.random(6)), np.asarray(g.random(6))
    assert not np.array_equal(first, second)


def test_distribution_properties():
    g = lnp.random.default_rng(0)
    u = np.asarray(g.random(20000))
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01
    z = np.asarray(g.normal(3.0, 2.0, size=20000))
    assert abs(z.mean() - 3.0) < 0.05 and abs(z.std() - 2.0) < 0.05
    k = np.asarray(g.integers(5, 9, size=4000))
    assert k.dtype == np.int64 and set(np.unique(k)) == {5, 6, 7, 8}
    p = np.asarray(g.permutation(50))
    assert sorted(p.tolist()) == list(range(50))


def test_new_key_does_not_recompile():
    g = lnp.random.default_rng(0)
    np.asarray(g.normal(size=(8,)) * 2.0)
    lazyx.reset_metrics()
    draws = [np.asarray(g.normal(size=(8,)) * 2.0) for _ in range(3)]
    assert lazyx.metrics()["compiles"] == 0
    assert not np.array_equal(draws[0], draws[1])


def test_shuffle_and_choice_of_array():
    g = lnp.random.default_rng(3)
    x = lnp.arange(10.0)
    g.shuffle(x)
    assert sorted(np.asarray(x).tolist()) == list(np.arange(10.0))
    picks = np.asarray(g.choice(lnp.asarray(np.array([10, 20, 30])), size=5))
    assert set(picks.tolist()) <= {10, 20, 30}


@pytest.mark.parametrize("name, args, mean", [
    ("gamma", (2.0, 1.5), 3.0), ("poisson", (3.0,), 3.0), ("beta", (2.0, 6.0), 0.25),
    ("binomial", (10, 0.3), 3.0), ("geometric", (0.25,), 4.0),
])
def test_distributions_without_a_lowering_are_numpys_counted(name, args, mean):
    lazyx.reset_metrics()
    draws = np.asarray(getattr(lnp.random.default_rng(1), name)(*args, size=20000))
    again = np.asarray(getattr(lnp.random.default_rng(1), name)(*args, size=20000))
    assert draws.shape == (20000,)
    assert abs(draws.mean() - mean) < 0.05 * mean
    np.testing.assert_array_equal(draws, again)  # keyed by the seed, like every draw
    assert lazyx.metrics()["fallback_ops"] == {f"numpy.random.Generator.{name}": 2}
    with pytest.raises(AttributeError):
        lnp.random.default_rng(1).no_such_distribution


def test_seeds_numpy_accepts_and_permutation_along_an_axis():
    a = np.asarray(lnp.random.default_rng(np.random.SeedSequence(7)).random(3))
    b = np.asarray(lnp.random.Generator(np.random.PCG64(7)).random(3))
    np.testing.assert_array_equal(a, b)
    assert np.asarray(lnp.random.default_rng([1, 2, 3]).random(2)).shape == (2,)
    x = np.arange(12).reshape(3, 4)
    p = np.asarray(lnp.random.default_rng(0).permutation(lnp.asarray(x), axis=1))
    assert sorted(p[0].tolist()) == [0, 1, 2, 3]  # whole columns moved
    assert sorted(map(tuple, p.T)) == sorted(map(tuple, x.T))
    with pytest.raises(np.exceptions.AxisError):
        lnp.random.default_rng(0).permutation(lnp.asarray(x), axis=2)
