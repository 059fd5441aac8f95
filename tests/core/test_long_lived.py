"""Importing a frontend freezes the objects its import made (core/long_lived.py): full
collections no longer walk them, and everything made afterwards is collected as before.
Each case runs in a fresh interpreter: the freeze is process-wide, once per import."""
import os
import subprocess
import sys
import textwrap

import pytest

_PROBE = textwrap.dedent("""
    import gc, weakref
    before = len(gc.get_objects())
    import lazyx.frontends.numpy as lnp
    frozen = gc.get_freeze_count()

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle made after the import
    ref = weakref.ref(a)
    del a, b
    gc.collect()
    print(before, frozen, ref() is None, float(lnp.sum(lnp.ones(3))))
""")


def _probe(env_value):
    env = {"LAZYX_BACKEND": "reference"}
    if env_value is not None:
        env["LAZYX_GC_FREEZE"] = env_value
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    before, frozen, collected, total = out.stdout.split()
    return int(before), int(frozen), collected == "True", float(total)


@pytest.mark.parametrize("env_value", [None, "1"])
def test_a_frontend_import_freezes_what_exists_and_later_cycles_are_still_collected(env_value):
    before, frozen, collected, total = _probe(env_value)
    assert frozen > before  # the interpreter's own objects and everything the import made
    assert collected
    assert total == 3.0


def test_the_freeze_can_be_turned_off():
    _, frozen, collected, total = _probe("0")
    assert frozen == 0
    assert collected and total == 3.0
