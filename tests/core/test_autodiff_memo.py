"""autodiff.vjp stamps a gradient graph it has built before (core/autodiff_memo.py): the stamped
graph must be the graph the rules build -- the same structure (hash), the same numbers -- and
a structure it has not seen must go through the rules."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lazyx.core import autodiff, autodiff_memo, ir, ops, runtime


def _eval(nodes):
    handles = [runtime.LazyHandle(n) for n in nodes]
    runtime.sync(*handles)
    return [runtime.to_host(h) for h in handles]


def _mlp(x, w1, b1, w2):
    h = ops.tanh(ops.add(ops.dot_general(x, w1, contracting_dimensions=((1,), (0,))),
                         ops.broadcast_in_dim(b1, shape=(x.shape[0], w1.shape[1]),
                                              broadcast_dimensions=(1,))))
    y = ops.dot_general(h, w2, contracting_dimensions=((1,), (0,)))
    big = ops.reduce_max(y, axes=(1,))
    shifted = ops.sub(y, ops.broadcast_in_dim(big, shape=y.shape, broadcast_dimensions=(0,)))
    return ops.reduce_sum(ops.mul(shifted, shifted), axes=(0, 1))


def _shared(x, w1, b1, w2):
    t = ops.tanh(x)
    return ops.reduce_sum(ops.add(t, t), axes=(0, 1))


def _unshared(x, w1, b1, w2):  # the same expression as _shared, with no node shared
    return ops.reduce_sum(ops.add(ops.tanh(x), ops.tanh(x)), axes=(0, 1))


def _arrays(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in ((4, 3), (3, 5), (5,), (5, 2))]


def _grads(build, arrays, seed=1.0):
    leaves = [runtime.from_host(a) for a in arrays]
    out = build(*leaves)
    cot = ops.broadcast_in_dim(ir.param(seed, out.dtype), shape=out.shape,
                               broadcast_dimensions=())
    grads = autodiff.vjp([out], [cot], leaves)
    return [g.hash for g in grads], _eval(grads)


def _fresh(build, arrays, seed=1.0):
    autodiff_memo._RECIPES.clear()
    try:
        return _grads(build, arrays, seed)
    finally:
        autodiff_memo._RECIPES.clear()


def _rules_never_run(monkeypatch):
    def boom(*args):
        raise AssertionError("the rules ran: the gradient was not stamped")
    monkeypatch.setattr(autodiff, "_vjp", boom)


@pytest.mark.parametrize("build", [_mlp, _shared], ids=["mlp", "shared"])
def test_a_repeated_gradient_is_stamped_and_equals_the_rules(build, monkeypatch):
    autodiff_memo._RECIPES.clear()
    _grads(build, _arrays(0))                       # recorded
    want_hashes, want = _fresh(build, _arrays(1), seed=2.5)
    _grads(build, _arrays(0))                       # recorded again (the fresh run cleared it)
    _rules_never_run(monkeypatch)
    hashes, got = _grads(build, _arrays(1), seed=2.5)  # new leaves, a new seed value
    assert hashes == want_hashes
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_the_same_expression_shared_differently_is_not_stamped_wrong():
    autodiff_memo._RECIPES.clear()
    _grads(_shared, _arrays(0))
    hashes, got = _grads(_unshared, _arrays(1))  # same eids at the root, another order
    want_hashes, want = _fresh(_unshared, _arrays(1))
    assert hashes == want_hashes
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


UNARY = ["tanh", "exp", "neg", "logistic", "sin"]
BINARY = ["add", "sub", "mul", "max"]


@st.composite
def _programs(draw):
    """A random straight-line program over three (3, 4) leaves: (op, operand indices)."""
    steps = []
    for k in range(draw(st.integers(1, 8))):
        n = 3 + k  # values defined so far
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(UNARY)), (draw(st.integers(0, n - 1)),)))
        else:
            steps.append((draw(st.sampled_from(BINARY)),
                          (draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1)))))
    return steps


def _run(program):
    def build(a, b, c, _):
        values = [a, b, c]
        for op, args in program:
            values.append(ops.OPS[op](*[values[i] for i in args]))
        return ops.reduce_sum(values[-1], axes=(0, 1))
    return build


@settings(max_examples=40, deadline=None)
@given(_programs(), st.integers(0, 2**16))
def test_random_programs_stamp_what_the_rules_build(program, seed):
    rng = np.random.default_rng(seed)
    first = [rng.standard_normal((3, 4)) for _ in range(3)] + [np.zeros(1)]
    second = [rng.standard_normal((3, 4)) for _ in range(3)] + [np.zeros(1)]
    build = _run(program)
    want_hashes, want = _fresh(build, second)
    autodiff_memo._RECIPES.clear()
    _grads(build, first)
    hashes, got = _grads(build, second)
    assert hashes == want_hashes
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
