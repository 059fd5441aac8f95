"""Test set-up: use the installed lazyx (tox, CI); in a bare checkout, the source tree."""
import os
import sys

try:
    import lazyx  # noqa: F401
except ImportError:
    # A development checkout that was not pip-installed: the repository root *is* the
    # package, so expose it under the name `lazyx` through a symlink in an ignored folder.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shim = os.path.join(root, ".dev")
    os.makedirs(shim, exist_ok=True)
    link = os.path.join(shim, "lazyx")
    if not os.path.islink(link):
        os.symlink(root, link)
    sys.path.insert(0, shim)
    import lazyx  # noqa: F401

from hypothesis import settings

# CI runs every op on two backends in several environments: keep examples modest there.
settings.register_profile("ci", max_examples=20, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _nothing_pending_between_tests():
    """lazyx.sync() with no arguments runs every live pending value: flush what earlier tests
    left alive, so each test's graphs (and its compile counts) are its own."""
    lazyx.sync()
    yield
