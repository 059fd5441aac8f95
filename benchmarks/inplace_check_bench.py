"""What torch's in-place check costs a lazy training step, and what checking each signature once
saves (frontends/torch/inplace_check.py). Run: python benchmarks/inplace_check_bench.py

Traces optimizer steps on lt.device (a 20-layer MLP, 40 parameters) and times `opt.step()`'s
tracing alone, per optimizer, with the check run once per signature (the default) and at every
call (torch's behaviour), alternated in one process; prints medians and their ratio.
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".dev"))
import lazyx.frontends.torch as lt  # noqa: E402
from lazyx.frontends.torch import inplace_check  # noqa: E402

ROUNDS, STEPS = 6, 5


def traced_step_ms(model, opt, x):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    start = time.perf_counter()
    opt.step()
    elapsed = time.perf_counter() - start
    lt.mark_step()
    loss.item()
    return elapsed * 1e3


def main():
    torch.manual_seed(0)
    print(f"opt.step() tracing on lt.device, 40 parameters (medians of {ROUNDS} x {STEPS} steps)")
    for name, make in (("SGD(momentum=0.9)", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
                       ("Adam", lambda p: torch.optim.Adam(p, lr=1e-3)),
                       ("AdamW", lambda p: torch.optim.AdamW(p, lr=1e-3))):
        model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(20)]).to(lt.device)
        opt = make(model.parameters())
        x = torch.randn(8, 64).to(lt.device)
        for _ in range(3):
            traced_step_ms(model, opt, x)
        times = {True: [], False: []}
        for _ in range(ROUNDS):
            for enabled in (True, False):
                inplace_check.ENABLED = enabled
                times[enabled] += [traced_step_ms(model, opt, x) for _ in range(STEPS)]
        inplace_check.ENABLED = True
        once, every = (statistics.median(times[k]) for k in (True, False))
        print(f"  {name:18s} checked once {once:7.2f} ms   every call {every:7.2f} ms   "
              f"ratio {once / every:.2f}x")


if __name__ == "__main__":
    main()
