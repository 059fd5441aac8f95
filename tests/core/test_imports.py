"""Core and the reference backend never import a framework (DESIGN: core/ is numpy only)."""
import os
import subprocess
import sys

import lazyx


def test_core_and_reference_import_no_framework():
    code = ("import sys, lazyx, lazyx.core, lazyx.core.runtime, lazyx.backends.reference\n"
            "import lazyx.core.ops, lazyx.core.ir, lazyx.core.metrics, lazyx.core.sharding\n"
            "import lazyx.distributed\n"
            "bad = [m for m in ('torch', 'tensorflow', 'jax', 'jaxlib') if m in sys.modules]\n"
            "print(','.join(bad))")
    # the same lazyx this test session imported (installed, or the checkout's .dev shim)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(lazyx.__file__)))
    env = dict(os.environ, PYTHONPATH=package_parent, LAZYX_BACKEND="reference")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "", f"imported frameworks: {out.stdout.strip()}"


def test_running_a_graph_on_the_reference_backend_imports_no_framework():
    code = ("import sys, numpy as np, lazyx\n"
            "from lazyx.core import ops, runtime\n"
            "h = runtime.LazyHandle(ops.exp(runtime.from_host(np.ones(3, np.float32))))\n"
            "assert abs(runtime.to_host(h)[0] - np.e) < 1e-6\n"
            "print(','.join(m for m in ('torch', 'tensorflow', 'jax') if m in sys.modules))")
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(lazyx.__file__)))
    env = dict(os.environ, PYTHONPATH=package_parent, LAZYX_BACKEND="reference")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""
