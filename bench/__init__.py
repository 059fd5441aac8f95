"""`python -m lazyx bench`: one run, every system, the same math per workload.

Layout: `workloads.py` (shapes, shared data and initial weights, the elementwise chains),
one `systems_<framework>.py` per framework (its eager run, its compilers, and lazyx through
its frontend), `worker.py` (runs one system in its own process), `harness.py` (timing and
orchestration), `report.py` (Markdown, JSON, PNG, targets).
"""
import sys


def run_bench(quick=False, json_path=None, png_path=None, markdown_path=None, systems=None,
              workloads=None, threads=None, out=None):
    """Measure `systems` x `workloads` (default: all) and print the table; returns results."""
    from . import harness, report
    from .workloads import WORKLOADS
    out = out or sys.stdout
    systems = list(systems or harness.SYSTEMS)
    workloads = list(workloads or WORKLOADS)
    machine = harness.machine_info()
    machine["threads"] = threads or "framework defaults"
    mode = "quick" if quick else "full"
    print(f"lazyx bench ({mode}): {len(systems)} systems x {len(workloads)} workloads, each "
          f"system in its own process, threads: {machine['threads']}", file=out)
    for w in workloads:
        print(f"  {w}: {WORKLOADS[w]}", file=out)

    def log(r):
        if r.get("na"):
            text = f"n/a ({r['na']})"
        else:
            text = f"{r['median_ms']:10.3f} ms/step  (first step {r['first_ms']:.1f} ms)"
        print(f"  {r['workload']}  {r['system']:<14} {text}", file=out, flush=True)

    results = []
    timeout = 400 if quick else 1200
    for system in systems:
        # disk caches off, lazyx's and Inductor's alike: "first step" is a cold compile for
        # every system (`lazyx bench --first-step` measures lazyx's cold and warm caches).
        # Inductor's FX-graph and AOTAutograd caches, warm from any earlier run, skipped its
        # compile and its graph capture: torch.compile(lazyx)'s cold first step was compared
        # with Inductor's warm one.
        results += harness.run_system_subprocess(
            system, workloads, quick, timeout, log, threads,
            env={"LAZYX_CACHE_DIR": "", "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
    table = report.markdown(results, machine)
    print("\n" + table + "\n\n" + report.targets(results), file=out)
    if markdown_path:
        with open(markdown_path, "w") as f:
            f.write(table + "\n\n```\n" + report.targets(results) + "\n```\n")
    if json_path:
        report.write_json(json_path, results, machine)
        print(f"results saved to {json_path}", file=out)
    if png_path:
        print(report.write_png(png_path, results), file=out)
    return results
