"""LAZYX_DUMP_DIR: save every compiled graph, so what ran can be read after the fact.

Per compile, these files share the stem `graph-<n>-<graph hash>`:
  .ir.txt                 the lazyx IR, each value with the user line that made it
  .stablehlo.mlir         what the backend compiled (StableHLO from XLA; the reference
  (.reference.txt)        backend writes its instruction list)
  .hlo.txt                (XLA) the optimized HLO it runs: after SPMD partitioning, with the
                          per-device shapes and the collectives
  .json                   hash, backend, compile time, the sync that asked for it, and the user
                          source lines involved, with their code and how many ops each made
"""
import collections
import json
import linecache
import os

from . import config, runtime
from .debug import program_text, type_text
from .source import format_line

_LOWERED_SUFFIX = {"xla": ".stablehlo.mlir"}


def _source_lines(program):
    """The user lines behind the program, in first-use order, with their code and op count."""
    counts = collections.Counter(s for s in [*program.leaf_sources, *program.sources] if s)
    return [{"line": format_line(src), "file": src[0], "lineno": src[1], "values": n,
             "code": linecache.getline(src[0], src[1]).strip()}
            for src, n in counts.items()]


class Dumper:
    """A runtime listener that writes each newly compiled program into `folder`."""

    def __init__(self, folder):
        self.folder = os.path.abspath(folder)
        self.count = 0
        self._sync = (None, None)

    def on_sync(self, cause, source, program, roots=()):
        self._sync = (cause, source)

    def on_compile(self, program, exe, start, seconds):
        self.count += 1
        backend = runtime.get_backend()
        stem = os.path.join(self.folder, f"graph-{self.count:04d}-{program.graph_hash}")
        lowered_path = stem + _LOWERED_SUFFIX.get(backend.name, f".{backend.name}.txt")
        os.makedirs(self.folder, exist_ok=True)
        with open(stem + ".ir.txt", "w") as f:
            f.write(program_text(program) + "\n")
        with open(lowered_path, "w") as f:
            f.write(backend.lowered_text(program))
        files = {"ir": os.path.basename(stem + ".ir.txt"),
                 "lowered": os.path.basename(lowered_path)}
        if hasattr(backend, "compiled_text"):
            # what XLA runs after optimization and, on a mesh, SPMD partitioning: per-device
            # shapes and the collectives (all-reduce, all-gather, ...) it inserted
            with open(stem + ".hlo.txt", "w") as f:
                f.write(backend.compiled_text(exe))
            files["compiled"] = os.path.basename(stem + ".hlo.txt")
        cause, source = self._sync
        meta = {
            "graph_hash": program.graph_hash,
            "backend": backend.name,
            "compile_seconds": seconds,
            "sync": {"cause": cause, "line": format_line(source) if source else None},
            "inputs": [{"kind": kind, "type": type_text(shape, dtype),
                        "made_at": format_line(src) if src else None,
                        "sharding": repr(layout) if layout is not None else None}
                       for (kind, shape, dtype), src, layout in
                       zip(program.leaves, program.leaf_sources, program.leaf_shardings)],
            "ops": len(program.instructions),
            "outputs": len(program.outputs),
            "source_lines": _source_lines(program),
            "files": files,
        }
        with open(stem + ".json", "w") as f:
            json.dump(meta, f, indent=1)

    def start(self):
        os.makedirs(self.folder, exist_ok=True)
        runtime.LISTENERS.append(self)
        return self

    def stop(self):
        if self in runtime.LISTENERS:
            runtime.LISTENERS.remove(self)


def install_from_env():
    """LAZYX_DUMP_DIR=dir: dump every compiled graph there from import on."""
    folder = config.dump_dir()
    if folder and not any(isinstance(x, Dumper) for x in runtime.LISTENERS):
        Dumper(folder).start()
