"""What a bench run prints and saves: the Markdown table, the targets, JSON, a PNG chart."""
import json

from . import workloads as wl
from .harness import EAGER, SYSTEMS

# Values (first three step results) must match jax.jit's to this relative error: float32
# rounding differs between frameworks, and XLA's fast sin/tanh differ slightly on W3.
AGREE_RTOL = 2e-3


def _index(results):
    return {(r["workload"], r["system"]): r for r in results}


def _ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def _fmt(x, digits=2, suffix=""):
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:,.0f}{suffix}"
    return f"{x:.{digits}f}{suffix}"


def _agreement(r, ref):
    if ref is None or not r.get("values") or not ref.get("values"):
        return "-"
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(r["values"], ref["values"]))
    return "ok" if worst <= AGREE_RTOL else f"differs ({worst:.1e})"


def _notes(r):
    if r.get("na"):
        return f"n/a ({r['na']})"
    notes = []
    lz = r.get("lazyx")
    if lz:
        notes.append(f"{lz['compiles']} compiles, {lz['cache_hits']} hits, {lz['syncs']} syncs, "
                     f"{lz.get('nodes_walked', 0)} nodes walked")
        if lz["fallbacks"]:
            ops = ", ".join(f"{k}x{v}" for k, v in sorted(lz["fallback_ops"].items()))
            notes.append(f"fallbacks: {ops}")
    if "host_ms" in r:
        notes.append(f"host {r['host_ms']:.2f} ms/step: trace {r['trace_ms']:.2f} ms of "
                     f"{r['nodes_per_step']:.0f} nodes ({r['trace_us_per_node']:.1f} us/node)")
    if "trace_us_per_op" in r:
        notes.append(f"trace {r['trace_us_per_op']:.1f} us per user op")
    return "; ".join(notes)


def markdown(results, machine):
    idx = _index(results)
    lines = [f"Machine: {machine.get('processor')}, {machine.get('cpus')} CPUs, "
             f"{machine.get('memory_gib', '?')} GiB, {machine.get('platform')}; "
             f"load average at start {machine.get('load_average_1min_at_start', '?')}; "
             f"threads: {machine.get('threads', 'framework defaults')}",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in machine.get("versions", {}).items()),
             "",
             "| workload | system | median ms/step | first step ms | x jax.jit | x eager | "
             "us/op | values vs jax.jit | notes |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    workloads = [w for w in wl.WORKLOADS if any(r["workload"] == w for r in results)]
    for w in workloads:
        jax_r = idx.get((w, "jax.jit"))
        for system, framework in SYSTEMS.items():
            r = idx.get((w, system))
            if r is None:
                continue
            eager = idx.get((w, EAGER.get(framework)))
            x_jax = _ratio(r["median_ms"], jax_r and jax_r["median_ms"])
            x_eager = None if system in EAGER.values() else \
                _ratio(r["median_ms"], eager and eager["median_ms"])
            lines.append(
                f"| {w} | {system} | {_fmt(r['median_ms'], 3)} | {_fmt(r['first_ms'], 1)} | "
                f"{_fmt(x_jax, 2, 'x')} | {_fmt(x_eager, 2, 'x')} | "
                f"{_fmt(r.get('us_per_op'), 2)} | "
                f"{'-' if r.get('na') or system == 'jax.jit' else _agreement(r, jax_r)} | "
                f"{_notes(r)} |")
    lines.append("")
    lines.append("x jax.jit, x eager: median step time divided by that of jax.jit and of the "
                 "system's own framework run eagerly (below 1: faster).")
    return "\n".join(lines)


def targets(results):
    """The issue's targets, checked against this run (reported, never asserted)."""
    idx = _index(results)

    def median(w, s):
        r = idx.get((w, s))
        return r and r["median_ms"]

    lines = ["Targets (this run):"]

    def line(ok, text):
        mark = "n/a " if ok is None else ("met " if ok else "MISS")
        lines.append(f"  [{mark}] {text}")

    # issue 12's targets for the plain lazy path (no annotations, user code unchanged)
    lazyx_systems = [s for s in SYSTEMS if s.startswith("lazyx-") and "+" not in s]
    for s in lazyx_systems:
        eager = EAGER[SYSTEMS[s]]
        for w, limit in (("W1", 1.3), ("W3", 1.1)):
            ratio = _ratio(median(w, s), median(w, "jax.jit"))
            line(None if ratio is None else ratio <= limit,
                 f"{s} {w} within {limit}x of jax.jit: {_fmt(ratio, 2, 'x')}")
        for w in ("W1", "W2"):
            ratio = _ratio(median(w, s), median(w, eager))
            line(None if ratio is None else ratio < 1,
                 f"{s} {w} faster than {eager}: {_fmt(ratio, 2, 'x')}")
        for w in ("W1", "W2", "W4"):
            ratio = _ratio(median(w, s), median(w, "torch._lazy"))
            line(None if ratio is None else ratio < 1,
                 f"{s} {w} faster than torch._lazy: {_fmt(ratio, 2, 'x')}")
        for w in ("W1", "W2"):
            mine, theirs = idx.get((w, s)), idx.get((w, "jax.jit"))
            ratio = _ratio(mine and mine.get("first_ms"), theirs and theirs.get("first_ms"))
            line(None if ratio is None else ratio <= 1.2,
                 f"{s} {w} first step within 1.2x of jax.jit's: {_fmt(ratio, 2, 'x')}")
    # issue 13: a step traced once and replayed by lazyx.compile, against jax.jit
    for s in [s for s in SYSTEMS if s.startswith("lazyx-") and s.endswith("+compile")]:
        for w in wl.WORKLOADS:
            limit = 3.0 if w == "W4" else 1.05
            ratio = _ratio(median(w, s), median(w, "jax.jit"))
            line(None if ratio is None else ratio <= limit,
                 f"{s} {w} within {limit}x of jax.jit: {_fmt(ratio, 2, 'x')}")
    # issue 16: lazyx as torch.compile's backend, against jax.jit and Inductor
    dyn = "torch.compile(lazyx)"
    for w in ("W1", "W2", "W3", "W4"):
        limit = 3.0 if w == "W4" else 1.1
        ratio = _ratio(median(w, dyn), median(w, "jax.jit"))
        line(None if ratio is None else ratio <= limit,
             f"{dyn} {w} within {limit}x of jax.jit: {_fmt(ratio, 2, 'x')}")
    for w in ("W1", "W2", "W3"):
        ratio = _ratio(median(w, dyn), median(w, "torch.compile"))
        line(None if ratio is None else ratio < 1,
             f"{dyn} {w} faster than torch.compile (Inductor): {_fmt(ratio, 2, 'x')}")
    for w in wl.WORKLOADS:
        mine, inductor = idx.get((w, dyn)), idx.get((w, "torch.compile"))
        ratio = _ratio(mine and mine.get("first_ms"), inductor and inductor.get("first_ms"))
        line(None if ratio is None else ratio <= 1,
             f"{dyn} {w} first step <= Inductor's: {_fmt(ratio, 2, 'x')}")
    for s, limit in (("lazyx-torch", 6.0), ("lazyx-numpy", 3.0), ("lazyx-tf", 12.0)):
        r = idx.get(("W4", s))
        us = r.get("trace_us_per_op") if r else None
        line(None if us is None else us <= limit,
             f"{s} tracing <= {limit:.0f} us/op (W4): {_fmt(us, 1, ' us')}")
    return "\n".join(lines)


def write_json(path, results, machine):
    with open(path, "w") as f:
        json.dump({"machine": machine, "results": results}, f, indent=1)


def write_png(path, results):
    """A grouped bar chart of median ms/step (log scale); skipped without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "chart skipped: matplotlib is not installed (pip install 'lazyx[bench]')"
    idx = _index(results)
    workloads = [w for w in wl.WORKLOADS if any(r["workload"] == w for r in results)]
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in results)]
    fig, ax = plt.subplots(figsize=(2.6 * len(workloads) + 2, 4.5))
    width = 0.8 / max(1, len(systems))
    colors = plt.get_cmap("tab20")
    for i, s in enumerate(systems):
        xs, ys = [], []
        for j, w in enumerate(workloads):
            r = idx.get((w, s))
            if r and r["median_ms"]:
                xs.append(j + (i - len(systems) / 2 + 0.5) * width)
                ys.append(r["median_ms"])
        ax.bar(xs, ys, width, label=s if ys else f"{s} (n/a)", color=colors(i % 20),
               hatch="//" if s.startswith("lazyx-") else None, edgecolor="black", linewidth=0.3)
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_yscale("log")
    ax.set_ylabel("median ms per step (log)")
    ax.set_title("lazyx bench (missing bars: n/a, see the table)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"chart saved to {path}"
