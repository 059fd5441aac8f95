"""Windows of windows fold into one window (core/ops.py _fold_dynamic_slice): torch indexes one
axis at a time, NumPy and TF all axes at once, and the three must record one graph. A fold
must hold for every value of the run-time starts -- a compiled step replays them with new
values, clamped -- so each case runs with starts drawn anywhere, out of range included, and
compares with the unfolded windows taken one after the other in NumPy."""
import numpy as np
from hypothesis import given, settings, strategies as st

from lazyx.core import host_values, ir, ops
from lazyx.frontends.numpy._base import wrap

SHAPE = (5, 6, 4)


def _starts(values):
    return [ir.param(v, "int32") for v in values]


def _run(node):
    return np.asarray(wrap(node))


def _window(value, starts, sizes):  # the IR's semantics, one window
    return host_values.dynamic_slice_array(value, *starts, slice_sizes=sizes)


start = st.integers(-3, 8)
starts = st.lists(start, min_size=3, max_size=3)


@st.composite
def two_windows(draw):
    """Sizes where, per axis, one of the two windows keeps the axis whole (what folds)."""
    inner, outer = [], []
    for d in SHAPE:
        n = draw(st.integers(1, d))
        if draw(st.booleans()):
            inner.append(n), outer.append(draw(st.sampled_from([n, draw(st.integers(1, n))]))
                                          if n == d else n)
        else:
            inner.append(d), outer.append(n)
    return tuple(inner), tuple(outer)


@settings(max_examples=60, deadline=None)
@given(two_windows(), starts, starts)
def test_a_window_of_a_window_is_one_window(sizes, first, second):
    value = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    x = ir.data(value, SHAPE, "float32")
    inner = ops.dynamic_slice(x, *_starts(first), slice_sizes=sizes[0])
    y = ops.dynamic_slice(inner, *_starts(second), slice_sizes=sizes[1])
    want = _window(_window(value, first, sizes[0]), second, sizes[1])
    assert y.op != "dynamic_slice" or y.inputs[0] is x  # folded: no window of a window
    np.testing.assert_array_equal(_run(y), want)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2), st.integers(1, 3), st.integers(0, 3), starts)
def test_a_window_of_a_strided_slice_is_taken_first(axis, stride, lo, first):
    value = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    x = ir.data(value, SHAPE, "float32")
    begin, end, steps = [0, 0, 0], list(SHAPE), [1, 1, 1]
    begin[axis], steps[axis] = lo, stride
    strided = ops.slice_(x, start_indices=begin, limit_indices=end, strides=steps)
    # a window over every other axis, keeping the sliced one whole
    sizes = tuple(n if k == axis else max(1, n - 2) for k, n in enumerate(strided.shape))
    y = ops.dynamic_slice(strided, *_starts(first), slice_sizes=sizes)
    want = _window(value[tuple(slice(b, e, s) for b, e, s in zip(begin, end, steps))],
                   first, sizes)
    if strided is not x:
        assert y.op == "slice" and y.inputs[0].op == "dynamic_slice"  # slice(window(x))
    np.testing.assert_array_equal(_run(y), want)


@settings(max_examples=60, deadline=None)
@given(start, start, start, st.integers(1, 4))
def test_a_window_of_a_squeezed_window_is_one_window_then_a_reshape(i, j, k, size):
    """torch's x[i, j:j + size] (select: a window and a reshape; then a window)."""
    value = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    x = ir.data(value, SHAPE, "float32")
    row = ops.reshape(ops.dynamic_slice(x, *_starts([i, 0, 0]), slice_sizes=(1, 6, 4)),
                      new_sizes=(6, 4))
    y = ops.dynamic_slice(row, *_starts([j, k]), slice_sizes=(size, 4))
    want = _window(_window(value, [i, 0, 0], (1, 6, 4)).reshape(6, 4), [j, k], (size, 4))
    assert y.op == "reshape" and y.inputs[0].op == "dynamic_slice" and y.inputs[0].inputs[0] is x
    np.testing.assert_array_equal(_run(y), want)


def test_windows_that_both_narrow_one_axis_stay_two():
    """x[1:5][1:3]: both windows narrow axis 0, so the starts would have to be added (an op):
    the graph stays as built, and right."""
    value = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    x = ir.data(value, SHAPE, "float32")
    inner = ops.dynamic_slice(x, *_starts([1, 0, 0]), slice_sizes=(4, 6, 4))
    y = ops.dynamic_slice(inner, *_starts([1, 0, 0]), slice_sizes=(2, 6, 4))
    assert y.inputs[0] is inner
    np.testing.assert_array_equal(_run(y), value[2:4])
