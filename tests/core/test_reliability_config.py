"""Byte settings take a unit: the docs state their defaults as "2 GiB", and `2G` is how a size
is written elsewhere (docker, java's -Xmx). `LAZYX_CACHE_DIR_BYTES=2G` raised "must be an
integer" at the first lazy op (the backend's start reads the bound)."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp
from lazyx.backends import disk_cache
from lazyx.core import config


@pytest.mark.parametrize("raw, expected", [
    ("123", 123), ("2G", 2 << 30), ("2GiB", 2 << 30), ("512m", 512 << 20), (" 64 MiB ", 64 << 20),
    ("1.5GB", 1_500_000_000), ("10kb", 10_000), ("7b", 7), ("", 2 << 30)])
def test_a_byte_setting_takes_a_unit(monkeypatch, raw, expected):
    monkeypatch.setenv("LAZYX_CACHE_DIR_BYTES", raw)
    monkeypatch.setenv("LAZYX_CACHE_BYTES", raw)
    assert config.cache_dir_bytes() == expected and config.cache_bytes() == expected


@pytest.mark.parametrize("raw", ["2X", "G", "1.5", "1e9", "nan G", "inf G", "two"])
def test_a_bad_byte_setting_names_itself(monkeypatch, raw):
    monkeypatch.setenv("LAZYX_CACHE_DIR_BYTES", raw)
    with pytest.raises(ValueError, match="LAZYX_CACHE_DIR_BYTES.*number of bytes"):
        config.cache_dir_bytes()


def test_a_program_runs_with_sizes_written_with_units(monkeypatch, tmp_path):
    monkeypatch.setenv("LAZYX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LAZYX_CACHE_DIR_BYTES", "64MiB")
    monkeypatch.setenv("LAZYX_CACHE_BYTES", "256M")
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)
    got = np.asarray(np.tanh(lnp.asarray(x) * np.float32(0.7)).sum(axis=1) / np.float32(3.0))
    disk_cache.flush()
    np.testing.assert_allclose(got, np.tanh(x * np.float32(0.7)).sum(axis=1) / np.float32(3.0),
                               rtol=1e-6)
    lazyx.sync()
