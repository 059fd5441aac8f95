"""gather / scatter in the IR's canonical form, and sorting, on both backends vs NumPy."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from backend_harness import check, leaf
from lazyx.core import dtypes as dt
from lazyx.core import ops

operand_shapes = st.sampled_from([(5,), (4, 3), (3, 2, 2)])


@given(shape=operand_shapes, data=st.data())
def test_gather_clamps_out_of_range(shape, data):
    k = data.draw(st.integers(1, len(shape)))
    batch = data.draw(st.sampled_from([(), (4,), (2, 3)]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.uniform(-5, 5, shape).astype(np.float32)
    # indices up to 2 past either end: they clamp to the nearest valid index
    index_dtype = data.draw(st.sampled_from(["int32", "int64", "uint8"]))
    low = 0 if dt.is_unsigned(index_dtype) else -2
    idx = np.stack([rng.integers(low, shape[j] + 2, batch) for j in range(k)], axis=-1)
    idx = idx.astype(index_dtype)
    clipped = tuple(np.clip(idx[..., j].astype(np.int64), 0, shape[j] - 1) for j in range(k))
    check([ops.gather(leaf(x), leaf(idx))], [x[clipped]])


def _scatter_expected(x, idx, upd, mode):
    out = x.copy()
    k = idx.shape[-1]
    flat_idx = idx.reshape(-1, k)
    flat_upd = upd.reshape((-1,) + x.shape[k:])
    for i, u in zip(flat_idx, flat_upd):
        if any(not 0 <= v < d for v, d in zip(i, x.shape)):
            continue  # out-of-range updates are dropped
        where = tuple(int(v) for v in i)
        if mode == "set":
            out[where] = u
        elif mode == "add":
            out[where] = out[where] + u
        elif mode == "mul":
            out[where] = out[where] * u
        elif mode == "max":
            out[where] = np.maximum(out[where], u)
        else:
            out[where] = np.minimum(out[where], u)
    return out


@pytest.mark.parametrize("mode", ["set", "add", "mul", "max", "min"])
@given(shape=operand_shapes, data=st.data())
def test_scatter_modes_drop_out_of_range(mode, shape, data):
    k = data.draw(st.integers(1, len(shape)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dtype = data.draw(st.sampled_from(["int32", "float32"]))
    n = data.draw(st.integers(0, 6))
    if mode == "set":
        # which of several updates to one index wins is unspecified: indices are distinct here
        cells = list(np.ndindex(*[d + 2 for d in shape[:k]]))
        chosen = rng.choice(len(cells), size=min(n, len(cells)), replace=False)
        idx = np.array([[v - 1 for v in cells[c]] for c in chosen], np.int32).reshape(-1, k)
    else:
        idx = np.stack([rng.integers(-1, shape[j] + 1, n) for j in range(k)], -1).astype(np.int32)
    x = rng.integers(-5, 6, shape).astype(dtype)
    upd = rng.integers(-3, 4, (idx.shape[0],) + shape[k:]).astype(dtype)
    check([ops.scatter(leaf(x), leaf(idx), leaf(upd), mode=mode)],
          [_scatter_expected(x, idx, upd, mode)])


def _order(values, descending):
    """Stable order with NaN above +inf (first when descending), by Python's stable sort."""
    def key(i):
        v = float(values[i])
        return (1, 0.0) if math.isnan(v) else (0, -v if descending else v)
    if descending:
        return sorted(range(len(values)), key=lambda i: (-key(i)[0], key(i)[1]))
    return sorted(range(len(values)), key=key)


def _along(x, axis, fn):
    return np.apply_along_axis(fn, axis, x) if x.size else x.astype(np.int64)


@pytest.mark.parametrize("dtype", ["float32", "int16", "float64", "uint8", "bfloat16"])
@given(shape=st.sampled_from([(0,), (7,), (3, 5), (2, 3, 4)]), data=st.data())
def test_sort_argsort_stable_with_nan(dtype, shape, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(0 if dt.is_unsigned(dtype) else -3, 4, shape).astype(np.float64)
    if dt.is_float(dtype) and x.size:
        # NaNs (positive ones; -0.0 is avoided: its order against 0.0 is not pinned down)
        x[rng.random(shape) < 0.2] = np.nan
        x[rng.random(shape) < 0.1] = np.inf
    x = x.astype(dt.to_numpy(dtype))
    axis = data.draw(st.integers(0, len(shape) - 1))
    descending = data.draw(st.booleans())
    order = _along(x, axis, lambda row: np.array(_order(row, descending)))
    node = leaf(x)
    values = np.take_along_axis(x, order, axis) if x.size else x
    check([ops.sort(node, axis=axis, descending=descending),
           ops.argsort(node, axis=axis, descending=descending, index_dtype="int32")],
          [values, order])
    # both from one sort: the same values and (stable) indices
    check(list(ops.sort_with_indices(node, axis=axis, descending=descending,
                                     index_dtype="int32")), [values, order])


@pytest.mark.parametrize("dtype", ["float32", "int32", "bfloat16"])
@given(shape=st.sampled_from([(6,), (3, 5), (2, 2, 4)]), data=st.data())
def test_top_k_largest_first_lower_index_on_ties(dtype, shape, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(-3, 4, shape).astype(dt.to_numpy(dtype))  # many ties
    k = data.draw(st.integers(0, shape[-1]))
    order = _along(x, x.ndim - 1, lambda row: np.array(_order(row, True)))[..., :k]
    node = leaf(x)
    check(list(ops.top_k(node, k=k, index_dtype="int32")),
          [np.take_along_axis(x, order, -1), order])


def test_top_k_takes_signed_zeros_as_equal():
    """-0.0 and +0.0 tie: the lower index comes first, on both backends (XLA's TopK alone
    would rank -0.0 lower), as in NumPy's stable sort, torch and TF."""
    x = np.array([[-0.0, 0.0, 0.0, -1.0], [0.0, -0.0, 2.0, 0.0]], np.float32)
    expected = np.argsort(-x, axis=-1, kind="stable")[..., :3]
    check([ops.top_k(leaf(x), k=3)[1]], [expected.astype(np.int64)])
