"""The persistent compile cache: the store itself (no jax needed), its keys, and the XLA
backend finding in a new process what an earlier one compiled."""
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import lazyx
from lazyx.backends import disk_cache
from lazyx.backends.disk_cache import DiskCache, program_key
from lazyx.core import config, ir, ops, runtime

# where the imported lazyx lives (an install or a checkout's shim): subprocesses import the same
SHIM = os.path.dirname(os.path.dirname(os.path.abspath(lazyx.__file__)))


def _program(scale=0.5, shape=(4, 3), dtype="float32", const=(1.0, 2.0, 3.0)):
    x = ir.data(None, shape, dtype)
    c = ops.broadcast_in_dim(ir.constant(np.array(const), dtype), shape=shape,
                             broadcast_dimensions=(len(shape) - 1,))
    s = ops.broadcast_in_dim(ir.param(scale, dtype), shape=shape, broadcast_dimensions=())
    y = ops.reduce_sum(ops.add(ops.mul(x, s), c), axes=(0,))
    return runtime.linearize([y])[0]


# ---------------------------------------------------------------- the store

def test_put_get_round_trip_and_missing_key(tmp_path):
    cache = DiskCache(str(tmp_path / "c"), 2**20)  # the folder is made on first write
    key, other = bytes(range(32)), bytes(32)
    assert cache.get(key) is None
    assert cache.put(key, b"payload" * 100)
    assert cache.get(key) == b"payload" * 100
    assert cache.get(other) is None
    assert [p for p in os.listdir(tmp_path / "c")] == [key.hex() + disk_cache.SUFFIX]


@pytest.mark.parametrize("damage", ["truncate_payload", "truncate_header", "flip_byte",
                                    "foreign_file", "other_key"])
def test_corrupt_entry_is_ignored_with_a_warning_and_removed(tmp_path, damage):
    cache = DiskCache(str(tmp_path), 2**20)
    key = b"k" * 32
    payload = np.random.default_rng(0).bytes(5000)
    cache.put(key, payload)
    path = cache.path(key)
    blob = open(path, "rb").read()
    if damage == "truncate_payload":
        blob = blob[:-100]
    elif damage == "truncate_header":
        blob = blob[:20]
    elif damage == "flip_byte":
        blob = blob[:-10] + bytes([blob[-10] ^ 1]) + blob[-9:]
    elif damage == "foreign_file":
        blob = b"x" * len(blob)
    else:
        blob = blob.replace(key, b"q" * 32)
    open(path, "wb").write(blob)
    with pytest.warns(RuntimeWarning, match="ignoring compile-cache entry .*rewritten"):
        assert cache.get(key) is None
    assert not os.path.exists(path)
    cache.put(key, payload)  # rewritten, and sound again
    assert cache.get(key) == payload


def test_lru_eviction_keeps_the_folder_under_its_bound(tmp_path):
    cache = DiskCache(str(tmp_path), 35_000)  # room for three 10 kB entries
    keys = [bytes([i]) * 32 for i in range(5)]
    for i, key in enumerate(keys[:3]):
        cache.put(key, b"x" * 10_000)
        os.utime(cache.path(key), (1000 + i, 1000 + i))  # distinct ages, oldest first
    assert cache.get(keys[0]) is not None  # used: now the most recent
    cache.put(keys[3], b"y" * 10_000)      # over the bound: the least recently used goes
    present = [k for k in keys if os.path.exists(cache.path(k))]
    assert present == [keys[0], keys[2], keys[3]]
    total = sum(os.path.getsize(os.path.join(tmp_path, f)) for f in os.listdir(tmp_path))
    assert total <= 35_000


def test_stale_temporary_files_are_swept(tmp_path):
    stale, fresh = tmp_path / "a.lxc.1.2.3.tmp", tmp_path / "b.lxc.4.5.6.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (1, 1))
    DiskCache(str(tmp_path), 2**20).put(b"z" * 32, b"data")
    assert not stale.exists() and fresh.exists()


_WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from lazyx.backends.disk_cache import DiskCache
    cache = DiskCache(sys.argv[2], 2**30)
    payload = bytes([int(sys.argv[3])]) * 2_000_000
    for _ in range(40):
        cache.put(b"s" * 32, payload)
""")


def test_two_processes_writing_the_same_entry_never_expose_a_torn_file(tmp_path):
    folder = str(tmp_path)
    cache = DiskCache(folder, 2**30)
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, SHIM, folder, str(n)])
               for n in (1, 2)]
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a torn read would warn (and fail here)
        while any(w.poll() is None for w in writers):
            got = cache.get(b"s" * 32)
            if got is not None:
                assert got in (b"\x01" * 2_000_000, b"\x02" * 2_000_000)
                seen.add(got[0])
    assert [w.returncode for w in writers] == [0, 0]
    assert seen and cache.get(b"s" * 32) is not None
    assert [f for f in os.listdir(folder) if f.endswith(".tmp")] == []


# ---------------------------------------------------------------- keys

def test_key_is_the_programs_content_not_its_process_local_key():
    a, b = _program(), _program()
    assert program_key(a, b"ctx") == program_key(b, b"ctx")
    assert len(program_key(a, b"ctx")) == 32
    # a new scalar value is a run-time parameter: same executable, same key
    assert program_key(_program(scale=0.25), b"ctx") == program_key(a, b"ctx")


@pytest.mark.parametrize("change", [dict(shape=(5, 3)), dict(dtype="float64"),
                                    dict(const=(1.0, 2.0, 3.5))])
def test_a_changed_program_has_another_key(change):
    assert program_key(_program(**change), b"ctx") != program_key(_program(), b"ctx")


def test_a_changed_context_has_another_key():
    assert program_key(_program(), b"ctx") != program_key(_program(), b"ctx2")


def test_a_program_with_an_unencodable_attribute_is_not_cached():
    program = _program()
    op, attrs, ins, shape, dtype, const = program.instructions[-1]
    program.instructions[-1] = (op, {**attrs, "fn": object()}, ins, shape, dtype, const)
    assert program_key(program, b"ctx") is None


def test_cache_dir_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("LAZYX_CACHE_DIR", str(tmp_path / "here"))
    assert config.cache_dir() == str(tmp_path / "here")
    monkeypatch.setenv("LAZYX_CACHE_DIR", "")
    assert config.cache_dir() is None and disk_cache.open_cache() is None
    monkeypatch.delenv("LAZYX_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert config.cache_dir() == str(tmp_path / "xdg" / "lazyx")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert config.cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "lazyx")
    monkeypatch.setenv("LAZYX_CACHE_DIR_BYTES", "3000000")
    assert config.cache_dir_bytes() == 3_000_000


_LATE_WRITER = """
import sys, threading, time
sys.path.insert(0, sys.argv[1])
from lazyx.backends import disk_cache
disk_cache.store_later(lambda: None)  # the writer thread exists, as after any compile

def late():  # a background compile (core/early_results.py) finishing after the main thread
    time.sleep(0.5)  # by now exit has stopped the writer; Python still waits for this thread
    disk_cache.store_later(lambda: open(sys.argv[2], "w").write("stored"))
threading.Thread(target=late).start()
"""


def test_an_entry_handed_over_while_the_interpreter_exits_is_still_written(tmp_path):
    """The writer is a thread pool, which Python stops at exit before it joins other threads:
    an entry handed over then (a background compile's) is written by the thread handing it."""
    target = tmp_path / "entry"
    done = subprocess.run([sys.executable, "-c", _LATE_WRITER, SHIM, str(target)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "stored"
