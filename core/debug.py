"""Seeing the pending graph: readable IR text, Graphviz dot source, and a rendered picture.

Everything here reads a Program (runtime.linearize), so `lazyx.ir_text` of pending tensors and
the IR saved by LAZYX_DUMP_DIR for a compiled graph look the same: slot numbers match the
backend's argument order, and each line names the user source line that made the value.
"""
import os
import shutil
import subprocess

import numpy as np

from . import runtime
from .source import format_line

_LEAF_WORDS = {"data": "input", "param": "param", "splat": "param"}  # data: a graph input


def type_text(shape, dtype):
    """float32[3,4]; a scalar is float32[]; a node with several results (float32[3,3], int32[3])."""
    if type(dtype) is tuple:
        return "(" + ", ".join(type_text(s, d) for s, d in zip(shape, dtype)) + ")"
    return f"{dtype}[{','.join(str(d) for d in shape)}]"


def graph_id(program):
    """program.graph_hash, reusing the digest already taken of the equal cached program:
    hashing a program's text costs about as much as tracing it, too much for every step."""
    exe = runtime.CACHE.entries.get(program.key)
    return (exe.program if exe is not None else program).graph_hash


def _value_text(value, limit=8):
    value = np.asarray(value)
    return f"<{value.size} values>" if value.size > limit else repr(value.tolist())


def _attrs_text(attrs):
    return ", ".join(f"{k}={v!r}" for k, v in attrs.items())


def leaf_text(program, slot):
    """'input 0 (made at train.py:12)': how explanations name a leaf (inputs have no names)."""
    where = program.leaf_sources[slot]
    made = f" (made at {format_line(where)})" if where else ""
    return f"{_LEAF_WORDS.get(program.leaves[slot][0], program.leaves[slot][0])} {slot}{made}"


def instruction_line(program, k):
    """One instruction as '%5 = mul(%3, %4) float32[3,4]' (no source line)."""
    op, attrs, ins, shape, dtype, const = program.instructions[k]
    slot = len(program.leaves) + k
    args = ", ".join(f"%{i}" for i in ins)
    if op == "constant":
        args = _value_text(const)
    attr_part = f" {{{_attrs_text(attrs)}}}" if attrs else ""
    return f"%{slot} = {op}({args}){attr_part} : {type_text(shape, dtype)}"


def program_text(program, title="lazyx graph"):
    """The whole program, one value per line, each with the user line that made it."""
    rows = []
    for slot, (kind, shape, dtype) in enumerate(program.leaves):
        layout = program.leaf_shardings[slot]
        attr_part = f" {{sharding={layout!r}}}" if layout is not None else ""
        if kind == "splat":  # the node as built: a param leaf with the splat attribute
            kind, attr_part = "param", " {splat}"
        rows.append((f"%{slot} = {kind}{attr_part} : {type_text(shape, dtype)}",
                     program.leaf_sources[slot]))
    for k in range(len(program.instructions)):
        rows.append((instruction_line(program, k), program.sources[k]))
    width = min(max((len(text) for text, _ in rows), default=0), 88)
    lines = [f"{title} {program.graph_hash}: {len(program.leaves)} leaves, "
             f"{len(program.instructions)} ops, {len(program.outputs)} output(s)"]
    for text, where in rows:
        lines.append(f"  {text:<{width}}  # {format_line(where)}" if where else f"  {text}")
    lines.append("  return " + ", ".join(f"%{i}" for i in program.outputs))
    return "\n".join(lines)


def ir_text(*tensors):
    """The pending IR behind `tensors` (lazy tensors of any frontend), as readable text: each
    value with its op, attributes, dtype[shape] and the source line (file:line) that made it."""
    program, _ = runtime.program_of(*tensors)
    return program_text(program, title="lazyx pending graph")


# ---------------------------------------------------------------- Graphviz

def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def program_dot(program, name="lazyx"):
    """Graphviz dot source: inputs as ellipses, ops as boxes, outputs drawn bold."""
    outputs = set(program.outputs)
    lines = [f"digraph {_quote(name)} {{", "  rankdir=TB;",
             '  node [shape=box, fontname="monospace", fontsize=10];',
             '  edge [fontname="monospace", fontsize=9];']

    def node(slot, label, where, shape):
        if where:
            label += "\n" + format_line(where)
        style = ", penwidth=2.5" if slot in outputs else ""
        lines.append(f"  n{slot} [label={_quote(label)}, shape={shape}{style}];")

    for slot, (kind, shape, dtype) in enumerate(program.leaves):
        node(slot, f"%{slot} {_LEAF_WORDS.get(kind, kind)}\n{type_text(shape, dtype)}",
             program.leaf_sources[slot], "ellipse")
    base = len(program.leaves)
    for k, (op, _attrs, ins, shape, dtype, _const) in enumerate(program.instructions):
        node(base + k, f"%{base + k} {op}\n{type_text(shape, dtype)}", program.sources[k], "box")
        for position, i in enumerate(ins):
            # operand order matters for sub, div, select...: label it when there are several
            label = f" [label={position}]" if len(ins) > 1 else ""
            lines.append(f"  n{i} -> n{base + k}{label};")
    lines.append("}")
    return "\n".join(lines)


def to_dot(*tensors):
    """Graphviz dot source ("digraph ...") of the pending graph behind `tensors`."""
    return program_dot(runtime.program_of(*tensors)[0])


_FORMATS = ("svg", "png", "pdf")


def render(*tensors_and_path):
    """render(*tensors, path): draw the pending graph with Graphviz into an .svg, .png or .pdf
    file (chosen by the suffix); returns the path. Needs Graphviz's `dot` program."""
    if len(tensors_and_path) < 2:
        raise TypeError("lazyx.render(*tensors, path): give at least one tensor and a file path")
    *tensors, path = tensors_and_path
    path = os.fspath(path)
    fmt = os.path.splitext(path)[1].lstrip(".").lower()
    if fmt not in _FORMATS:
        raise ValueError(f"lazyx.render: cannot tell the picture format from {path!r}; "
                         f"end the file name with one of: {', '.join('.' + f for f in _FORMATS)}")
    source = to_dot(*tensors)
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("lazyx.render needs Graphviz's `dot` program, which is not on PATH: "
                           "install Graphviz (apt-get install graphviz, brew install graphviz or "
                           "conda install graphviz); lazyx.to_dot(...) gives the dot source "
                           "without it")
    done = subprocess.run([dot, f"-T{fmt}", "-o", path], input=source.encode(),
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"lazyx.render: dot failed ({done.returncode}): "
                           f"{done.stderr.decode(errors='replace').strip()}")
    return path
