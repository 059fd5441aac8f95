"""dot_general and conv on both backends, against NumPy formulas written independently of
the reference backend (matmul of transposed operands; a direct convolution sum), and conv
against jax.lax.conv_general_dilated itself."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from backend_harness import check, leaf
from lazyx.core import dtypes as dt
from lazyx.core import ops


def rand(rng, shape, dtype):
    if dt.is_int(dtype):
        return rng.integers(-4, 5, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dt.to_numpy(dtype))


def _axes_layout(draw, groups):
    """A random placement of named axis groups into one operand's axes."""
    names = [name for name, n in groups for _ in range(n)]
    order = draw(st.permutations(range(len(names))))
    return [names[i] for i in order]


@pytest.mark.parametrize("dtype, out", [("float32", None), ("float64", None), ("int32", None),
                                        ("int8", "int32"), ("bfloat16", "float32")])
@given(data=st.data())
def test_dot_general_batched(dtype, out, data):
    nb, nc = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
    nl, nr = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 1))
    size = st.integers(1, 3)
    b_sizes = [data.draw(size) for _ in range(nb)]
    c_sizes = [data.draw(size) for _ in range(nc)]
    l_sizes = [data.draw(size) for _ in range(nl)]
    r_sizes = [data.draw(size) for _ in range(nr)]
    # label each axis ("b", k), ("c", k), ("l", k) / ("r", k) and shuffle the operand axes
    lhs_axes = data.draw(st.permutations([("b", k) for k in range(nb)] + [("c", k) for k in range(nc)]
                                         + [("l", k) for k in range(nl)]))
    rhs_axes = data.draw(st.permutations([("b", k) for k in range(nb)] + [("c", k) for k in range(nc)]
                                         + [("r", k) for k in range(nr)]))
    sizes = {"b": b_sizes, "c": c_sizes, "l": l_sizes, "r": r_sizes}
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rand(rng, [sizes[g][k] for g, k in lhs_axes], dtype)
    y = rand(rng, [sizes[g][k] for g, k in rhs_axes], dtype)
    pos = lambda axes, g: [axes.index((g, k)) for k in range(len(sizes[g]))]  # noqa: E731
    node = ops.dot_general(leaf(x), leaf(y),
                           contracting_dimensions=(pos(lhs_axes, "c"), pos(rhs_axes, "c")),
                           batch_dimensions=(pos(lhs_axes, "b"), pos(rhs_axes, "b")),
                           preferred_element_type=out)
    # NumPy: move to (batch, free, contract) x (batch, contract, free), flatten, matmul
    # (free axes keep their operand order in the result)
    acc = np.float64 if dt.is_float(dtype) else np.int64
    l_free = [i for i, (g, _) in enumerate(lhs_axes) if g == "l"]
    r_free = [i for i, (g, _) in enumerate(rhs_axes) if g == "r"]
    xt = np.transpose(x, pos(lhs_axes, "b") + l_free + pos(lhs_axes, "c"))
    yt = np.transpose(y, pos(rhs_axes, "b") + pos(rhs_axes, "c") + r_free)
    B, L, C, R = (math.prod(sizes[g]) for g in "blcr")
    want = np.matmul(xt.astype(acc).reshape(B, L, C), yt.astype(acc).reshape(B, C, R))
    want = want.reshape(b_sizes + [x.shape[i] for i in l_free] + [y.shape[i] for i in r_free])
    want = want.astype(dt.to_numpy(out or dtype))
    check([node], [want])


def _conv_direct(lhs, rhs, strides, padding, lhs_dil, rhs_dil, groups, batch_groups):
    """out[n, o, p] = sum over (i, k) of lhs_padded[n', group channel i, p*s + k*rd] rhs[o, i, k]
    where lhs_padded at q reads lhs at (q - low) / lhs_dilation when that lands on an input."""
    N, C = lhs.shape[:2]
    O, I = rhs.shape[:2]
    sp_in, sp_k = lhs.shape[2:], rhs.shape[2:]
    out_sp = []
    for d, k, s, (lo, hi), a, b in zip(sp_in, sp_k, strides, padding, lhs_dil, rhs_dil):
        out_sp.append(((d - 1) * a + 1 + lo + hi - ((k - 1) * b + 1)) // s + 1)
    out = np.zeros((N // batch_groups, O, *out_sp), np.float64)
    per_group, per_bgroup = O // groups, O // batch_groups
    for n, o in itertools.product(range(N // batch_groups), range(O)):
        g, bg = o // per_group, o // per_bgroup
        src_n = bg * (N // batch_groups) + n
        for p in itertools.product(*map(range, out_sp)):
            total = 0.0
            for k in itertools.product(*map(range, sp_k)):
                src = []
                for pj, kj, s, (lo, _), a, b, d in zip(p, k, strides, padding, lhs_dil,
                                                       rhs_dil, sp_in):
                    q = pj * s + kj * b - lo
                    if q % a or not 0 <= q // a < d:
                        break
                    src.append(q // a)
                else:
                    for i in range(I):
                        total += lhs[(src_n, g * I + i, *src)] * rhs[(o, i, *k)]
            out[(n, o, *p)] = total
    return out


@st.composite
def conv_case(draw):
    nsp = draw(st.integers(1, 3))
    groups, batch_groups = draw(st.sampled_from([(1, 1), (2, 1), (1, 2)]))
    I = draw(st.integers(1, 2))
    O = groups * batch_groups * draw(st.integers(1, 2))
    N = batch_groups * draw(st.integers(1, 2))
    kernel = [draw(st.integers(1, 3)) for _ in range(nsp)]
    rhs_dil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    lhs_dil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 2)) for _ in range(nsp)]
    spatial, padding = [], []
    for k, a, b in zip(kernel, lhs_dil, rhs_dil):
        d = draw(st.integers(1, 5 if nsp < 3 else 3))
        lo, hi = draw(st.integers(-1, 2)), draw(st.integers(-1, 2))
        span = (d - 1) * a + 1 + lo + hi - ((k - 1) * b + 1)
        if span < 0:  # keep the case valid: pad the high side up to the kernel
            hi -= span
        spatial.append(d)
        padding.append((lo, hi))
    return dict(lhs_shape=(N, I * groups, *spatial), rhs_shape=(O, I, *kernel),
                window_strides=strides, padding=padding, lhs_dilation=lhs_dil,
                rhs_dilation=rhs_dil, feature_group_count=groups,
                batch_group_count=batch_groups)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@given(case=conv_case(), seed=st.integers(0, 2**32 - 1))
def test_conv_general(dtype, case, seed):
    rng = np.random.default_rng(seed)
    lhs, rhs = rand(rng, case["lhs_shape"], dtype), rand(rng, case["rhs_shape"], dtype)
    attrs = {k: v for k, v in case.items() if not k.endswith("_shape")}
    node = ops.conv(leaf(lhs), leaf(rhs), **attrs)
    want = _conv_direct(lhs.astype(np.float64), rhs.astype(np.float64),
                        attrs["window_strides"], attrs["padding"], attrs["lhs_dilation"],
                        attrs["rhs_dilation"], attrs["feature_group_count"],
                        attrs["batch_group_count"]).astype(dtype)
    (got,) = check([node], [want])
    jax = pytest.importorskip("jax")
    with jax.enable_x64(dtype == "float64"):
        direct = jax.lax.conv_general_dilated(
            lhs, rhs, attrs["window_strides"], attrs["padding"], attrs["lhs_dilation"],
            attrs["rhs_dilation"], feature_group_count=attrs["feature_group_count"],
            batch_group_count=attrs["batch_group_count"], precision=jax.lax.Precision.HIGHEST)
        np.testing.assert_allclose(got, np.asarray(direct), rtol=1e-5, atol=1e-6)


def test_conv_half_precision_matches_float32():
    rng = np.random.default_rng(0)
    lhs, rhs = rand(rng, (2, 4, 6, 5), "float32"), rand(rng, (6, 2, 3, 2), "float32")
    attrs = dict(window_strides=(1, 2), padding=((1, 0), (0, 1)), feature_group_count=2)
    want = _conv_direct(lhs.astype(np.float64), rhs.astype(np.float64), (1, 2),
                        ((1, 0), (0, 1)), (1, 1), (1, 1), 2, 1)
    for dtype in ("float16", "bfloat16"):
        half = dt.to_numpy(dtype)
        check([ops.conv(leaf(lhs.astype(half)), leaf(rhs.astype(half)), **attrs)],
              [want.astype(half)], rtol=0.05, atol=0.05)
