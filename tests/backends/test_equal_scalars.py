"""Equal run-time scalars read as one element of their pack (backends/xla.py, dedupe): the
executable computes from exactly the values it is given, whichever of them are equal, and a
program called with ever new patterns of equal scalars compiles a bounded number of times."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("jax")
import lazyx  # noqa: E402
import lazyx.frontends.numpy as lnp  # noqa: E402
from lazyx.backends import disk_cache, xla  # noqa: E402
from lazyx.core import ir, ops, runtime  # noqa: E402

_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e-45, 3.0e38]


def _bits(a):
    return a.view(xla._BITS[a.itemsize])


@given(st.sampled_from(["float32", "float64", "float16", "int32", "int64", "int8", "bool"]),
       st.lists(st.integers(0, len(_SPECIALS) - 1), min_size=1, max_size=40))
@settings(max_examples=60, deadline=None)
def test_dedupe_keeps_every_bit_and_merges_only_identical_ones(dtype, picks):
    if dtype == "bool":
        packed = np.array([k % 2 == 0 for k in picks])
    elif dtype.startswith("int"):
        packed = np.array([k - 3 for k in picks], dtype=dtype)
    else:
        with np.errstate(over="ignore"):
            packed = np.array([_SPECIALS[k] for k in picks], dtype=dtype)
    distinct, inv = xla.dedupe(packed)
    np.testing.assert_array_equal(_bits(xla.expand(distinct, inv)), _bits(packed))
    n_distinct = len(set(_bits(packed).tolist()))
    assert len(distinct) == n_distinct
    assert (inv is None) == (n_distinct == len(packed))


def test_zero_and_negative_zero_stay_apart():
    distinct, inv = xla.dedupe(np.array([0.0, -0.0, 0.0], np.float32))
    assert inv == (0, 1, 0) and np.signbit(distinct[1]) and not np.signbit(distinct[0])


def _step(x, a, b, c):
    """A chain whose scalars are the caller's: which of them are equal varies by call."""
    return lnp.sum(lnp.tanh(x * a + b) * c - a)


def _numpy(x, a, b, c):
    f = np.float32
    return np.sum(np.tanh(x * f(a) + f(b)) * f(c) - f(a), dtype=np.float32)


@pytest.fixture
def xla_backend():
    if not isinstance(runtime.get_backend(), xla.XlaBackend):
        pytest.skip("the XLA backend is not the active one")
    lazyx.reset_metrics()


def _cached(root):
    """The cached executable that would run `root`'s graph (None before its first run)."""
    return runtime._lookup([root.__lazyx_handle__.node])[0]


def test_equal_scalars_share_an_element_and_give_the_same_numbers(xla_backend):
    x_host = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    x = lnp.asarray(x_host)
    values = []
    for a, b, c in [(0.5, 0.5, 0.5), (0.5, 0.25, 0.5), (0.75, 0.25, 0.125), (0.5, 0.5, 0.5)]:
        y = _step(x, a, b, c)
        exe = _cached(y)
        got = float(y)
        values.append(got)
        np.testing.assert_allclose(got, _numpy(x_host, a, b, c), rtol=2e-6)
    # the first call's four scalars (a, b, c, a: all 0.5) were read as one element
    assert list(exe.variants)[0] == ((0, 0, 0, 0),)
    # a value computed again with the first call's scalars is the first call's, bit for bit
    assert values[3] == values[0]


def test_new_patterns_of_equal_scalars_compile_a_bounded_number_of_times(xla_backend):
    x_host = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    x = lnp.asarray(x_host)
    rng = np.random.default_rng(0)
    compiles = []
    for _ in range(12):
        a, b, c = rng.choice([0.5, 0.25, 2.0], size=3)
        got = float(_step(x, float(a), float(b), float(c)))
        np.testing.assert_allclose(got, _numpy(x_host, a, b, c), rtol=2e-6)
        compiles.append(lazyx.metrics()["compiles"])
    # the first pattern's compile, one more variant, then the general program: three at most
    assert compiles[-1] <= 1 + xla._MAX_VARIANTS
    assert compiles[-1] == compiles[-4]  # nothing compiles once the general program exists


def test_a_bound_executable_reads_its_fixed_equal_scalars_once(xla_backend):
    x = runtime.from_host(np.arange(4, dtype=np.float32))
    a, b = ir.param(2.0, "float32"), ir.param(2.0, "float32")
    y = ops.add(ops.mul(x, ops.broadcast_in_dim(a, shape=(4,), broadcast_dimensions=())),
                ops.broadcast_in_dim(b, shape=(4,), broadcast_dimensions=()))
    program, leaves = runtime.linearize([y])
    values = [leaf.value for leaf in leaves]
    exe, _ = runtime.compile_program(program, values)
    params = [i for i, leaf in enumerate(leaves) if leaf.op == "param"]
    bound = exe.bind({i: values[i] for i in params})
    assert bound.patterns == ((0, 0),)
    np.testing.assert_array_equal(np.asarray(bound(values)[0]), np.arange(4) * 2.0 + 2.0)
    assert list(exe.variants) == [bound.patterns]  # compiled once, for these values


def test_each_pattern_has_its_own_disk_cache_entry(xla_backend, tmp_path, monkeypatch):
    monkeypatch.setenv("LAZYX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("LAZYX_TIERED", raising=False)
    x = runtime.from_host(np.arange(4, dtype=np.float32))
    a, b = ir.param(3.0, "float32"), ir.param(3.0, "float32")
    y = ops.sub(ops.mul(x, ops.broadcast_in_dim(a, shape=(4,), broadcast_dimensions=())),
                ops.broadcast_in_dim(b, shape=(4,), broadcast_dimensions=()))
    program, leaves = runtime.linearize([y])
    same = [leaf.value for leaf in leaves]
    apart = list(same)
    # (the subtrahend's splat comes last: the product's operands are visited first)
    apart[[i for i, leaf in enumerate(leaves) if leaf.op == "param"][-1]] = np.float32(4.0)
    for values, expected in ((same, np.arange(4) * 3.0 - 3.0), (apart, np.arange(4) * 3.0 - 4.0)):
        for _ in range(2):  # the second backend (a new process) loads from the disk
            exe = xla.XlaBackend().compile(program, values)
            disk_cache.flush()
            np.testing.assert_array_equal(np.asarray(exe(values)[0]), expected)
    assert lazyx.metrics()["disk_hits"] == 2 and lazyx.metrics()["disk_misses"] == 2
