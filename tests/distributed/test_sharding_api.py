"""lazyx.shard from every frontend: errors at the call, the sharding in the graph key and in
ir_text, one graph for the three frameworks, and data laid out differently never sharing a
compiled program."""
import gc

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp
from mesh_checks import assert_laid_out


@pytest.fixture(scope="module")
def mesh():
    return lazyx.distributed.mesh((4, 2), ("data", "model"))


def test_mesh_is_a_jax_mesh_over_the_devices(mesh):
    import jax
    assert isinstance(mesh.jax_mesh, jax.sharding.Mesh)
    assert dict(mesh.jax_mesh.shape) == {"data": 4, "model": 2}
    assert mesh.shape == (4, 2) and mesh.axis_names == ("data", "model") and mesh.size == 8
    assert sorted(mesh.device_ids) == sorted(d.id for d in jax.devices())


@pytest.mark.parametrize("spec,words", [
    (("batch", None), ["(8, 6)", "'data': 4, 'model': 2", "'batch'", "not in the mesh"]),
    ((None, "data"), ["(8, 6)", "dimension 1 (size 6)", "not divisible", "data (4 devices)"]),
    ((None, ("model", "data")), ["dimension 1 (size 6)", "model x data (8 devices)"]),
    (("data", None, None), ["(8, 6)", "3 entries", "2 dimension(s)"]),
    (("data", "data"), ["more than one dimension"]),
])
def test_bad_specs_fail_at_the_call(mesh, spec, words):
    x = lnp.asarray(np.ones((8, 6), np.float32))
    with pytest.raises(ValueError) as err:
        lazyx.shard(x, mesh, spec)
    for word in words:
        assert word in str(err.value), str(err.value)
    assert lazyx.distributed.sharding_of(x) is None  # nothing changed


def test_mesh_larger_than_the_devices():
    with pytest.raises(ValueError, match=r"shape \(4, 4\).*needs 16 devices, but JAX has 8"):
        lazyx.distributed.mesh((4, 4), ("data", "model"))
    with pytest.raises(ValueError, match="2 mesh dimension"):
        lazyx.distributed.mesh((4, 2), ("data",))


def test_only_lazy_tensors(mesh):
    with pytest.raises(TypeError, match="expected a lazy tensor, got ndarray"):
        lazyx.shard(np.ones((8, 2)), mesh, ("data",))


def test_sharding_is_in_the_graph_and_its_text(mesh):
    x = lnp.asarray(np.arange(48, dtype=np.float32).reshape(8, 6))
    lazyx.shard(x, mesh, ("data",))
    y = np.exp(x)
    plain = lazyx.graph_hash(y)
    lazyx.shard(y, mesh, ("data", "model"))
    text = lazyx.ir_text(y)
    assert "data {sharding=(data) on mesh(data=4, model=2)} : float32[8,6]" in text, text
    assert "sharding_constraint(%1) {sharding=(data, model) on mesh(data=4, model=2)}" in text
    assert lazyx.graph_hash(y) != plain
    np.testing.assert_allclose(np.asarray(y), np.exp(np.arange(48, dtype=np.float32)
                                                     .reshape(8, 6)), rtol=1e-6)
    assert_laid_out(y, ("data", "model"), mesh)


def test_differently_laid_out_data_do_not_share_a_program(mesh):
    import io
    host = np.arange(48, dtype=np.float32).reshape(8, 6) / 10
    want = np.tanh(host).sum(axis=0)
    lazyx.reset_metrics()
    log = io.StringIO()
    with lazyx.explain(log):
        for spec in [None, ("data",), ("model",), ("data",), (None, "model"), None]:
            x = lnp.asarray(host)
            if spec is not None:
                lazyx.shard(x, mesh, spec)
            np.testing.assert_allclose(np.asarray(np.tanh(x).sum(axis=0)), want, rtol=1e-6)
    assert "is laid out differently: one device -> sharded (data) on mesh(data=4, model=2)" \
        in log.getvalue(), log.getvalue()
    m = lazyx.metrics()
    # four layouts (unsharded, rows on data, rows on model, columns on model): four programs;
    # the repeated two are cache hits
    assert (m["compiles"], m["cache_hits"]) == (4, 2), m


def test_one_graph_from_three_frameworks(mesh):
    torch = pytest.importorskip("torch")
    tf = pytest.importorskip("tensorflow")
    import lazyx.frontends.tf as ltf
    import lazyx.frontends.torch as lt
    host = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    results = []
    for make, exp, total in [
            (lnp.asarray, np.exp, lambda y: y.sum(axis=1)),
            (lambda a: torch.from_numpy(a).to(lt.device), torch.exp, lambda y: y.sum(dim=1)),
            (ltf.constant, tf.exp, lambda y: tf.reduce_sum(y, axis=1))]:
        x = lazyx.shard(make(host), mesh, ("data", None))
        y = lazyx.shard(exp(x), mesh, ("data", "model"))
        results.append(total(y))
    assert len({lazyx.graph_hash(r) for r in results}) == 1
    for r in results:
        np.testing.assert_allclose(np.asarray(r), np.exp(host).sum(axis=1), rtol=1e-5)


def test_a_jax_mesh_works_too():
    import jax
    jmesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    x = lazyx.shard(lnp.asarray(np.ones((4, 8), np.float32)), jmesh, ("x", "y"))
    assert lazyx.distributed.sharding_of(x).spec == ("x", "y")
    np.testing.assert_array_equal(np.asarray(x * 2), 2 * np.ones((4, 8)))


def test_one_graph_uses_one_mesh(mesh):
    other = lazyx.distributed.mesh((8,), ("data",))
    x = lazyx.shard(lnp.asarray(np.ones((8, 2), np.float32)), mesh, ("data",))
    y = lazyx.shard(lnp.asarray(np.ones((8, 2), np.float32)), other, ("data",))
    z = x + y
    if lazyx.backend() != "xla":  # one device computes it whatever the layouts say
        np.testing.assert_array_equal(np.asarray(z), 2 * np.ones((8, 2)))
        return
    with pytest.raises(ValueError, match="different meshes"):
        np.asarray(z)
    del z  # the failed graph stays pending while z lives: let the next sync not meet it
    gc.collect()
