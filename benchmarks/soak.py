"""Memory soak (issue 18): resident memory over many steps of a training-like loop, per
frontend, with fixed shapes and with a batch size that varies every step.

    PYTHONPATH=<dir holding a lazyx package> python benchmarks/soak.py [--steps N]
        [--frontends numpy,torch,tf] [--cache-bytes B]

A benchmark, not a test: it prints RSS every N/10 steps and the growth over the second half
of the run. A fixed-shape loop must be flat; a varying-shape loop compiles a program per
batch size and must stay under the compile cache's bound (LAZYX_CACHE_BYTES, set here to
--cache-bytes, default 64 MB, so the bound is reached within the run), with the interning
tables bounded too. Each (frontend, loop) runs in its own process.
"""
import argparse
import os
import subprocess
import sys

os.environ.setdefault("LAZYX_BACKEND", "xla")


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def numpy_step():
    import numpy as np
    import lazyx.frontends.numpy as lnp
    w = lnp.asarray(np.random.default_rng(0).standard_normal((32, 16)).astype(np.float32) * 0.1)

    def step(batch, lr):
        nonlocal w
        x = lnp.asarray(np.ones((batch, 32), np.float32))
        h = np.tanh(x @ w)
        w = w - lr * (x.T @ (1 - h * h)) / batch
        return h.sum()
    return step


def torch_step():
    import torch
    import lazyx.frontends.torch as lt
    model = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    model = model.to(lt.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(batch, lr):
        for g in opt.param_groups:
            g["lr"] = lr
        x = torch.ones(batch, 32).to(lt.device)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def tf_step():
    import numpy as np
    import tensorflow as tf
    import lazyx.frontends.tf as ltf
    w = ltf.constant(np.random.default_rng(0).standard_normal((32, 16)).astype(np.float32) * 0.1)

    def step(batch, lr):
        nonlocal w
        x = ltf.constant(np.ones((batch, 32), np.float32))
        h = tf.tanh(tf.matmul(x, w))
        w = w - lr * tf.matmul(tf.transpose(x), 1 - h * h) / batch
        return tf.reduce_sum(h)
    return step


STEPS = {"numpy": numpy_step, "torch": torch_step, "tf": tf_step}


def worker(frontend, varying, steps):
    import lazyx
    from lazyx.core import ir
    step = STEPS[frontend]()
    marks = []
    for i in range(steps):
        batch = 8 + (i * 7919) % 200 if varying else 64   # 200 batch sizes, revisited
        loss = step(batch, 0.01 + 1e-6 * i)
        lazyx.sync()
        if i % 100 == 0:
            float(loss)  # observe now and then, as a logging loop would
        if (i + 1) % max(1, steps // 10) == 0:
            marks.append(rss_mb())
    m = lazyx.metrics()
    from lazyx.core import runtime
    second_half = marks[-1] - marks[len(marks) // 2 - 1]
    print(f"{frontend:<6} {'varying' if varying else 'fixed':<8} rss MB "
          + " ".join(f"{v:.0f}" for v in marks)
          + f" | growth over 2nd half {second_half:+.1f} MB | compiles {m['compiles']}"
          f" cached {len(runtime.CACHE.entries)} ({runtime.CACHE.nbytes / 2**20:.1f} MB est.)"
          f" | interned {ir.interned_entries()}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--frontends", default="numpy,torch,tf")
    parser.add_argument("--cache-bytes", type=int, default=64 << 20)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1] == "varying", args.steps)
        return
    env = dict(os.environ, LAZYX_CACHE_BYTES=str(args.cache_bytes))
    print(f"soak: {args.steps} steps per loop, LAZYX_CACHE_BYTES={args.cache_bytes}, "
          f"backend {env['LAZYX_BACKEND']}; RSS in MB at each tenth of the run")
    for frontend in args.frontends.split(","):
        for loop in ("fixed", "varying"):
            subprocess.run([sys.executable, __file__, "--steps", str(args.steps),
                            "--worker", frontend, loop], env=env, check=False)


if __name__ == "__main__":
    main()
