"""Runtime behaviour on whichever backend LAZYX_BACKEND names: compile caching, the LRU bound,
the node cap, sync scopes, cache-key soundness, graph_hash, metrics and the backend setting."""
import numpy as np
import pytest

import lazyx
from lazyx.core import config, ir, ops, runtime


pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py


def host(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


def step(x_host, lr):
    """y = x * lr + x, with lr a run-time Python scalar."""
    x = runtime.from_host(x_host)
    scale = ops.broadcast_in_dim(ir.param(lr, "float32"), shape=x.shape, broadcast_dimensions=())
    return runtime.LazyHandle(ops.add(ops.mul(x, scale), x))


def test_same_graph_with_new_data_and_scalar_compiles_once():
    for i in range(100):
        x, lr = host((8,), seed=i), 0.01 * i
        got = runtime.to_host(step(x, lr))
        np.testing.assert_allclose(got, x * np.float32(lr) + x, rtol=1e-6)
    m = lazyx.metrics()
    assert m["compiles"] == 1
    assert m["cache_hits"] == 99
    assert m["executions"] == 100


def test_each_new_shape_compiles_once():
    shapes = [(3,), (4, 2), (5,)]
    for _ in range(4):
        for shape in shapes:
            runtime.to_host(step(host(shape), 0.5))
    assert lazyx.metrics()["compiles"] == len(shapes)
    assert lazyx.metrics()["cache_hits"] == 3 * len(shapes)


def test_lru_cache_honors_lazyx_cache_size(monkeypatch):
    monkeypatch.setenv("LAZYX_CACHE_SIZE", "2")
    for shape in [(1,), (2,), (3,)]:
        runtime.to_host(step(host(shape), 0.5))
    assert len(runtime.CACHE.entries) == 2
    runtime.to_host(step(host((3,)), 0.5))   # most recent: still cached
    assert lazyx.metrics()["compiles"] == 3
    runtime.to_host(step(host((1,)), 0.5))   # least recent: evicted, compiles again
    assert lazyx.metrics()["compiles"] == 4
    assert len(runtime.CACHE.entries) == 2


@pytest.mark.parametrize("maybe_cut", [runtime.maybe_cut, runtime._py_maybe_cut],
                         ids=["built", "python"])
def test_node_cap_cuts_automatically(monkeypatch, maybe_cut):
    monkeypatch.setenv("LAZYX_NODE_CAP", "50")
    lazyx.sync()  # the cap is read at each cut
    x_host = host((4,))
    x = runtime.from_host(x_host)
    h = runtime.LazyHandle(x)
    want = x_host
    for _ in range(200):
        maybe_cut()  # what every frontend op does first
        h.set(ops.add(ops.tanh(h.node), x))
        want = np.tanh(want) + x_host
    causes = lazyx.metrics()["sync_causes"]
    assert causes.get("node_cap", 0) >= 6  # 400 nodes at a cap of 50
    np.testing.assert_allclose(runtime.to_host(h), want, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(runtime._NATIVE is None, reason="the C core is not built here")
def test_the_built_cut_check_cuts_only_past_the_mark():
    calls = []

    class ThreadState:
        next_cut = 10
    created = [10]
    check = runtime._NATIVE.CutCheck(created, ThreadState(), lambda: calls.append(created[0]))
    assert check() is None and calls == []  # at the mark: not yet
    created[0] = 11
    check()
    assert calls == [11]
    with pytest.raises(TypeError):
        check(1)


def test_sync_without_arguments_syncs_every_live_pending_handle():
    a, b = step(host((3,)), 1.0), step(host((2,)), 2.0)
    assert a.pending and b.pending
    lazyx.sync()
    assert not a.pending and not b.pending
    assert lazyx.metrics()["executions"] == 1  # one cut, one program with both outputs


def test_a_handle_synced_alone_leaves_others_pending():
    a, b = step(host((3,)), 1.0), step(host((3,)), 2.0)
    runtime.sync(a)
    assert not a.pending and b.pending
    lazyx.sync()
    assert not b.pending


def test_shared_output_nodes_sync_once():
    a = step(host((3,)), 1.0)
    b = runtime.LazyHandle(a.node)
    lazyx.sync()
    np.testing.assert_array_equal(runtime.to_host(a), runtime.to_host(b))


def _binary(fn, first, second):
    return runtime.to_host(runtime.LazyHandle(fn(first, second)))


def test_leaf_sharing_does_not_collide_in_the_cache():
    a_host, b_host = host((5,), 1), host((5,), 2)
    a, b = runtime.from_host(a_host), runtime.from_host(b_host)
    np.testing.assert_allclose(_binary(ops.add, a, a), a_host + a_host)
    np.testing.assert_allclose(_binary(ops.add, a, b), a_host + b_host)
    # which leaf feeds which input
    np.testing.assert_allclose(_binary(ops.sub, a, b), a_host - b_host)
    np.testing.assert_allclose(_binary(ops.sub, b, a), b_host - a_host)
    # the same leaf feeding both inputs of one node, vs two nodes of one leaf
    e = ops.exp(a)
    np.testing.assert_allclose(_binary(ops.mul, e, e), np.exp(a_host) ** 2, rtol=1e-6)
    np.testing.assert_allclose(_binary(ops.mul, ops.exp(a), ops.exp(b)),
                               np.exp(a_host) * np.exp(b_host), rtol=1e-6)


def test_realized_and_pending_nodes_get_different_programs():
    x_host = host((4,))
    pending = runtime.LazyHandle(ops.exp(runtime.from_host(x_host)))
    y1 = runtime.LazyHandle(ops.add(pending.node, pending.node))
    runtime.sync(y1)  # y1 alone (an observation of y1 would compute `pending` with it)
    first = runtime.to_host(y1)
    runtime.sync(pending)  # now a data leaf
    y2 = runtime.LazyHandle(ops.add(pending.node, pending.node))
    np.testing.assert_allclose(runtime.to_host(y2), first, rtol=1e-6)
    assert lazyx.metrics()["compiles"] == 3  # exp+add, exp, add on a leaf


def test_attributes_that_python_hashes_alike_do_not_share_a_program():
    # hash(-1) == hash(-2) in CPython: pad (-1, -2) and (-2, -1) have equal-looking hashes
    x_host = np.arange(6, dtype=np.float32)
    x, zero = runtime.from_host(x_host), ir.param(0.0, "float32")
    first = runtime.to_host(runtime.LazyHandle(ops.pad(x, zero, padding_config=[(-1, -2, 0)])))
    second = runtime.to_host(runtime.LazyHandle(ops.pad(x, zero, padding_config=[(-2, -1, 0)])))
    np.testing.assert_array_equal(first, x_host[1:4])
    np.testing.assert_array_equal(second, x_host[2:5])


def test_constants_with_different_values_do_not_share_a_program():
    x = runtime.from_host(np.ones(3, np.float32))
    for value in (2.0, 3.0):
        got = _binary(ops.mul, x, ops.broadcast_in_dim(ir.constant(value, "float32"), shape=(3,),
                                                       broadcast_dimensions=()))
        np.testing.assert_array_equal(got, np.full(3, value, np.float32))


class _Wrapped:
    """A stand-in frontend tensor: exposes its handle as __lazyx_handle__."""
    def __init__(self, node):
        self.__lazyx_handle__ = runtime.LazyHandle(node)


def test_graph_hash_equal_for_equal_structure_and_different_otherwise():
    def build(op=ops.add, shape=(3,), dtype="float32", axis=0, data_seed=0):
        x = runtime.from_host(host(shape, data_seed).astype(dtype))
        y = op(ops.exp(x) if dtype.startswith("float") else x, x)
        return _Wrapped(ops.reduce_sum(y, axes=(axis,)))

    base = lazyx.graph_hash(build())
    assert base == lazyx.graph_hash(build(data_seed=7))  # new data: same structure
    assert base == lazyx.graph_hash(build())
    assert base != lazyx.graph_hash(build(op=ops.mul))          # op
    assert base != lazyx.graph_hash(build(shape=(4,)))          # shape
    assert base != lazyx.graph_hash(build(dtype="float64"))     # dtype
    assert lazyx.graph_hash(build(shape=(2, 3), axis=0)) != \
        lazyx.graph_hash(build(shape=(2, 3), axis=1))           # attribute
    assert isinstance(base, str) and int(base, 16) >= 0


def test_metrics_keys_types_and_reset():
    runtime.to_host(step(host((3,)), 0.5))
    with pytest.warns(RuntimeWarning, match="some_op"):
        runtime.fallback("some_op", "numpy")
    m = lazyx.metrics()
    for key in ("compiles", "cache_hits", "executions", "syncs", "fallbacks", "nodes_traced",
                "transfers_to_device", "bytes_to_device", "transfers_to_host", "bytes_to_host"):
        assert isinstance(m[key], int), key
    for key in ("sync_causes", "sync_sources", "fallback_ops"):
        assert isinstance(m[key], dict), key
    for timer in ("trace", "compile", "execute"):
        assert isinstance(m[f"{timer}_seconds_total"], float)
        assert isinstance(m[f"{timer}_seconds_median"], float)
    assert m["compiles"] == 1 and m["executions"] == 1 and m["syncs"] == 1
    assert m["sync_causes"] == {"observe": 1}
    assert m["fallback_ops"] == {"some_op": 1}
    assert m["transfers_to_device"] == 1 and m["bytes_to_device"] == 12  # x; params are fed
    assert m["transfers_to_host"] == 1 and m["bytes_to_host"] == 12
    assert m["nodes_traced"] >= 4
    assert any("test_runtime.py" in where for where in m["sync_sources"])
    assert "compiles" in lazyx.metrics_report()
    lazyx.reset_metrics()
    m = lazyx.metrics()
    assert m["compiles"] == m["executions"] == m["syncs"] == m["nodes_traced"] == 0
    assert m["sync_causes"] == {} and m["fallback_ops"] == {}
    assert m["execute_seconds_total"] == 0.0


def test_fallback_warns_once_per_op():
    with pytest.warns(RuntimeWarning, match="fallback_test_op"):
        runtime.fallback("fallback_test_op", "numpy")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runtime.fallback("fallback_test_op", "numpy")  # counted, not warned again
    assert lazyx.metrics()["fallback_ops"]["fallback_test_op"] == 2


def test_unknown_backend_names_the_valid_choices(monkeypatch):
    monkeypatch.setenv("LAZYX_BACKEND", "tpu-magic")
    with pytest.raises(ValueError, match="xla, reference"):
        config.backend_name()
    from lazyx.backends import load
    with pytest.raises(ValueError, match="valid choices: xla, reference"):
        load("tpu-magic")


def test_backend_reports_the_active_name():
    assert lazyx.backend() == config.backend_name()


def test_sync_takes_the_same_value_twice():
    x = runtime.from_host(np.arange(3, dtype=np.float32))
    h = runtime.LazyHandle(ops.neg(x))
    runtime.sync(h, h)
    assert not h.pending
    np.testing.assert_array_equal(runtime.to_host(h), -np.arange(3, dtype=np.float32))
