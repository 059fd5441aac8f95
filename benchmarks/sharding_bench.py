"""Scale-out benchmark: the W2 Transformer encoder block training step (bench/workloads.py:
d_model 256, 4 heads, ff 1024, seq 128, batch 8, SGD) through lazyx's torch frontend on 1, 2,
4 and 8 devices, data parallel (batch on "data") or Megatron model parallel (q/k/v/ff1 split
by output, o/ff2 by input, on "model"). Per device count: median step time, the collectives
XLA put in the step's partitioned program, the first loss (equal for every device count),
and the largest per-device live-buffer total.

    PYTHONPATH=<dir holding a lazyx package> python benchmarks/sharding_bench.py \\
        [--devices 1,2,4,8] [--mode data|model] [--steps 10]

On a CPU the devices are simulated (XLA_FLAGS=--xla_force_host_platform_device_count=N, one
subprocess per N): they share the same cores, so the time is NOT speed-up -- it shows the
partitioned program runs and what its collectives cost in copies. On a GPU or TPU machine the
same script uses the real devices (the flag only affects the CPU client).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
MEGATRON = {"q.*": ("model",), "k.*": ("model",), "v.*": ("model",), "ff1.*": ("model",),
            "o.weight": (None, "model"), "ff2.weight": (None, "model")}


def collective_counts(hlo):
    """{collective: occurrences} in an HLO module's text (an async start/done pair once)."""
    return {c: len(re.findall(rf"= [^=]*? {c}(?:-start)?\(", hlo)) for c in COLLECTIVES}


class _Executed:
    """A runtime listener recording the programs one step runs."""

    def __init__(self):
        self.programs = []

    def on_execute(self, program, start, seconds):
        self.programs.append(program)


def worker(n, mode, steps):
    import torch
    import lazyx
    import lazyx.frontends.torch as lt
    from lazyx.bench import systems_torch, workloads as wl
    from lazyx.core import runtime

    mesh = lazyx.distributed.mesh((n,), (mode,))
    model = systems_torch.EncoderBlock(wl.block_params()).to(lt.device)
    lt.shard_parameters(model, mesh, MEGATRON if mode == "model" else {})
    batch_spec = ("data",) if mode == "data" else ()
    x, y = (lt.mark_sharding(torch.from_numpy(a).to(lt.device), mesh, batch_spec)
            for a in wl.block_data())
    opt = torch.optim.SGD(model.parameters(), lr=wl.LR, foreach=False)

    def step():
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = ((out - y) * (out - y)).mean()
        loss.backward()
        opt.step()
        lt.mark_step()
        return loss.item()  # waits for the step: the time is the step's, not its dispatch

    first = step()
    step()  # step 2 compiles once more (optimizer state now exists); then it is cached
    executed = _Executed()
    runtime.LISTENERS.append(executed)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    runtime.LISTENERS.remove(executed)
    per_step = len(executed.programs) // steps
    counts = dict.fromkeys(COLLECTIVES, 0)
    backend = runtime.get_backend()
    for program in executed.programs[:per_step]:
        exe = runtime.CACHE.get(program.key)
        for kind, k in collective_counts(backend.compiled_text(exe)).items():
            counts[kind] += k
    memory = lazyx.metrics()["memory_per_device"]
    return {"devices": n, "mode": mode, "step_ms": statistics.median(times) * 1e3,
            "programs_per_step": per_step, "collectives": counts, "first_loss": first,
            "max_device_bytes": max(memory.values())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="1,2,4,8")
    parser.add_argument("--mode", choices=("data", "model"), default="data")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print("RESULT " + json.dumps(worker(args.worker, args.mode, args.steps)), flush=True)
        return
    rows = []
    for n in [int(d) for d in args.devices.split(",")]:
        env = dict(os.environ, LAZYX_BACKEND="xla",
                   XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} "
                             f"--xla_force_host_platform_device_count={n}".strip())
        done = subprocess.run([sys.executable, __file__, "--worker", str(n), "--mode", args.mode,
                               "--steps", str(args.steps)], env=env, capture_output=True,
                              text=True, check=False)
        lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
        if done.returncode or not lines:
            sys.exit(f"{n} devices failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        rows.append(json.loads(lines[0][7:]))
    print(f"W2 encoder block training step, {args.mode} parallel, lazyx torch frontend on "
          f"XLA; {os.cpu_count()} CPU cores")
    print("(simulated CPU devices share the same cores: step time is not speed-up)\n")
    print(f"{'devices':>7} {'step ms':>9} {'first loss':>12} {'max bytes/device':>17}  "
          f"collectives per step")
    for r in rows:
        kinds = ", ".join(f"{k} {v}" for k, v in r["collectives"].items() if v) or "none"
        print(f"{r['devices']:>7} {r['step_ms']:>9.1f} {r['first_loss']:>12.6f} "
              f"{r['max_device_bytes']:>17,}  {kinds}")


if __name__ == "__main__":
    main()
