"""Huge values fail at the call (LAZYX_MAX_BYTES), and known operand values are read without
a sync (core/host_values.py): issue 18."""
import os
import subprocess
import sys

import numpy as np
import pytest

from lazyx.core import host_values, ir, ops


def test_a_value_over_the_limit_raises_before_it_is_recorded():
    x = ir.param(np.float32(1), "float32")
    with pytest.raises(MemoryError, match=r"broadcast_in_dim: a float32\[1000000000000\] value "
                                          r"needs 4,000,000,000,000 bytes.*LAZYX_MAX_BYTES"):
        ops.broadcast_in_dim(x, shape=(10**12,), broadcast_dimensions=())
    with pytest.raises(RuntimeError):  # torch's type for the same request
        ops.iota(dtype="int64", shape=(10**7, 10**7), dimension=0)
    assert ops.broadcast_in_dim(x, shape=(1000,), broadcast_dimensions=()).shape == (1000,)


def _limit_probe(limit):
    code = ("from lazyx.core import ir, ops; x = ir.param(1.0, 'float32')\n"
            "for n in (1000, 10**6):\n"
            "    try: ops.broadcast_in_dim(x, shape=(n,), broadcast_dimensions=()); print('ok')\n"
            "    except MemoryError: print('refused')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("LAZYX_MAX_BYTES", None)
    if limit is not None:
        env["LAZYX_MAX_BYTES"] = limit
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_the_limit_is_read_from_the_environment():
    assert _limit_probe("100000") == ["ok", "refused"]  # 4,000 bytes fit, 4,000,000 do not
    assert _limit_probe("0") == ["ok", "ok"]            # 0: no limit
    assert _limit_probe(None) == ["ok", "ok"]           # default: physical memory


def test_known_values_come_from_host_leaves_and_layout_ops():
    host = np.array([[0, 7], [2, 3]], np.int64)
    leaf = ir.param(host, "int64")
    assert np.array_equal(host_values.known(leaf), host)
    moved = ops.transpose(ops.reshape(leaf, new_sizes=(2, 2, 1)), permutation=(1, 0, 2))
    assert np.array_equal(host_values.known(moved), host.reshape(2, 2, 1).transpose(1, 0, 2))
    narrowed = ops.convert(leaf, dtype="int32")
    assert host_values.known(narrowed).dtype == np.int32
    # integer arithmetic of known values is exact on the host (Keras' negative-index fix-up)
    fixed = ops.select(ops.lt(leaf, ir.param(np.zeros((2, 2), np.int64), "int64")),
                       ops.add(leaf, leaf), leaf)
    assert np.array_equal(host_values.known(fixed), host)
    # a float computation is not known: reading it would need a sync
    assert host_values.known(ops.convert(leaf, dtype="float32")) is None
    floats = ir.param(host.astype(np.float32), "float32")
    assert host_values.known(ops.add(floats, floats)) is None


def test_data_leaves_are_read_and_big_ones_are_not():
    small = ir.data(np.arange(4, dtype=np.int32), (4,), "int32")
    assert np.array_equal(host_values.known(small), np.arange(4))
    big = ir.data(np.zeros(host_values.MAX_ELEMENTS + 1, np.int32),
                  (host_values.MAX_ELEMENTS + 1,), "int32")
    assert host_values.known(big) is None


def test_out_of_range():
    assert host_values.out_of_range(np.array([0, 3]), 0, 3)
    assert not host_values.out_of_range(np.array([0, 2, -100]), 0, 3, ignore=-100)
    assert not host_values.out_of_range(np.array([], np.int64), 0, 3)
