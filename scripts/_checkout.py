"""The scripts' way to lazyx: the installed package, or else this checkout. A checkout's root
is the package itself (DESIGN.md's layout), so it is imported through a symlink named `lazyx`
in `.dev/` (git-ignored) beside the scripts."""
import importlib
import os
import sys


def frontend(name):
    """`lazyx.frontends.<name>`, importing lazyx from this checkout when it is not installed."""
    try:
        import lazyx  # noqa: F401
    except ImportError:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        shim = os.path.join(root, ".dev")
        os.makedirs(shim, exist_ok=True)
        if not os.path.islink(os.path.join(shim, "lazyx")):
            os.symlink(root, os.path.join(shim, "lazyx"))
        sys.path.insert(0, shim)
    return importlib.import_module(f"lazyx.frontends.{name}")
