"""lazyx.shard on one device, on whichever backend runs: the annotation is accepted, the
numbers are unchanged, and a leaf's layout is part of the compile-cache key."""
import importlib.util

import numpy as np
import pytest

import lazyx
from lazyx.core import runtime

HAS_JAX = importlib.util.find_spec("jax") is not None


def _lazy(array):
    return runtime.LazyHandle(runtime.from_host(array))


def test_one_device_mesh_keeps_the_numbers_and_shows_the_layout():
    mesh = lazyx.distributed.mesh((1, 1), ("data", "model"))
    host = np.arange(6, dtype=np.float32).reshape(3, 2)
    x = _lazy(host)
    lazyx.shard(x, mesh, ("data",))
    assert lazyx.distributed.sharding_of(x).spec == ("data",)
    from lazyx.core import ops
    y = runtime.LazyHandle(ops.exp(x.node))
    lazyx.shard(y, mesh, (None, "model"))
    text = lazyx.ir_text(y)
    assert "{sharding=(data) on mesh(data=1, model=1)}" in text, text
    assert "sharding_constraint(%1) {sharding=(None, model) on mesh(data=1, model=1)}" in text
    np.testing.assert_allclose(runtime.to_host(y), np.exp(host), rtol=1e-6)


def test_a_leaf_laid_out_differently_is_another_program():
    from lazyx.core import ops
    mesh = lazyx.distributed.mesh((1,), ("data",))
    host = np.ones((4, 2), np.float32)
    lazyx.reset_metrics()
    for spec in (None, ("data",), None, ("data",)):
        x = _lazy(host)
        if spec:
            lazyx.shard(x, mesh, spec)
        np.testing.assert_array_equal(runtime.to_host(runtime.LazyHandle(ops.neg(x.node))),
                                      -host)
    m = lazyx.metrics()
    assert (m["compiles"], m["cache_hits"]) == (2, 2), m


@pytest.mark.skipif(not HAS_JAX, reason="without jax the reference backend simulates devices")
def test_a_mesh_needs_the_devices():
    import jax
    n = jax.device_count() + 1
    with pytest.raises(ValueError, match=f"needs {n} devices, but JAX has {n - 1}"):
        lazyx.distributed.mesh((n,), ("data",))


@pytest.mark.skipif(HAS_JAX, reason="with jax the mesh is over JAX's devices")
def test_reference_without_jax_simulates_any_mesh():
    mesh = lazyx.distributed.mesh((4, 2), ("data", "model"))
    assert mesh.jax_mesh is None and mesh.size == 8
    x = _lazy(np.ones((8, 2), np.float32))
    lazyx.shard(x, mesh, ("data", "model"))
    np.testing.assert_array_equal(runtime.to_host(x), np.ones((8, 2)))


def test_metrics_report_memory_per_device():
    x = _lazy(np.ones((256,), np.float32))
    runtime.to_host(x)
    memory = lazyx.metrics()["memory_per_device"]
    if lazyx.backend() == "xla":
        assert sum(memory.values()) >= 1024, memory
    else:
        assert memory == {}
