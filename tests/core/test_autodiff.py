"""Each VJP rule against central finite differences of the same IR, in float64."""
import numpy as np
import pytest

from lazyx.core import autodiff, ir, ops, runtime


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
    with pytest.raises(NotImplementedError, match="sort"):
        autodiff.vjp([ops.sort(x, axis=0)], [runtime.from_host(np.ones(2))], [x])
