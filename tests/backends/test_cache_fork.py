"""A child forked after the XLA backend started could hang forever when its program was in the
disk cache: loading an executable in a forked child may hang like compiling one (XLA's threads
do not survive a fork; a plain script's child hung every time, a child of this test process
happened to load it), and the fork check guarded compiling only. The child now skips the disk
and gets the RuntimeError that says what to do instead (docs/runtime.md), every time."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lazyx.frontends.numpy as lnp

from test_disk_cache import SHIM
from test_xla_fork import run_forked

pytestmark = pytest.mark.skipif(os.environ.get("LAZYX_BACKEND", "xla") != "xla",
                                reason="the XLA backend's limit")

# a graph no other test compiles, so that the parent process never has it in memory
_X = np.arange(29, dtype=np.float32)


def _expected():
    return np.sinh(_X / np.float32(31.0)) * np.float32(1.75) + np.float32(0.5)


def _graph():
    return np.sinh(lnp.asarray(_X) / np.float32(31.0)) * np.float32(1.75) + np.float32(0.5)


_FILL = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np, lazyx.frontends.numpy as lnp
    from lazyx.backends import disk_cache
    x = np.arange(29, dtype=np.float32)
    np.asarray(np.sinh(lnp.asarray(x) / np.float32(31.0)) * np.float32(1.75) + np.float32(0.5))
    disk_cache.flush()
""")


def _child(queue):
    try:
        queue.put(("value", np.asarray(_graph()).tolist()))
    except RuntimeError as err:
        queue.put(("error", str(err)))


def test_a_forked_child_whose_program_is_on_disk_gets_the_error_instead_of_hanging(cache_dir):
    subprocess.run([sys.executable, "-c", _FILL, SHIM], check=True, timeout=300,
                   env={**os.environ, "LAZYX_BACKEND": "xla", "LAZYX_CACHE_DIR": str(cache_dir)})
    assert len([f for f in os.listdir(cache_dir) if f.endswith(".lxc")]) >= 1
    np.asarray(lnp.asarray(np.arange(3.0)) * 5)  # the backend has run in this process
    kind, message = run_forked(_child, "the forked child hung loading its program from the "
                                       "disk cache")
    assert kind == "error" and "forked" in message and "spawn" in message
    # the parent itself still takes the entry from disk, with NumPy's numbers
    np.testing.assert_allclose(np.asarray(_graph()), _expected(), rtol=1e-6)


def _child_following_the_advice(queue):
    os.environ["LAZYX_BACKEND"] = "reference"  # too late: the backend was chosen before the fork
    try:
        x = lnp.asarray(np.arange(23, dtype=np.float32))
        queue.put(("value", np.asarray(np.cos(x / np.float32(19.0)) * np.float32(2.5)).tolist()))
    except RuntimeError as err:
        queue.put(("error", str(err)))


def test_the_fork_error_gives_no_advice_that_fails_in_the_child(cache_dir):
    """It said 'or set LAZYX_BACKEND=reference in them': a forked child that did so got the
    same error, since a process picks its backend once and the child inherits the parent's."""
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(lnp.asarray(x) * np.float32(3)), x * 3)
    kind, message = run_forked(_child_following_the_advice)
    assert kind == "error" and "spawn" in message
    assert "in them" not in message and "before the parent" in message
