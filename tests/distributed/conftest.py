"""Tests on several devices: XLA's CPU client simulates 8 (they share the machine's cores).

XLA_FLAGS must name the device count before jax starts its CPU client, so it is set here, at
collection, before any test imports jax; the tox environment `distributed-*` sets it too.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # mesh_checks

_FLAG = "--xla_force_host_platform_device_count"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" {_FLAG}=8").strip()

import pytest  # noqa: E402

import lazyx  # noqa: E402

N_DEVICES = 8


def pytest_collection_modifyitems(config, items):
    if lazyx.backend() != "xla":
        return
    import jax
    if jax.device_count() < N_DEVICES:
        skip = pytest.mark.skip(reason=f"needs {N_DEVICES} devices; jax started with "
                                       f"{jax.device_count()} before XLA_FLAGS was set")
        for item in items:
            item.add_marker(skip)
