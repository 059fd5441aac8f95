"""Conversions and layout primitives on both backends, against NumPy formulations."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from backend_harness import check, leaf
from lazyx.core import dtypes as dt
from lazyx.core import ops

small_shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def arange(shape, dtype="float32"):
    """Distinct values, so a wrong index shows up as a wrong number."""
    return (np.arange(math.prod(shape)) + 1).reshape(shape).astype(dt.to_numpy(dtype))


# ---------------------------------------------------------------- convert / bitcast

def _source_values(src, rng):
    """Values of dtype `src` covering its interesting range (specials for floats)."""
    if src == "bool":
        return rng.integers(0, 2, 24).astype(bool)
    if dt.is_int(src):
        info = np.iinfo(src)
        edges = [info.min, info.max, 0, 1, info.max // 2 + 1]
        body = rng.integers(info.min, info.max, 19, dtype=src, endpoint=True)
        return np.concatenate([np.array(edges, dtype=src), body])
    body = rng.uniform(-1000, 1000, 18)
    edges = [0.0, -0.0, 0.5, -0.5, 2.5, -1.75]
    values = np.concatenate([edges, body])
    if dt.is_complex(src):  # imaginary parts, some zero (complex -> bool looks at both)
        values = values + 1j * np.where(np.arange(24) % 3 == 0, 0.0, rng.uniform(-9, 9, 24))
    return values.astype(dt.to_numpy(src))


def _safe_for(values, src, dst):
    """Float -> integer conversion out of the target's range (or of NaN) is undefined in C and
    differs between XLA and NumPy, so those inputs are clipped into range for that target."""
    if not ((dt.is_float(src) or dt.is_complex(src)) and dt.is_int(dst)):
        return values
    info = np.iinfo(dst)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return np.clip(values.real.astype(np.float64), lo, hi).astype(values.dtype)


def _expected_convert(x, dst):
    if dst == "bool":
        return x != 0
    if dt.is_complex(dst):
        return x.astype(dst)
    if x.dtype.kind == "c":
        x = x.real  # the IR's complex -> real keeps the real part
    if dt.is_int(dst) and x.dtype.kind == "f":
        return np.trunc(x.astype(np.float64)).astype(dst)
    if dt.is_int(dst):
        return x.astype(dst)  # two's-complement wrap-around, as XLA
    with np.errstate(over="ignore"):  # e.g. int64 -> float16 overflows to inf, as in XLA
        return x.astype(np.float64).astype(dt.to_numpy(dst)) if x.dtype != bool else \
            x.astype(dt.to_numpy(dst))


@pytest.mark.parametrize("src", dt.ALL)
@pytest.mark.parametrize("seed", [0, 1])
def test_convert_every_pair(src, seed):
    rng = np.random.default_rng(seed)
    x = _source_values(src, rng)
    if dt.is_float(src):
        specials = np.array([np.nan, np.inf, -np.inf], dtype=x.dtype)
    roots, expected, names = [], [], []
    for dst in dt.ALL:
        values = _safe_for(x, src, dst)
        if dt.is_float(src) and not dt.is_int(dst):
            values = np.concatenate([values, specials])  # NaN/inf only where defined
        roots.append(ops.convert(leaf(values, src), dtype=dst))
        expected.append(_expected_convert(values, dst))
        names.append(f"convert {src}->{dst}")
    check(roots, expected, names=names)


SAME_WIDTH = {1: ("int8", "uint8"), 2: ("int16", "uint16", "float16", "bfloat16"),
              4: ("int32", "uint32", "float32"), 8: ("int64", "uint64", "float64")}


@pytest.mark.parametrize("width", sorted(SAME_WIDTH))
def test_bitcast_convert_round_trips_bits(width):
    rng = np.random.default_rng(width)
    bits = rng.integers(0, 2 ** (8 * width), 32, dtype=f"uint{8 * width}")
    roots, expected, names = [], [], []
    for src in SAME_WIDTH[width]:
        raw = bits.view(dt.to_numpy(src))
        if dt.is_float(src):
            # NaN payloads may be canonicalized on the way through: keep only non-NaN patterns
            raw = raw[~np.isnan(raw.astype(np.float64))]
            raw = raw[np.abs(raw.astype(np.float64)) >= np.finfo(np.float32 if src == "bfloat16"
                                                                  else src).tiny]
        for dst in SAME_WIDTH[width]:
            roots.append(ops.bitcast_convert(leaf(raw, src), dtype=dst))
            expected.append(raw.view(dt.to_numpy(dst)))
            names.append(f"bitcast {src}->{dst}")
    check(roots, expected, names=names)


def test_gradient_markers_are_the_identity_on_both_backends():
    """stop_gradient and custom_vjp only mean something to core/autodiff: run, each is its
    first operand."""
    x = np.array([[-np.inf, -0.0, 1.5], [np.nan, 2.0, 3.0]], np.float32)
    ints = np.arange(6, dtype=np.int64).reshape(2, 3)
    check([ops.stop_gradient(leaf(x)), ops.stop_gradient(leaf(ints)),
           ops.custom_vjp(leaf(x), leaf(ints), leaf(x))], [x, ints, x])


# ---------------------------------------------------------------- shapes

@given(data=st.data())
def test_broadcast_in_dim(data):
    out_shape = data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple))
    dims = sorted(data.draw(st.sets(st.integers(0, max(len(out_shape) - 1, 0)),
                                    max_size=len(out_shape))) if out_shape else [])
    in_shape = tuple(data.draw(st.sampled_from([1, out_shape[d]])) for d in dims)
    x = arange(in_shape, "int32")
    expanded = [1] * len(out_shape)
    for i, d in enumerate(dims):
        expanded[d] = in_shape[i]
    want = np.broadcast_to(x.reshape(expanded), out_shape)
    check([ops.broadcast_in_dim(leaf(x), shape=out_shape, broadcast_dimensions=dims)], [want])


@given(shape=small_shapes, data=st.data())
def test_reshape_and_transpose(shape, data):
    x = arange(shape, "float32")
    perm = data.draw(st.permutations(range(len(shape))))
    sizes = (x.size,) if x.size else (0, 3)
    check([ops.transpose(leaf(x), permutation=perm), ops.reshape(leaf(x), new_sizes=sizes)],
          [np.transpose(x, perm), x.reshape(sizes)])


@given(shape=small_shapes, data=st.data())
def test_strided_slice(shape, data):
    x = arange(shape, "int16")
    start, limit, strides = [], [], []
    for d in shape:
        s = data.draw(st.integers(0, d))
        start.append(s)
        limit.append(data.draw(st.integers(s, d)))
        strides.append(data.draw(st.integers(1, 3)))
    want = x[tuple(slice(s, l, st_) for s, l, st_ in zip(start, limit, strides))]
    check([ops.slice_(leaf(x), start_indices=start, limit_indices=limit, strides=strides)],
          [want])


@given(shape=nonempty_shapes, data=st.data())
def test_dynamic_slice_and_update_clamp(shape, data):
    x = arange(shape, "float64")
    sizes = [data.draw(st.integers(0, d)) for d in shape]
    # run-time starts, including negative and past-the-end ones (clamped into range)
    starts = [data.draw(st.integers(-3, d + 3)) for d in shape]
    clamped = [min(max(s, 0), d - n) for s, d, n in zip(starts, shape, sizes)]
    window = tuple(slice(c, c + n) for c, n in zip(clamped, sizes))
    update = -arange(sizes, "float64")
    updated = x.copy()
    updated[window] = update
    start_nodes = [leaf(np.int32(s)) for s in starts]
    check([ops.dynamic_slice(leaf(x), *start_nodes, slice_sizes=sizes),
           ops.dynamic_update_slice(leaf(x), leaf(update), *start_nodes)],
          [x[window], updated])


def _pad_formula(x, value, config):
    """Output position p on an axis reads input (p - low) / (interior + 1) when that is a whole
    number inside the input; every other position is the padding value."""
    out_shape = [lo + hi + d + max(d - 1, 0) * i for d, (lo, hi, i) in zip(x.shape, config)]
    out = np.full(out_shape, value, x.dtype)
    sources, targets = [], []
    for d, n, (lo, _hi, i) in zip(x.shape, out_shape, config):
        p = np.arange(n) - lo
        ok = (p >= 0) & (p % (i + 1) == 0) & (p // (i + 1) < d)
        targets.append(np.nonzero(ok)[0])
        sources.append(p[ok] // (i + 1))
    out[np.ix_(*targets)] = x[np.ix_(*sources)]
    return out


@given(shape=small_shapes, data=st.data())
def test_pad_negative_and_interior(shape, data):
    x = arange(shape, "int32")
    config = []
    for d in shape:
        interior = data.draw(st.integers(0, 2))
        full = d + max(d - 1, 0) * interior
        lo = data.draw(st.integers(-full, 3))
        hi = data.draw(st.integers(-(full + lo) if full + lo > 0 else 0, 3))
        config.append((lo, hi, interior))
    value = np.int32(-7)
    check([ops.pad(leaf(x), leaf(value), padding_config=config)],
          [_pad_formula(x, value, config)])


@given(shape=nonempty_shapes, data=st.data())
def test_concatenate_rev_iota(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    parts = [arange(shape[:axis] + (n,) + shape[axis + 1:], "uint8") + 10 * k
             for k, n in enumerate(sizes)]
    flip = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1))))
    x = arange(shape, "bfloat16")
    dtype = data.draw(st.sampled_from(["int32", "float32", "uint8", "int64"]))
    check([ops.concatenate(*[leaf(p) for p in parts], dimension=axis),
           ops.rev(leaf(x), dimensions=flip),
           ops.iota(dtype=dtype, shape=shape, dimension=axis)],
          [np.concatenate(parts, axis), np.flip(x, flip) if flip else x,
           np.broadcast_to(np.arange(shape[axis]).reshape(
               [-1 if i == axis else 1 for i in range(len(shape))]), shape).astype(dtype)])
