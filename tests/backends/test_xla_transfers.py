"""Scalar packs that repeat are passed as device arrays (backends/xla_transfers.py). That is on
only off a CPU; these tests turn it on here and check that it changes which copies are made,
never which numbers come out, against eager NumPy."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("jax")
import jax  # noqa: E402

import lazyx  # noqa: E402
import lazyx.frontends.numpy as lnp  # noqa: E402
from lazyx.backends import xla, xla_transfers  # noqa: E402
from lazyx.core import runtime  # noqa: E402


@pytest.fixture
def saving(monkeypatch, fresh_runtime):
    if not isinstance(runtime.get_backend(), xla.XlaBackend):
        pytest.skip("the XLA backend is not the active one")
    monkeypatch.setattr(xla, "KEEP_PACKS", True)


def _step(x, lr, scale):
    """A step of the lazy path: two run-time scalars, a result read on the host and one kept."""
    y = lnp.tanh(x * scale) - lr * x
    loss = lnp.sum(y * y)
    return y, float(loss)


def _eager(x, lr, scale):
    y = np.tanh(x * np.float32(scale)) - np.float32(lr) * x
    return y, float(np.sum(y * y))


def _only_executable():
    (exe,) = runtime.CACHE.entries.values()
    return exe


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from([0.5, 0.25, -0.0, 0.0, np.nan, 3.0]), min_size=1, max_size=12))
def test_repeated_and_changing_scalars_give_eager_numbers(scalars):
    """Whatever the sequence of a step's scalars (runs of equal values put on the device, then
    a change, -0.0 after 0.0, NaN), each step computes with its own values."""
    if not isinstance(runtime.get_backend(), xla.XlaBackend):
        pytest.skip("the XLA backend is not the active one")
    host = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(xla, "KEEP_PACKS", True)
        runtime.CACHE.clear()  # (executables decide at creation)
        x = lnp.asarray(host)
        for lr in scalars:
            y, loss = _step(x, lr, 2.0)
            want_y, want_loss = _eager(host, lr, 2.0)
            np.testing.assert_allclose(np.asarray(y), want_y, rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
        assert _only_executable().scalar_packs is not None
    runtime.CACHE.clear()


def test_a_pack_that_repeats_is_put_on_the_device_once(saving):
    host = np.ones((2, 3), np.float32)
    x = lnp.asarray(host)
    for _ in range(xla_transfers.REPEATS_BEFORE_PUT + 2):
        _step(x, 0.5, 3.0)
    exe = _only_executable()
    (last,) = exe.scalar_packs.last
    placed = last[2]
    assert isinstance(placed, jax.Array)
    np.testing.assert_array_equal(np.sort(np.asarray(placed)), np.sort(np.float32([0.5, 3.0])))
    _step(x, 0.5, 3.0)
    assert exe.scalar_packs.last[0][2] is placed  # reused, not put again
    y, loss = _step(x, 0.125, 3.0)  # a new value: passed from the host, computed with
    assert exe.scalar_packs.last[0][2] is None
    np.testing.assert_allclose(loss, _eager(host, 0.125, 3.0)[1], rtol=1e-6)


def test_a_value_that_changes_every_step_is_never_put(saving):
    x = lnp.asarray(np.ones((2, 2), np.float32))
    for step in range(6):
        _step(x, 0.1 * step, 1.0)
    assert _only_executable().scalar_packs.last[0][2] is None


def test_on_a_cpu_packs_are_passed_as_they_lie(monkeypatch, fresh_runtime):
    if not isinstance(runtime.get_backend(), xla.XlaBackend):
        pytest.skip("the XLA backend is not the active one")
    monkeypatch.setattr(xla, "KEEP_PACKS", None)
    x = lnp.asarray(np.ones((2, 2), np.float32))
    _step(x, 0.5, 1.0)
    exe = _only_executable()
    on_cpu = runtime.get_backend().device.platform == "cpu"
    assert (exe.scalar_packs is None) == on_cpu


def test_a_replay_keeps_its_repeated_run_time_scalars_on_the_device(saving, monkeypatch):
    """A lazyx.compile replay binds its literals and packs its run-time scalars (here `lr`) at
    each call: a run of equal values is put on the device once, each call computes with its
    own value."""
    placed = []
    real = xla.put

    def counting(array, device=None):
        placed.append(np.array(array))
        return real(array, device)
    monkeypatch.setattr(xla, "put", counting)

    @lazyx.compile
    def step(x, lr):
        return lnp.sum(x * lr + 1.0)
    host = np.arange(4, dtype=np.float32).reshape(2, 2)
    x = lnp.asarray(host)
    rates = [0.5] * 5 + [0.25] * 5 + [0.125, 0.5]
    for lr in rates:
        np.testing.assert_allclose(float(step(x, lr)), np.sum(host * np.float32(lr) + 1),
                                   rtol=1e-6)
    assert lazyx.metrics()["replays"] >= len(rates) - 2
    packs = [p for p in placed if p.shape == (2,)]  # (the data leaf was put once too)
    assert [sorted(p.tolist()) for p in packs] == [[0.5, 1.0], [0.25, 1.0]]
