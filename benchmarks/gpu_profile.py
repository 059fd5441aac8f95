"""Where a step's host time goes, per system: `python benchmarks/gpu_profile.py [OUT_DIR]`.

Written for a lent GPU (docs/bench.md, "On a GPU": a replayed W4 step spends 5-7x the host
time there that it spends on the CPU), and runs anywhere jax runs, so the two can be put side
by side. For each (system, workload) it prints the step's median wall time, the host time up
to the barrier, lazyx's transfers and executions per step, and the functions that took the
most time under cProfile; then the costs of jax's own primitives on this device (a dispatch,
a wait, a small host-to-device and device-to-host copy), which are the floors of a step.
Full profiles go to OUT_DIR/profile_<system>_<workload>.txt.
"""
import cProfile
import os
import pstats
import statistics
import sys
import time

import jax
import numpy as np

CASES = [c.split(":") for c in os.environ.get("CASES", ",".join([
    "jax.jit:W4", "lazyx-numpy+compile:W4", "lazyx-torch+compile:W4",
    "lazyx-numpy:W4", "lazyx-torch:W4", "jax.jit:W1", "lazyx-numpy:W1",
    "lazyx-torch:W1"])).split(",")]
WARMUP, TIMED, PROFILED = 20, 100, 40
COUNTED = ("executions", "syncs", "transfers_to_device", "transfers_to_host", "compiles")


def _median_us(fn, n):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def profile_case(system, workload, out_dir):
    import lazyx
    from lazyx.bench import harness
    import importlib
    framework = harness.SYSTEMS[system]
    module = importlib.import_module(f"lazyx.bench.{harness._system_modules()[framework]}")
    step = module.SYSTEMS[system](workload)
    for _ in range(WARMUP):
        step()
    wall = _median_us(step, TIMED)
    before = lazyx.metrics()
    for _ in range(PROFILED):
        step()
    after = lazyx.metrics()
    per_step = {k: (after[k] - before[k]) / PROFILED for k in COUNTED}
    host = ""
    if hasattr(step, "extra"):
        extra = step.extra()
        host = f" host {extra.get('host_ms', 0) * 1e3:.0f} us (trace {extra.get('trace_ms', 0) * 1e3:.0f})"
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(PROFILED):
        step()
    profiler.disable()
    print(f"\n== {system} {workload}: step {wall:.0f} us{host}; per step "
          + ", ".join(f"{k} {v:g}" for k, v in per_step.items() if v))
    rows = pstats.Stats(profiler).stats.items()
    by_self = _table(sorted(rows, key=lambda kv: -kv[1][2]))
    print("\n".join(by_self[:12]))
    name = f"profile_{system.replace('.', '_')}_{workload}.txt"
    with open(os.path.join(out_dir, name), "w") as f:
        f.write("\n".join(["by self time"] + by_self[:50] + ["", "by cumulative time"]
                          + _table(sorted(rows, key=lambda kv: -kv[1][3]))[:50]) + "\n")


def _table(rows):
    """cProfile rows as text, in microseconds per step."""
    return [f"  {tottime / PROFILED * 1e6:7.1f} us/step self {cumtime / PROFILED * 1e6:8.1f} cum"
            f"  {calls / PROFILED:6.1f}x  {os.path.basename(path)}:{line} {name}"
            for (path, line, name), (_, calls, tottime, cumtime, _) in rows]


def _early(array):
    array.copy_to_host_async()
    return array


def primitives():
    """jax's own costs on this device, the floors under any step."""
    device = jax.local_devices()[0]
    f = jax.jit(lambda x, s: x * s[0] + s[1])
    x = jax.device_put(np.ones((4, 4), np.float32), device)
    s_host = np.array([2.0, 1.0], np.float32)
    s_dev = jax.device_put(s_host, device)
    f(x, s_dev).block_until_ready()
    compiled = f.lower(x, s_dev).compile()
    r = compiled(x, s_dev)
    r.block_until_ready()
    rows = {
        "jit call, device args (no wait)": lambda: f(x, s_dev),
        "Compiled call, device args (no wait)": lambda: compiled(x, s_dev),
        "Compiled call, a NumPy scalar pack": lambda: compiled(x, s_host),
        "Compiled call + block_until_ready": lambda: compiled(x, s_dev).block_until_ready(),
        "Compiled call + np.asarray(result)": lambda: np.asarray(compiled(x, s_dev)),
        "Compiled call + copy_to_host_async + np.asarray": lambda: np.asarray(_early(compiled(x, s_dev))),
        "Compiled call + copy_to_host_async (no wait)": lambda: _early(compiled(x, s_dev)),
        "device_put 2 float32 (no wait)": lambda: jax.device_put(s_host, device),
        "device_put 2 float32 + wait": lambda: jax.device_put(s_host, device).block_until_ready(),
        "np.asarray of a ready 4x4": lambda: np.asarray(r),
        "is_ready() of a ready 4x4": lambda: r.is_ready(),
    }
    print(f"\n== jax primitives on {device}")
    for name, fn in rows.items():
        for _ in range(50):
            fn()
        print(f"  {_median_us(fn, 500):7.1f} us  {name}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    keep = os.environ.get("KEEP_PACKS")  # 0 / 1: scalar packs kept on the device off or on
    if keep is not None:
        from lazyx.backends import xla
        xla.KEEP_PACKS = keep == "1"
    print("jax", jax.__version__, jax.local_devices(), "KEEP_PACKS", keep)
    if os.environ.get("PRIMITIVES", "1") == "1":
        primitives()
    for system, workload in CASES:
        try:
            profile_case(system, workload, out_dir)
        except Exception as err:  # one failing system must not hide the others
            print(f"\n== {system} {workload}: failed: {type(err).__name__}: {err}")
    if os.environ.get("PRIMITIVES", "1") == "1":
        primitives()  # again: the first pass may have met a cold device


if __name__ == "__main__":
    main()
