"""The `lazyx` command: `lazyx demo` and `lazyx bench`."""
import argparse
import sys


def _parser():
    parser = argparse.ArgumentParser(prog="lazyx", description="lazyx: lazy tensors for "
                                     "PyTorch, NumPy and TensorFlow, compiled by XLA")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="train a small classifier through every frontend, "
                          "lazily and eagerly, and compare")
    demo.add_argument("--epochs", type=int, default=None,
                      help="passes over the training set (default 10; 2 with --quick)")
    demo.add_argument("--frontends", default="torch,numpy,tf",
                      help="comma-separated subset of torch,numpy,tf")
    demo.add_argument("--quick", action="store_true", help="fewer epochs (a smoke run)")

    bench = sub.add_parser("bench", help="time W1-W4 on every system, in one run")
    bench.add_argument("--quick", action="store_true", help="fewer iterations (noisier)")
    bench.add_argument("--json", metavar="PATH", help="write the results as JSON")
    bench.add_argument("--png", metavar="PATH", help="save a bar chart (needs matplotlib)")
    bench.add_argument("--markdown", metavar="PATH", help="write the table as Markdown")
    bench.add_argument("--threads", type=int, metavar="N",
                       help="threads per framework (default: each framework's own default); "
                       "use 1 on a busy machine, where OpenMP spin-waiting distorts torch")
    bench.add_argument("--systems", help="comma-separated subset of systems (default: all)")
    bench.add_argument("--workloads", help="comma-separated subset of W1,W2,W3,W4")
    bench.add_argument("--first-step", action="store_true",
                       help="first steps of fresh processes instead: lazyx with a cold and a "
                       "warm disk cache and with LAZYX_TIERED=1, next to jax.jit (default "
                       "systems lazyx-torch,lazyx-numpy,lazyx-tf; workloads W1,W2)")
    return parser


def _subset(text, allowed, what, parser):
    if not text:
        return None
    chosen = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in allowed]
    if unknown:
        parser.error(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return chosen


def run(argv):
    """Entry point used by `python -m lazyx` and the console script; returns an exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "bench":
        from .bench import run_bench
        from .bench.harness import SYSTEMS
        from .bench.workloads import WORKLOADS
        if args.first_step:
            from .bench.first_step import run_first_step
            lazy = [s for s in SYSTEMS if s.startswith("lazyx-")]
            run_first_step(systems=_subset(args.systems, lazy, "systems", parser),
                           workloads=_subset(args.workloads, list(WORKLOADS), "workloads",
                                             parser), threads=args.threads)
            return 0
        run_bench(quick=args.quick, json_path=args.json, png_path=args.png,
                  markdown_path=args.markdown, threads=args.threads,
                  systems=_subset(args.systems, list(SYSTEMS), "systems", parser),
                  workloads=_subset(args.workloads, list(WORKLOADS), "workloads", parser))
        return 0
    from .demo import run_demo
    frontends = _subset(args.frontends, ["torch", "numpy", "tf"], "frontends", parser)
    epochs = args.epochs if args.epochs is not None else (2 if args.quick else 10)
    return run_demo(frontends=frontends, epochs=epochs)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
