"""Bad calls fail AT CONSTRUCTION with ValueError (shapes, axes) or TypeError (dtypes), and the
message names the op and the shapes involved -- never later, at a barrier."""
import numpy as np
import pytest

from lazyx.core import ir, ops


def p(shape, dtype="float32"):
    return ir.param(np.zeros(shape, dtype=np.dtype(dtype) if dtype != "bfloat16" else "float32"),
                    dtype)


# (id, call, error type, words that must appear in the message)
BAD_CALLS = [
    ("add shapes", lambda: ops.add(p((2, 3)), p((3, 2))), ValueError, ["add", "(2, 3)", "(3, 2)"]),
    ("add dtypes", lambda: ops.add(p((2,)), p((2,), "int32")), TypeError,
     ["add", "float32", "int32", "(2,)"]),
    ("mul bool", lambda: ops.mul(p((2,), "bool"), p((2,), "bool")), TypeError, ["mul", "bool"]),
    ("exp of int", lambda: ops.exp(p((4,), "int32")), TypeError, ["exp", "int32", "(4,)"]),
    ("shift of float", lambda: ops.shift_left(p((2,)), p((2,))), TypeError,
     ["shift_left", "float32"]),
    ("and of float", lambda: ops.and_(p((2,)), p((2,))), TypeError, ["and", "float32"]),
    ("atan2 of int", lambda: ops.atan2(p((1,), "int8"), p((1,), "int8")), TypeError,
     ["atan2", "int8"]),
    ("compare shapes", lambda: ops.lt(p((3,)), p((4,))), ValueError, ["lt", "(3,)", "(4,)"]),
    ("select pred dtype", lambda: ops.select(p((2,)), p((2,)), p((2,))), TypeError,
     ["select", "bool"]),
    ("select shapes", lambda: ops.select(p((2,), "bool"), p((3,)), p((3,))), ValueError,
     ["select", "(2,)", "(3,)"]),
    ("clamp bound shape", lambda: ops.clamp(p((2,)), p((3,)), p(())), ValueError,
     ["clamp", "(2,)", "(3,)"]),
    ("convert unknown dtype", lambda: ops.convert(p((2,)), dtype="float8"), TypeError,
     ["float8"]),
    ("bitcast width", lambda: ops.bitcast_convert(p((2,)), dtype="int16"), TypeError,
     ["bitcast_convert", "int16", "(2,)"]),
    ("broadcast size", lambda: ops.broadcast_in_dim(p((3,)), shape=(2, 4),
                                                    broadcast_dimensions=(1,)), ValueError,
     ["broadcast_in_dim", "(3,)", "(2, 4)"]),
    ("broadcast dims order", lambda: ops.broadcast_in_dim(p((1, 1)), shape=(2, 2),
                                                          broadcast_dimensions=(1, 0)),
     ValueError, ["broadcast_in_dim", "(1, 0)", "(1, 1)"]),
    ("reshape count", lambda: ops.reshape(p((2, 3)), new_sizes=(4, 2)), ValueError,
     ["reshape", "6", "(4, 2)", "(2, 3)"]),
    ("transpose perm", lambda: ops.transpose(p((2, 3)), permutation=(0, 0)), ValueError,
     ["transpose", "(0, 0)", "(2, 3)"]),
    ("transpose arity", lambda: ops.transpose(p((2, 3)), permutation=(0,)), ValueError,
     ["transpose", "permutation"]),
    ("slice bounds", lambda: ops.slice_(p((4,)), start_indices=(1,), limit_indices=(6,)),
     ValueError, ["slice", "(4,)", "limit"]),
    ("slice stride", lambda: ops.slice_(p((4,)), start_indices=(0,), limit_indices=(4,),
                                        strides=(0,)), ValueError, ["slice", "strides", "(4,)"]),
    ("dynamic_slice size", lambda: ops.dynamic_slice(p((4,)), p((), "int32"), slice_sizes=(5,)),
     ValueError, ["dynamic_slice", "(5,)", "(4,)"]),
    ("dynamic_slice starts", lambda: ops.dynamic_slice(p((4, 2)), p((), "int32"),
                                                       slice_sizes=(1, 1)),
     ValueError, ["dynamic_slice", "2 start indices", "(4, 2)"]),
    ("dynamic_slice float start", lambda: ops.dynamic_slice(p((4,)), p(()), slice_sizes=(1,)),
     TypeError, ["dynamic_slice", "integer", "float32"]),
    ("dynamic_update too big", lambda: ops.dynamic_update_slice(p((2,)), p((3,)),
                                                                p((), "int32")),
     ValueError, ["dynamic_update_slice", "(2,)", "(3,)"]),
    ("pad config rank", lambda: ops.pad(p((2, 2)), p(()), padding_config=[(0, 0, 0)]),
     ValueError, ["pad", "rank 2", "(2, 2)"]),
    ("pad negative size", lambda: ops.pad(p((2,)), p(()), padding_config=[(-2, -1, 0)]),
     ValueError, ["pad", "negative size", "(2,)"]),
    ("pad value dtype", lambda: ops.pad(p((2,)), p((), "int32"), padding_config=[(1, 1, 0)]),
     TypeError, ["pad", "int32", "(2,)"]),
    ("concatenate shapes", lambda: ops.concatenate(p((2, 3)), p((2, 4)), dimension=0),
     ValueError, ["concatenate", "(2, 3)", "(2, 4)"]),
    ("concatenate axis", lambda: ops.concatenate(p((2,)), p((2,)), dimension=1), ValueError,
     ["concatenate", "axis 1", "(2,)"]),
    ("rev repeated axis", lambda: ops.rev(p((2, 2)), dimensions=(0, 0)), ValueError,
     ["rev", "repeated", "(2, 2)"]),
    ("iota dimension", lambda: ops.iota(dtype="int32", shape=(3,), dimension=1), ValueError,
     ["iota", "dimension 1", "(3,)"]),
    ("reduce axis", lambda: ops.reduce_sum(p((2, 3)), axes=(2,)), ValueError,
     ["reduce_sum", "axis 2", "(2, 3)"]),
    ("reduce_and of float", lambda: ops.reduce_and(p((2,)), axes=(0,)), TypeError,
     ["reduce_and", "float32"]),
    ("argmax empty axis", lambda: ops.argmax(p((0, 3)), axis=0), ValueError,
     ["argmax", "(0, 3)"]),
    ("cumsum axis", lambda: ops.cumsum(p((3,)), axis=-1), ValueError, ["cumsum", "axis -1"]),
    ("dot_general sizes", lambda: ops.dot_general(p((2, 3)), p((4, 5)),
                                                  contracting_dimensions=((1,), (0,))),
     ValueError, ["dot_general", "(2, 3)", "(4, 5)"]),
    ("dot_general dtypes", lambda: ops.dot_general(p((2, 3)), p((3,), "float64"),
                                                   contracting_dimensions=((1,), (0,))),
     TypeError, ["dot_general", "float32", "float64"]),
    ("conv channels", lambda: ops.conv(p((1, 3, 5)), p((2, 2, 3)), window_strides=(1,),
                                       padding=((0, 0),)),
     ValueError, ["conv", "(1, 3, 5)", "(2, 2, 3)"]),
    ("conv kernel too big", lambda: ops.conv(p((1, 1, 2)), p((1, 1, 5)), window_strides=(1,),
                                             padding=((0, 0),)),
     ValueError, ["conv", "(1, 1, 2)", "(1, 1, 5)"]),
    ("conv rank", lambda: ops.conv(p((1, 1)), p((1, 1)), window_strides=(), padding=()),
     ValueError, ["conv", "(1, 1)"]),
    ("gather float indices", lambda: ops.gather(p((4,)), p((2, 1))), TypeError,
     ["gather", "integer", "(2, 1)"]),
    ("gather index depth", lambda: ops.gather(p((4,)), p((2, 3), "int32")), ValueError,
     ["gather", "(4,)", "(2, 3)"]),
    ("scatter updates shape", lambda: ops.scatter(p((4, 2)), p((3, 1), "int32"), p((3, 3))),
     ValueError, ["scatter", "(3, 2)", "(3, 3)"]),
    ("scatter mode", lambda: ops.scatter(p((4,)), p((1, 1), "int32"), p((1,)), mode="avg"),
     ValueError, ["scatter", "avg"]),
    ("sort axis", lambda: ops.sort(p((3,)), axis=1), ValueError, ["sort", "axis 1", "(3,)"]),
    ("top_k too many", lambda: ops.top_k(p((2, 3)), k=4), ValueError, ["top_k", "k=4", "(2, 3)"]),
    ("cholesky not square", lambda: ops.cholesky(p((2, 3))), ValueError,
     ["cholesky", "(2, 3)"]),
    ("triangular_solve shapes", lambda: ops.triangular_solve(p((3, 3)), p((2, 1))), ValueError,
     ["triangular_solve", "(3, 3)", "(2, 1)"]),
    ("random_bits key", lambda: ops.random_bits(p((3,), "uint32"), shape=(2,)), TypeError,
     ["random_bits", "uint32", "(3,)"]),
    ("non-node input", lambda: ops.add(p((2,)), np.zeros(2)), TypeError, ["add", "ndarray"]),
]


@pytest.mark.parametrize("call, error, words", [c[1:] for c in BAD_CALLS],
                         ids=[c[0] for c in BAD_CALLS])
def test_bad_call_fails_at_construction_naming_op_and_shapes(call, error, words):
    before = ir.CREATED[0]
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} missing from: {message}"
    # nothing was recorded for the failed op (only the test's own param leaves)
    assert ir.CREATED[0] - before <= 4


def test_enough_distinct_bad_calls():
    assert len({c[0] for c in BAD_CALLS}) >= 30
