"""Lets the test modules here import the shared cross-backend harness by name; the disk cache
fixture its tests share."""
import os
import sys

import pytest

import lazyx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private, empty disk cache (tiered compiles off) and fresh metrics."""
    monkeypatch.setenv("LAZYX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("LAZYX_TIERED", raising=False)
    lazyx.reset_metrics()
    return tmp_path
