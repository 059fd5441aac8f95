"""The XLA backend's call paths: an executable bound to fixed leaf values (what torch.compile
graphs use for their literals) and waiting for results (poll, then block)."""
import time

import numpy as np
import pytest

pytest.importorskip("jax")
from lazyx.backends import xla  # noqa: E402
from lazyx.core import ir, ops, runtime  # noqa: E402


def _program():
    """y = x * a + b for data x and scalar params a, b (packed into one argument)."""
    x = runtime.from_host(np.arange(4, dtype=np.float32))
    a, b = ir.param(2.0, "float32"), ir.param(3.0, "float32")
    y = ops.add(ops.mul(x, ops.broadcast_in_dim(a, shape=(4,), broadcast_dimensions=())),
                ops.broadcast_in_dim(b, shape=(4,), broadcast_dimensions=()))
    program, leaves = runtime.linearize([y])
    exe, _ = runtime.compile_program(program)
    return exe, leaves


def test_a_bound_executable_computes_what_the_executable_computes():
    exe, leaves = _program()
    if not isinstance(exe, xla._Executable):
        pytest.skip("the XLA backend is not the active one")
    values = [leaf.value for leaf in leaves]
    params = [i for i, leaf in enumerate(leaves) if leaf.op == "param"]
    bound = exe.bind({i: values[i] for i in params})
    expected = np.asarray(exe(values)[0])
    np.testing.assert_array_equal(np.asarray(bound(values)[0]), expected)
    np.testing.assert_array_equal(expected, np.arange(4) * 2.0 + 3.0)
    # the fixed values were packed once: other values at those positions are not read
    changed = [v if i not in params else np.float32(-1) for i, v in enumerate(values)]
    np.testing.assert_array_equal(np.asarray(bound(changed)[0]), expected)
    # and the shared executable still takes every value from its caller
    np.testing.assert_array_equal(np.asarray(exe(changed)[0]), -np.arange(4) - 1.0)


def test_a_partly_fixed_pack_is_packed_per_call():
    exe, leaves = _program()
    if not isinstance(exe, xla._Executable):
        pytest.skip("the XLA backend is not the active one")
    values = [leaf.value for leaf in leaves]
    first_param = next(i for i, leaf in enumerate(leaves) if leaf.op == "param")
    bound = exe.bind({first_param: values[first_param]})
    changed = list(values)
    other = next(i for i, leaf in enumerate(leaves) if leaf.op == "param" and i != first_param)
    changed[other] = np.float32(10.0)
    np.testing.assert_array_equal(np.asarray(bound(changed)[0]), np.asarray(exe(changed)[0]))


@pytest.mark.parametrize("size", [4, 600])  # done within the poll, and long past it
def test_waiting_returns_only_once_results_exist(size):
    import jax
    x = jax.numpy.ones((size, size))
    f = jax.jit(lambda a: (a @ a @ a).sum(), backend="cpu")
    out = f(x)
    xla.await_ready([out])
    assert out.is_ready()
    assert float(out) == pytest.approx(float(size) ** 4, rel=1e-4)


class _Clock:
    """A stand-in for xla's `time`: each poll takes a tenth of the poll window and a block
    takes what the test says, so the outcome does not hang on how loaded the machine is."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


class _Pending:
    """A stand-in result: ready once a block (the patched xla._block) makes it so, or from
    its `ready_at`-th poll on."""

    def __init__(self, clock, ready_at=None):
        self.clock, self.ready, self.polls, self.ready_at = clock, False, 0, ready_at

    def is_ready(self):
        self.polls += 1
        self.clock.now += xla.SPIN_SECONDS / 10
        return self.ready or self.ready_at is not None and self.polls >= self.ready_at


def test_a_wait_that_outlasted_the_poll_makes_the_next_one_block_at_once(monkeypatch):
    clock = _Clock()
    block_takes = [2 * xla.SPIN_SECONDS]

    def block(buffers):
        clock.now += block_takes[0]
        for b in buffers:
            b.ready = True
    monkeypatch.setattr(xla, "time", clock)
    monkeypatch.setattr(xla, "_block", block)
    monkeypatch.setattr(xla, "_waits_are_long", [False])
    first = _Pending(clock)
    xla.await_ready([first])
    assert first.ready and first.polls > 2  # polled through the whole window, then blocked
    second = _Pending(clock)
    xla.await_ready([second])
    assert second.ready and second.polls == 1  # a long wait before: blocked at once
    block_takes[0] = 0.0  # this one proves short...
    third = _Pending(clock)
    xla.await_ready([third])
    assert third.polls == 1
    fourth = _Pending(clock, ready_at=4)
    xla.await_ready([fourth])
    assert fourth.polls == 4 and not fourth.ready  # ...so the next polls again (done by then)
