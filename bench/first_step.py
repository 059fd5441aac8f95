"""`python -m lazyx bench --first-step`: how long the first step of a new process takes.

Each lazyx system runs each workload alone in three fresh processes in turn: with an empty
disk cache of its own (cold: trace, lower, XLA compile), again with the cache the first one
filled (warm: the executable is loaded from disk), and with LAZYX_TIERED=1 and no cache (the
first step runs on the reference interpreter while XLA compiles). jax.jit's first step (a
fresh process per workload, no persistent cache) and NumPy's eager step are measured
alongside, and the issue's targets are checked: warm first step <= 3x the steady step +
50 ms, cold <= jax.jit's first + 20 %, tiered W2 <= 2x NumPy eager's step.
"""
import shutil
import sys
import tempfile

from . import harness

SYSTEMS = ("lazyx-torch", "lazyx-numpy", "lazyx-tf")
WORKLOADS = ("W1", "W2")
_TIMEOUT = 600
MODES = ("cold", "warm", "tiered")  # in this order: warm reads what cold stored


def _ms(x):
    return "-" if x is None else f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def _first(results, workload):
    r = results.get(workload)
    return None if r is None or r.get("na") else r["first_ms"]


def run_first_step(systems=None, workloads=None, threads=None, out=None):
    """Measure and print; returns {(workload, system, mode): result}."""
    out = out or sys.stdout
    systems = list(systems or SYSTEMS)
    workloads = list(workloads or WORKLOADS)
    machine = harness.machine_info()
    print(f"lazyx bench --first-step: {', '.join(workloads)} on {', '.join(systems)}; each run "
          f"is a fresh process; threads: {threads or 'framework defaults'}; load average "
          f"{machine.get('load_average_1min_at_start', '?')}", file=out, flush=True)

    def log(r, mode):
        text = f"n/a ({r['na']})" if r.get("na") else \
            f"first step {r['first_ms']:.1f} ms, then {r['median_ms']:.2f} ms/step"
        print(f"  {r['workload']}  {r['system']:<12} {mode:<6} {text}", file=out, flush=True)

    def run(system, workload, mode, env=None):
        """One workload in one fresh process: a workload run after another in the same
        process would find the runtime started, its disk entries preloaded during the other's
        steps (W2 warm: 28-42 ms after W1, 113-120 ms alone), or the other's background
        compile still taking a core (W2 tiered: 122-134 ms after W1, 95-116 alone)."""
        (r,) = harness.run_system_subprocess(system, [workload], True, _TIMEOUT,
                                             lambda r: log(r, mode), threads, env)
        return r

    runs = {}
    for system, mode in (("jax.jit", "cold"), ("numpy-eager", "eager")):
        runs[system] = {w: run(system, w, mode) for w in workloads}
    for system in systems:
        for mode in MODES:
            runs[system, mode] = {}
        for w in workloads:
            folder = tempfile.mkdtemp(prefix="lazyx-first-step-")  # this workload's alone
            try:
                for mode in MODES:
                    env = {"LAZYX_CACHE_DIR": "", "LAZYX_TIERED": "1"} if mode == "tiered" \
                        else {"LAZYX_CACHE_DIR": folder}
                    runs[system, mode][w] = run(system, w, mode, env)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    print("\n" + table(runs, systems, workloads), file=out)
    return runs


def table(runs, systems, workloads):
    lines = ["| workload | system | cold first (ms) | warm first (ms) | steady step (ms) | "
             "tiered first (ms) | jax.jit first (ms) | numpy eager step (ms) | targets |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for w in workloads:
        jax_first = _first(runs["jax.jit"], w)
        eager = runs["numpy-eager"].get(w)
        eager_ms = None if eager is None or eager.get("na") else eager["median_ms"]
        for system in systems:
            cold, warm = _first(runs[system, "cold"], w), _first(runs[system, "warm"], w)
            tiered = _first(runs[system, "tiered"], w)
            steady_r = runs[system, "warm"].get(w) or {}
            steady = steady_r.get("median_ms")
            verdicts = []
            if warm is not None and steady is not None:
                verdicts.append(_verdict("warm", warm, 3 * steady + 50))
            if cold is not None and jax_first is not None:
                verdicts.append(_verdict("cold", cold, 1.2 * jax_first))
            if w == "W2" and tiered is not None and eager_ms is not None:
                verdicts.append(_verdict("tiered", tiered, 2 * eager_ms))
            lines.append(f"| {w} | {system} | {_ms(cold)} | {_ms(warm)} | {_ms(steady)} | "
                         f"{_ms(tiered)} | {_ms(jax_first)} | {_ms(eager_ms)} | "
                         f"{', '.join(verdicts)} |")
    return "\n".join(lines)


def _verdict(name, value, limit):
    return f"{name} {'ok' if value <= limit else 'MISSED'} ({value:.0f} <= {limit:.0f})"
