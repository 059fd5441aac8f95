"""The disk cache evicts the entries with the oldest mtimes first, and a hit refreshes the
mtime. A hit served by the warm-start preloader did not: the entry every run used kept the
mtime of the run that wrote it, so it was the first evicted (and soon no longer preloaded)."""
import glob
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from test_disk_cache import SHIM

pytest.importorskip("jax")
pytestmark = pytest.mark.skipif(os.environ.get("LAZYX_BACKEND", "xla") != "xla",
                                reason="the disk cache is the XLA backend's")

_STEP = textwrap.dedent("""
    import sys, threading
    sys.path.insert(0, sys.argv[1])
    import numpy as np, lazyx, lazyx.frontends.numpy as lnp
    from lazyx.backends import disk_cache
    x = lnp.asarray(np.linspace(-2, 2, 12, dtype=np.float32))  # starts the backend
    for t in threading.enumerate():
        if t.name == "lazyx-preload":
            t.join()
    print(np.asarray(np.tanh(x * np.float32(1.5)) - x).tolist())
    disk_cache.flush()
    m = lazyx.metrics()
    print(m["disk_hits"], m["disk_misses"], m["disk_preloaded"])
""")


def _step(cache, preload):
    out = subprocess.run(
        [sys.executable, "-c", _STEP, SHIM], capture_output=True, text=True, timeout=300,
        env={**os.environ, "LAZYX_BACKEND": "xla", "LAZYX_CACHE_DIR": str(cache),
             "LAZYX_CACHE_PRELOAD": str(preload)})
    assert out.returncode == 0, out.stderr[-2000:]
    values, counts = out.stdout.strip().splitlines()
    x = np.linspace(-2, 2, 12, dtype=np.float32)
    np.testing.assert_allclose(eval(values), np.tanh(x * np.float32(1.5)) - x, rtol=1e-6,
                               atol=1e-7)
    return [int(n) for n in counts.split()]


@pytest.mark.parametrize("preload", [4, 0])
def test_a_hit_marks_its_entry_recently_used(tmp_path, preload):
    assert _step(tmp_path, preload) == [0, 1, 0]  # cold: compiled and stored
    (entry,) = glob.glob(os.path.join(tmp_path, "*.lxc"))
    long_ago = time.time() - 10_000
    os.utime(entry, (long_ago, long_ago))
    assert _step(tmp_path, preload) == [1, 0, 1 if preload else 0]
    assert os.stat(entry).st_mtime > long_ago + 5_000  # refreshed: evicted last
