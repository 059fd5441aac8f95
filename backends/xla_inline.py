"""Programs run on the calling thread, for callers that wait for their results at once (XLA:CPU).

jax's CPU client runs each program on a worker thread (asynchronous dispatch): a lazy step
that ends at a barrier returns while XLA computes, and the next step traces meanwhile. But a
worker that has been idle for more than about 20 us has gone to sleep, and waking it costs the
next call about 40 us on the 2-core bench machine (a 4x4 200-op program, its call and read:
10 us back to back, 50-55 us with 40 us of Python between calls). A torch.compile graph called
with CPU tensors waits for its results right away and has Dynamo's and AOTAutograd's Python
between its calls, so it paid the wake-up at every call and gained nothing from the worker.

Such a caller runs its executable on a second, synchronous CPU client, which executes on the
calling thread: the same executable, serialized and loaded there (a few ms, not a compile).
The two clients' buffers do not mix freely: an asynchronous-client array passed to the
synchronous client's executable is copied (about 100 us for a 4x4 array) and the reverse is
refused. So only callers whose every argument is host data (NumPy) or made by this client,
and whose results all go back to the host, run here (dynamo.CompiledGraph decides).
"""
import threading

from jax.experimental.serialize_executable import deserialize_and_load, serialize

_lock = threading.Lock()
_devices = {}  # the asynchronous client's device -> the synchronous client's (None: there is none)


def device_for(device):
    """The synchronous CPU client's device standing for `device` (made on first use), or None:
    off a CPU, across processes, or where jaxlib cannot make a second client."""
    with _lock:
        if device not in _devices:
            _devices[device] = _make(device)
        return _devices[device]


def _make(device):
    import jax
    if device.platform != "cpu" or jax.process_count() > 1:
        return None
    try:
        from jaxlib import xla_client
        client = xla_client.make_cpu_client(asynchronous=False)
        return next(d for d in client.local_devices() if d.id == device.id)
    except Exception:  # noqa: BLE001 -- an optimization: without it, the shared client runs
        return None


def load(compiled, device):
    """jax's Compiled `compiled` loaded on `device`'s (synchronous) client, or None where it
    cannot be: XLA:CPU does not serialize every executable (a sort's comparator)."""
    try:
        payload, in_tree, out_tree = serialize(compiled)
        return deserialize_and_load(payload, in_tree, out_tree, backend=device.client,
                                    execution_devices=[device])
    except Exception:  # noqa: BLE001 -- as above: the caller keeps the shared executable
        return None


def load_payload(deserialize, payload, device):
    """As load, from a disk cache entry (`deserialize`: the backend's reader), or None."""
    if payload is None:  # evicted since
        return None
    try:
        return deserialize(payload, device)[0]
    except Exception:  # noqa: BLE001 -- as above
        return None
