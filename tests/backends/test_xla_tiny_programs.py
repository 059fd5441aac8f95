"""Tiny programs on the calling thread (backends/xla_inline.py, xla._Executable._paced): the
same code as on the shared client, so the same numbers bit for bit; NumPy results that every
later program, read and store takes; only tiny programs, only for a caller slow enough."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lazyx

jax = pytest.importorskip("jax")
from lazyx.backends import xla, xla_inline  # noqa: E402
from lazyx.core import ir, ops, runtime  # noqa: E402

pytestmark = pytest.mark.skipif(jax.devices()[0].platform != "cpu",
                                reason="the synchronous client is XLA:CPU's")


@pytest.fixture
def on_caller(monkeypatch):
    """Every paced call runs on the calling thread, whatever the pace would measure."""
    monkeypatch.setattr(xla_inline.Pace, "begin", lambda self: True)


def _tiny_program(shape, dtype):
    """(x * c + x) and its sum over the last axis, c a run-time scalar; floats also go
    through tanh (a transcendental: XLA's cost counts it apart)."""
    x = ir.data(None, shape, dtype)
    c = ops.broadcast_in_dim(ir.param(3, dtype), shape=shape, broadcast_dimensions=())
    y = ops.add(ops.mul(x, c), x)
    if dtype.startswith("float"):
        y = ops.tanh(y)
    return runtime.linearize([y, ops.reduce_sum(y, axes=(len(shape) - 1,))])[0]


def _expected(x):
    y = x * x.dtype.type(3) + x
    if x.dtype.kind == "f":
        y = np.tanh(y)
    return y, y.sum(axis=-1)


_SHAPES = st.sampled_from([(3,), (4, 4), (2, 3, 5), (1, 7)])


# (the fixtures hold for every example: a setting and an empty disk cache, whose entries
# later examples load, which makes their calling-thread copies from the stored payload)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=_SHAPES, dtype=st.sampled_from(["float32", "float64", "int32", "int64"]),
       seed=st.integers(0, 2**16))
def test_a_tiny_program_on_the_calling_thread_computes_the_shared_clients_bits(
        cache_dir, on_caller, shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):  # int64 past 2**31: run under x64, never narrowed
        high = 2**40 if dtype == "int64" else 2**20
        make = lambda: rng.integers(-high, high, size=shape, dtype=dtype)  # noqa: E731
    else:
        make = lambda: rng.standard_normal(shape).astype(dtype)  # noqa: E731
    exe = xla.XlaBackend().compile(_tiny_program(shape, dtype))
    leaves = lambda x: [x if kind == "data" else np.asarray(3, dtype)  # noqa: E731
                        for kind, _, _ in exe.program.leaves]
    inputs = [make() for _ in range(6)]
    # the runs before the RUNS_BEFORE-th are the shared client's, from there on the pace's
    shared = [exe(leaves(x)) for x in inputs[:xla_inline.RUNS_BEFORE - 1]]
    assert all(not isinstance(r, np.ndarray) for out in shared for r in out)
    for x, before in zip(inputs[:2], shared):
        local = exe(leaves(x))
        assert all(isinstance(r, np.ndarray) for r in local)
        for got, want in zip(local, before):
            assert got.dtype == np.asarray(want).dtype
            np.testing.assert_array_equal(got, np.asarray(want))  # bit for bit (NaN-aware)
        for got, want in zip(local, _expected(x)):
            if dtype.startswith("int"):
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_large_program_stays_on_the_shared_client(cache_dir, on_caller):
    """33 Mflop: the worker computes while the caller goes on."""
    a = ir.data(None, (128, 128), "float32")
    y = a
    for _ in range(8):
        y = ops.dot_general(y, a, contracting_dimensions=((1,), (0,)))
    exe = xla.XlaBackend().compile(runtime.linearize([ops.reduce_sum(y, axes=(0, 1))])[0])
    x = np.full((128, 128), 1 / 128, np.float32)
    for _ in range(6):
        (got,) = exe([x])
        assert not isinstance(got, np.ndarray)
    np.testing.assert_allclose(np.asarray(got), 128.0, rtol=1e-4)
    assert not xla_inline.is_tiny(exe.compiled, 0)


def test_large_arguments_keep_even_a_cheap_program_shared(cache_dir):
    """A slice of a big input is cheap to compute, but a NumPy argument is copied in."""
    exe = xla.XlaBackend().compile(runtime.linearize(
        [ops.slice_(ir.data(None, (512, 512), "float32"), start_indices=(0, 0),
                    limit_indices=(1, 4))])[0])
    assert xla_inline.is_tiny(exe.compiled, 0)
    assert not xla_inline.is_tiny(exe.compiled, 512 * 512 * 4)
    assert exe._decide(exe.compiled) is None


@pytest.mark.parametrize("worker, caller", [(27e-6, 37e-6), (47e-6, 39e-6), (400e-6, 380e-6)])
def test_pace_takes_the_way_that_gives_the_shorter_period(monkeypatch, worker, caller):
    """Periods as a loop would see them (NumPy's W4 replay back to back, then with 20 us more
    Python per step): after a trial of each way the faster is kept, and tried again later."""
    clock = [0.0]
    monkeypatch.setattr(xla_inline.time, "perf_counter", lambda: clock[0])
    pace = xla_inline.Pace()
    trial = pace.TRIAL
    exploits = [2 * trial]  # each round's calls the faster way: doubling up to EXPLOIT
    while exploits[-1] < pace.EXPLOIT or len(exploits) < 8:
        exploits.append(min(2 * exploits[-1], pace.EXPLOIT))
    chosen = []
    for _ in range(sum(2 * trial + e for e in exploits)):
        on_caller = pace.begin()
        chosen.append(on_caller)
        clock[0] += caller if on_caller else worker
    faster = caller < worker
    start = 0
    for exploit in exploits:
        assert chosen[start:start + trial] == [False] * trial
        assert chosen[start + trial:start + 2 * trial] == [True] * trial
        assert set(chosen[start + 2 * trial:start + 2 * trial + exploit]) == {faster}
        start += 2 * trial + exploit


def test_pace_ignores_a_pause(monkeypatch):
    """A caller that stops for seconds during the worker's trial says nothing about it."""
    clock = [0.0]
    monkeypatch.setattr(xla_inline.time, "perf_counter", lambda: clock[0])
    pace = xla_inline.Pace()
    for n in range(2 * pace.TRIAL + 1):
        on_caller = pace.begin()
        clock[0] += 37e-6 if on_caller else 27e-6
        if n == pace.TRIAL - 3:
            clock[0] += 5.0
    assert not pace.begin()


def test_numpy_results_flow_into_later_programs_reads_and_stores(cache_dir, on_caller):
    """A lazy loop of tiny steps: its later results are NumPy arrays, which a large program
    (shared client) takes as inputs, which read back, and which are never lent (the caller
    copies: they may be views of another buffer)."""
    if runtime.backend() != "xla":  # (jax installed, LAZYX_BACKEND=reference: no tiny programs)
        pytest.skip("the lazy loop runs on the backend LAZYX_BACKEND names")
    lnp = pytest.importorskip("lazyx.frontends.numpy")
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    x, want = lnp.asarray(w), w
    for _ in range(8):
        x = lnp.tanh(x * np.float32(0.5)) + np.float32(0.25)
        want = np.tanh(want * np.float32(0.5)) + np.float32(0.25)
        lnp.sync()
    node = x.__lazyx_handle__.node
    assert isinstance(node.value, np.ndarray)
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-6)
    assert runtime.get_backend().lend_to_host(node.value) is None
    big = lnp.asarray(rng.standard_normal((256, 4)).astype(np.float32))
    y = lnp.tile(big @ x, (1, 64))  # 256x256 out: no longer tiny
    np.testing.assert_allclose(np.asarray(y), np.tile(np.asarray(big) @ want, (1, 64)),
                               rtol=1e-5, atol=1e-5)
    lazyx.sync()
