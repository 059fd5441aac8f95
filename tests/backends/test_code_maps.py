"""XLA:CPU maps each compiled kernel as its own memory regions, and past the kernel's
vm.max_map_count LLVM aborts the process. The runtime sheds half of its cached programs when
the process nears its share of that limit (backends/code_maps.py), and the freed executables
unmap their code."""
import sys

import numpy as np
import pytest

import lazyx
from lazyx.backends import code_maps
from lazyx.core import ops, runtime


pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py


def _program(rows):
    """A small program of its own shape (a new compile per `rows`)."""
    x = runtime.from_host(np.ones((rows, 3), np.float32))
    y = ops.tanh(ops.mul(x, ops.exp(x)))
    return runtime.to_host(runtime.LazyHandle(ops.reduce_sum(ops.sin(y), axes=(0,))))


def test_the_runtime_sheds_half_its_programs_when_mappings_run_short(monkeypatch):
    for rows in range(1, 9):
        _program(rows)
    assert len(runtime.CACHE.entries) == 8
    monkeypatch.setattr(type(runtime.get_backend()), "code_mappings_short",
                        staticmethod(lambda: True))
    np.testing.assert_allclose(_program(20), np.full(3, 20 * np.sin(np.tanh(np.e))), rtol=1e-5)
    assert lazyx.metrics()["cache_sheds"] == 1
    assert len(runtime.CACHE.entries) == 5  # 8 halved, then the new one
    _program(8)  # the most recently used survived the shedding: no compile
    assert lazyx.metrics()["compiles"] == 9


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_compiled_code_stays_within_the_mapping_budget(monkeypatch):
    if runtime.backend() != "xla":
        pytest.skip("only compiled code maps memory")
    import jax
    if jax.local_devices()[0].platform != "cpu":
        pytest.skip("a GPU's kernels are not mapped into the process")
    _program(1)
    start = code_maps.mapped_regions()
    budget = start + 60  # a few dozen small programs' worth (each maps ~4 regions)
    monkeypatch.setitem(code_maps._state, "limit", int(budget / code_maps.SHARE) + 1)
    monkeypatch.setattr(code_maps, "CHECK_EVERY", 1)
    for rows in range(2, 52):
        _program(rows)
    assert lazyx.metrics()["cache_sheds"] >= 1
    assert code_maps.mapped_regions() <= budget + 20
    assert len(runtime.CACHE.entries) < 50


def test_the_limit_is_read_on_linux():
    if not sys.platform.startswith("linux"):
        assert code_maps.limit() is None
        return
    assert code_maps.limit() > 0 and code_maps.mapped_regions() > 0
