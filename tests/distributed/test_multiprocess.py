"""Two local processes x 4 CPU devices, joined by lazyx.distributed.initialize (coordinator on
127.0.0.1), run the data-parallel NumPy MLP over one 8-device mesh with CPU collectives
(gloo) and get the single-process numbers."""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import lazyx
from mesh_checks import mlp_data, numpy_mlp_steps

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 240  # seconds for the whole run; a hung coordinator must not hang CI


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(lazyx.backend() != "xla", reason="processes join through JAX")
def test_two_processes_match_one():
    address = f"127.0.0.1:{_free_port()}"
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(lazyx.__file__)))
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([package_parent, HERE,
                                           os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "multiprocess_worker.py"),
                               address, "2", str(i)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for i in range(2)]
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=TIMEOUT)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    results = []
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out[-3000:]
        results.append(json.loads(next(line for line in out.splitlines()
                                       if line.startswith("RESULT "))[7:]))
    x, y, w1, w2 = mlp_data()
    losses, w1, w2 = numpy_mlp_steps(np, x, y, w1, w2, steps=4)
    assert sorted(r["process"] for r in results) == [0, 1]
    for r in results:
        assert r["devices"] == 8
        np.testing.assert_allclose(r["losses"], losses, rtol=1e-12)
        np.testing.assert_allclose(r["w1"], w1, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(r["w2"], w2, rtol=1e-10, atol=1e-12)
        assert r["w1_sharding"].startswith("() on mesh(data=8"), r  # stayed on all 8 devices
