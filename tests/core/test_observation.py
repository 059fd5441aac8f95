"""What an observation cuts (core/observation.py): the observed value and every live pending
value that shares a computed node with it -- one program, so reading values one by one never
computes their common part again -- and nothing that shares only inputs."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
from lazyx.core import observation, ops, runtime


pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py


def host(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def _shared_step(x_host, n):
    """n values that all read one computed node (a tanh of a matmul), like a model's
    gradients all read its forward; and one value that shares only the input."""
    x = runtime.from_host(x_host)
    trunk = ops.tanh(ops.dot_general(x, x, contracting_dimensions=((1,), (1,))))
    heads = [runtime.LazyHandle(ops.mul(trunk, ops.exp(trunk)) if i % 2 else
                                ops.add(trunk, trunk)) for i in range(n)]
    heads = [runtime.LazyHandle(ops.add(h.node, ops.neg(trunk))) for h in heads]
    other = runtime.LazyHandle(ops.neg(x))
    return heads, other


def _expected(x_host, n):
    trunk = np.tanh(x_host @ x_host.T)
    return [(trunk * np.exp(trunk) if i % 2 else trunk + trunk) - trunk for i in range(n)]


def test_reading_values_one_by_one_runs_their_shared_graph_once():
    x = host((4, 3))
    heads, other = _shared_step(x, 5)
    got = [runtime.to_host(h) for h in heads]
    for g, want in zip(got, _expected(x, 5)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
    m = lazyx.metrics()
    assert m["executions"] == 1 and m["compiles"] == 1, m
    assert other.pending  # shares only the input: not computed by the observation
    np.testing.assert_allclose(runtime.to_host(other), -x)


def test_a_repeated_step_hits_the_cache_and_the_memo():
    for i in range(3):
        x = host((4, 3), seed=i)
        heads, _ = _shared_step(x, 4)
        for g, want in zip([runtime.to_host(h) for h in heads], _expected(x, 4)):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
        lazyx.sync()
    m = lazyx.metrics()
    assert m["compiles"] == 2, m  # the heads' program, and the input-only value's
    assert m["executions"] == 6, m
    assert len(observation._MEMO) == 1


def test_an_observed_value_that_shares_nothing_cuts_alone():
    a = runtime.LazyHandle(ops.exp(runtime.from_host(host((3,)))))
    b = runtime.LazyHandle(ops.exp(runtime.from_host(host((3,), seed=1))))
    runtime.to_host(a)
    assert b.pending
    assert lazyx.metrics()["executions"] == 1


def test_a_consumer_of_the_observed_value_is_cut_with_it():
    x = runtime.from_host(host((3,)))
    a = runtime.LazyHandle(ops.exp(x))
    b = runtime.LazyHandle(ops.mul(a.node, a.node))  # made before a is read
    runtime.to_host(a)
    assert not b.pending
    np.testing.assert_allclose(runtime.to_host(b), np.exp(host((3,))) ** 2, rtol=1e-6)
    assert lazyx.metrics()["executions"] == 1


@settings(max_examples=25, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=6), st.integers(0, 5))
def test_exactly_the_values_sharing_a_computed_node_are_cut(shares, observed):
    """Each value reads the observed value's trunk or only the raw input; after reading the
    observed one, exactly the sharing ones are computed, and every number is right."""
    observed = observed % len(shares)
    x_host = host((2, 2))
    x = runtime.from_host(x_host)
    trunk = ops.sin(x)
    values = [runtime.LazyHandle(ops.mul(trunk if s else x, ops.cos(x))) for s in shares]
    shares = list(shares)
    shares[observed] = True  # the observed value reads the trunk itself
    values[observed] = runtime.LazyHandle(ops.mul(trunk, ops.cos(x)))
    runtime.to_host(values[observed])
    assert [not v.pending for v in values] == shares
    for v, s in zip(values, shares):
        want = (np.sin(x_host) if s else x_host) * np.cos(x_host)
        np.testing.assert_allclose(runtime.to_host(v), want, rtol=1e-6)
