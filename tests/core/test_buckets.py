"""Changing shapes: lazyx.pad_to_bucket on host arrays, and the LAZYX_DEBUG advice that names a
dimension which keeps recompiling and proposes buckets."""
import io
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

import lazyx
from lazyx.core import buckets, explain, ops, runtime
from lazyx.core.source import format_line


@pytest.mark.parametrize("n, expected", [(0, 1), (1, 1), (2, 2), (17, 32), (32, 32), (33, 64),
                                         (128, 128)])
def test_default_buckets_are_powers_of_two(n, expected):
    assert buckets.bucket_size(n) == expected


def test_explicit_buckets_and_their_errors():
    assert buckets.bucket_size(17, (128, 24, 64)) == 24
    assert buckets.bucket_size(24, [24, 64]) == 24
    with pytest.raises(ValueError, match="size 130 exceeds the largest bucket 128"):
        buckets.bucket_size(130, (32, 64, 128))
    with pytest.raises(ValueError, match="positive sizes"):
        buckets.bucket_size(3, ())
    with pytest.raises(ValueError, match="axis 2 is out of bounds for a 2-d value"):
        lazyx.pad_to_bucket(np.zeros((2, 3)), axis=2)
    with pytest.raises(TypeError):
        lazyx.pad_to_bucket(np.zeros((2, 3)), axis=1.5)


@given(shape=st.lists(st.integers(0, 9), min_size=1, max_size=3), data=st.data())
def test_pad_to_bucket_matches_numpy_pad(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    chosen = data.draw(st.none() | st.lists(st.integers(1, 12), min_size=1, max_size=3)
                       .filter(lambda b: max(b) >= shape[axis]))
    dtype = data.draw(st.sampled_from([np.float32, np.int64, np.bool_]))
    x = np.random.default_rng(0).integers(0, 5, shape).astype(dtype)
    padded, mask = lazyx.pad_to_bucket(x, axis=axis, buckets=chosen, value=1)
    target = buckets.bucket_size(shape[axis], chosen)
    widths = [(0, 0)] * len(shape)
    widths[axis] = (0, target - shape[axis])
    np.testing.assert_array_equal(padded, np.pad(x, widths, constant_values=1))
    assert padded.dtype == x.dtype and mask.dtype == np.bool_ and mask.shape == padded.shape
    np.testing.assert_array_equal(mask, np.pad(np.ones(x.shape, bool), widths))
    np.testing.assert_array_equal(padded[mask].reshape(x.shape) if x.size else x, x)


def test_suggested_buckets_cover_the_sizes_seen():
    assert buckets.suggest_buckets([17, 30, 45, 64, 90]) == (32, 64, 128)


# ---------------------------------------------------------------- the advice

def _step(length, rows=2):
    """A step whose input length varies; returns the host result (checked against NumPy)."""
    host = np.arange(rows * length, dtype=np.float32).reshape(rows, length)
    x = runtime.from_host(host); line = sys._getframe().f_lineno  # noqa: E702
    got = runtime.to_host(runtime.LazyHandle(ops.reduce_sum(ops.mul(x, x), axes=(1,))))
    np.testing.assert_allclose(got, (host * host).sum(1), rtol=1e-5)
    return line


@pytest.fixture()
def explainer():
    lazyx.reset_metrics()
    runtime.CACHE.clear()
    with explain.Explainer(io.StringIO()) as ex:
        yield ex


def test_advice_after_three_compiles_names_the_input_dimension_and_sizes(explainer):
    for length in (17, 40):
        line = _step(length)
    assert explainer.advice == []  # two compiles: not yet a pattern
    line = _step(17) and _step(90)  # a cache hit, then the third compile
    (advice,) = explainer.advice
    where = format_line((__file__, line))
    assert advice.startswith("graphs synced at ")
    assert f"compiled 3 times because input 0 (made at {where}) keeps changing dimension 1: " \
           f"sizes 17, 40, 90 were seen" in advice
    assert "lazyx.pad_to_bucket(x, axis=1, buckets=(32, 64, 128))" in advice
    assert f"lazyx: changing shapes: {advice}" in explainer.stream.getvalue()
    assert f"! shapes keep changing: {advice}" in lazyx.analysis()


def test_advice_is_repeated_only_as_compiles_double(explainer):
    for length in range(1, 14):
        _step(length)
    assert len(explainer.advice) == 3  # after 3, 6 and 12 compiles
    assert "compiled 12 times" in explainer.advice[-1]
    assert "sizes 1, 2, 3, 4, 5, 6, 7, 8, ... (12 sizes) were seen" in explainer.advice[-1]


def test_no_advice_when_shapes_stay_and_the_graph_changes(explainer):
    host = np.ones((2, 3), np.float32)
    for k in range(4):  # another op each time: new graphs, but no dimension varies
        x = runtime.from_host(host)
        node = [ops.exp, ops.tanh, ops.neg, ops.sqrt][k](x)
        runtime.to_host(runtime.LazyHandle(node))
    assert explainer.advice == []


def test_advice_names_the_widest_varying_dimension(explainer):
    for rows, length in ((2, 5), (3, 9), (2, 20)):  # rows take 2 sizes, length 3
        _step(length, rows)
    (advice,) = explainer.advice
    assert "keeps changing dimension 1" in advice and "1 other dimensions vary too" in advice
