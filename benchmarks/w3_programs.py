"""W3's executed programs side by side: the one lazyx compiles for the 50-op chain (as the lazy
path runs it at first, with its literals bound as a replay did until 2026-12-01, and with them
baked as a lazy cut runs them once they have held their values and as replays do now), and
the one jax.jit compiles for the same math (issue 12: "W3 executes at jax.jit's speed").

    PYTHONPATH=<dir holding a lazyx package> python benchmarks/w3_programs.py [--hlo DIR]

Both executables are called alternately on the same input (so machine load hits both alike)
and the minimum and median of each are printed, with the optimized HLO's entry computation
of each (the fusions XLA made). Tracing is not timed here: this isolates the program.
Run with XLA_FLAGS=--xla_cpu_multi_thread_eigen=false to match `lazyx bench --threads 1`.
"""
import os
import statistics
import sys
import time

os.environ["LAZYX_BACKEND"] = "xla"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import lazyx  # noqa: E402
import lazyx.frontends.numpy as lnp  # noqa: E402
from lazyx.bench import workloads as wl  # noqa: E402
from lazyx.core import runtime  # noqa: E402


def entry(compiled):
    text = compiled.as_text()
    return text[text.index("\nENTRY"):].strip()


def main():
    chain, host = wl.chain_of("W3"), wl.chain_input("W3")
    x = lnp.asarray(host)
    lazy_sum = np.sum(wl.run_chain(x, chain, {"tanh": np.tanh}))
    roots = [lazy_sum.__lazyx_handle__.node]
    exe, values, program, _ = runtime._lookup(roots)
    if exe is None:
        # compiled as the lazy path compiles it: laid out for this cut's scalars (equal ones
        # read once, backends/xla._LazyLayout; a lazyx before 2026-11-30 had no _scalars and
        # compiled the general layout)
        scalars = getattr(runtime, "_scalars", None)
        exe, _ = runtime.compile_program(program, scalars(program, values) if scalars else None)
    lazy_value = float(lazy_sum)
    # a lazyx.compile replay binds the step's literals: equal ones are read as one
    # (backends/xla.merge_fixed), a variant of the same program
    literals = {i: v for i, (v, (kind, _, _)) in enumerate(zip(values, program.leaves))
                if kind != "data"}
    bound = exe.bind(literals)
    scalars = exe.signature.packs[0][1] if exe.signature.packs else []
    distinct = len(set(bound.patterns[0] or range(len(scalars))))

    jitted = jax.jit(lambda t: jnp.sum(wl.run_chain(t, chain, {"tanh": jnp.tanh})))
    xj = jnp.asarray(host)
    compiled = jitted.lower(xj).compile()
    assert abs(float(compiled(xj)) - lazy_value) <= 1e-3 * abs(lazy_value)

    runs = {"lazyx": lambda: exe(values), "replay": lambda: bound(values),
            "jax.jit": lambda: compiled(xj)}
    # the literals baked as constants, as a lazy cut runs them once they have held their
    # values (core/baked_literals.py, 2026-12-02) and as replays do (runtime.compile_fixed)
    baked_exe = None
    if hasattr(runtime, "bakeable"):
        baked = {i: literals[i] for i in runtime.bakeable(program, literals)}
        baked_exe, _ = runtime.compile_program(runtime.bake(program, baked))
        kept = [v for i, v in enumerate(values) if i not in baked]
        runs["baked"] = lambda: baked_exe(kept)
    times = {name: [] for name in runs}
    for _ in range(40):
        for name, run in runs.items():
            start = time.perf_counter()
            jax.block_until_ready(run())
            times[name].append(time.perf_counter() - start)
    print("W3 executed program alone (alternating calls, same input):")
    for name, ts in times.items():
        print(f"  {name:<8} min {min(ts) * 1e3:7.2f} ms   median {statistics.median(ts) * 1e3:7.2f} ms")
    for name in [n for n in runs if n != "jax.jit"]:
        print(f"  {name} / jax.jit: min {min(times[name]) / min(times['jax.jit']):.2f}x, median "
              f"{statistics.median(times[name]) / statistics.median(times['jax.jit']):.2f}x")
    print(f"  lazyx program: {len(program.leaves)} inputs "
          f"({len(scalars)} run-time scalars packed into one array; a replay's holds their "
          f"{distinct} distinct values), {len(program.instructions)} instructions")
    if "--hlo" in sys.argv:
        folder = sys.argv[sys.argv.index("--hlo") + 1]
        os.makedirs(folder, exist_ok=True)
        texts = [("lazyx", exe.compiled), ("replay", exe.variants[bound.patterns]),
                 ("jax_jit", compiled)] + ([("baked", baked_exe.compiled)] if baked_exe else [])
        for name, c in texts:
            with open(os.path.join(folder, f"w3_{name}.hlo.txt"), "w") as f:
                f.write(c.as_text())
        print(f"  optimized HLO of both written to {folder}/")
    for name, c in [("lazyx", exe.compiled), ("replay", exe.variants[bound.patterns]),
                    ("jax.jit", compiled)] + ([("baked", baked_exe.compiled)] if baked_exe else []):
        text = entry(c)
        print(f"\n{name}: {text.count('fusion(')} fusions in the entry computation")


if __name__ == "__main__":
    main()
