"""Loading the XLA backend leaves NumPy's global random stream where the user put it: jax's
import draws `np.random.rand(5)` (a default argument in its k8s_cluster module), so
`np.random.seed(0)` followed by the first lazy array drew other dropout masks and initial
weights than the same program on plain NumPy (ML-From-Scratch's MLP, explore_npml F2)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("jax")

_PROGRAM = """
import numpy as np
import lazyx, lazyx.frontends.numpy as lnp
np.random.seed(0)
x = lnp.asarray(np.ones(3)) * 2.0
float(x.sum())                       # the first program: the XLA backend loads here
after = np.random.rand(4)
np.random.seed(0)
assert np.array_equal(after, np.random.rand(4)), after
print("ok")
"""


def test_the_first_lazy_value_draws_nothing_from_numpys_global_generator():
    env = dict(os.environ, LAZYX_BACKEND="xla")
    out = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
