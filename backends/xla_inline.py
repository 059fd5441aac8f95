"""Programs run on the calling thread (XLA:CPU): tiny programs, and callers that wait at once.

jax's CPU client runs each program on a worker thread (asynchronous dispatch): a lazy step
that ends at a barrier returns while XLA computes, and the next step traces meanwhile. But a
worker that has been idle for more than about 20 us has gone to sleep, and waking it costs the
next call 20-40 us on the 2-core bench machine (a 4x4 200-op program, its call and read:
11 us on the calling thread, 54 us on the worker, with 40 us of Python between calls; XLA
itself runs a program inline only below 1,000 flops). Two kinds of callers gain nothing from
the worker and pay the wake-up at every call:

- a program so small that there is little to overlap (`is_tiny`), once it has run a few
  times (`RUNS_BEFORE`: the many programs run once or twice pay nothing), wherever its
  caller's loop runs faster (`Pace` measures both ways; xla._Executable.run). Both copies
  run the same code, so which one ran never changes a number;
- a torch.compile graph called with CPU tensors, which waits for its results right away and
  has Dynamo's and AOTAutograd's Python between its calls (xla._Bound.inline), at any size.

Both run a second, synchronous CPU client's copy of the executable: the same code, serialized
and loaded there (a few ms, no compile). The two clients' buffers do not mix cheaply (an
asynchronous-client array passed to the other client's executable is copied through a slow
path, about 100 us for a 4x4 array, and the reverse likewise), so a tiny program's arguments
go in and its results come out as NumPy arrays: host memory both clients read (`run_local`).
"""
import threading
import time

import numpy as np
from jax.experimental.serialize_executable import deserialize_and_load, serialize

_lock = threading.Lock()
_devices = {}  # the asynchronous client's device -> the synchronous client's (None: there is none)

# A tiny program: XLA's cost estimate at most TINY_FLOPS (a transcendental counted as
# TRANSCENDENTAL_FLOPS: tanh is about that many multiply-adds) and TINY_BYTES read and
# written, and arguments of TINY_BYTES at most (a NumPy argument is copied in). At about 1.4
# GFLOP/s for such chains on the bench machine, 30,000 flops is ~20 us: no longer than the
# wake-up it saves, so no overlap worth having is lost.
TINY_FLOPS = 30_000
TRANSCENDENTAL_FLOPS = 10
TINY_BYTES = 64 << 10
RUNS_BEFORE = 3


class Pace:
    """Where a tiny program runs for its caller: on the calling thread or on the worker,
    whichever gives the caller's loop the shorter period, measured.

    A loop of tiny steps with little Python between them finds the worker awake, and there
    the worker is the faster one: it computes while the caller goes on (NumPy's W4 replay:
    27 us a step on the worker against 37 on the calling thread; with 20 us more Python per
    step, 47 against 39). Where the line lies depends on the machine and the caller, so the
    pace tries both: TRIAL calls each way (the first SETTLE of them not counted: a worker
    woken by the switch), then up to EXPLOIT calls the faster way, then tries again. A period is
    the time from one call's start to the next's, caller's Python included: the same both
    ways but for where the program ran. The two ways run the same code, so the choice never
    changes a number.
    """
    __slots__ = ("last", "n", "on_caller", "periods", "exploit")
    TRIAL, SETTLE, EXPLOIT = 16, 2, 512

    def __init__(self):
        self.last = 0.0
        self.n = 0  # calls begun in this round: trial on the worker, trial on the caller,
        self.on_caller = False  # then the faster way
        self.periods = ([], [])  # per way, in this round's trial
        # the calls the faster way runs before the next trial: short at first (a process
        # that has just compiled runs its first tiny steps slowly, which can mislead a trial),
        # twice as many each round up to EXPLOIT
        self.exploit = 2 * self.TRIAL

    def begin(self):
        """A call starts: True when it should run on the calling thread."""
        n = self.n
        self.n = n + 1
        trial, trials = self.TRIAL, 2 * self.TRIAL
        if n > trials:  # the faster way's calls: nothing to measure (the common case)
            if n < trials + self.exploit:
                return self.on_caller
            n, self.n, self.periods = 0, 1, ([], [])  # a new round
            self.exploit = min(2 * self.exploit, self.EXPLOIT)
        now = time.perf_counter()
        if n and (n - 1) % trial >= self.SETTLE:  # the previous call was a counted trial
            self.periods[(n - 1) // trial].append(now - self.last)
        self.last = now
        if n == trials:
            worker, caller = (_typical(p) for p in self.periods)
            self.on_caller = caller < worker
        else:
            self.on_caller = n >= trial
        return self.on_caller


def _typical(periods):
    """The mean period without the longest eighth: a pause of the caller's says nothing about
    the way it ran, but a worker asleep for some of the calls is part of the worker's cost."""
    kept = sorted(periods)[:len(periods) - len(periods) // 8]
    return sum(kept) / max(len(kept), 1)


def device_for(device):
    """The synchronous CPU client's device standing for `device` (made on first use), or None:
    off a CPU, across processes, beside other CPU devices, or where jaxlib cannot make a
    second client."""
    with _lock:
        if device not in _devices:
            _devices[device] = _make(device)
        return _devices[device]


def _make(device):
    import jax
    # One CPU device only: with several (--xla_force_host_platform_device_count, a simulated
    # mesh) loading an executable on the second client aborted the process inside XLA (seen
    # in tests/distributed), which no exception handler survives.
    if device.platform != "cpu" or jax.process_count() > 1 or len(jax.local_devices()) > 1:
        return None
    try:
        from jaxlib import xla_client
        client = xla_client.make_cpu_client(asynchronous=False)
        return next(d for d in client.local_devices() if d.id == device.id)
    except Exception:  # noqa: BLE001 -- an optimization: without it, the shared client runs
        return None


def is_tiny(compiled, arg_bytes):
    """Whether XLA rates `compiled` (jax's Compiled) tiny enough to run on the calling thread."""
    if arg_bytes > TINY_BYTES:
        return False
    try:
        cost = compiled.cost_analysis()
        if isinstance(cost, (list, tuple)):  # (older jax: one dict per partition)
            cost = cost[0]
        flops = cost.get("flops", 0.0) + TRANSCENDENTAL_FLOPS * cost.get("transcendentals", 0.0)
        moved = cost.get("bytes accessed", 0.0)
    except Exception:  # noqa: BLE001 -- no estimate: keep the shared client
        return False
    return 0 <= flops <= TINY_FLOPS and 0 <= moved <= TINY_BYTES


def run_local(local, args):
    """Run `local` (an executable on the synchronous client) with host copies of `args` (device
    arrays are read, which waits for them; NumPy arrays pass as they are): NumPy results."""
    return [np.asarray(out) for out in local(*[np.asarray(a) for a in args])]


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
