"""The per-op memo of shape rules (core/ops.py `primitive`): a rule runs once per signature,
errors are never memoized, and a rule that reads more than its inputs' types is never
memoized (so the memo cannot replay an answer that depended on something else)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lazyx.core import ir, ops, runtime


def _data(shape, dtype="float32"):
    return runtime.from_host(np.zeros(shape, dtype=dtype))


@pytest.fixture
def fresh_op():
    """Register rules under unique names (the op table refuses duplicates), and take them out
    of the op set afterwards: other tests read it whole (test_tables)."""
    names = []

    def register(rule):
        rule.__name__ = f"memo_probe_{id(rule)}"
        names.append(rule.__name__)
        return ops.primitive(rule)
    yield register
    for name in names:
        dict.pop(ops.OPS, name, None)
        ops.OPS.where.pop(name, None)


def test_a_rule_runs_once_per_signature(fresh_op):
    calls = []

    def rule(x, *, k):
        calls.append((x.shape, k))
        return x.shape, x.dtype, {"k": k}
    build = fresh_op(rule)
    a, b = _data((2, 3)), _data((2, 3))
    n1, n2 = build(a, k=1), build(b, k=1)
    assert calls == [((2, 3), 1)]
    assert n1.local == n2.local and n1.attrs == {"k": 1}
    build(a, k=2)
    build(_data((4,)), k=1)
    assert calls == [((2, 3), 1), ((2, 3), 2), ((4,), 1)]


def test_errors_are_raised_on_every_bad_call():
    x, y = _data((2, 3)), _data((3, 2))
    for _ in range(3):
        with pytest.raises(ValueError, match="equal shapes"):
            ops.add(x, y)
    with pytest.raises(TypeError, match="inputs must be lazyx IR nodes"):
        ops.add(x, np.zeros((2, 3), np.float32))


def test_a_rule_that_reads_more_than_types_is_never_memoized(fresh_op):
    calls = []

    def rule(x):
        calls.append(x.op)  # depends on the node, not only on its type
        return x.shape, x.dtype
    build = fresh_op(rule)
    a = _data((3,))
    build(a)
    build(ops.neg(a))
    build(a)
    assert calls == ["data", "neg", "data"]


def test_unhashable_attributes_still_build():
    x = _data((2, 3))
    node = ops.reshape(x, new_sizes=[3, 2])  # a list: no memo for this call, same answer
    assert node.shape == (3, 2) and node.local == ops.reshape(x, new_sizes=(3, 2)).local


def test_an_emptied_interning_table_empties_the_memos(monkeypatch):
    x = _data((5,))
    before = ops.neg(x).local
    monkeypatch.setattr(ir, "_LOCALS", {})
    monkeypatch.setattr(ir, "TABLE_LIMIT", 0)   # the next new structure empties the table
    ops.exp(_data((7,)))
    monkeypatch.setattr(ir, "TABLE_LIMIT", 1 << 19)
    after = ops.neg(x).local
    assert after != before                      # re-interned: the memo did not keep the old id
    assert ops.neg(x).local == after


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
       dtype=st.sampled_from(["float32", "int32", "bool"]))
def test_memoized_answers_equal_the_rules_answers(shape, dtype):
    shape = tuple(shape)
    x = _data(shape, dtype)
    target = (2,) + shape
    for _ in range(2):  # the second call comes from the memo
        node = ops.broadcast_in_dim(x, shape=target, broadcast_dimensions=tuple(range(1, 1 + len(shape))))
        assert (node.shape, node.dtype) == (target, dtype)
        if dtype != "bool":
            s = ops.add(x, x)
            assert (s.shape, s.dtype) == (shape, dtype)
        else:
            with pytest.raises(TypeError, match="needs floating or integer or complex"):
                ops.add(x, x)
