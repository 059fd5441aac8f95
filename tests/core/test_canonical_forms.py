"""Canonical forms applied as nodes are built (core/ops.py SIMPLIFY): the same math written
two ways must be one graph, or the three frontends' graphs differ (torch's F.linear(x, w.T)
transposes w.T back; NumPy's and TF's x @ w do not transpose at all)."""
import itertools

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.core import ir, ops
from lazyx.frontends.numpy._base import wrap


@pytest.mark.parametrize("first,second", list(itertools.product(
    itertools.permutations(range(3)), repeat=2)))
def test_a_transpose_of_a_transpose_is_one_transpose_or_none(first, second):
    value = np.arange(24.0).reshape(2, 3, 4)
    x = ir.data(value, value.shape, "float64")
    y = ops.transpose(ops.transpose(x, permutation=first), permutation=second)
    want = np.transpose(np.transpose(value, first), second)
    assert y.shape == want.shape
    if want.shape == value.shape and np.array_equal(want, value):
        assert y is x
    else:
        assert y.op == "transpose" and y.inputs[0] is x
    lazy = np.transpose(np.transpose(lnp.asarray(value), first), second) * 1.0
    assert lazyx.ir_text(lazy).count("= transpose(") == (y is not x)
    np.testing.assert_array_equal(np.asarray(lazy), want)


def test_x_T_T_records_no_transpose():
    a = lnp.asarray(np.arange(6.0).reshape(2, 3))
    assert "transpose" not in lazyx.ir_text(a.T.T * 2)
    np.testing.assert_array_equal(np.asarray(a.T.T * 2), np.arange(6.0).reshape(2, 3) * 2)


def _dot_data(*shapes):
    rng = np.random.default_rng(len(shapes))
    values = [rng.standard_normal(s) for s in shapes]
    return values, [ir.data(v, v.shape, "float64") for v in values]


@pytest.mark.parametrize("side", [0, 1])
def test_a_product_with_a_unit_free_axis_added_and_dropped_is_the_plain_product(side):
    """NumPy's x @ v reshapes v to (k, 1) and drops that axis after; torch's mv does not."""
    (m, v), (mn, vn) = _dot_data((5, 6), (6,))
    if side == 1:
        col = ops.reshape(vn, new_sizes=(6, 1))
        out = ops.reshape(ops.dot_general(mn, col, contracting_dimensions=((1,), (0,))),
                          new_sizes=(5,))
        want = m @ v
    else:
        row = ops.reshape(vn, new_sizes=(1, 6))
        out = ops.reshape(ops.dot_general(row, ops.transpose(mn, permutation=(1, 0)),
                                          contracting_dimensions=((1,), (0,))), new_sizes=(5,))
        want = v @ m.T
    assert out.op == "dot_general" and vn in out.inputs
    np.testing.assert_allclose(np.asarray(wrap(out)), want)


def test_a_product_with_a_unit_batch_axis_added_and_dropped_is_the_plain_product():
    """torch's einsum('ij,jk->ik') is a bmm of (1, i, j) and (1, j, k)."""
    (a, b), (an, bn) = _dot_data((5, 6), (6, 4))
    out = ops.reshape(ops.dot_general(ops.reshape(an, new_sizes=(1, 5, 6)),
                                      ops.reshape(bn, new_sizes=(1, 6, 4)),
                                      contracting_dimensions=((2,), (1,)),
                                      batch_dimensions=((0,), (0,))), new_sizes=(5, 4))
    assert out.op == "dot_general" and out.inputs == (an, bn)
    assert out.attrs["batch_dimensions"] == ((), ())
    np.testing.assert_allclose(np.asarray(wrap(out)), a @ b)


def test_a_unit_axis_the_result_keeps_is_not_dropped():
    (a, b), (an, bn) = _dot_data((5, 6), (6,))
    out = ops.dot_general(an, ops.reshape(bn, new_sizes=(6, 1)),
                          contracting_dimensions=((1,), (0,)))
    assert out.shape == (5, 1) and out.inputs[1].op == "reshape"
    np.testing.assert_allclose(np.asarray(wrap(out)), (a @ b)[:, None])
