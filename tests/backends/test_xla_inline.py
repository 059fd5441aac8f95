"""A binding run on the calling thread (backends/xla_inline.py): the same executable, loaded on
a synchronous CPU client, whether it was compiled in this process or loaded from the disk cache;
the shared executable where it cannot be loaded there."""
import numpy as np
import pytest

import lazyx
from lazyx.backends import disk_cache

from test_disk_cache import _program

jax = pytest.importorskip("jax")
from lazyx.backends import xla, xla_inline  # noqa: E402

pytestmark = pytest.mark.skipif(jax.devices()[0].platform != "cpu",
                                reason="the synchronous client is XLA:CPU's")


def _bound(backend, program, scale):
    exe = backend.compile(program)
    disk_cache.flush()  # (entries are written on a background thread)
    fixed = {i: np.float32(scale) for i, (kind, _, _) in enumerate(program.leaves)
             if kind != "data"}
    return exe.bind(fixed)


def _leaves(x):
    """A call's leaf values: x at the data leaf (the fixed scale is the binding's)."""
    return [x if kind == "data" else None for kind, _, _ in _program().leaves]


def _expected(x, scale):
    return (x * np.float32(scale) + np.array([1, 2, 3], np.float32)).sum(axis=0)


def _client(array):
    (device,) = array.devices()
    return device.client


@pytest.mark.parametrize("where", ["compiled here", "loaded from the disk cache"])
def test_an_inline_binding_computes_what_the_shared_one_does(cache_dir, where, monkeypatch):
    """A disk-loaded executable serialized again loses its code (jaxlib: "Function ... not
    found" when the copy runs): the inline copy must come from the stored entry."""
    monkeypatch.setattr(xla_inline, "RUNS_BEFORE", 10**9)  # plain calls: the shared client's
    rng = np.random.default_rng(0)
    bound = _bound(xla.XlaBackend(), _program(), 0.75)
    if where == "loaded from the disk cache":
        bound = _bound(xla.XlaBackend(), _program(), 0.75)
        assert lazyx.metrics()["disk_hits"] == 1
    x = rng.standard_normal((4, 3)).astype(np.float32)
    bound(_leaves(x))  # a binding decides at its first inline() after a run
    inline = bound.inline()
    assert isinstance(inline, xla._Inline)
    for _ in range(3):
        x = rng.standard_normal((4, 3)).astype(np.float32)
        (got,) = inline(_leaves(x))
        (shared,) = bound(_leaves(x))
        assert _client(got) is not _client(shared)  # another client ran it
        np.testing.assert_array_equal(np.asarray(got), np.asarray(shared))
        np.testing.assert_allclose(np.asarray(got), _expected(x, 0.75), rtol=1e-6)


def test_an_inline_call_returns_its_results_computed(cache_dir):
    """The synchronous client runs the program on the calling thread: its results exist when
    the call returns (33 Mflop, which the asynchronous client hands to its worker). Inputs
    are small: XLA:CPU copies a large host argument on a worker, and the program waits."""
    from lazyx.core import ir, ops, runtime
    a = ir.data(None, (128, 128), "float32")
    y = a
    for _ in range(8):
        y = ops.dot_general(y, a, contracting_dimensions=((1,), (0,)))
    program = runtime.linearize([ops.reduce_sum(y, axes=(0, 1))])[0]
    bound = xla.XlaBackend().compile(program).bind({})
    x = np.full((128, 128), 1 / 128, np.float32)
    bound([x])
    inline = bound.inline()
    assert isinstance(inline, xla._Inline)
    for _ in range(5):
        (got,) = inline([x])
        assert got.is_ready()
    np.testing.assert_allclose(np.asarray(got), 128.0, rtol=1e-4)


def test_an_executable_that_cannot_be_loaded_there_stays_shared(cache_dir, monkeypatch):
    def refuse(compiled):
        raise ValueError("not serializable")
    monkeypatch.setattr(xla_inline, "serialize", refuse)
    bound = _bound(xla.XlaBackend(), _program(scale=0.25), 0.25)
    x = np.ones((4, 3), np.float32)
    bound(_leaves(x))
    assert bound.inline() is bound
    np.testing.assert_allclose(np.asarray(bound.inline()(_leaves(x))[0]), _expected(x, 0.25))


def test_no_second_client_off_a_cpu():
    class Gpu:
        platform, id = "gpu", 0
    assert xla_inline.device_for(Gpu()) is None
