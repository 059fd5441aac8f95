"""Equal scalars read as one element of their pack (backends/xla.py, merge_fixed): a caller
that binds values it never changes (a lazyx.compile replay's literals) gets a variant of the
program that reads each distinct value once, and so does the lazy path for the values of its
first call (_LazyLayout), as long as later calls keep the equal ones equal; one that parts
them compiles once more, and the layouts compute the same numbers bit for bit."""
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
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@pytest.fixture(autouse=True)
def _merging_on(monkeypatch):
    """The merged layouts are made only on a CPU (backends/xla.py, MERGE_EQUAL_SCALARS): the
    tests of their mechanism run it on any platform."""
    monkeypatch.setattr(xla, "MERGE_EQUAL_SCALARS", True)


def _bits(a):
    a = np.asarray(a)
    return a.view(_BITS[a.itemsize])


@given(st.sampled_from(["float32", "float64", "float16", "int32", "int64", "int8", "bool"]),
       st.lists(st.tuples(st.integers(0, len(_SPECIALS) - 1), st.booleans()),
                min_size=1, max_size=40))
@settings(max_examples=60, deadline=None)
def test_a_merged_layout_holds_every_scalar_bit_for_bit(dtype, picks):
    np_dtype = np.dtype(dtype)
    if dtype == "bool":
        general = np.array([k % 2 == 0 for k, _ in picks])
    elif dtype.startswith("int"):
        general = np.array([k - 3 for k, _ in picks], dtype=dtype)
    else:
        with np.errstate(over="ignore"):
            general = np.array([_SPECIALS[k] for k, _ in picks], dtype=dtype)
    idx = list(range(10, 10 + len(picks)))  # leaf positions of the pack's scalars
    fixed = {i: general[k] for k, (i, (_, is_fixed)) in enumerate(zip(idx, picks)) if is_fixed}
    inv, values, dynamic = xla.merge_fixed(dtype, idx, fixed)
    n_fixed_distinct = len({_bits(v).tobytes() for v in fixed.values()})
    assert (inv is None) == (n_fixed_distinct == len(fixed))
    if inv is None:
        return
    assert len(values) == n_fixed_distinct and dynamic == [i for i in idx if i not in fixed]
    merged = np.array(values + [general[idx.index(i)] for i in dynamic], dtype=np_dtype)
    np.testing.assert_array_equal(_bits(xla.expand(merged, inv)), _bits(general))


def test_zero_and_negative_zero_stay_apart():
    inv, values, _ = xla.merge_fixed("float32", [0, 1, 2], {0: 0.0, 1: -0.0, 2: 0.0})
    assert inv == (0, 1, 0) and np.signbit(values[1]) and not np.signbit(values[0])


@pytest.fixture
def xla_backend():
    if not isinstance(runtime.get_backend(), xla.XlaBackend):
        pytest.skip("the XLA backend is not the active one")
    lazyx.reset_metrics()


def _chain(x, a, b, c):
    return lnp.sum(lnp.tanh(x * a + b) * c - a)


def _numpy(x, a, b, c):
    f = np.float32
    return np.sum(np.tanh(x * f(a) + f(b)) * f(c) - f(a), dtype=np.float32)


def test_the_lazy_path_compiles_once_more_when_equal_scalars_part(xla_backend, fresh_runtime):
    x_host = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    x = lnp.asarray(x_host)
    rng = np.random.default_rng(0)
    counts = []
    for _ in range(12):  # which of a, b, c are equal changes from call to call
        a, b, c = (float(v) for v in rng.choice([0.5, 0.25, 2.0], size=3))
        np.testing.assert_allclose(float(_chain(x, a, b, c)), _numpy(x_host, a, b, c),
                                   rtol=2e-6)
        counts.append(lazyx.metrics()["compiles"])
    # the first call's layout merges a's two uses; the call that parts what it merged gets a
    # layout that merges nothing that changed, the general one here, and keeps it
    assert counts[-1] == 2 and counts.index(2) == counts.index(2, 0) and \
        all(c == 2 for c in counts[counts.index(2):])


def _literal_chain(x, scale):
    for _ in range(6):  # 18 uses of 3 literals, as benchmark W3's chain
        x = lnp.tanh(x * 0.9 + 0.1) - 0.5
    return lnp.sum(x) * scale


def test_the_lazy_path_reads_equal_literals_once(xla_backend, fresh_runtime):
    host = np.linspace(-2, 2, 64, dtype=np.float32).reshape(8, 8)
    x = lnp.asarray(host)
    for step in range(1, 6):  # a scale that changes at every step, alone
        _literal_chain(x, 1.0 / step).item()
    assert lazyx.metrics()["compiles"] == 1
    # (a cut with bakeable literals caches its executable inside a Baking)
    entries = [getattr(e, "single", e) for e in runtime.CACHE.entries.values()]
    (exe,) = [e for e in entries if isinstance(e, xla._Executable)]
    ((pattern,),) = list(exe.variants)  # the one layout compiled and run
    assert pattern is not None and len(set(pattern)) == 4  # 0.9, 0.1, 0.5, then the scale


@given(st.lists(st.tuples(st.sampled_from(["add", "mul", "sub", "div", "tanh", "max"]),
                          st.sampled_from([0.5, 2.0, -1.5, 3.0, 0.1])),
                min_size=2, max_size=24),
       st.sampled_from(["float32", "float64"]))
@settings(max_examples=30, deadline=None)
def test_merged_and_general_lazy_layouts_compute_the_same_bits(chain, dtype):
    if not isinstance(runtime.get_backend(), xla.XlaBackend):
        pytest.skip("the XLA backend is not the active one")
    host = np.linspace(-3, 3, 48, dtype=dtype).reshape(6, 8)

    def run():
        t = lnp.asarray(host)
        for op, c in chain:
            t = {"add": lambda: t + c, "mul": lambda: t * c, "sub": lambda: c - t,
                 "div": lambda: t / c, "tanh": lambda: lnp.tanh(t) * c,
                 "max": lambda: lnp.maximum(t, c)}[op]()
        return np.asarray(t)

    results = []
    for merging in (True, False):
        runtime.CACHE.clear()
        xla.MERGE_EQUAL_SCALARS = merging  # (the autouse fixture restores it)
        results.append(run())
    np.testing.assert_array_equal(_bits(results[0]), _bits(results[1]))


def test_a_replay_reads_its_equal_literals_once_and_computes_the_lazy_paths_numbers(
        xla_backend, monkeypatch):
    # (on XLA:CPU a replay bakes these literals, runtime.compile_fixed; where baking may
    # change the bits, on a GPU, they stay bound, the layout checked here)
    monkeypatch.setattr(xla.XlaBackend, "bakes_bitwise", lambda self: False)
    host = np.linspace(-2, 2, 4096, dtype=np.float32).reshape(64, 64)
    chain = [(0.9, 0.1, 0.5)] * 8  # 24 literals of 3 values, as in benchmark W3

    def step(t, scale):
        for m, a, s in chain:
            t = lnp.tanh(t * m + a) * t - s
        return lnp.sum(t) * scale

    x = lnp.asarray(host)
    plain = [float(step(x, s)) for s in (1.0, 2.0, 3.0)]
    compiled = lazyx.compile(step)
    replayed = [float(compiled(x, s)) for s in (1.0, 2.0, 3.0)]
    assert replayed == plain  # bit for bit: the same program, its scalars merged
    m = lazyx.metrics()
    # (the second call traces once more to confirm that s only feeds the graph)
    assert m["replays"] == 1 and m["compiles"] == 2  # the lazy path's program and the replay's
    entry = [e for bucket in compiled.entries.values() for e in bucket][0]
    bound = entry.exe
    assert isinstance(bound, xla._Bound)
    (pattern,) = bound.patterns  # one float32 pack: 24 literals as 3 elements, then `scale`
    assert len(pattern) == 25 and max(pattern) == 3 and pattern[-1] == 3
    assert len(set(pattern[:-1])) == 3


def _two_twos_and_a_five():
    """(program, leaves) of x * 2 * 5 + 2 for x = [0, 1, 2, 3], each scalar a param leaf."""
    x = runtime.from_host(np.arange(4, dtype=np.float32))
    a, b, c = (ir.param(v, "float32") for v in (2.0, 2.0, 5.0))

    def splat(p):
        return ops.broadcast_in_dim(p, shape=(4,), broadcast_dimensions=())
    y = ops.add(ops.mul(ops.mul(x, splat(a)), splat(c)), splat(b))
    return runtime.linearize([y])


def test_a_partly_fixed_merged_pack_reads_the_rest_per_call(xla_backend):
    program, leaves = _two_twos_and_a_five()
    params = [i for i, leaf in enumerate(leaves) if leaf.op == "param"]
    values = [leaf.value for leaf in leaves]
    twos = {i: values[i] for i in params if float(values[i]) == 2.0}
    (free,) = [i for i in params if i not in twos]
    exe, _ = runtime.compile_program(program, twos)
    bound = exe.bind(twos)
    assert bound.patterns[0] is not None and len(set(bound.patterns[0])) == 2
    for v in (5.0, 2.0, -1.0):  # the free scalar may equal the fixed ones or not
        values[free] = np.float32(v)
        np.testing.assert_array_equal(np.asarray(bound(values)[0]),
                                      np.arange(4, dtype=np.float32) * 2 * v + 2)
    assert list(exe.variants) == [bound.patterns]  # compiled once, for this layout


def test_each_layout_has_its_own_disk_cache_entry(xla_backend, tmp_path, monkeypatch):
    monkeypatch.setenv("LAZYX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("LAZYX_TIERED", raising=False)
    x = runtime.from_host(np.arange(4, dtype=np.float32))
    a, b = ir.param(3.0, "float32"), ir.param(3.0, "float32")
    y = ops.sub(ops.mul(x, ops.broadcast_in_dim(a, shape=(4,), broadcast_dimensions=())),
                ops.broadcast_in_dim(b, shape=(4,), broadcast_dimensions=()))
    program, leaves = runtime.linearize([y])
    values = [leaf.value for leaf in leaves]
    fixed = {i: v for i, (leaf, v) in enumerate(zip(leaves, values)) if leaf.op == "param"}
    for layout in ("merged", "general", "merged", "general"):  # new backends: as new processes
        backend = xla.XlaBackend()
        exe = backend.compile(program, fixed) if layout == "merged" else backend.compile(program)
        disk_cache.flush()
        run = exe.bind(fixed) if layout == "merged" else exe
        np.testing.assert_array_equal(np.asarray(run(values)[0]), np.arange(4) * 3.0 - 3.0)
        assert len(exe.variants) == 1
    assert lazyx.metrics()["disk_hits"] == 2 and lazyx.metrics()["disk_misses"] == 2


def test_bindings_past_the_variant_budget_share_the_general_program(xla_backend):
    x = runtime.from_host(np.arange(4, dtype=np.float32))
    ps = [ir.param(v, "float32") for v in (1.0, 2.0, 3.0, 4.0)]

    def splat(p):
        return ops.broadcast_in_dim(p, shape=(4,), broadcast_dimensions=())
    y = x
    for p in ps:
        y = ops.add(ops.mul(y, splat(p)), splat(p))
    program, leaves = runtime.linearize([y])
    params = [i for i, leaf in enumerate(leaves) if leaf.op == "param"]
    exe, _ = runtime.compile_program(program)
    assert len(params) == 8  # each use of a param is a splat leaf of its own
    # four bindings, each with another pattern of equal values: 2 merged variants, then the
    # general program (already compiled for the lazy path) for the other two
    for values_of in ([1, 1, 2, 2, 1, 1, 2, 2], [1, 1, 1, 2, 1, 1, 1, 2],
                      [1, 2, 2, 2, 1, 2, 2, 2], [3, 3, 3, 3, 1, 1, 1, 1]):
        values = [leaf.value for leaf in leaves]
        for i, v in zip(params, values_of):
            values[i] = np.float32(v)
        bound = exe.bind({i: values[i] for i in params})
        assert bound.patterns != (None,)
        # what the lazy path's program computes from the same values, bit for bit
        np.testing.assert_array_equal(np.asarray(bound(values)[0]), np.asarray(exe(values)[0]))
    assert len(exe.variants) == 1 + xla._MAX_VARIANTS
    assert lazyx.metrics()["compiles"] == 1 + xla._MAX_VARIANTS


def test_merging_is_a_cpu_layout_and_off_elsewhere(xla_backend, fresh_runtime, monkeypatch):
    """A merged layout works around XLA:CPU's fusion-input limit; on another platform (an H100
    rounded a merged replay 1e-5 apart from the lazy run) a binding keeps the general
    program: one compile, the lazy path's numbers."""
    import jax
    monkeypatch.setattr(xla, "MERGE_EQUAL_SCALARS", None)  # decided by the platform
    assert xla.merges_equal_scalars() == (jax.local_devices()[0].platform == "cpu")
    monkeypatch.setattr(xla, "MERGE_EQUAL_SCALARS", False)
    program, leaves = _two_twos_and_a_five()
    values = [leaf.value for leaf in leaves]
    fixed = {i: values[i] for i, leaf in enumerate(leaves) if leaf.op == "param"}
    exe, _ = runtime.compile_program(program, fixed)
    bound = exe.bind(fixed)
    assert bound.patterns == (None,) and list(exe.variants) == [(None,)]
    np.testing.assert_array_equal(np.asarray(bound(values)[0]), np.asarray(exe(values)[0]))
    np.testing.assert_array_equal(np.asarray(bound(values)[0]), np.arange(4) * 10.0 + 2)
