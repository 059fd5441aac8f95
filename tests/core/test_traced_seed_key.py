"""compose.traced_seed_key: the key a lazy seed pair (s, k) gets is the key prng.seed_key gives
the same pair on the host, for every integer dtype a seed comes in -- so a seed that is a lazy
value (a Keras SeedGenerator's state under lazyx.compile) draws the numbers a plain one does."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazyx.core import compose, prng, runtime


pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py

_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1),
           "uint32": (0, 2**32 - 1), "int16": (-2**15, 2**15 - 1)}


@settings(max_examples=25, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(sorted(_RANGES)))
def test_a_lazy_seed_pair_gets_the_hosts_key(data, dtype):
    low, high = _RANGES[dtype]
    seed = data.draw(st.integers(low, high))
    counter = data.draw(st.integers(low, high))
    node = runtime.from_host(np.array([seed, counter], dtype))
    got = runtime.to_host(runtime.LazyHandle(compose.traced_seed_key(node)))
    np.testing.assert_array_equal(got, prng.seed_key(seed, counter))


def test_the_key_feeds_the_same_uniform_numbers():
    node = runtime.from_host(np.array([-5, 3], np.int32))
    traced = compose.uniform(compose.traced_seed_key(node), (4,))
    host = compose.uniform(compose.random_key(-5, 3), (4,))
    np.testing.assert_array_equal(runtime.to_host(runtime.LazyHandle(traced)),
                                  runtime.to_host(runtime.LazyHandle(host)))


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(-2**63, 2**64 - 1), counter=st.integers(0, 2**32 - 1))
def test_the_hosts_key_is_vectorized_threefry_of_the_seed(seed, counter):
    """seed_key runs in Python ints (fast per draw); the NumPy Threefry the reference backend
    runs over arrays is the oracle."""
    s = seed & 0xFFFFFFFFFFFFFFFF
    y0, y1 = prng.threefry2x32(np.uint32(s >> 32), np.uint32(s & 0xFFFFFFFF),
                               np.array([0], np.uint32), np.array([counter], np.uint32))
    np.testing.assert_array_equal(prng.seed_key(seed, counter), [y0[0], y1[0]])

