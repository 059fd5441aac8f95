"""core/_native_live.c's LiveSet and HandleBase keep the registry core/runtime.py's Python
reference keeps: the same live handles, in the same order, whatever a program of makes,
rebinds, discards and deaths does. (tox's `core` environment, LAZYX_NATIVE=0, has only the
Python path: the comparisons skip there; the runtime tests cover that path.)
"""
import copy
import gc
import os
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
from lazyx.core import ir, ops, runtime

native = pytest.mark.skipif(runtime._NATIVE is None,
                            reason="core/_native.c not built or LAZYX_NATIVE=0")


class _State:
    """A thread state of one's own (`live`), so a test never touches the runtime's registry."""

    def __init__(self, live):
        self.live = live


def _handle_types():
    py_state, c_state = _State(runtime._OrderedWeakSet()), _State(runtime._NATIVE.LiveSet())

    class PyHandle(runtime._PyHandleBase):
        __slots__ = ()
        _thread_state = py_state

    class CHandle(runtime._NATIVE.HandleBase):
        __slots__ = ()
        _thread_state = c_state

    return (py_state, PyHandle), (c_state, CHandle)


# (action, handle slot): make a pending or a data handle there, rebind it to pending or data,
# discard it from the registry, drop it (it dies), or read the registry back
_ACTIONS = ["make_pending", "make_data", "set_pending", "set_data", "discard", "drop", "read"]
_programs = st.lists(st.tuples(st.sampled_from(_ACTIONS), st.integers(0, 7)), max_size=60)


def _run(program, state, handle_type):
    pending = ops.neg(runtime.from_host(np.ones(2, np.float32)))
    data = runtime.from_host(np.ones(2, np.float32))
    slots = [None] * 8
    names = {}  # id(handle) -> the serial it was made with (ids may be reused once it dies)
    reads = []
    made = 0
    for action, k in program:
        h = slots[k]
        if action.startswith("make"):
            slots[k] = handle_type(pending if action == "make_pending" else data)
            names[id(slots[k])] = made
            made += 1
        elif h is None:
            continue
        elif action.startswith("set"):
            h.set(pending if action == "set_pending" else data)
        elif action == "discard":
            state.live.discard(h)
        elif action == "drop":
            slots[k] = None
            del h
            gc.collect()
        else:
            live = list(state.live)
            reads.append([names[id(x)] for x in live])
            assert len(state.live) == len(live)
    reads.append([names[id(x)] for x in state.live])
    return reads


@native
@settings(max_examples=200, deadline=None)
@given(_programs)
def test_the_c_registry_lists_what_the_python_one_lists(program):
    (py_state, py_handle), (c_state, c_handle) = _handle_types()
    assert _run(program, c_state, c_handle) == _run(program, py_state, py_handle)
    assert c_state.live.surely_empty() == (len(list(py_state.live)) == 0)


@native
def test_handles_keep_their_place_and_the_dead_leave_at_once():
    (_, _), (state, handle) = _handle_types()
    pending = ops.neg(runtime.from_host(np.ones(2, np.float32)))
    a, b, c = handle(pending), handle(pending), handle(pending)
    a.set(pending)  # registered already: stays first
    assert list(state.live) == [a, b, c]
    del b
    assert len(state.live) == 2 and not state.live.surely_empty()  # no gc.collect needed
    state.live.discard(a)
    state.live.discard(c)
    assert state.live.surely_empty() and list(state.live) == []
    c.set(pending)
    assert list(state.live) == [c]
    with pytest.raises(TypeError, match="lazy handles"):
        state.live.add(object())


@native
def test_many_handles_grow_and_compact_the_registry():
    (py_state, py_handle), (c_state, c_handle) = _handle_types()
    pending = ops.neg(runtime.from_host(np.ones(2, np.float32)))
    for state, handle in ((py_state, py_handle), (c_state, c_handle)):
        kept = []
        for i in range(5000):
            h = handle(pending)
            if i % 7 == 0:
                kept.append(h)
        del h
        gc.collect()
        assert list(state.live) == kept


@native
def test_a_handle_written_by_another_thread_is_cut_there():
    (_, _), (state, handle) = _handle_types()
    pending = ops.neg(runtime.from_host(np.ones(2, np.float32)))
    h = handle(pending)
    other = runtime._NATIVE.LiveSet()

    def write():
        other.add(h)
    t = threading.Thread(target=write)
    t.start()
    t.join()
    assert list(state.live) == [] and list(other) == [h]


def test_runtime_handles_sync_copy_and_leave_the_registry():
    """Through the runtime (either path): a pending handle is cut by a sync, a deep copy is a
    handle of a copy of its node, and a dropped pending value is not computed."""
    x = runtime.from_host(np.arange(3, dtype=np.float32))
    keep = runtime.LazyHandle(ops.mul(x, x))
    dropped = runtime.LazyHandle(ops.neg(x))
    assert keep.pending and dropped.pending
    twin = copy.deepcopy(keep)
    assert type(twin) is runtime.LazyHandle and twin.node is not keep.node
    del dropped
    gc.collect()
    lazyx.reset_metrics()
    runtime.sync()
    assert not keep.pending and not twin.pending
    np.testing.assert_array_equal(np.asarray(keep.node.value), [0, 1, 4])
    np.testing.assert_array_equal(np.asarray(twin.node.value), [0, 1, 4])
    assert lazyx.metrics()["syncs"] == 1
    assert all(h.pending for h in runtime.live_handles())
    assert isinstance(keep.node, ir.Node)


_DEFERRED_DEATHS = textwrap.dedent("""
    import numpy as np
    import lazyx
    from lazyx.core import ops, runtime

    class SyncWhenFreed:
        def __del__(self):
            lazyx.sync()

    x = runtime.from_host(np.arange(4.0))
    kept = []
    for depth in range(30, 130):
        dying = runtime.LazyHandle(ops.add(x, x))
        kept.append(runtime.LazyHandle(ops.mul(x, x)))
        nest = dying
        del dying
        for _ in range(depth):
            nest = [nest]
        outer = [SyncWhenFreed(), nest]  # (a list frees its items last to first)
        del nest, outer
    lazyx.sync()
    print([float(v) for h in kept[::33] for v in np.asarray(h.node.value)])
""")


@pytest.mark.parametrize("native_path", ["1", "0"])
def test_a_handle_dying_deep_in_a_structure_is_not_cut_while_it_dies(native_path, tmp_path):
    """CPython defers the dealloc of an object freed deep in a nested structure (its
    "trashcan": a long list, a traceback's frames) until the outermost dealloc returns, and a
    finalizer may run a sync meanwhile. That sync must not hand out the dying handle, still
    registered with no reference left: reviving it freed it twice, a crash here and, in CI, a
    sync meeting a node or handle whose fields were gone. Run in a child process with
    CPython's debug allocator, which makes a double free fatal."""
    env = dict(os.environ, LAZYX_NATIVE=native_path, PYTHONMALLOC="debug",
               LAZYX_BACKEND="reference")
    script = tmp_path / "deferred_deaths.py"
    script.write_text(_DEFERRED_DEATHS)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[0] == str([0.0, 1.0, 4.0, 9.0] * 4)


@native
def test_wrapper_makes_what_the_classes_init_makes():
    """Wrapper(cls, handle_type)(node) is cls(node) for a class whose __init__ only sets its
    handle (frontends/numpy's LazyArray): the same type and node, registered while pending,
    weakly referable, and gone from the registry when dropped."""
    (_, _), (c_state, CHandle) = _handle_types()

    class Array:
        __slots__ = ("__lazyx_handle__", "__weakref__")

        def __init__(self, node):
            self.__lazyx_handle__ = CHandle(node)

    wrap = runtime._NATIVE.Wrapper(Array, CHandle)
    x = runtime.from_host(np.arange(3.0))
    pending = ops.add(x, x)
    made, init = wrap(pending), Array(pending)
    assert type(made) is Array and type(made.__lazyx_handle__) is CHandle
    assert made.__lazyx_handle__.node is pending
    assert list(c_state.live) == [made.__lazyx_handle__, init.__lazyx_handle__]
    leaf = wrap(x)  # a data leaf is not pending: not registered
    assert leaf.__lazyx_handle__.node is x and len(list(c_state.live)) == 2
    ref = weakref.ref(made)
    del made
    gc.collect()
    assert ref() is None and list(c_state.live) == [init.__lazyx_handle__]
    with pytest.raises(TypeError):
        wrap(pending, pending)
    with pytest.raises(TypeError):
        runtime._NATIVE.Wrapper(int, CHandle)  # no __lazyx_handle__ slot
    with pytest.raises(TypeError):
        runtime._NATIVE.Wrapper(Array, object)  # not a handle type
    inits = []

    class OwnInit(CHandle):  # a handle type with an __init__ of its own: it runs
        __slots__ = ()

        def __init__(self, node):
            inits.append(node)
            super().__init__(node)
    assert runtime._NATIVE.Wrapper(Array, OwnInit)(pending).__lazyx_handle__.node is pending
    assert inits == [pending]
