"""core/_native.c builds nodes exactly as core/ir.py's pure-Python construction does.

The C constructor is what every frontend uses when it was built (tox's `core` environment runs
the core tests on the pure-Python path instead, LAZYX_NATIVE=0). Here both build the same
random graphs, and every identity a node carries -- the interned structure and expression
ids a cut keys its cache by, the stable hash, the operand order, the trace it belongs to, the
creation order and the user's line -- must come out the same.
"""
import gc
import os
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lazyx.core import ir, ops, runtime, source

native = pytest.mark.skipif(ir.NATIVE_BASE is None, reason="core/_native.c not built or "
                            "LAZYX_NATIVE=0: the pure-Python path is the only one here")


class PyNode(ir._PyNodeBase):
    """A node built by the pure-Python construction, next to the C-built ir.Node."""
    __slots__ = ()


def test_the_extension_is_built_where_ci_expects_it():
    # A broken C build is optional for users (pip falls back to pure Python), but CI must
    # notice it: every CI environment but `core` (LAZYX_NATIVE=0) runs on the C path.
    if os.environ.get("LAZYX_NATIVE", "1") == "0":
        assert ir.NATIVE_BASE is None and ir.new_node is ir.Node
    elif os.environ.get("CI"):
        assert ir.NATIVE_BASE is not None, "core/_native.c was not built by pip install"
        assert issubclass(ir.Node, ir.NATIVE_BASE)


_UNARY = ("exp", "neg", "tanh")
_BINARY = ("add", "mul", "sub", "max")

# A program: steps that make a leaf, a constant, a unary or binary op on earlier nodes, or
# start a new trace (so later ops mix nodes of two traces: epoch -1, eid None).
_steps = st.lists(st.one_of(
    st.tuples(st.just("data")), st.tuples(st.just("param"), st.floats(-2, 2)),
    st.tuples(st.just("constant"), st.integers(0, 3)),
    st.tuples(st.sampled_from(_UNARY), st.integers(0, 1 << 16)),
    st.tuples(st.sampled_from(_BINARY), st.integers(0, 1 << 16), st.integers(0, 1 << 16)),
    st.tuples(st.just("new trace"))), min_size=1, max_size=30)


def _run(program, make):
    """Build `program` with `make` (a node class); each node's identities, normalized so that
    two runs compare: creation order and trace serials relative to the run's own."""
    ir.TRACE.reset()
    traces = [ir.TRACE.serial]
    first = ir.CREATED[0]
    nodes, seen = [], []
    shape = (2, 3)
    for step in program:
        kind = step[0]
        if kind == "new trace":
            ir.TRACE.reset()
            traces.append(ir.TRACE.serial)
            continue
        if kind == "data":
            node = make("data", (), {}, shape, "float32", np.zeros(shape, np.float32))
        elif kind == "param":
            node = make("param", (), ir._SPLAT, shape, "float32", np.float32(step[1]))
        elif kind == "constant":
            value = np.full(shape, step[1], np.float32)
            node = make("constant", (), {}, shape, "float32", value, bytes([step[1]]))
        elif not nodes:
            continue
        else:
            inputs = tuple(nodes[i % len(nodes)] for i in step[1:])
            node = make(kind, inputs, {}, shape, "float32", None, 0, ("<test>", len(nodes)))
        nodes.append(node)
        epoch = node.epoch if node.epoch in (None, 0, -1) else ("trace", traces.index(node.epoch))
        seen.append((node.op, node.local, node.eid, node.hash, node.order, epoch,
                     node.serial - first, node.source))
    return seen


@native
@settings(max_examples=60, deadline=None)
@given(_steps)
def test_c_and_python_construction_agree(program):
    assert _run(program, ir.new_node) == _run(program, PyNode)


@native
def test_the_class_call_and_keywords_agree_with_new_node():
    x = ir.data(np.ones(3, np.float32), (3,), "float32")
    via_call = ir.Node("exp", (x,), {}, (3,), "float32", source=("f.py", 1))
    via_new = ir.new_node("exp", (x,), {}, (3,), "float32", None, 0, ("f.py", 1))
    python = PyNode("exp", (x,), {}, (3,), "float32", source=("f.py", 1))
    fields = ("op", "local", "eid", "hash", "order", "epoch", "source", "value", "attrs")
    for name in fields:
        assert getattr(via_call, name) == getattr(via_new, name) == getattr(python, name), name


def _exp_made_by(make):
    return make("exp", (ir.data(np.ones(2, np.float32), (2,), "float32"),), {}, (2,),
                "float32").source


def test_a_node_made_outside_a_frontend_op_reports_the_users_line():
    # the line is the caller of whatever called the constructor (ir.data, an op builder):
    # here, this test's line below, for both constructions
    lines = _exp_made_by(ir.new_node), _exp_made_by(PyNode), _exp_made_by(ir.Node)
    assert lines == ((__file__, lines[0][1]),) * 3
    assert "lines = _exp_made_by" in open(__file__).read().splitlines()[lines[0][1] - 1]
    with source.OP_LINE:  # inside a frontend op: the op's line, found once as it began
        line = source.CURRENT.line
        assert _exp_made_by(ir.new_node) == line == _exp_made_by(PyNode)


@native
def test_bad_inputs_raise_and_count_nothing():
    # (the op builders check their inputs first; this is the constructor's own guard)
    before = ir.CREATED[0]
    with pytest.raises(TypeError, match="inputs must be nodes"):
        ir.new_node("exp", (np.ones(2),), {}, (2,), "float32")
    with pytest.raises(TypeError, match="5 to 9 arguments"):
        ir.new_node("exp")
    assert ir.CREATED[0] == before


def test_nodes_are_weakly_referenced_and_collected():
    x = ir.data(np.ones(2, np.float32), (2,), "float32")
    y = ops.exp(x)
    ref = weakref.ref(y)
    assert ref() is y
    del y
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("make", ["new_node", "python"])
def test_freeing_a_very_long_chain_does_not_overflow_the_stack(make):
    # each node holds its input: freeing the last frees the chain recursively, unless the
    # deallocator bounds the depth (CPython's trashcan)
    build = ir.new_node if make == "new_node" else PyNode
    node = ir.data(np.ones(1, np.float32), (1,), "float32")
    for _ in range(200_000):
        node = build("neg", (node,), {}, (1,), "float32", None, 0, None)
    del node


def test_each_thread_numbers_its_own_leaves_and_agrees_with_the_others():
    def build(out):
        ir.TRACE.reset()
        a = ir.data(np.ones(2, np.float32), (2,), "float32")
        b = ir.param(0.5, "float32", (2,))
        out.append(ops.add(ops.exp(a), b).eid)
    results = []
    threads = [threading.Thread(target=build, args=(results,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    build(results)
    assert len(set(results)) == 1 and results[0] is not None


def test_a_derived_leaf_reads_its_value_through_the_property():
    base = ir.data(np.arange(6, dtype=np.float32).reshape(2, 3), (2, 3), "float32")
    leaf = ir.Derived(base, "transpose", {"permutation": (1, 0)}, (3, 2), "float32", None)
    assert leaf.op == "data" and leaf.epoch is None and leaf.shape == (3, 2)
    np.testing.assert_array_equal(leaf.value, np.arange(6).reshape(2, 3).T)


@pytest.mark.parametrize("how", ["deepcopy", "copy", "pickle"])
def test_nodes_copy_and_pickle_with_every_field(how):
    import copy
    import pickle
    copier = {"deepcopy": copy.deepcopy, "copy": copy.copy,
              "pickle": lambda v: pickle.loads(pickle.dumps(v))}[how]
    x = ops.exp(ir.data(np.arange(3, dtype=np.float32), (3,), "float32"))
    y = copier(x)
    assert type(y) is ir.Node and y is not x
    for name in ("op", "attrs", "shape", "dtype", "hash", "local", "serial", "source", "order"):
        assert getattr(y, name) == getattr(x, name), name
    # its leaf may be a copy, which the trace has not numbered: no exact key in the trace
    assert x.epoch == ir.TRACE.serial and (y.epoch, y.eid) == (-1, None)
    np.testing.assert_array_equal(y.inputs[0].value, np.arange(3))
    h = runtime.LazyHandle(y)
    runtime.sync(h)
    np.testing.assert_allclose(np.asarray(h.node.value), np.exp(np.arange(3)), rtol=1e-6)
    base = ir.data(np.arange(6, dtype=np.float32).reshape(2, 3), (2, 3), "float32")
    derived = copier(ir.Derived(base, "transpose", {"permutation": (1, 0)}, (3, 2), "float32",
                                None))
    np.testing.assert_array_equal(derived.value, np.arange(6).reshape(2, 3).T)


# A frontend op as lazyx writes one: its code lives in lazyx's folder, so its frames are
# passed over, and the line found is the line that called it.
_FRONTEND = {}
exec(compile("def op(context, probe):\n    with context:\n        with context:\n"
             "            return probe()\n",
             os.path.join(os.path.dirname(os.path.abspath(ir.__file__)), "_an_op.py"), "exec"),
     _FRONTEND)


@native
def test_the_c_op_line_finds_the_line_source_op_line_finds():
    def line():
        assert source.CURRENT.depth == 2  # (nested ops keep the outermost line)
        return source.CURRENT.line
    op = _FRONTEND["op"]
    assert type(source.OP_LINE) is not source.op_line
    lines = op(source.OP_LINE, line), op(source.op_line(), line)  # the same line, both ways
    here = open(__file__).read().splitlines().index(
        "    lines = op(source.OP_LINE, line), op(source.op_line(), line)  # the same line, "
        "both ways")
    assert lines == ((__file__, here + 1),) * 2 and source.CURRENT.depth == 0
    with pytest.raises(ZeroDivisionError):  # an error inside an op leaves the depth as it was
        with source.OP_LINE:
            1 / 0
    assert source.CURRENT.depth == 0


@native
def test_the_c_op_line_honours_lazyx_source_lines_off(monkeypatch):
    monkeypatch.setattr(source, "ENABLED", False)
    with source.OP_LINE:
        assert source.CURRENT.line is None


@native
def test_each_thread_has_its_own_op_line():
    # source.CURRENT is per thread (C fields found through the thread's id): an op running in
    # one thread neither sees nor changes another thread's depth or line, including a thread
    # started after the first one ended (whose thread state may take the same address).
    op = _FRONTEND["op"]
    inside, seen = threading.Event(), {}

    def probe():
        inside.set()
        release.wait(5)
        return source.CURRENT.line

    def worker(name):
        seen[name] = op(source.OP_LINE, probe)
        seen[name + " after"] = (source.CURRENT.depth, source.CURRENT.line)

    for name in ("first", "second"):
        release = threading.Event()
        inside.clear()
        thread = threading.Thread(target=worker, args=(name,))
        thread.start()
        assert inside.wait(5)
        assert source.CURRENT.depth == 0  # the worker is inside its op; this thread is not
        with source.OP_LINE:
            mine = source.CURRENT.line
        release.set()
        thread.join(5)
        assert mine[0] == __file__ and seen[name][0] == __file__ and seen[name] != mine
        assert seen[name + " after"][0] == 0


@native
def test_the_c_op_line_works_with_a_python_current(monkeypatch):
    # a threading.local in place of the C state (as the pure-Python path has it): the C
    # `with` and the C node builder read and write it through its attributes
    monkeypatch.setattr(source, "CURRENT", source._OpLine())
    monkeypatch.setattr(ir, "_OP_CURRENT", source.CURRENT)
    op = _FRONTEND["op"]

    def probe():
        assert source.CURRENT.depth == 2
        return source.CURRENT.line, ir.param(1.5, "float32").source
    line, node_line = op(source.OP_LINE, probe)
    assert line == node_line and line[0] == __file__ and source.CURRENT.depth == 0


# ---------------------------------------------------------------- nodes and the cyclic GC
# (core/_native.c: a node whose fields cannot lead back to it is left out of the collector,
# so a traced graph no longer fills the oldest generation and sets off full collections)

@native
def test_plain_nodes_and_their_inputs_are_left_out_of_the_collector():
    x = ir.data(np.ones((2, 3), np.float32), (2, 3), "float32")
    made = [x, ops.exp(x), ops.add(x, ir.param(0.5, "float32", (2, 3))),
            ops.reduce_sum(x, axes=(1,)), ops.transpose(x, permutation=(1, 0))]
    for node in made:
        assert not gc.is_tracked(node), node.op
        assert not gc.is_tracked(node.inputs), node.op
    # a long chain adds (almost) nothing for the collector to walk: without the untracking,
    # each link is a tracked node and a tracked inputs tuple
    gc.collect()
    before = len(gc.get_objects())
    chain = made[1]
    for _ in range(2000):
        chain = ops.tanh(ops.mul(chain, ir.param(0.5, "float32", (2, 3))))
    gc.collect()
    assert len(gc.get_objects()) - before < 100


class _Holder:
    """A mutable object a node's field may hold: a cycle can pass through it."""


@native
def test_a_node_whose_fields_could_close_a_cycle_stays_tracked_and_is_collected():
    x = ir.data(np.ones(2, np.float32), (2,), "float32")
    holder = _Holder()
    # (a value: attributes are interned with the node's structure, and live on with it)
    odd = ir.new_node("neg", (x,), {}, (2,), "float32", holder)
    after = ops.exp(odd)  # made from a tracked node: tracked too
    assert gc.is_tracked(odd) and gc.is_tracked(after)
    assert gc.is_tracked(ir.new_node("neg", (x,), {"held": _Holder()}, (2,), "float32"))
    holder.back = after  # the cycle: after -> odd -> its value, holder -> after
    refs = weakref.ref(odd), weakref.ref(after)
    del odd, after, holder
    gc.collect()
    assert refs[0]() is None and refs[1]() is None


@native
def test_a_field_set_later_to_a_container_tracks_the_node_again():
    # (nothing in lazyx sets a field after construction; a user's code or a new module may)
    node = ops.exp(ir.data(np.ones(2, np.float32), (2,), "float32"))
    assert not gc.is_tracked(node)
    node.value = 3.0  # not a container: nothing changes
    assert not gc.is_tracked(node)
    node.value = _Holder()
    assert gc.is_tracked(node)
    again = ops.exp(ir.data(np.ones(2, np.float32), (2,), "float32"))
    assert not gc.is_tracked(again)
    type(again).__init__(again, "neg", again.inputs, {}, (2,), "float32", _Holder())
    assert gc.is_tracked(again)


@native
def test_a_view_node_with_fields_of_its_own_is_the_collectors_to_judge():
    base = ir.data(np.arange(6, dtype=np.float32).reshape(2, 3), (2, 3), "float32")
    leaf = ir.Derived(base, "transpose", {"permutation": (1, 0)}, (3, 2), "float32", None)
    assert gc.is_tracked(leaf)


@native
def test_a_computed_value_leaves_its_data_node_out_of_the_collector():
    # a cut's result is a data node holding the backend's buffer: a NumPy array on the
    # reference backend, a jax array on XLA (which lists its type in ir.INERT_VALUE_TYPES)
    h = runtime.LazyHandle(ops.exp(ir.data(np.ones(3, np.float32), (3,), "float32")))
    runtime.sync(h)
    assert h.node.op == "data" and h.node.value is not None
    assert not gc.is_tracked(h.node)
    later = ops.neg(h.node)  # and what is made from it
    assert not gc.is_tracked(later)
