"""core/_native.c's Builder makes the same nodes as core/ops.py's Python `build`.

With the C tracing core built, every op builder (`ops.add`, `ops.transpose`, ...) is a Builder:
a memo hit is handled in C, everything else by the Python `build` it wraps (`__wrapped__`).
Both share the op's memo, so a program run through one and then the other exercises the C
path's hits against the Python path. (tox's `core` environment, LAZYX_NATIVE=0, has only the
Python path: these tests skip there.)
"""
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lazyx.core import ir, ops

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import shared  # noqa: E402  (tests/shared.py)

native = pytest.mark.skipif(ir.NATIVE_BASE is None or ops._NATIVE is None,
                            reason="core/_native.c not built or LAZYX_NATIVE=0")

_SHAPE = (2, 3)
# (builder name, number of node inputs, attributes): commutative ops, ones with a simplifier
# (convert to the input's own dtype folds away; a transpose of a transpose folds), attributes
_CALLS = [("add", 2, {}), ("mul", 2, {}), ("max_", 2, {}), ("sub", 2, {}), ("exp", 1, {}),
          ("tanh", 1, {}), ("convert", 1, {"dtype": "float32"}),
          ("convert", 1, {"dtype": "float64"}),
          ("transpose", 1, {"permutation": (1, 0)}), ("reshape", 1, {"new_sizes": (3, 2)}),
          ("reduce_sum", 1, {"axes": (1,)})]

_programs = st.lists(st.tuples(st.integers(0, len(_CALLS) - 1), st.integers(0, 1 << 16),
                               st.integers(0, 1 << 16)), min_size=1, max_size=25)


def _build(program, via_c):
    """Run `program` from fresh leaves; each node's identities, with its inputs as positions."""
    ir.TRACE.reset()
    nodes = [ir.data(np.zeros(_SHAPE, np.float32), _SHAPE, "float32"),
             ir.param(0.5, "float32", _SHAPE)]
    position = {id(n): k for k, n in enumerate(nodes)}
    seen = []
    for which, i, j in program:
        name, arity, attrs = _CALLS[which]
        fits = [n for n in nodes if n.shape == _SHAPE and n.dtype == "float32"]
        inputs = (fits[i % len(fits)], fits[j % len(fits)])[:arity]
        builder = getattr(ops, name)
        node = (builder if via_c else builder.__wrapped__)(*inputs, **attrs)
        if id(node) not in position:
            position[id(node)] = len(nodes)
            nodes.append(node)
        seen.append((node.op, node.shape, node.dtype, tuple(sorted(node.attrs.items())),
                     node.local, node.eid, node.hash, position[id(node)],
                     tuple(position.get(id(x)) for x in node.inputs)))
    return seen


@native
@settings(max_examples=60, deadline=None)
@given(_programs)
def test_c_and_python_builders_make_the_same_nodes(program):
    first_c = _build(program, via_c=True)      # misses go through Python, hits through C
    python = _build(program, via_c=False)
    again_c = _build(program, via_c=True)      # every signature is a memo hit now
    assert first_c == python == again_c


@native
def test_every_primitive_builder_is_the_c_builder_around_its_python_build():
    assert type(ops.add).__name__ == "Builder"
    assert ops.add.__name__ == "add" and "add" in ops.add.__doc__
    assert callable(ops.add.__wrapped__) and ops.add.__wrapped__ is not ops.add


@native
def test_commutative_operands_are_ordered_on_a_hit_as_in_python():
    ir.TRACE.reset()
    x = ir.data(np.ones(_SHAPE, np.float32), _SHAPE, "float32")
    a, b = ops.exp(x), ops.tanh(x)  # operands whose structural order keys differ
    assert a.order != b.order
    ops.add(a, b)  # fill the memo
    made = [builder(*pair).inputs for builder in (ops.add, ops.add.__wrapped__)
            for pair in ((a, b), (b, a))]
    assert made[0] in ((a, b), (b, a)) and made.count(made[0]) == 4


@native
def test_bad_inputs_raise_the_python_builders_errors():
    x = ir.data(np.ones(_SHAPE, np.float32), _SHAPE, "float32")
    ops.exp(x)
    with pytest.raises(TypeError, match="exp: inputs must be lazyx IR nodes"):
        ops.exp(np.ones(_SHAPE))
    with pytest.raises(TypeError, match="add: inputs must be lazyx IR nodes"):
        ops.add(x, 1.0)
    lu = ops.lu(ir.data(np.eye(3, dtype=np.float32), (3, 3), "float32"))[0].inputs[0]
    with pytest.raises(TypeError, match="several results"):
        ops.exp(lu)  # a multi-result node must be projected first


@native
def test_an_unhashable_attribute_takes_the_python_path():
    x = ir.data(np.ones(_SHAPE, np.float32), _SHAPE, "float32")
    by_list = ops.transpose(x, permutation=[1, 0])
    assert by_list.shape == (3, 2) and by_list.attrs["permutation"] == (1, 0)
    assert by_list.local == ops.transpose(x, permutation=(1, 0)).local


@native
def test_an_emptied_interning_table_is_not_answered_from_the_stale_memo(monkeypatch):
    x = ir.data(np.ones(_SHAPE, np.float32), _SHAPE, "float32")
    before = ops.tanh(x).local
    shared.empty_the_interning_table(monkeypatch)
    after = ops.tanh(x)  # a stale memo hit would give `before`, an id the table no longer has
    live = {entry[0] for entry in ir._LOCALS.values()}
    assert after.local != before and after.local in live
    assert ops.tanh(x).local == after.local == ops.tanh.__wrapped__(x).local


@native
def test_a_hit_outside_a_frontend_op_reports_the_callers_line():
    # the C builder has no frame of its own: the line must still be the one that called the
    # builder (here, this test's), as the Python build reports it
    x = ir.data(np.ones(_SHAPE, np.float32), _SHAPE, "float32")
    ops.neg(x)  # fill the memo: the next call is a hit, in C
    via_c = ops.neg(x).source; line = sys._getframe().f_lineno  # noqa: E702
    via_python = ops.neg.__wrapped__(x).source; python_line = sys._getframe().f_lineno  # noqa
    assert via_c == (__file__, line) and via_python == (__file__, python_line)


@native
@pytest.mark.parametrize("unary", ["tanh", "exp", "neg"])
def test_a_unary_op_is_pushed_through_a_broadcast_or_reshape_on_a_hit_as_in_python(unary):
    # the C builder calls a pushing simplifier only for the operands it can fold (its
    # `looks_through`): for those it must still fold, as the Python build does
    ir.TRACE.reset()
    x = ir.data(np.ones((3,), np.float32), (3,), "float32")
    wide = ops.broadcast_in_dim(x, shape=(2, 3), broadcast_dimensions=(1,))
    tall = ops.reshape(x, new_sizes=(3, 1))
    builder = getattr(ops, unary)
    for operand, folded in ((wide, "broadcast_in_dim"), (tall, "reshape"), (x, unary)):
        builder(operand)  # fill the memo: the calls below are hits, in C
        via_c, via_python = builder(operand), builder.__wrapped__(operand)
        assert via_c.op == via_python.op == folded
        assert (via_c.local, via_c.eid, via_c.hash) == \
            (via_python.local, via_python.eid, via_python.hash)
        if folded != unary:  # the op now applies to the unbroadcast operand
            assert via_c.inputs[0].op == unary and via_c.inputs[0].inputs[0] is x
