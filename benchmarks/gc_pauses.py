"""What Python's cyclic garbage collector costs lazyx's steps: mean, median and worst step with
the collector on, against the same steps with it off, in one process.

A traced graph's objects live until its cut. If the collector sees them, they survive its
young collections and fill the oldest generation, and that sets off full collections of the
whole heap (torch, jax and TF loaded: some 360,000 objects, 200 ms each). A step's median
hides these pauses; its mean and worst step show them. core/_native.c leaves plain IR nodes
out of the collector's sight ("nodes and the cyclic GC"); this script shows what remains.

    python benchmarks/gc_pauses.py [--steps N] [--systems lazyx-torch,lazyx-numpy,lazyx-tf]
                                   [--workloads W4,W1,W4x25,gpt2]

W4x25 is W4's chain 25 times over (5,000 traced ops a step), gpt2 an AdamW step of a small
HF GPT-2 (torch only): steps of a model's size, where the pauses show.

Each (system, workload) runs its steps in two rounds, the collector on, then off, and
prints per-step mean, median and maximum for both, the ratio of the means, and the full
collections the steps set off.
"""
import argparse
import gc
import importlib
import os
import statistics
import time

os.environ.setdefault("LAZYX_BACKEND", "xla")
os.environ.setdefault("OMP_NUM_THREADS", "1")
from lazyx.bench import harness  # noqa: E402

_BUILDERS = {"lazyx-torch": ("systems_torch", "lazyx_torch"),
             "lazyx-numpy": ("systems_numpy", "lazyx_numpy"),
             "lazyx-tf": ("systems_tf", "lazyx_tf")}


# W4's chain repeated: a step of 5,000 traced ops, the size of a small model's training step
_LONG_CHAIN = 25


def _step(system, workload):
    if workload == "gpt2":
        return _gpt2_step(system)
    module, name = _BUILDERS[system]
    build = getattr(importlib.import_module(f"lazyx.bench.{module}"), name)
    if workload != "W4x25":
        return build(workload)
    from lazyx.bench import workloads as wl
    chain = wl.W4_CHAIN
    wl.W4_CHAIN = chain * _LONG_CHAIN  # (read when the step is built)
    try:
        return build("W4")
    finally:
        wl.W4_CHAIN = chain


def _gpt2_step(system):
    """An AdamW training step of a 4-layer HF GPT-2 (n_embd 128) through lazyx's torch
    frontend, the loss read each step: some 3,000 traced ops."""
    if system != "lazyx-torch":
        raise harness.NotAvailable("a torch model")
    try:
        import torch
        import transformers
        import lazyx.frontends.torch as lt
    except ImportError as err:
        raise harness.NotAvailable(f"{err}")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=4, n_embd=128, n_head=4, vocab_size=1000,
                                     n_positions=128)
    model = transformers.GPT2LMHeadModel(config).to(lt.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 1000, (4, 64)).to(lt.device)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        lt.mark_step()
        return loss.item()
    return step


def _round(step, n, collect):
    """n steps' times (s) and the full collections they set off, the collector on or off."""
    was = gc.isenabled()
    (gc.enable if collect else gc.disable)()
    full = gc.get_stats()[2]["collections"]
    times = []
    try:
        for _ in range(n):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
    finally:
        (gc.enable if was else gc.disable)()
    return times, gc.get_stats()[2]["collections"] - full


def measure(system, workload, steps, rounds=2):
    step = _step(system, workload)
    if workload in ("W4x25", "gpt2"):
        steps = max(steps // 25, 40)
    for _ in range(20):  # compile, warm up
        step()
    on, off, full_on = [], [], 0
    for _ in range(rounds):
        times, full = _round(step, steps // rounds, True)
        on += times
        full_on += full
        off += _round(step, steps // rounds, False)[0]
    return on, off, full_on


def _ms(values):
    return (f"mean {statistics.fmean(values) * 1e3:7.3f}  median "
            f"{statistics.median(values) * 1e3:7.3f}  max {max(values) * 1e3:7.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # (long runs: the oldest generation fills over some 100,000 traced ops)
    parser.add_argument("--steps", type=int, default=8000)
    parser.add_argument("--systems", default="lazyx-torch,lazyx-numpy,lazyx-tf")
    parser.add_argument("--workloads", default="W4,W1,W4x25,gpt2")
    args = parser.parse_args(argv)
    print(f"lazyx GC pauses: {args.steps} steps per system and workload, half with the "
          f"collector off; ms per step")
    for system in args.systems.split(","):
        for workload in args.workloads.split(","):
            try:
                on, off, full = measure(system, workload, args.steps)
            except harness.NotAvailable as err:
                print(f"  {system:12s} {workload}: not available ({err})")
                continue
            ratio = statistics.fmean(on) / statistics.fmean(off)
            print(f"  {system:12s} {workload}  collector on:  {_ms(on)}  full collections "
                  f"{full}\n  {'':12s} {'':2s}  collector off: {_ms(off)}  mean on/off "
                  f"{ratio:.2f}x")


if __name__ == "__main__":
    main()
