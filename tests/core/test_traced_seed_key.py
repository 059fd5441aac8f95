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
