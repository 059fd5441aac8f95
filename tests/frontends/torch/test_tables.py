"""The aten table refuses a second lowering for an overload, and its contents do not depend on
the order its modules are imported in (DESIGN.md principle 12)."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch

import lazyx.frontends.torch  # noqa: F401  (fills the table)
from lazyx.core.tables import DuplicateEntry
from lazyx.frontends.torch.aten import table
from lazyx.frontends.torch.tensor import LOWERINGS


def test_a_second_lowering_of_an_overload_is_refused():
    with pytest.raises(DuplicateEntry) as err:
        @table.lower(torch.ops.aten.exp.default)
        def _again(out, x):
            return None
    places = re.findall(r"\S+\.py:\d+", str(err.value))
    assert "aten.exp.default" in str(err.value) and len(places) == 2
    assert places[0].endswith("test_tables.py:21") and "aten/elementwise.py" in places[1]
    assert LOWERINGS[torch.ops.aten.exp.default].__name__ != "_again"


def test_a_prim_shares_its_aten_twins_lowering():
    aten, prims = torch.ops.aten, torch.ops.prims
    assert LOWERINGS[prims.exp.default] is LOWERINGS[aten.exp.default]
    assert LOWERINGS[prims.add.default] is LOWERINGS[aten.add.Tensor]


# Imports the aten modules, in the order given, under package stubs (so the frontend's
# __init__, which imports them in its own order, does not run), then prints the table.
_IMPORT_IN_ORDER = r"""
import importlib, json, sys, types
import lazyx
root = lazyx.__path__[0] + "/frontends/torch"
for name, path in (("lazyx.frontends.torch", root), ("lazyx.frontends.torch.aten", root + "/aten")):
    stub = types.ModuleType(name)
    stub.__path__ = [path]
    sys.modules[name] = stub
from lazyx.frontends.torch.tensor import LOWERINGS
for module in json.loads(sys.argv[1]):
    importlib.import_module("lazyx.frontends.torch.aten." + module)
rows = [[str(k), f"{v.__module__}.{v.__qualname__}"] for k, v in LOWERINGS.items()]
print(json.dumps(sorted(rows)))
"""


def _table_after(order):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", _IMPORT_IN_ORDER, json.dumps(order)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_table_does_not_depend_on_import_order():
    folder = pathlib.Path(table.__file__).parent
    modules = sorted(p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "table"))
    assert "prims" in modules and "elementwise" in modules
    # prims first (it used to copy its twins' entries, so it had to come after them), then last
    first = _table_after(["prims"] + [m for m in modules if m != "prims"])
    last = _table_after([m for m in reversed(modules) if m != "prims"] + ["prims"])
    assert first == last
    in_process = sorted([str(k), f"{v.__module__}.{v.__qualname__}"]
                        for k, v in LOWERINGS.items()
                        if v.__module__.startswith("lazyx.frontends.torch.aten."))
    assert [row for row in first if row[1].startswith("lazyx.frontends.torch.aten.")] \
        == in_process
