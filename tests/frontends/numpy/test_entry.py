"""The NumPy frontend's entry: module layering, registration, and the memoized promotion.

The per-op fast path in ``_entry.apply`` caches NumPy's loop dtypes per (ufunc, operand dtype
signature); these tests check that what it caches is NumPy's own answer for every dtype pair
and Python scalar kind, the first time and from the cache, and that Python scalars stay
run-time parameters.
"""
import ast
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.core.tables import DuplicateEntry, Table
from lazyx.frontends.numpy import _entry

PACKAGE = pathlib.Path(lnp.__file__).parent


def import_graph():
    """{module: modules of this package it imports}, counting imports inside functions too."""
    graph = {}
    for path in PACKAGE.glob("*.py"):
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    edges.add(node.module.split(".")[0])
                else:
                    edges.update(alias.name for alias in node.names)
        graph[path.stem] = edges
    return {m: {e for e in edges if e in graph} for m, edges in graph.items()}


def find_cycle(graph):
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        state[m] = "done"
        stack.pop()
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_find_cycle_sees_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_frontend_modules_import_each_other_without_a_cycle():
    assert find_cycle(import_graph()) is None


def test_layers():
    graph = import_graph()
    assert graph["_ufuncs"] == set()  # lowerings: core only, node in, node out
    assert graph["_base"] == set()
    assert graph["_promote"] == {"_base", "_views"}  # (its out= writes go through _views)
    assert graph["_views"] == {"_base"}
    assert graph["_complex"] <= {"_ufuncs"}  # complex lowerings: core and the real table only
    assert graph["_special"] <= {"_ufuncs"}  # scipy.special's lowerings: the same
    # the entry knows the lowering tables and the rules, never the public modules
    assert graph["_entry"] <= {"_base", "_promote", "_ufuncs", "_complex", "_special",
                               "_fallback"}


def test_tables_refuse_a_second_entry():
    """(each of the frontend's tables: test_tables.py)"""
    table = Table("demo")
    _entry.register(table, np.add, test_layers)
    with pytest.raises(DuplicateEntry, match="demo: a second entry for <ufunc 'add'>"):
        _entry.register(table, np.add, test_layers)  # even the same function: one place only
    assert table[np.add] is test_layers


DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]
UFUNCS = [np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.maximum,
          np.less, np.arctan2, np.bitwise_and, np.logical_and, np.hypot, np.remainder]
SCALARS = [0, 1, -1, 7, 300, -300, 2 ** 40, 0.5, -2.0, 1e300]


def _numpy(ufunc, args):
    try:
        return ufunc(*args), None
    except Exception as err:  # noqa: BLE001 - the type is what we compare
        return None, type(err)


def _lazy(ufunc, args):
    try:
        return ufunc(*args), None
    except Exception as err:  # noqa: BLE001
        return None, type(err)


def _check(ufunc, host_args, lazy_args):
    with np.errstate(all="ignore"):
        expected, err = _numpy(ufunc, host_args)
    for _ in range(2):  # the second call is served by the memoized plan
        got, got_err = _lazy(ufunc, lazy_args)
        if err is not None:
            assert got_err is not None and issubclass(got_err, err), \
                f"{ufunc.__name__}: NumPy raised {err.__name__}, lazyx {got_err}"
            continue
        assert got_err is None, f"{ufunc.__name__}: lazyx raised {got_err}, NumPy did not"
        assert got.dtype == expected.dtype, \
            f"{ufunc.__name__}{tuple(type(a).__name__ for a in host_args)}: " \
            f"{got.dtype} != NumPy's {expected.dtype}"
        assert got.shape == np.shape(expected)


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_promotion_of_every_dtype_pair_is_numpys(ufunc):
    for a in DTYPES:
        for b in DTYPES:
            x = np.ones((2, 3), a)
            y = np.ones((3,), b)
            _check(ufunc, (x, y), (lnp.asarray(x), lnp.asarray(y)))
    lazyx.sync()


@settings(max_examples=60, deadline=None)
@given(ufunc=st.sampled_from(UFUNCS), dtype=st.sampled_from(DTYPES),
       scalar=st.sampled_from(SCALARS), scalar_first=st.booleans())
def test_weak_python_scalars_promote_as_numpy_does(ufunc, dtype, scalar, scalar_first):
    x = np.ones((2, 2), dtype)
    host = (scalar, x) if scalar_first else (x, scalar)
    lazy = (scalar, lnp.asarray(x)) if scalar_first else (lnp.asarray(x), scalar)
    _check(ufunc, host, lazy)


def test_operators_take_the_same_path():
    x = lnp.asarray(np.arange(6, dtype=np.int8).reshape(2, 3))
    assert (x + 1).dtype == np.int8 and (x * 0.5).dtype == np.float64
    assert (1 - x).dtype == np.int8 and (x / 2).dtype == np.float64
    with pytest.raises(OverflowError):
        x + 1000  # noqa: B018 - NumPy 2: a Python int out of range for the array's dtype
    f = lnp.asarray(np.ones(3, np.float32))
    assert (f + 2**40).dtype == np.float32 and (f > 1).dtype == np.bool_


def test_python_scalars_stay_parameters():
    x = lnp.asarray(np.arange(4.0, dtype=np.float32))
    hashes = set()
    for c in (0.5, 1.5, -3.0):
        y = x * c + c
        text = lazyx.ir_text(y)
        assert "constant" not in text and "param" in text
        hashes.add(lazyx.graph_hash(y))
        np.testing.assert_allclose(np.asarray(y), np.arange(4.0, dtype=np.float32) * c + c)
    assert len(hashes) == 1  # a new value is a new input, not a new program


def test_fast_and_general_paths_build_the_same_graph():
    x = lnp.asarray(np.ones((2, 3), np.float32))
    fast = x + 1.0                                      # Python float: the fast path
    general = _entry._apply_general(np.add, (x, 1.0))   # the path NumPy scalars take
    assert lazyx.graph_hash(fast) == lazyx.graph_hash(general)
    assert lazyx.graph_hash(np.tanh(x)) == lazyx.graph_hash(_entry._apply_general(np.tanh, (x,)))
    lazyx.sync()


@pytest.mark.parametrize("ufunc", [np.less, np.less_equal, np.greater, np.greater_equal,
                                   np.equal, np.not_equal], ids=lambda u: u.__name__)
def test_int64_uint64_comparisons_are_exact(ufunc):
    # NumPy 2 has mixed (int64, uint64) comparison loops: no float64 rounding, signs respected
    a = np.array([-1, 0, 5, 2**62, -(2**63)], np.int64)
    b = np.array([3, 0, 5, 2**63 + 1, 2**64 - 1], np.uint64)
    for x, y in ((a, b), (b, a)):
        got = ufunc(lnp.asarray(x), lnp.asarray(y))
        np.testing.assert_array_equal(np.asarray(got), ufunc(x, y))


@pytest.mark.parametrize("ufunc", [np.less, np.less_equal, np.greater, np.greater_equal,
                                   np.equal, np.not_equal], ids=lambda u: u.__name__)
@pytest.mark.parametrize("scalar", [-1, 256, -1000, 2**70])
def test_comparisons_with_out_of_range_python_ints(ufunc, scalar):
    # NumPy 2 answers these (the int lies outside every element's range) instead of raising
    for x in (np.array([0, 3, 255], np.uint8), np.array([-128, 0, 127], np.int8)):
        for args, lazy in (((x, scalar), (lnp.asarray(x), scalar)),
                           ((scalar, x), (scalar, lnp.asarray(x)))):
            got = ufunc(*lazy)
            assert got.dtype == np.bool_
            np.testing.assert_array_equal(np.asarray(got), ufunc(*args))


def test_a_compiled_power_of_a_number_argument_follows_it():
    """`x ** k` took the trace's k as a plain number (baked in, or x * x, or x itself) while
    k, reaching np.full too, was a run-time parameter: every replay computed x ** 1.0."""
    x0 = np.arange(1, 5, dtype=np.float32)

    def step(x, k):
        return x ** k, lnp.full((2,), k)
    f = lazyx.compile(step)
    for k in [1.0, 2.0, 3.0, 4.0, 2.5, 0.5, 5.5]:
        got = f(lnp.asarray(x0), k)
        np.testing.assert_allclose(np.asarray(got[0]), x0 ** k, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(got[1]), np.full((2,), k))
