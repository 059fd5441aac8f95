"""A cut whose results include a value and a transpose or reshape of it computes only the view
and derives the other from it when read (runtime.plan_results, ir.Derived): the numbers are
those of computing both, on whichever backend LAZYX_BACKEND names."""
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazyx.core import ir, ops, runtime

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import shared  # noqa: E402  (tests/shared.py)

pytestmark = pytest.mark.usefixtures("fresh_runtime", "no_mesh_yet")  # tests/conftest.py


def host(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


def _matmul(a, b):
    return ops.dot_general(a, b, contracting_dimensions=((1,), (0,)),
                           batch_dimensions=((), ()))


def test_a_base_and_its_transpose_cost_one_result():
    a_host, b_host = host((6, 4), 1), host((4, 5), 2)
    base = _matmul(runtime.from_host(a_host), runtime.from_host(b_host))
    view = ops.transpose(base, permutation=(1, 0))
    hb, hv = runtime.LazyHandle(base), runtime.LazyHandle(view)
    with shared.ProgramResults() as seen:
        runtime.sync(hb, hv)
    assert seen.counts == [1]  # only the view was computed
    assert not hb.pending and not hv.pending  # both are data, as after any cut
    expected = a_host @ b_host
    np.testing.assert_allclose(runtime.to_host(hb), expected, rtol=1e-5)
    np.testing.assert_allclose(runtime.to_host(hv), expected.T, rtol=1e-5)


def test_a_derived_value_feeds_later_programs():
    x_host = host((3, 8), 3)
    base = ops.add(runtime.from_host(x_host), runtime.from_host(x_host))
    view = ops.reshape(base, new_sizes=(2, 12))
    hb, hv = runtime.LazyHandle(base), runtime.LazyHandle(view)
    runtime.sync(hb, hv)
    assert type(hb.node) is ir.Derived
    later = runtime.LazyHandle(ops.mul(hb.node, hb.node))
    np.testing.assert_allclose(runtime.to_host(later), (2 * x_host) ** 2, rtol=1e-6)


def test_chains_of_views_are_made_in_order():
    x_host = host((2, 3, 4), 4)
    a = ops.neg(runtime.from_host(x_host))
    b = ops.transpose(a, permutation=(2, 0, 1))
    c = ops.reshape(b, new_sizes=(4, 6))
    handles = [runtime.LazyHandle(n) for n in (c, a, b)]
    with shared.ProgramResults() as seen:
        runtime.sync(*handles)
    assert seen.counts == [1]
    expected_b = np.transpose(-x_host, (2, 0, 1))
    np.testing.assert_allclose(runtime.to_host(handles[1]), -x_host)
    np.testing.assert_allclose(runtime.to_host(handles[2]), expected_b)
    np.testing.assert_allclose(runtime.to_host(handles[0]), expected_b.reshape(4, 6))


def test_wide_dtypes_are_computed_not_derived():
    # jax makes 64-bit arrays only under x64: a derived int64 value would be made without it
    x_host = np.arange(12, dtype=np.int64).reshape(3, 4)
    base = ops.add(runtime.from_host(x_host), runtime.from_host(x_host))
    view = ops.transpose(base, permutation=(1, 0))
    with shared.ProgramResults() as seen:
        hb, hv = runtime.LazyHandle(base), runtime.LazyHandle(view)
        runtime.sync(hb, hv)
    assert seen.counts == [2]
    assert runtime.to_host(hv).dtype == np.int64
    np.testing.assert_array_equal(runtime.to_host(hv), (2 * x_host).T)


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), seed=st.integers(0, 2**16),
       data=st.data())
def test_any_permutation_or_reshape_round_trips(shape, seed, data):
    x_host = host(tuple(shape), seed)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    base = ops.exp(runtime.from_host(x_host))
    transpose = data.draw(st.booleans())
    view = ops.transpose(base, permutation=perm) if transpose else \
        ops.reshape(base, new_sizes=(int(np.prod(shape)),))
    hb, hv = runtime.LazyHandle(base), runtime.LazyHandle(view)
    runtime.sync(hv, hb)
    expected = np.exp(x_host)
    np.testing.assert_allclose(runtime.to_host(hb), expected, rtol=1e-6)
    want = np.transpose(expected, perm) if transpose else expected.reshape(-1)
    np.testing.assert_allclose(runtime.to_host(hv), want, rtol=1e-6)
