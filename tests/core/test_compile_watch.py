"""A compile that runs long is warned about while it runs (core/compile_watch.py): a loop that
never reaches a barrier otherwise looks like a hang at its first read."""
import time
import warnings

import numpy as np
import pytest

import lazyx
from lazyx.core import compile_watch, ir, ops, runtime


pytestmark = pytest.mark.usefixtures("fresh_runtime")  # tests/conftest.py


class _SlowBackend:
    """The real backend, with each compile taking `delay` seconds longer."""

    def __init__(self, real, delay):
        self.real, self.delay = real, delay
        self.name = real.name

    def __getattr__(self, name):
        return getattr(self.real, name)

    def compile(self, program):
        time.sleep(self.delay)
        return self.real.compile(program)


def _loop_without_barrier(steps):
    w = runtime.from_host(np.full((2, 2), -0.5, np.float32))  # stays in (-0.5, 0)
    for _ in range(steps):
        w = ops.add(ops.mul(w, w), w)  # the same line, every iteration
    return runtime.LazyHandle(w)


def _slow(monkeypatch, delay, after):
    monkeypatch.setenv("LAZYX_SLOW_COMPILE", str(after))
    monkeypatch.setattr(runtime, "_backend", _SlowBackend(runtime.get_backend(), delay))


def test_a_long_compile_is_warned_about_while_it_runs(monkeypatch):
    _slow(monkeypatch, delay=0.6, after=0.1)
    handle = _loop_without_barrier(60)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = runtime.to_host(handle)
    texts = [str(w.message) for w in caught if "compiling one graph" in str(w.message)]
    assert len(texts) == 1, [str(w.message) for w in caught]
    assert "120 operations" in texts[0]
    assert "test_compile_watch.py" in texts[0] and "(120 operations)" in texts[0]
    assert "a value read into Python" not in texts[0]  # to_host is a conversion here
    assert lazyx.metrics()["slow_compiles"] == 1
    expected = np.full((2, 2), -0.5, np.float32)
    for _ in range(60):
        expected = expected * expected + expected
    np.testing.assert_allclose(value, expected, rtol=1e-6)  # (XLA may fuse mul+add: FMA)


def test_a_quick_compile_says_nothing(monkeypatch):
    _slow(monkeypatch, delay=0.0, after=5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runtime.to_host(_loop_without_barrier(3))
        time.sleep(0.05)
    assert not [w for w in caught if "compiling one graph" in str(w.message)]
    assert lazyx.metrics()["slow_compiles"] == 0


def test_zero_turns_the_warning_off(monkeypatch):
    _slow(monkeypatch, delay=0.3, after=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runtime.to_host(_loop_without_barrier(3))
    assert not [w for w in caught if "compiling one graph" in str(w.message)]


def test_the_text_tells_a_loop_from_a_big_step():
    """A line that made >= 100 operations of one graph is a loop with no barrier: the advice
    is lazyx.sync() or LAZYX_NODE_CAP; a big graph without one gets the cache's story."""
    looped = runtime.program_of(_loop_without_barrier(60))[0]
    text = compile_watch.describe(looped, "item", ("/u/train.py", 7), 10)
    assert "end each iteration with lazyx.sync()" in text and "LAZYX_NODE_CAP" in text
    assert "recurrent layer" in text  # (or one big call: d2l's unrolled GRU, cut by a read)
    assert "a value read into Python" in text and "train.py:7" in text
    short = runtime.program_of(_loop_without_barrier(20))[0]
    text = compile_watch.describe(short, "explicit", None, 10)
    assert "lazyx.sync()" not in text and "compiled once" in text


def test_a_graph_the_users_barrier_cut_gets_no_loop_advice():
    """timm's models: one step then lazyx.sync() compiled for 10 s, and the 506 operations
    loss.backward() made on its one line were called a loop with no barrier, with advice to
    set LAZYX_NODE_CAP -- which would split the step into several programs."""
    step = runtime.program_of(_loop_without_barrier(60))[0]
    text = compile_watch.describe(step, "explicit", ("/u/train.py", 9), 10)
    assert "(120 operations)" in text and "compiled once" in text
    assert "LAZYX_NODE_CAP" not in text and "loop" not in text


def test_a_bad_setting_is_named(monkeypatch):
    monkeypatch.setenv("LAZYX_SLOW_COMPILE", "soon")
    with pytest.raises(ValueError, match="LAZYX_SLOW_COMPILE"):
        runtime.to_host(_loop_without_barrier(1))
