"""A Python number operand through every frontend: one splat param leaf (no rank-0 param, no
broadcast_in_dim), the same graph in all three, no recompile for a new value, and the numbers
of the eager framework for any shape and dtype."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
from harness import FRONTENDS, _eager_inputs, _lazy_inputs, available, to_numpy
from lazyx.core import runtime

LIVE = [f for f in FRONTENDS if available(f)]


def _program(x, a, b):
    """Python operators only, which every framework overloads the same way."""
    return (a - x * b) * a + b


def _graph(frontend, host, a, b):
    (x,) = _lazy_inputs(frontend, [host])
    out = _program(x, a, b)
    program, _ = runtime.program_of(out)
    return out, program


@pytest.mark.parametrize("frontend", LIVE)
def test_each_number_operand_is_one_leaf(frontend):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    out, program = _graph(frontend, host, 1.5, 0.25)
    assert sorted(kind for kind, _, _ in program.leaves) == ["data"] + ["splat"] * 4
    assert [op for op, *_ in program.instructions] == ["mul", "sub", "mul", "add"]
    text = lazyx.ir_text(out)
    assert "broadcast_in_dim" not in text and text.count("param {splat} : float32[3,4]") == 4
    np.testing.assert_allclose(to_numpy(frontend, out), _program(host, 1.5, 0.25), rtol=1e-6)


@pytest.mark.parametrize("frontend", LIVE)
def test_tracing_a_number_operand_builds_one_node(frontend):
    # every frontend's binary entry builds the splat directly (no rank-0 param to fold)
    from lazyx.core import ir
    (x,) = _lazy_inputs(frontend, [np.ones((3, 4), np.float32)])
    for make in (lambda: x * 0.5, lambda: 2 - x):
        before = ir.CREATED[0]
        make()
        assert ir.CREATED[0] - before == 2  # the splat and the op


def test_the_three_frontends_build_one_graph():
    host = np.ones((2, 5), np.float32)
    hashes = {f: lazyx.graph_hash(_graph(f, host, 2.0, -0.5)[0]) for f in LIVE}
    assert len(set(hashes.values())) == 1, hashes
    lazyx.sync()


@pytest.mark.parametrize("frontend", LIVE)
def test_a_new_number_never_recompiles(frontend):
    host = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    runtime.CACHE.clear()
    lazyx.reset_metrics()
    for a, b in ((0.5, 1.0), (-2.25, 3.5), (7.0, 0.125)):
        out, _ = _graph(frontend, host, a, b)
        np.testing.assert_allclose(to_numpy(frontend, out), _program(host, a, b), rtol=1e-6)
    assert lazyx.metrics()["compiles"] == 1


_DTYPES = {"numpy": ["float32", "float64", "int32", "int64"],
           "torch": ["float32", "float64", "int32", "int64"],
           "tf": ["float32", "float64", "int32", "int64"]}


@pytest.mark.parametrize("frontend", LIVE)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_numbers_with_arrays_equal_the_eager_framework(frontend, data):
    shape = data.draw(st.lists(st.integers(0, 4), max_size=3).map(tuple), label="shape")
    dtype = data.draw(st.sampled_from(_DTYPES[frontend]), label="dtype")
    a, b = data.draw(st.integers(-4, 4), label="a"), data.draw(st.integers(-4, 4), label="b")
    if dtype.startswith("float") and data.draw(st.booleans(), label="fractional"):
        a, b = a + 0.25, b - 0.5
    host = np.asarray(np.random.default_rng(len(shape)).standard_normal(shape) * 3).astype(dtype)
    (x,) = _lazy_inputs(frontend, [host])
    (ex,) = _eager_inputs(frontend, [host])
    got, want = to_numpy(frontend, _program(x, a, b)), to_numpy(frontend, _program(ex, a, b))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5 if dtype == "float32" else 0)
