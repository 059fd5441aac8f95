"""Timing and orchestration.

Each system runs in its own Python process (`worker.py`): frameworks do not share threads,
caches or global switches (torch._lazy's backend, jax's settings), a crash in one system is
reported as that system's "n/a" instead of ending the run, and lazyx's metrics belong to one
system only. Inside a process, each workload is timed as: the first step (compile or trace
included), a few warm-up steps, then single steps until the step count or the time budget is
used up; the figure is the median.
"""
import json
import os
import platform
import statistics
import subprocess
import sys
import time

from . import workloads as wl

# Order of the table and the chart; `framework` names the eager baseline of each system.
SYSTEMS = {
    "torch-eager": "torch", "numpy-eager": "numpy", "tf-eager": "tf",
    "jax.jit": "jax", "torch.compile": "torch", "torch.compile(lazyx)": "torch",
    "tf.function": "tf", "torch._lazy": "torch",
    "lazyx-torch": "torch", "lazyx-numpy": "numpy", "lazyx-tf": "tf",
    "lazyx-torch+compile": "torch", "lazyx-numpy+compile": "numpy", "lazyx-tf+compile": "tf",
}
EAGER = {"torch": "torch-eager", "numpy": "numpy-eager", "tf": "tf-eager"}
# (measured steps, warm-up steps, seconds budget per workload after the first step, seconds
# of warm-up at least, seconds of measured steps at least). The warm-up by time: a process
# that has just compiled runs its tiny steps slowly for a while (W4 through lazyx.compile:
# 28-50 us per step for its first 30 steps, 20 us from about the 100th on; a 1 s pause after
# the compile removed the 50 us mode), so 3 steps of warm-up measured the transient, not the
# steady state, and its median moved by 2x from run to run. The time floors change nothing
# for steps over ~20 ms (W2): 30 steps outlast them.
PLANS = {"full": (30, 3, 20.0, 0.5, 0.3), "quick": (5, 1, 4.0, 0.1, 0.05)}
_MAX_STEPS = 20_000  # measured steps kept (the median of a tiny workload's many steps)
RESULT_TAG = "LAZYX-BENCH-RESULT "


class NotAvailable(Exception):
    """A system that cannot run here; the message is the reason shown in the table."""


def make_step(run, barrier, read, lazy=False, ops_per_step=None, replay=False):
    """step() = run(), barrier(), then read the result on the host (which waits for it).

    For lazyx systems the step also times its host side: tracing (`run`) and tracing + cut +
    dispatch (through `barrier`, which returns before an asynchronous backend finishes), and
    counts the IR nodes it traced; `step.extra()` summarizes them for the table. `replay`:
    `run` is a lazyx.compile'd step, whose host time per step is reported as replay_host_us.
    """
    if not lazy:
        def step():
            out = run()
            barrier()
            return read(out)
        return step
    from lazyx.core import ir
    trace_s, host_s, nodes = [], [], []

    def lazy_step():
        created, start = ir.CREATED[0], time.perf_counter()
        out = run()
        traced = time.perf_counter()
        barrier()
        trace_s.append(traced - start)
        host_s.append(time.perf_counter() - start)
        nodes.append(ir.CREATED[0] - created)
        return read(out)

    def extra():
        def med(values):  # the first step also compiles: leave it out
            return statistics.median(values[1:] or values)
        n = med(nodes)
        result = {"trace_ms": med(trace_s) * 1e3, "host_ms": med(host_s) * 1e3,
                  "nodes_per_step": n, "trace_us_per_node": med(trace_s) / max(n, 1) * 1e6}
        if ops_per_step:
            result["trace_us_per_op"] = med(trace_s) / ops_per_step * 1e6
        if replay:  # lazyx.compile: the host's whole share of a replayed step
            result["replay_host_us"] = med(host_s) * 1e6
        return result
    lazy_step.extra = extra
    lazy_step.settle = _settle
    return lazy_step


def _settle():
    """Wait for programs lazyx compiles in the background (a repeated cut's loss run ahead of
    the rest, its literals baked: docs/runtime.md); True if one was compiling. The steady
    state starts after."""
    from lazyx.core import compiling_later
    return compiling_later.join_all()


def measure(step, plan):
    """Time `step()` (which blocks until its result is on the host and returns a float)."""
    n_steps, n_warm, budget, warm_seconds, min_seconds = plan
    start = time.perf_counter()
    values = [step()]
    first = time.perf_counter() - start
    settle = getattr(step, "settle", lambda: False)
    for _ in range(2):  # warm up; again if lazyx was still compiling something meanwhile
        warm_end = time.perf_counter() + warm_seconds
        warm = 0
        while warm < n_warm or time.perf_counter() < warm_end:
            value = step()
            if len(values) < 3:
                values.append(value)
            warm += 1
        if not settle():
            break
    times = []
    now = time.perf_counter()
    deadline, floor = now + budget, now + min_seconds
    while len(times) < 3 or (len(times) < _MAX_STEPS and (
            (len(times) < n_steps and now < deadline) or now < floor)):
        start = time.perf_counter()
        value = step()
        now = time.perf_counter()
        times.append(now - start)
        if len(values) < 3:
            values.append(value)
    return {"median_ms": statistics.median(times) * 1e3, "first_ms": first * 1e3,
            "steps": len(times), "values": [float(v) for v in values[:3]]}


def _system_modules():
    return {"torch": "systems_torch", "numpy": "systems_numpy", "tf": "systems_tf",
            "jax": "systems_jax"}


def run_system_here(system, workloads, plan):
    """Run one system's workloads in this process; yields one result dict per workload."""
    import importlib
    framework = SYSTEMS[system]
    is_lazyx = "lazyx" in system  # lazyx-torch, ..., torch.compile(lazyx)
    try:
        module = importlib.import_module(f"{__package__}.{_system_modules()[framework]}")
        build = module.SYSTEMS[system]
    except ImportError as err:
        for workload in workloads:
            yield _na(workload, system, f"{framework} is not installed ({err})")
        return
    for workload in workloads:
        try:
            if is_lazyx:
                import lazyx
                lazyx.reset_metrics()
            step = build(workload)
            result = {"workload": workload, "system": system, **measure(step, plan)}
            if hasattr(step, "extra"):
                result.update(step.extra())
            if workload in wl.OPS_PER_STEP:
                result["us_per_op"] = result["median_ms"] * 1e3 / wl.OPS_PER_STEP[workload]
            if is_lazyx:
                m = lazyx.metrics()
                result["lazyx"] = {k: m[k] for k in (
                    "compiles", "cache_hits", "syncs", "nodes_walked", "fallbacks",
                    "fallback_ops", "disk_hits", "disk_misses", "interpreted_steps",
                    "compile_seconds_total", "lower_seconds_total", "xla_compile_seconds_total",
                    "disk_load_seconds_total", "replays", "replay_misses")}
            yield result
        except NotAvailable as err:
            yield _na(workload, system, str(err))
        except Exception as err:  # a failing system is reported, never dropped
            yield _na(workload, system, f"failed: {type(err).__name__}: {_first_line(err)}")


def _first_line(err):
    text = str(err).strip().splitlines()
    return text[0][:200] if text else ""


def _na(workload, system, reason):
    return {"workload": workload, "system": system, "median_ms": None, "first_ms": None,
            "na": reason}


def _worker_env(system, threads=None, extra=None):
    env = dict(os.environ, **(extra or {}))
    if threads:
        # One thread count for every framework: OpenMP/BLAS (torch, numpy), TF's pools (read
        # in systems_tf), XLA's CPU runtime (jax, lazyx). On a shared machine this avoids
        # OpenMP's spin-waiting on descheduled threads, which slows torch by 10-50x.
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "LAZYX_BENCH_THREADS"):
            env[var] = str(threads)
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen="
                            f"{'false' if threads == 1 else 'true'} "
                            f"intra_op_parallelism_threads={threads}").strip()
    # Make the worker import the same lazyx as this process (a checkout or an install).
    import lazyx
    root = os.path.dirname(os.path.dirname(os.path.abspath(lazyx.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if system.startswith("lazyx-"):
        env["LAZYX_BACKEND"] = "xla"  # the suite measures lazyx on the XLA backend
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def run_system_subprocess(system, workloads, quick, timeout, log, threads=None, env=None):
    """Run one system in a fresh process; every workload gets a result or an n/a reason.
    `env`: extra environment variables for that process (LAZYX_CACHE_DIR, LAZYX_TIERED)."""
    cmd = [sys.executable, "-m", f"{__package__}.worker", system, ",".join(workloads)]
    if quick:
        cmd.append("--quick")
    results, reason = {}, None
    try:
        proc = subprocess.run(cmd, env=_worker_env(system, threads, env), capture_output=True, text=True,
                              timeout=timeout)
        for line in proc.stdout.splitlines():
            if line.startswith(RESULT_TAG):
                r = json.loads(line[len(RESULT_TAG):])
                results[r["workload"]] = r
        if proc.returncode != 0:
            tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
            reason = f"process exited {proc.returncode}: {tail[-1][:200] if tail else ''}"
    except subprocess.TimeoutExpired:
        reason = f"timed out after {timeout:.0f} s"
    out = [results.get(w) or _na(w, system, reason or "no result") for w in workloads]
    for r in out:
        log(r)
    return out


def machine_info():
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        if names:
            info["processor"] = names[0]
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
        info["memory_gib"] = round(kib / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    if hasattr(os, "getloadavg"):
        info["load_average_1min_at_start"] = round(os.getloadavg()[0], 2)
    from importlib import metadata
    versions = {}
    for dist in ("numpy", "torch", "jax", "jaxlib", "tensorflow-cpu", "tensorflow"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    info["versions"] = versions
    return info
