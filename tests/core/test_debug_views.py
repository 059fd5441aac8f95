"""lazyx.ir_text / to_dot / render, LAZYX_DUMP_DIR dumps and the lazyx.profile timeline.

Built through the core API (no frontend): a tiny wrapper with `__lazyx_handle__` stands in for
any frontend's tensor. Source lines are checked against the lines of this file that made them.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pydot
import pytest

import lazyx
from lazyx.core import ir, ops, runtime
from lazyx.core.dump import Dumper
from lazyx.core.source import format_line

# pydot's parser calls pyparsing names that newer pyparsing marks deprecated: not our concern
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated.*:DeprecationWarning")


def at(line):
    """How lazyx writes a line of this file (relative to the working folder when inside it)."""
    return format_line((__file__, line))


def here():
    """The caller's line number: `y = op(...); line = here()` on one line names y's line."""
    return sys._getframe(1).f_lineno


class Tensor:
    """What a frontend tensor looks like to lazyx: anything exposing `__lazyx_handle__`."""

    def __init__(self, node):
        self.__lazyx_handle__ = runtime.LazyHandle(node)


@pytest.fixture()
def fresh():
    lazyx.reset_metrics()
    runtime.CACHE.clear()
    yield


def scaled_sum(rows):
    """x / lr summed, with the line of every value recorded: returns (tensor, x, lines).
    (div, not mul: operands of commutative ops are put in a canonical order, not the user's;
    the broadcast param folds into one splat leaf, made where the param was)"""
    x_host = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
    x = runtime.from_host(x_host); lx = here()  # noqa: E702
    lr = ir.param(0.5, "float32"); llr = here()  # noqa: E702
    b = ops.broadcast_in_dim(lr, shape=(rows, 4), broadcast_dimensions=()); lb = here()  # noqa: E702
    y = ops.div(x, b); ly = here()  # noqa: E702
    s = Tensor(ops.reduce_sum(y, axes=(0, 1))); ls = here()  # noqa: E702
    return s, x_host, dict(x=lx, lr=llr, b=lb, y=ly, s=ls)


def test_ir_text_lists_every_value_with_op_type_and_source_line(fresh):
    s, x_host, lines = scaled_sum(3)
    text = lazyx.ir_text(s)
    body = text.splitlines()
    assert body[0].startswith(f"lazyx pending graph {lazyx.graph_hash(s)}: 2 leaves, 2 ops")
    expected = [("%0 = data : float32[3,4]", "x"),
                ("%1 = param {splat} : float32[3,4]", "lr"),
                ("%2 = div(%0, %1) : float32[3,4]", "y"),
                ("%3 = reduce_sum(%2) {axes=(0, 1)} : float32[]", "s")]
    for row, (value, name) in zip(body[1:], expected):
        assert row.strip().startswith(value), row
        assert row.rstrip().endswith(at(lines[name])), row
    assert body[-1].strip() == "return %3"
    # looking at the graph neither syncs nor changes the result
    assert s.__lazyx_handle__.pending and lazyx.metrics()["syncs"] == 0
    got = runtime.to_host(s.__lazyx_handle__, cause="item")
    np.testing.assert_allclose(got, (x_host / np.float32(0.5)).sum(), rtol=1e-6)


def test_ir_text_shows_baked_constants_and_shared_values_once(fresh):
    x = runtime.from_host(np.ones(3, np.float32))
    two = ir.constant(np.float32(2.0), "float32")
    twos = ops.broadcast_in_dim(two, shape=(3,), broadcast_dimensions=())
    y = ops.add(x, twos)
    both = [Tensor(y), Tensor(ops.mul(y, y))]
    text = lazyx.ir_text(*both)
    assert "= constant(2.0) : float32[]" in text
    assert text.count(" add(") == 1  # y is shared by both results
    assert "mul(%3, %3)" in text and text.rstrip().endswith("return %3, %4")


def test_to_dot_parses_as_the_same_graph(fresh):
    s, _, lines = scaled_sum(2)
    program, _ = runtime.program_of(s)
    (graph,) = pydot.graph_from_dot_data(lazyx.to_dot(s))
    assert graph.get_type() == "digraph"
    nodes = {n.get_name(): n for n in graph.get_nodes() if n.get_name() not in ("node", "edge")}  # defaults
    assert len(nodes) == len(program.leaves) + len(program.instructions) == 4
    labels = {name: n.get_label().strip('"') for name, n in nodes.items()}
    assert labels["n2"] == "%2 div\\nfloat32[2,4]\\n" + at(lines["y"])
    assert labels["n0"].startswith("%0 input\\nfloat32[2,4]")
    assert labels["n1"].startswith("%1 param\\nfloat32[2,4]")
    edges = {(e.get_source(), e.get_destination(), e.get_label()) for e in graph.get_edges()}
    assert edges == {("n0", "n2", "0"), ("n1", "n2", "1"), ("n2", "n3", None)}
    assert nodes["n3"].get("penwidth") == "2.5"  # the output stands out
    assert nodes["n0"].get("shape") == "ellipse"


def test_to_dot_escapes_quotes_in_file_names(fresh):
    s, _, _ = scaled_sum(2)
    program, _ = runtime.program_of(s)
    program.sources[0] = ('we"ird\\dir/f.py', 7)
    (graph,) = pydot.graph_from_dot_data(lazyx.core.debug.program_dot(program))
    assert len(graph.get_nodes()) >= 5


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
def test_render_writes_svg_and_png(fresh, tmp_path):
    s, _, _ = scaled_sum(2)
    svg = lazyx.render(s, tmp_path / "g.svg")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    texts = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    assert "reduce_sum" in texts and "div" in texts
    png = lazyx.render(s, str(tmp_path / "g.png"))
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_render_says_what_to_install_without_dot(fresh, tmp_path, monkeypatch):
    s, _, _ = scaled_sum(2)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match="apt-get install graphviz"):
        lazyx.render(s, tmp_path / "g.svg")
    with pytest.raises(ValueError, match=r"\.svg, \.png, \.pdf"):
        lazyx.render(s, tmp_path / "g.jpeg")
    with pytest.raises(TypeError, match="path"):
        lazyx.render(tmp_path / "g.svg")


# ---------------------------------------------------------------- LAZYX_DUMP_DIR

def test_dump_saves_ir_lowered_program_hash_and_source_lines(fresh, tmp_path):
    dumper = Dumper(tmp_path / "dumps").start()
    try:
        s, _, lines = scaled_sum(5)
        expected_hash = lazyx.graph_hash(s)
        ir_before = lazyx.ir_text(s)
        runtime.to_host(s.__lazyx_handle__, cause="item"); sync_line = here()  # noqa: E702
        s2, _, _ = scaled_sum(5)  # same graph: a cache hit is not dumped again
        runtime.to_host(s2.__lazyx_handle__, cause="item")
    finally:
        dumper.stop()
    files = sorted(os.listdir(tmp_path / "dumps"))
    stem = f"graph-0001-{expected_hash}"
    lowered = stem + (".stablehlo.mlir" if lazyx.backend() == "xla" else ".reference.txt")
    compiled = [stem + ".hlo.txt"] if lazyx.backend() == "xla" else []  # XLA's optimized HLO
    assert files == sorted([stem + ".ir.txt", stem + ".json", lowered] + compiled)
    ir_dumped = (tmp_path / "dumps" / (stem + ".ir.txt")).read_text()
    # the dump shows the program as compiled, whose value numbering follows the build order;
    # it is the same graph as ir_text showed: the same values, types, attributes and lines
    def values(text):
        return sorted(re.sub(r"%\d+", "%", line).strip() for line in text.splitlines()[1:])
    assert values(ir_dumped) == values(ir_before)
    lowered_text = (tmp_path / "dumps" / lowered).read_text()
    if lazyx.backend() == "xla":
        main = next(line for line in lowered_text.splitlines() if "func.func public @main" in line)
        assert "tensor<5x4xf32>" in main and "tensor<f32>" in main  # inputs, canonical order
        assert "stablehlo.divide" in lowered_text and "stablehlo.reduce" in lowered_text
    else:
        assert "div[" in lowered_text and "reduce_sum[" in lowered_text
    meta = json.loads((tmp_path / "dumps" / (stem + ".json")).read_text())
    assert meta["graph_hash"] == expected_hash and meta["backend"] == lazyx.backend()
    assert meta["sync"] == {"cause": "item", "line": at(sync_line)}
    assert sorted((i["kind"], i["type"]) for i in meta["inputs"]) == [
        ("data", "float32[5,4]"), ("splat", "float32[5,4]")]  # (a splat is fed its scalar)
    by_line = {entry["lineno"]: entry for entry in meta["source_lines"]}
    assert by_line[lines["y"]]["code"].startswith("y = ops.div(x, b)")
    assert by_line[lines["y"]]["values"] == 1
    assert set(by_line) == {lines[k] for k in ("x", "lr", "y", "s")}


def _script_env(**extra):
    """Environment for a child python that imports this same lazyx."""
    env = dict(os.environ, **extra)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(lazyx.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([package_parent, env.get("PYTHONPATH", "")])
    return env


def test_dump_dir_env_var_dumps_every_compile(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "import numpy as np, lazyx\n"
        "from lazyx.core import ops, runtime\n"
        "for n in (2, 3, 2):\n"
        "    x = runtime.LazyHandle(ops.neg(runtime.from_host(np.ones(n, np.float32))))\n"
        "    runtime.to_host(x, cause='convert')\n")
    out = tmp_path / "dumps"
    subprocess.run([sys.executable, str(script)], env=_script_env(LAZYX_DUMP_DIR=str(out)),
                   check=True, cwd=tmp_path, timeout=300)
    metas = sorted(out.glob("*.json"))
    assert [m.name.split("-")[1] for m in metas] == ["0001", "0002"]  # n=2 again: cache hit
    first = json.loads(metas[0].read_text())
    assert first["inputs"][0]["type"] == "float32[2]"
    assert first["sync"] == {"cause": "convert", "line": "prog.py:5"}
    assert [e["line"] for e in first["source_lines"]] == ["prog.py:4"]


# ---------------------------------------------------------------- lazyx.profile timeline

def test_profile_writes_a_chrome_trace_of_each_step(fresh, tmp_path):
    path = tmp_path / "trace.json"
    with lazyx.profile(path) as timeline:
        for _ in range(2):
            s, _, _ = scaled_sum(4)
            runtime.to_host(s.__lazyx_handle__, cause="item"); item_line = here()  # noqa: E702
    trace = json.loads(path.read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert events == [e for e in timeline.trace()["traceEvents"] if e["ph"] == "X"]
    tracks = {e["args"]["name"]: e["tid"] for e in trace["traceEvents"]
              if e["name"] == "thread_name"}
    work = [e for e in events if e["tid"] == tracks["lazyx"]]
    assert [e["name"] for e in work] == ["trace", "compile", "execute", "trace", "execute"]
    assert [e["args"]["step"] for e in work] == [1, 1, 1, 2, 2]
    steps = [e for e in events if e["tid"] == tracks["steps"]]
    assert [e["name"] for e in steps] == ["step 1", "step 2"]
    assert steps[0]["args"]["cause"] == "item"
    assert steps[0]["args"]["line"] == at(item_line)
    for step in steps:  # each step's spans lie inside it, in time order
        inside = [e for e in work if e["args"]["step"] == int(step["name"].split()[1])]
        assert inside[0]["ts"] == pytest.approx(step["ts"])
        assert inside[-1]["ts"] + inside[-1]["dur"] == pytest.approx(step["ts"] + step["dur"])
        assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(inside, inside[1:]))
    moves = [e for e in events if e["tid"] == tracks["transfers"]]
    assert [e["name"] for e in moves] == ["transfer to_device", "transfer to_host"] * 2
    assert [e["args"]["bytes"] for e in moves] == [4 * 4 * 4, 4] * 2
    assert [e["args"]["step"] for e in moves] == [1, 1, 2, 2]  # the input feeds the step it joins
    assert timeline not in runtime.LISTENERS  # nothing is left listening after the block
