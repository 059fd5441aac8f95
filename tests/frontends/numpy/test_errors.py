"""Bad calls raise what NumPy raises, with NumPy's wording, at the call (nothing is run)."""
import numpy as np
import pytest
from numpy.exceptions import AxisError

import lazyx
import lazyx.frontends.numpy as lnp

A = np.ones((2, 3))

CASES = [
    ("broadcast", lambda m, x: x + m.ones(4)),
    ("broadcast_fn", lambda m, x: m.add(x, m.ones((3, 2)))),
    ("where_broadcast", lambda m, x: m.where(x > 0, x, m.ones(4))),
    ("sum_axis", lambda m, x: m.sum(x, axis=2)),
    ("mean_axis", lambda m, x: x.mean(axis=-3)),
    ("dup_axis", lambda m, x: m.sum(x, axis=(0, 0))),
    ("argmax_axis", lambda m, x: m.argmax(x, axis=5)),
    ("concat_axis", lambda m, x: m.concatenate([x, x], axis=2)),
    ("concat_shapes", lambda m, x: m.concatenate([x, m.ones((2, 2))])),
    ("concat_ndim", lambda m, x: m.concatenate([x, m.ones(3)])),
    ("stack_shapes", lambda m, x: m.stack([x, m.ones((3, 2))])),
    ("reshape", lambda m, x: m.reshape(x, (4,))),
    ("reshape_two_unknown", lambda m, x: x.reshape(-1, -1)),
    ("matmul_core", lambda m, x: x @ x),
    ("matmul_0d", lambda m, x: m.matmul(x, m.float64(2.0)) if m is np else m.matmul(x, 2.0)),
    ("dot_align", lambda m, x: m.dot(x, x)),
    ("squeeze", lambda m, x: m.squeeze(x, axis=0)),
    ("transpose_axes", lambda m, x: m.transpose(x, (0, 0))),
    ("expand_axis", lambda m, x: m.expand_dims(x, 4)),
    ("bitwise_float", lambda m, x: m.bitwise_and(x, x)),
    ("invert_float", lambda m, x: ~x),
    ("subtract_bool", lambda m, x: (x > 0) - (x > 1)),
    ("max_empty", lambda m, x: m.max(m.ones((0, 3)))),
    ("argmin_empty", lambda m, x: m.argmin(m.ones(0))),
    ("int_negative_power", lambda m, x: m.arange(3) ** -1),
    ("inplace_cast", lambda m, x: m.subtract(m.arange(3), 0.5, out=m.arange(3))),
    ("index_out_of_range", lambda m, x: x[2]),
    ("index_array_out_of_range", lambda m, x: x[:, [0, 3]]),
    ("too_many_indices", lambda m, x: x[0, 0, 0]),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (4, 3))),
    ("split_unequal", lambda m, x: m.split(x, 2, axis=1)),
    ("moveaxis", lambda m, x: m.moveaxis(x, 3, 0)),
    ("take_out_of_range", lambda m, x: m.take(x, [7])),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, 2)),
    ("bool_ambiguous", lambda m, x: bool(x)),
    ("full_negative", lambda m, x: m.zeros((2, -1))),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_same_exception_as_numpy(name, fn):
    with pytest.raises(Exception) as numpy_err:
        fn(np, A.copy())
    x = lnp.asarray(A)
    lazyx.sync()
    lazyx.reset_metrics()
    with pytest.raises(Exception) as lazy_err:
        fn(lnp, x)
    assert type(lazy_err.value) is type(numpy_err.value) or \
        isinstance(lazy_err.value, type(numpy_err.value)), (lazy_err.value, numpy_err.value)
    if name not in ("reshape_two_unknown",):
        numpy_text = str(numpy_err.value).split(" (")[0].split(",")[0]
        assert numpy_text[:25] in str(lazy_err.value), (str(lazy_err.value), str(numpy_err.value))
    assert lazyx.metrics()["executions"] == 0  # raised while tracing, before any run


SHAPE_TEXT_CASES = [  # messages that print shapes: NumPy's text exactly, (5,3) and not (5, 3)
    ("reshape", lambda m, x: x.reshape(4, 2)),
    ("reshape_unknown", lambda m, x: x.reshape(4, -1)),
    ("reshape_1d", lambda m, x: m.reshape(x, (4,))),
    ("setitem_broadcast", lambda m, x: x.__setitem__(slice(None), m.ones((3, 2)))),
    ("out_smaller", lambda m, x: m.add(x, 1.0, out=m.zeros(3))),
    ("dot_align", lambda m, x: m.dot(x, x)),
]


@pytest.mark.parametrize("name,fn", SHAPE_TEXT_CASES, ids=[c[0] for c in SHAPE_TEXT_CASES])
def test_shapes_in_messages_are_written_as_numpy_writes_them(name, fn):
    with pytest.raises(ValueError) as numpy_err:
        fn(np, A.copy())
    with pytest.raises(ValueError) as lazy_err:
        fn(lnp, lnp.asarray(A))
    assert str(lazy_err.value) == str(numpy_err.value)


def test_axis_error_is_numpys():
    with pytest.raises(AxisError):
        lnp.sum(lnp.ones((2, 3)), axis=3)
    with pytest.raises(IndexError):  # AxisError is also an IndexError and a ValueError
        lnp.ones((2, 3)).sum(axis=-4)


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="timedelta64.* is not supported"):
        lnp.sum(lnp.ones(3), dtype="timedelta64[D]")  # (NumPy: a TypeError too)
    # (strings and dates stay NumPy's own arrays: docs/numpy.md, test_user_reports.py,
    # test_host_dtypes_and_iter.py)
    assert type(lnp.asarray(np.array(["a", "b"]))) is np.ndarray
    assert type(lnp.zeros(3, dtype=np.timedelta64)) is np.ndarray
