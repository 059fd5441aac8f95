"""A training step that reads its loss every step (`loss.item()`, and a branch on it): how
long it takes run lazily, replayed piece by piece by `lazyx.compile(on_observe="split")`,
and -- the bound -- replayed whole by `lazyx.compile` with the read moved after the call.
An MLP 64-256-10, cross-entropy, SGD with momentum, batch 32, through the torch frontend.

    PYTHONPATH=<dir holding a lazyx package> python benchmarks/split_replay_bench.py \\
        [--steps 20] [--rounds 7]

Prints ms/step (median of the rounds) and each variant's ratio to the lazy run, measured in
this run (the machine's noise cancels in the ratios, not in the figures).
"""
import argparse
import statistics
import time
import warnings

import torch
import torch.nn.functional as F

import lazyx
import lazyx.frontends.torch as lt


def make():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10)).to(lt.device)
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def body(model, opt, x, y, read):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    value = loss.item() if read else None
    if read and value > 100:  # a branch on the value read: part of a split replay's guard
        raise FloatingPointError(value)
    opt.step()
    return loss, value


def variants():
    model, opt = make()
    yield "lazy, loss.item() in the step", lambda x, y: body(model, opt, x, y, True)
    model, opt = make()
    yield "lazyx.compile(on_observe='split')", lazyx.compile(
        lambda x, y: body(model, opt, x, y, True), on_observe="split")
    model, opt = make()
    whole = lazyx.compile(lambda x, y: body(model, opt, x, y, False))

    def after(x, y):
        loss, _ = whole(x, y)
        return loss, loss.item()
    yield "lazyx.compile, loss.item() after the call", after


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    x = torch.randn(32, 64).to(lt.device)
    y = torch.randint(0, 10, (32,)).to(lt.device)
    base = None
    for name, step in variants():
        for _ in range(10):  # traces, compiles, the split step's confirming trace
            step(x, y)
        lazyx.reset_metrics()
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            for _ in range(args.steps):
                step(x, y)
            times.append((time.perf_counter() - start) / args.steps * 1e3)
        ms = statistics.median(times)
        base = base or ms
        replays = lazyx.metrics()["replays"]
        print(f"{name:45s} {ms:7.2f} ms/step  {ms / base:5.2f}x lazy  "
              f"({replays} replays in {args.rounds * args.steps} steps)")


if __name__ == "__main__":
    main()
