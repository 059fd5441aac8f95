"""Each VJP rule against central finite differences of the same IR, in float64."""
import numpy as np
import pytest

from lazyx.core import autodiff, compose, ir, ops, runtime


def _eval(node):
    return runtime.to_host(runtime.LazyHandle(node))


def _check(build, *arrays, rtol=1e-5, atol=1e-6):
    rng = np.random.default_rng(0)
    leaves = [runtime.from_host(a) for a in arrays]
    out = build(*leaves)
    cot = rng.standard_normal(out.shape)
    grads = autodiff.vjp([out], [runtime.from_host(cot)], leaves)
    got = [_eval(g) for g in grads]

    def f(*xs):
        return float(np.sum(_eval(build(*[runtime.from_host(x) for x in xs])) * cot))

    eps = 1e-6
    for i, a in enumerate(arrays):
        want = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            want[idx] = (f(*plus) - f(*minus)) / (2 * eps)
        np.testing.assert_allclose(got[i], want, rtol=rtol, atol=atol, err_msg=f"input {i}")


R = np.random.default_rng(1)


def _a(*shape, positive=False):
    x = R.standard_normal(shape)
    return np.abs(x) + 0.5 if positive else x


UNARY = ["exp", "expm1", "neg", "tanh", "logistic", "sin", "cos", "erf", "abs"]
POSITIVE = ["log", "log1p", "sqrt", "rsqrt"]


@pytest.mark.parametrize("name", UNARY + POSITIVE)
def test_unary(name):
    _check(ops.OPS[name], _a(2, 3, positive=name in POSITIVE))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max", "min", "pow"])
def test_binary(name):
    _check(ops.OPS[name], _a(2, 3, positive=True), _a(2, 3, positive=name == "pow"))


def test_select_clamp_convert():
    p = runtime.from_host(R.standard_normal((2, 3)) > 0)
    _check(lambda x, y: ops.select(p, x, y), _a(2, 3), _a(2, 3))
    lo, hi = ir.constant(-0.5, "float64"), ir.constant(0.5, "float64")
    _check(lambda x: ops.clamp(lo, x, hi), _a(2, 3))
    x = runtime.from_host(_a(3))
    (g,) = autodiff.vjp([ops.convert(x, dtype="float32")], [ir.constant([1, 2, 3], "float32")],
                        [x])
    assert g.dtype == "float64"
    np.testing.assert_array_equal(_eval(g), [1, 2, 3])


def test_layout_rules():
    _check(lambda x: ops.broadcast_in_dim(x, shape=(2, 4, 3), broadcast_dimensions=(1, 2)),
           _a(1, 3))
    _check(lambda x: ops.reshape(x, new_sizes=(3, 2)), _a(2, 3))
    _check(lambda x: ops.transpose(x, permutation=(2, 0, 1)), _a(2, 3, 2))
    _check(lambda x: ops.slice_(x, start_indices=(1, 0), limit_indices=(4, 3), strides=(2, 2)),
           _a(5, 3))
    zero = ir.constant(0.0, "float64")
    _check(lambda x: ops.pad(x, zero, padding_config=((1, -1, 1), (0, 2, 0))), _a(3, 2))
    _check(lambda x, y: ops.concatenate(x, y, dimension=1), _a(2, 1), _a(2, 3))
    _check(lambda x: ops.rev(x, dimensions=(0,)), _a(3, 2))


def test_indexing_rules():
    idx = runtime.from_host(np.array([[2], [0], [2], [7]], np.int32))
    _check(lambda x: ops.gather(x, idx), _a(3, 2))
    _check(lambda x, u: ops.scatter(x, idx, u, mode="add"), _a(8, 2), _a(4, 2))
    s = runtime.from_host(np.array(1, np.int32))
    _check(lambda x: ops.dynamic_slice(x, s, s, slice_sizes=(2, 1)), _a(3, 3))
    _check(lambda x, u: ops.dynamic_update_slice(x, u, s, s), _a(3, 3), _a(2, 1))


def test_reductions_and_scans():
    _check(lambda x: ops.reduce_sum(x, axes=(0, 2)), _a(2, 3, 2))
    _check(lambda x: ops.reduce_max(x, axes=(1,)), _a(3, 4))
    _check(lambda x: ops.reduce_min(x, axes=(0,)), _a(3, 4))
    _check(lambda x: ops.cumsum(x, axis=1, reverse=False), _a(2, 4))


def test_reduce_max_ties_share_the_gradient():
    x = runtime.from_host(np.array([1.0, 3.0, 3.0]))
    out = ops.reduce_max(x, axes=(0,))
    (g,) = autodiff.vjp([out], [ir.constant(1.0, "float64")], [x])
    np.testing.assert_allclose(_eval(g), [0.0, 0.5, 0.5])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_gradient_skips_the_shift(name):
    """The max shift cancels in softmax and log-softmax: their gradients match finite
    differences, and the backward graph holds no tie mask from the max (an equality test and a
    reduction over the whole input, which made a TF tape over attention scores 1.5x slower)."""
    build = getattr(compose, name)
    _check(lambda x: build(x, 1), _a(3, 4))
    x = runtime.from_host(_a(3, 4))
    (grad,) = autodiff.vjp([build(x, 1)], [runtime.from_host(_a(3, 4))], [x])
    nodes = ir.topo_order([grad])
    assert "eq" not in {n.op for n in nodes}
    # held by a mark, not a node: the IR stays that of the same math written by hand
    assert "stop_gradient" not in {n.op for n in ir.topo_order([build(x, 1)])}
    assert any(n.op == "reduce_max" and n in compose.HELD_CONSTANT for n in nodes)


def test_a_held_node_copied_is_differentiated_and_memo_tells_them_apart():
    """The same structure with and without the mark: each gets its own gradient graph (the
    memo's recipes are told apart by which nodes are held), both equal to finite differences."""
    def shifted_sum(x, hold):
        m = ops.reduce_max(x, axes=(1,))
        if hold:
            compose.held_constant(m)
        m = ops.broadcast_in_dim(m, shape=x.shape, broadcast_dimensions=(0,))
        return ops.reduce_sum(ops.mul(ops.sub(x, m), ops.sub(x, m)), axes=(0, 1))

    a = _a(3, 4)
    for hold in (False, True, False):
        x = runtime.from_host(a)
        (grad,) = autodiff.vjp([shifted_sum(x, hold)], [runtime.from_host(np.float64(1))], [x])
        centered = a - a.max(axis=1, keepdims=True)
        want = 2 * centered
        if not hold:  # the max's own gradient: minus the row's sum, at the max
            want = want - np.where(a == a.max(axis=1, keepdims=True),
                                   2 * centered.sum(axis=1, keepdims=True), 0)
        np.testing.assert_allclose(_eval(grad), want, rtol=1e-12, atol=1e-12)


def _split_parts(x, bounds, axis=1):
    out = []
    for lo, hi in bounds:
        start, limit = [0] * x.ndim, list(x.shape)
        start[axis], limit[axis] = lo, hi
        out.append(ops.slice_(x, start_indices=start, limit_indices=limit))
    return out


def _weighted_sum(parts):
    total = None
    for k, p in enumerate(parts):
        term = ops.reduce_sum(ops.mul(ops.tanh(p), p), axes=tuple(range(p.ndim)))
        term = ops.mul(term, ir.constant(k + 1.0, "float64"))
        total = term if total is None else ops.add(total, term)
    return total


@pytest.mark.parametrize("bounds", [
    [(0, 2), (2, 5), (5, 8)],           # a split: the whole axis
    [(6, 8), (0, 3)],                   # out of order, with a gap
    [(0, 4), (2, 6), (4, 8), (1, 2)],   # overlapping ranges: some stay sums
])
def test_split_gradient_is_one_concatenate(bounds):
    """The slices of a split send their cotangents back as one concatenate, not as a sum of
    full-size zero pads (which XLA:CPU fused into a loop it does not vectorize), and the
    gradient is still exact (finite differences)."""
    _check(lambda x: _weighted_sum(_split_parts(x, bounds)), _a(3, 8))
    x = runtime.from_host(_a(3, 8))
    (grad,) = autodiff.vjp([_weighted_sum(_split_parts(x, bounds))],
                           [runtime.from_host(np.float64(1.0))], [x])
    nodes = ir.topo_order([grad])
    assert [n.op for n in nodes].count("concatenate") == 1
    sums_of_pads = [n for n in nodes if n.op == "add" and n.shape == x.shape and
                    sum(i.op == "pad" for i in n.inputs) == 2]
    assert not sums_of_pads


def test_dot_general():
    _check(lambda a, b: ops.dot_general(a, b, contracting_dimensions=((1,), (0,))),
           _a(2, 3), _a(3, 4))
    _check(lambda a, b: ops.dot_general(a, b, contracting_dimensions=((2,), (1,)),
                                        batch_dimensions=((0,), (0,))), _a(2, 3, 4), _a(2, 4, 2))
    _check(lambda a, b: ops.dot_general(a, b, contracting_dimensions=((0, 2), (2, 1))),
           _a(2, 3, 4), _a(3, 4, 2))


@pytest.mark.parametrize("strides,padding,dil", [((1, 1), ((0, 0), (0, 0)), (1, 1)),
                                                  ((2, 1), ((1, 1), (0, 2)), (1, 1)),
                                                  ((1, 2), ((1, 0), (1, 1)), (2, 1))])
def test_conv(strides, padding, dil):
    _check(lambda x, k: ops.conv(x, k, window_strides=strides, padding=padding,
                                 rhs_dilation=dil), _a(2, 2, 5, 6), _a(3, 2, 2, 2))


@pytest.mark.parametrize("groups,lhs_dil,strides,padding", [
    (2, (1, 1), (1, 2), ((1, 0), (0, 1))),   # grouped (depthwise-like with 2 groups)
    (1, (2, 1), (1, 1), ((1, 1), (0, 0))),   # input dilation: a transposed convolution
    (2, (2, 2), (1, 1), ((1, 2), (2, 1))),   # both, as a grouped transposed convolution
    (4, (1, 1), (2, 1), ((0, 0), (1, 1))),   # one input channel per group
])
def test_conv_groups_and_input_dilation(groups, lhs_dil, strides, padding):
    _check(lambda x, k: ops.conv(x, k, window_strides=strides, padding=padding,
                                 lhs_dilation=lhs_dil, rhs_dilation=(1, 2),
                                 feature_group_count=groups),
           _a(2, 4, 4, 5), _a(4, 4 // groups, 2, 2))


@pytest.mark.parametrize("window,strides,padding,dil", [
    ((2, 2), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ((3, 2), (2, 3), ((1, 2), (0, 1)), (1, 1)),
    ((2, 3), (2, 1), ((1, 0), (2, 2)), (2, 1)),
    ((2, 2), (1, 2), ((2, 1), (0, 3)), (1, 1))])  # windows wholly in the padding
def test_reduce_window_sum(window, strides, padding, dil):
    _check(lambda x: ops.reduce_window(x, kind="sum", window_dimensions=window,
                                       window_strides=strides, padding=padding,
                                       window_dilation=dil), _a(5, 6))


@pytest.mark.parametrize("window", [(2, 2), (2, 3), (1, 3), (5, 6), (3, 4)])
def test_tiled_window_sum_gradient_is_a_broadcast(window):
    """Windows that tile the input (stride = window, no padding; (3, 4) on 5x6 leaves a tail
    no window covers): the gradient repeats each window's cotangent by one broadcast, with no
    window sum, and equals finite differences (zeros in the tail)."""
    def pool(x):
        return ops.reduce_window(x, kind="sum", window_dimensions=window, window_strides=window,
                                 padding=((0, 0), (0, 0)), window_dilation=(1, 1))
    _check(pool, _a(5, 6))
    x = runtime.from_host(_a(5, 6))
    out = pool(x)
    (grad,) = autodiff.vjp([out], [runtime.from_host(_a(*out.shape))], [x])
    assert [n.op for n in ir.topo_order([grad])].count("reduce_window") == 0


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("window,strides,padding,dil", [
    ((2, 2), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ((3, 2), (2, 3), ((1, 2), (0, 1)), (1, 1)),
    ((2, 3), (2, 1), ((1, 0), (2, 2)), (2, 1))])  # (a window wholly in the padding gives inf)
def test_reduce_window_max_min(kind, window, strides, padding, dil):
    _check(lambda x: ops.reduce_window(x, kind=kind, window_dimensions=window,
                                       window_strides=strides, padding=padding,
                                       window_dilation=dil), _a(5, 6))


def test_reduce_window_max_ties_go_to_the_first_tap():
    # as XLA's select_and_scatter and TF's MaxPoolGrad: one tap per window gets the cotangent
    x = runtime.from_host(np.array([1.0, 1.0, 0.0, 2.0, 2.0]))
    y = ops.reduce_window(x, kind="max", window_dimensions=(2,), window_strides=(1,),
                          padding=((0, 0),))
    (g,) = autodiff.vjp([y], [runtime.from_host(np.array([1.0, 10.0, 100.0, 1000.0]))], [x])
    np.testing.assert_array_equal(_eval(g), [1.0, 10.0, 0.0, 1100.0, 0.0])


def test_unused_input_gets_zeros_and_missing_rule_is_named():
    x, y = runtime.from_host(_a(2)), runtime.from_host(_a(2))
    gx, gy = autodiff.vjp([ops.exp(x)], [runtime.from_host(np.ones(2))], [x, y])
    np.testing.assert_array_equal(_eval(gy), [0.0, 0.0])
    with pytest.raises(NotImplementedError, match="cbrt"):
        autodiff.vjp([ops.cbrt(x)], [runtime.from_host(np.ones(2))], [x])
    m = runtime.from_host(_a(3, 2))
    with pytest.raises(NotImplementedError, match="svd with full_matrices=True"):
        autodiff.vjp([ops.svd(m, full_matrices=True)[0]], [runtime.from_host(np.ones((3, 3)))],
                     [m])


def test_several_results_sort_and_top_k():
    """The multi node's rule gets one cotangent per result: the values' (summed over every
    projection that used them), none for the integer indices."""
    def values_twice(x):
        values, _ = ops.sort_with_indices(x, axis=0, descending=True)
        again, _ = ops.sort_with_indices(x, axis=0, descending=True)  # the same node
        return ops.add(values, ops.mul(again, again))
    _check(values_twice, _a(5, 3))
    _check(lambda x: ops.top_k(x, k=2)[0], _a(3, 4))
    x = runtime.from_host(_a(2, 4))
    values, indices = ops.top_k(x, k=3)
    (g,) = autodiff.vjp([values, indices], [runtime.from_host(np.ones((2, 3))), None], [x])
    assert np.count_nonzero(_eval(g)) == 6


def _sym(n, batch=()):
    x = _a(*batch, n, n)
    return x + np.swapaxes(x, -1, -2)


@pytest.mark.parametrize("lower", [True, False])
def test_eigh_values_and_vectors(lower):
    """A sign-free use of the vectors (their squared entries); the rule folds the unread
    triangle onto the read one, so finite differences of the raw input agree."""
    w = _a(3, 3)

    def build(x):
        values, vectors = ops.eigh(x, lower=lower)
        sq = ops.mul(vectors, vectors)
        return ops.add(ops.reduce_sum(ops.mul(sq, runtime.from_host(w)), axes=(0,)), values)
    _check(build, _sym(3), rtol=1e-4, atol=1e-6)
    _check(lambda x: ops.eigh(x, lower=lower)[0], _a(2, 3, 3), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2)])
def test_svd_and_qr(shape):
    def svd_all(x):
        u, s, vh = ops.svd(x)
        # (u s vh)^2 is sign-free, so finite differences are well defined
        us = ops.mul(u, ops.broadcast_in_dim(s, shape=u.shape,
                                             broadcast_dimensions=tuple(range(s.ndim - 1)) +
                                             (u.ndim - 1,)))
        prod = ops.dot_general(us, vh, contracting_dimensions=((u.ndim - 1,), (vh.ndim - 2,)),
                               batch_dimensions=(tuple(range(u.ndim - 2)),) * 2)
        return ops.mul(prod, prod)
    _check(svd_all, _a(*shape), rtol=1e-4, atol=1e-6)
    _check(lambda x: ops.svd(x, compute_uv=False)[0], _a(*shape), rtol=1e-4, atol=1e-6)
    _check(lambda x: ops.qr(x)[1], _a(*shape), rtol=1e-4, atol=1e-6)
    _check(lambda x: ops.qr(x)[0], _a(*shape), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_lu(batch):
    _check(lambda x: ops.lu(x)[0], _a(*batch, 3, 3), rtol=1e-4, atol=1e-6)
