"""One process of the 2-process test (test_multiprocess.py): joins the run through
lazyx.distributed.initialize, then trains the NumPy MLP data-parallel on a mesh spanning
both processes' devices and prints its losses and final weights as JSON.

    python multiprocess_worker.py COORDINATOR_ADDRESS NUM_PROCESSES PROCESS_ID
"""
import json
import sys

import numpy as np

import lazyx
import lazyx.frontends.numpy as lnp
from mesh_checks import mlp_data, numpy_mlp_steps

address, n_processes, process_id = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lazyx.distributed.initialize(address, n_processes, process_id)
mesh = lazyx.distributed.mesh((lazyx.distributed.device_count(),), ("data",))
x, y, w1, w2 = mlp_data()  # every process holds the same global arrays (same seed)
lx, ly, lw1, lw2 = (lnp.asarray(a) for a in (x, y, w1, w2))
lazyx.shard(lx, mesh, ("data", None))
lazyx.shard(ly, mesh, ("data",))
for w in (lw1, lw2):
    lazyx.shard(w, mesh, ())
losses, w1, w2 = numpy_mlp_steps(lnp, lx, ly, lw1, lw2, steps=4, sync=True)
sharding = lazyx.distributed.sharding_of(w1)
print("RESULT " + json.dumps({
    "process": lazyx.distributed.process_index(), "devices": mesh.size,
    "losses": losses.tolist(), "w1": np.asarray(w1).tolist(), "w2": np.asarray(w2).tolist(),
    "w1_sharding": repr(sharding)}), flush=True)
