"""Recompile and sync explanations, LAZYX_DEBUG, and the end-of-run analysis.

Graphs are built through the core API; each check names the line of this file that should
appear, and the numbers computed alongside are compared with NumPy so a wrong graph cannot
pass for a well-explained one.
"""
import io
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lazyx
from lazyx.core import explain, ir, ops, runtime
from lazyx.core.source import format_line


def at(line):
    """How lazyx writes a line of this file (relative to the working folder when inside it)."""
    return format_line((__file__, line))


def here():
    """The caller's line number: `y = op(...); line = here()` on one line names y's line."""
    return sys._getframe(1).f_lineno


@pytest.fixture()
def explainer():
    """Explanations recorded into a string, on an empty cache and fresh metrics."""
    lazyx.reset_metrics()
    runtime.CACHE.clear()
    with explain.Explainer(io.StringIO()) as ex:
        yield ex


def said(ex):
    return ex.stream.getvalue()


def run(node, cause="item"):
    return runtime.to_host(runtime.LazyHandle(node), cause=cause)


def test_recompile_names_the_input_and_both_shapes(explainer):
    lines = {}
    for rows in (3, 3, 5):
        host = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
        x = runtime.from_host(host); lines["x"] = here()  # noqa: E702
        got = run(ops.reduce_sum(ops.mul(x, x), axes=(0,)))
        np.testing.assert_allclose(got, (host * host).sum(0), rtol=1e-6)
    (first, _, _), (why, _, _) = explainer.recompiles  # rows=3 twice: one cache hit
    assert first is None
    assert why == (f"input 0 (made at {at(lines['x'])}) changed shape: "
                   f"float32[3,2] -> float32[5,2]")
    recompile_line = said(explainer).splitlines()[-1]
    assert recompile_line.startswith("lazyx: recompile at ") and recompile_line.endswith(why)
    assert "resembles cached graph" in recompile_line
    assert lazyx.metrics()["compiles"] == 2 and lazyx.metrics()["cache_hits"] == 1


def test_recompile_names_a_changed_dtype_among_several_inputs(explainer):
    # `a` is int32 so both graphs convert it (a float32->float32 convert would fold away);
    # `sub` keeps its operand order (commutative ops are reordered canonically)
    for dtype in ("float32", "float64"):
        a = runtime.from_host(np.ones(4, np.int32))
        b = runtime.from_host(np.full(4, 2, dtype)); b_line = here()  # noqa: E702
        got = run(ops.sub(b, ops.convert(a, dtype=dtype)))
        np.testing.assert_array_equal(got, np.full(4, 1, dtype))
    why = explainer.recompiles[-1][0]
    assert re.fullmatch(rf"input \d \(made at {re.escape(at(b_line))}\) changed dtype: "
                        r"float32\[4\] -> float64\[4\]", why), why


def test_recompile_names_the_first_op_that_differs_with_its_line(explainer):
    host = np.array([1.0, 4.0, 9.0], np.float32)
    x = runtime.from_host(host)
    run(ops.neg(ops.add(x, x))); add_line = here()  # noqa: E702
    y = ops.sub(x, x); y_line = here()  # noqa: E702
    got = run(ops.neg(y))
    np.testing.assert_array_equal(got, -(host - host))
    why = explainer.recompiles[-1][0]
    assert why == f"op %1 is `sub` at {at(y_line)} where the cached graph had `add` " \
                  f"(was at {at(add_line)})"


def test_recompile_names_a_changed_attribute(explainer):
    host = np.arange(6, dtype=np.float32)
    x = runtime.from_host(host)
    for stop in (2, 3):
        part = ops.slice_(x, start_indices=(0,), limit_indices=(stop,)); line = here()  # noqa: E702
        np.testing.assert_array_equal(run(ops.neg(part)), -host[:stop])
    why = explainer.recompiles[-1][0]
    assert why == (f"op %1 `slice` at {at(line)} differs: limit_indices (2,) -> (3,); "
                   f"type float32[2] -> float32[3]")


def test_recompile_names_a_grown_graph(explainer):
    x = runtime.from_host(np.ones(3, np.float32))
    run(ops.exp(ops.neg(x)))
    grown = ops.abs_(ops.exp(ops.neg(x))); line = here()  # noqa: E702
    run(grown)
    assert explainer.recompiles[-1][0] == f"new op %3 `abs` at {at(line)}"


def test_an_unrelated_graph_is_new_not_a_recompile(explainer):
    x = runtime.from_host(np.ones((2, 2), np.float32))
    run(ops.neg(x))
    run(ops.dot_general(ops.transpose(x, permutation=(1, 0)), ops.exp(x),
                        contracting_dimensions=((1,), (0,))))
    assert [why for why, _, _ in explainer.recompiles] == [None, None]
    assert "is new (no cached graph resembles it)" in said(explainer)


def test_explain_recompile_prefers_the_closest_cached_graph(explainer):
    def program(*shapes):
        nodes = [runtime.from_host(np.zeros(s, np.float32)) for s in shapes]
        return runtime.linearize([ops.concatenate(*nodes, dimension=0)])[0]
    cached = [program((2,), (2,)), program((3,), (2,)), program((4,), (4,))]
    why, old = explain.explain_recompile(program((3,), (3,)), cached)
    assert old is cached[1]  # only input 1 differs from it
    assert why.startswith("input 1 ") and why.endswith("changed shape: float32[2] -> float32[3]")


def test_every_sync_names_its_cause_and_the_line_that_caused_it(explainer):
    x = runtime.from_host(np.arange(4, dtype=np.float32))
    value = runtime.to_host(runtime.LazyHandle(ops.reduce_sum(x, axes=(0,))), cause="item"); item_line = here()  # noqa: E702,E501
    assert float(value) == 6.0
    runtime.to_host(runtime.LazyHandle(ops.neg(x)), cause="print"); print_line = here()  # noqa: E702
    pending = runtime.LazyHandle(ops.exp(x))
    lazyx.sync(); sync_line = here()  # noqa: E702
    assert not pending.pending
    by_cause = lazyx.metrics()["sync_sources_by_cause"]
    assert by_cause == {"item": {at(item_line): 1}, "print": {at(print_line): 1},
                        "explicit": {at(sync_line): 1}}
    assert [(cause, format_line(src)) for cause, src, _ in explainer.syncs] == [
        ("item", at(item_line)), ("print", at(print_line)), ("explicit", at(sync_line))]
    text = said(explainer)
    assert f"sync at {at(item_line)}: a value read into Python (.item()" in text
    assert f"sync at {at(sync_line)}: explicit barrier" in text


def test_every_runtime_cause_has_an_explanation():
    assert set(explain.CAUSE_TEXT) == set(runtime.CAUSES)


def test_lazyx_explain_writes_to_stderr_until_stopped(capsys):
    ex = lazyx.explain()
    assert ex in runtime.LISTENERS
    lazyx.sync(runtime.LazyHandle(ops.neg(runtime.from_host(np.ones(6, np.float32))))); line = here()  # noqa: E702,E501
    ex.stop()
    run(ops.neg(runtime.from_host(np.ones(7, np.float32))))
    err = capsys.readouterr().err
    assert ex not in runtime.LISTENERS
    assert err.startswith(f"lazyx: sync at {at(line)}: explicit barrier")
    assert err.count("lazyx: sync at") == 1


# ---------------------------------------------------------------- analysis

def test_analysis_on_request_counts_compiles_item_syncs_and_fallbacks(explainer):
    for rows in (1, 2, 3, 4):
        total = runtime.LazyHandle(ops.reduce_sum(runtime.from_host(np.ones(rows, np.float32)),
                                                  axes=(0,)))
        assert runtime.to_host(total, cause="item") == rows; loop_line = here()  # noqa: E702
    with pytest.warns(RuntimeWarning, match="aten.nonzero has no lowering"):
        runtime.fallback("aten.nonzero", "torch"); fallback_line = here()  # noqa: E702
    report = lazyx.analysis()
    assert report.startswith("lazyx analysis: 4 graph runs, 4 compiles")
    assert "! most steps compile: 4 of 4 graph runs compiled a new program (100%)" in report
    assert f"     4  {at(loop_line)}" in report
    # the explainer was on: the reasons are listed, each naming old and new shape
    assert "changed shape: float32[1] -> float32[2]" in report
    assert "! syncs from .item()/print dominate: 4 of 4 syncs (100%)" in report
    assert f"     4  {at(loop_line)}  (item)" in report
    assert "! fallbacks: 1 ops ran eagerly" in report
    assert f"     1  aten.nonzero at {at(fallback_line)}" in report


def test_analysis_finds_nothing_in_a_steady_loop():
    lazyx.reset_metrics()
    runtime.CACHE.clear()
    w = runtime.LazyHandle(runtime.from_host(np.zeros(3, np.float32)))
    for step in range(4):
        w.set(ops.add(w.node, ops.broadcast_in_dim(ir.param(step, "float32"), shape=(3,),
                                                   broadcast_dimensions=())))
        lazyx.sync()
    np.testing.assert_array_equal(runtime.to_host(w), np.full(3, 0 + 1 + 2 + 3, np.float32))
    report = lazyx.analysis()
    assert "no problems found" in report and "!" not in report
    assert "1 compiles" in report and "syncs by cause: explicit 4" in report


def test_lazyx_debug_explains_on_stderr_and_analyses_at_exit(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np, lazyx
        from lazyx.core import ops, runtime
        for rows in (2, 3, 4, 4):
            x = runtime.from_host(np.ones((rows, 2), np.float32))
            loss = runtime.LazyHandle(ops.reduce_sum(ops.mul(x, x), axes=(0, 1)))
            print(float(runtime.to_host(loss, cause="item")))
        """))
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(lazyx.__file__)))
    env = dict(os.environ, LAZYX_DEBUG="1",
               PYTHONPATH=os.pathsep.join([package_parent, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, timeout=300,
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["4.0", "6.0", "8.0", "8.0"]
    err = done.stderr
    assert "lazyx: sync at train.py:6: a value read into Python" in err
    assert ("lazyx: recompile at train.py:6: graph" in err and
            "input 0 (made at train.py:4) changed shape: float32[3,2] -> float32[4,2]" in err)
    analysis = err[err.index("lazyx analysis:"):]
    assert analysis.startswith("lazyx analysis: 4 graph runs, 3 compiles")
    assert "! most steps compile: 3 of 4 graph runs" in analysis
    assert "! syncs from .item()/print dominate: 4 of 4 syncs" in analysis
    assert "     4  train.py:6  (item)" in analysis


def test_recompile_names_the_changed_input_when_the_outputs_come_in_another_order(explainer):
    # A cut returns the live values in the live registry's order, which a training loop may
    # change from step to step (observed: an Adam step with a changing batch size). The
    # explanation must still name the input whose shape changed, not "other values".
    lines = {}
    for rows, flip in ((3, False), (5, True)):
        host = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
        x = runtime.from_host(host); lines["x"] = here()  # noqa: E702
        total = runtime.LazyHandle(ops.reduce_sum(x, axes=(0,)))
        square = runtime.LazyHandle(ops.reduce_sum(ops.mul(x, x), axes=(0,)))
        runtime.sync(*((square, total) if flip else (total, square)))
        np.testing.assert_allclose(runtime.to_host(square), (host * host).sum(0), rtol=1e-6)
    why = explainer.recompiles[-1][0]
    assert why == (f"input 0 (made at {at(lines['x'])}) changed shape: "
                   f"float32[3,2] -> float32[5,2]"), why


def test_recompile_names_the_changed_input_when_the_ops_were_traced_in_another_order(explainer):
    # The same step may create its ops in another order (a lowering memoized after the first
    # trace, a Keras layer built on the first call): the program's instructions then come in
    # another order, and the explanation must still pair them up.
    lines = {}
    for rows, exp_first in ((3, True), (5, False)):
        host = np.linspace(-1, 1, rows * 2, dtype=np.float32).reshape(rows, 2)
        x = runtime.from_host(host); lines["x"] = here()  # noqa: E702
        if exp_first:
            e = ops.exp(x); s = ops.mul(x, x)  # noqa: E702
        else:
            s = ops.mul(x, x); e = ops.exp(x)  # noqa: E702
        sums = [runtime.LazyHandle(ops.reduce_sum(v, axes=(0,))) for v in (e, s)]
        runtime.sync(*sums)
        np.testing.assert_allclose(runtime.to_host(sums[0]), np.exp(host).sum(0), rtol=1e-6)
    why = explainer.recompiles[-1][0]
    assert why == (f"input 0 (made at {at(lines['x'])}) changed shape: "
                   f"float32[3,2] -> float32[5,2]"), why


def test_a_compiled_step_names_the_argument_whose_shape_missed_and_the_call_line(
        explainer, monkeypatch, capsys):
    import lazyx.frontends.numpy as lnp

    @lazyx.compile
    def step(x, scale, mode):
        return (x * x).sum(axis=0) * (scale if mode == "sum" else -scale)

    monkeypatch.setenv("LAZYX_DEBUG", "1")
    lines = {}
    for rows, mode in ((3, "sum"), (3, "sum"), (3, "sum"), (5, "sum"), (5, "neg")):
        host = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
        got = step(lnp.asarray(host), 2.0, mode); lines[rows, mode] = here()  # noqa: E702
        sign = 1 if mode == "sum" else -1
        np.testing.assert_allclose(np.asarray(got), sign * 2 * (host * host).sum(0),
                                   rtol=1e-6)
    misses = [line for line in capsys.readouterr().err.splitlines()
              if line.startswith("lazyx: compile miss")]
    assert misses == [
        f"lazyx: compile miss at {at(lines[5, 'sum'])}: {step.__qualname__}: no traced "
        f"variant fits: args[0] changed: float32[3,2] -> float32[5,2]; tracing again",
        f"lazyx: compile miss at {at(lines[5, 'neg'])}: {step.__qualname__}: no traced "
        f"variant fits: args[2] changed: 'sum' -> 'neg' (a non-tensor argument is part of "
        f"the guard, by value); tracing again"], misses
    # the step's own compiles are named at the call's line, as a plain sync's are
    call_lines = {lines[3, "sum"], lines[5, "sum"], lines[5, "neg"]}
    sources = [where for _why, where, _graph in explainer.recompiles]
    assert len(sources) >= 2 and all(where is not None and where[1] in call_lines
                                     for where in sources), sources
