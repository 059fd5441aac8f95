"""Canonical forms applied as nodes are built (core/ops.py SIMPLIFY): the same math written
two ways must be one graph, or the three frontends' graphs differ (torch's F.linear(x, w.T)
transposes w.T back; NumPy's and TF's x @ w do not transpose at all)."""
import itertools

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.core import ir, ops


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
