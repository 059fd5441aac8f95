"""reduce_window on both backends, against a direct loop over output positions written
independently of the reference backend, and against jax.lax.reduce_window itself."""
import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

from backend_harness import check, leaf
from lazyx.core import dtypes as dt
from lazyx.core import ops

IDENTITY = {"sum": lambda d: 0, "max": lambda d: -np.inf if d.kind == "f" else np.iinfo(d).min,
            "min": lambda d: np.inf if d.kind == "f" else np.iinfo(d).max}
REDUCE = {"sum": np.sum, "max": np.max, "min": np.min}  # NaN propagates


def _direct(x, kind, window, strides, padding, base_dil, win_dil):
    """out[p] = reduce over taps k of x_padded[p*s + k*wd], where position q of the padded,
    base-dilated operand reads x[(q - low) / bd] when that lands on an element, else identity."""
    padded = [((d - 1) * a + 1 if d else 0) + lo + hi
              for d, (lo, hi), a in zip(x.shape, padding, base_dil)]
    out_shape = [(n - ((k - 1) * b + 1)) // s + 1 if n else 0  # an empty axis: no windows
                 for n, k, s, b in zip(padded, window, strides, win_dil)]
    identity = IDENTITY[kind](x.dtype)
    out = np.empty(out_shape, np.float64 if x.dtype.kind == "f" else np.int64)
    for p in itertools.product(*map(range, out_shape)):
        taps = []
        for k in itertools.product(*map(range, window)):
            src = []
            for pj, kj, s, (lo, _), a, b, d in zip(p, k, strides, padding, base_dil, win_dil,
                                                   x.shape):
                q = pj * s + kj * b - lo
                if q % a or not 0 <= q // a < d:
                    break
                src.append(q // a)
            else:
                taps.append(x[tuple(src)].item())
                continue
            taps.append(identity)
        out[p] = REDUCE[kind](taps)
    return out


@st.composite
def window_case(draw):
    rank = draw(st.integers(1, 3))
    shape, window, strides, padding, base_dil, win_dil = [], [], [], [], [], []
    for _ in range(rank):
        d, k = draw(st.integers(0, 5)), draw(st.integers(1, 3))
        a, b = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        padded = ((d - 1) * a + 1 if d else 0) + lo + hi
        span = padded - ((k - 1) * b + 1)
        if span < 0 and padded:  # keep the case valid: pad the high side up to the window
            hi -= span
        shape.append(d)
        window.append(k)
        strides.append(draw(st.integers(1, 3)))
        padding.append((lo, hi))
        base_dil.append(a)
        win_dil.append(b)
    return tuple(shape), dict(window_dimensions=window, window_strides=strides,
                              padding=padding, base_dilation=base_dil, window_dilation=win_dil)


def _rand(rng, shape, dtype):
    if dt.is_int(dtype):
        return rng.integers(-20, 21, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dt.to_numpy(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@given(case=window_case(), seed=st.integers(0, 2**32 - 1))
def test_reduce_window_sum_max_min(dtype, case, seed):
    shape, attrs = case
    x = _rand(np.random.default_rng(seed), shape, dtype)
    kinds = ("sum", "max", "min")
    nodes = [ops.reduce_window(leaf(x), kind=kind, **attrs) for kind in kinds]
    wants = [_direct(x, kind, *attrs.values()).astype(dtype) for kind in kinds]
    got = check(nodes, wants, names=[f"reduce_window {k}" for k in kinds])
    jax = pytest.importorskip("jax")
    lax = jax.lax
    with jax.enable_x64(dtype == "float64"):
        for kind, value in zip(kinds, got):
            init = np.asarray(IDENTITY[kind](x.dtype), x.dtype)
            fn = {"sum": lax.add, "max": lax.max, "min": lax.min}[kind]
            direct = lax.reduce_window(x, init, fn, *attrs.values())
            np.testing.assert_allclose(value, np.asarray(direct), rtol=1e-5, atol=1e-6,
                                       err_msg=f"reduce_window {kind} vs jax")


def test_reduce_window_nan_propagates_and_half_precision():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    x[1, 2] = np.nan
    attrs = dict(window_dimensions=(2, 2), window_strides=(1, 2), padding=((1, 0), (0, 1)))
    want = {k: _direct(x, k, attrs["window_dimensions"], attrs["window_strides"],
                       attrs["padding"], (1, 1), (1, 1)) for k in ("sum", "max", "min")}
    check([ops.reduce_window(leaf(x), kind=k, **attrs) for k in want],
          [w.astype(np.float32) for w in want.values()])
    for dtype in ("float16", "bfloat16"):
        half = leaf(x.astype(dt.to_numpy(dtype)))
        check([ops.reduce_window(half, kind=k, **attrs) for k in want],
              [w.astype(dt.to_numpy(dtype)) for w in want.values()], rtol=0.05, atol=0.05)


@pytest.mark.parametrize("kwargs, message", [
    (dict(kind="mean", window_dimensions=(2, 2), window_strides=(1, 1),
          padding=((0, 0), (0, 0))), "kind must be one of"),
    (dict(kind="sum", window_dimensions=(2,), window_strides=(1, 1),
          padding=((0, 0), (0, 0))), "window_dimensions needs 2 entries"),
    (dict(kind="max", window_dimensions=(5, 2), window_strides=(1, 1),
          padding=((0, 0), (0, 0))), r"window \(5, 2\).*larger than the padded operand"),
    (dict(kind="max", window_dimensions=(2, 2), window_strides=(0, 1),
          padding=((0, 0), (0, 0))), "must be >= 1"),
    (dict(kind="min", window_dimensions=(2, 2), window_strides=(1, 1),
          padding=((-1, 0), (0, 0))), "padding"),
    (dict(kind="sum", window_dimensions=(2, 2), window_strides=(1, 1),
          padding=((0, 0),)), "padding needs 2"),
])
def test_reduce_window_rejects_bad_calls(kwargs, message):
    x = leaf(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match=message) as err:
        ops.reduce_window(x, **kwargs)
    assert "reduce_window" in str(err.value)


def test_reduce_window_sum_rejects_bool():
    with pytest.raises(TypeError, match="reduce_window"):
        ops.reduce_window(leaf(np.zeros((3,), bool)), kind="sum", window_dimensions=(2,),
                          window_strides=(1,), padding=((0, 0),))
