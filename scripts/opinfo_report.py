"""Run PyTorch's OpInfo database (float32 samples) on lazyx tensors against eager CPU torch.

    python scripts/opinfo_report.py [--ops add,mul] [--max-samples N] [--out docs/torch_opinfo.md]
                                    [--dtype complex64] [--compiled]

`--compiled` runs each sample as a compiled single-op function through
`torch.compile(backend="lazyx")` (CPU tensors in and out) instead of on lt.device tensors.

The target figure is float32's; `--dtype` runs another dtype's samples (a conformance check,
e.g. complex64 or float64).

A sample passes when the lazy result matches eager (torch.testing.assert_close, float32
tolerances) with no CPU fallback during it. Samples whose eager run raises are skipped, and
so are ops whose values are random or undefined (the skip list below, with reasons).
The pytest suite runs a representative subset through `run_op` from this file.
"""
import argparse
import os
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _checkout  # noqa: E402  (scripts/_checkout.py: lazyx from this checkout)

# Values are random or unspecified: nothing to compare against eager.
SKIP = {
    "bernoulli": "random", "normal": "random", "rand_like": "random", "randn_like": "random",
    "randint_like": "random", "randint": "random", "multinomial": "random",
    "uniform": "random", "nn.functional.dropout": "random", "nn.functional.dropout2d": "random",
    "nn.functional.dropout3d": "random", "nn.functional.alpha_dropout": "random",
    "nn.functional.feature_alpha_dropout": "random", "nn.functional.rrelu": "random",
    "cauchy": "random", "exponential": "random", "geometric": "random", "log_normal": "random",
    "empty": "undefined values", "empty_like": "undefined values", "new_empty": "undefined values",
    "empty_strided": "undefined values", "new_empty_strided": "undefined values",
    "empty_permuted": "undefined values", "torch.empty": "undefined values",
    "nn.functional.fractional_max_pool2d": "random", "nn.functional.fractional_max_pool3d": "random",
    "item": "returns a Python number (covered by unit tests)",
    "svd_lowrank": "random (a Gaussian sketch of the range)",
    "pca_lowrank": "random (a Gaussian sketch of the range)",
    "to_sparse": "sparse layout", "sparse.sampled_addmm": "sparse layout",
    "sparse.mm": "sparse layout", "sparse.sum": "sparse layout",
}

# Samples whose values are random although the op's others are not: attention with dropout.
# (These were "skip" by accident until 2026-11-27: torch.testing's freeze_rng_state asked the
# lazyx device module for an RNG state while lazyx counted as torch's accelerator.)
RANDOM_SAMPLES = {
    "nn.functional.scaled_dot_product_attention": lambda s: s.kwargs.get("dropout_p", 0.0) > 0,
    # args after the query: (key, value, embed_dim, num_heads, in_proj_w, in_proj_b, bias_k,
    # bias_v, add_zero_attn, dropout_p, ...); dropout only while training
    "nn.functional.multi_head_attention_forward":
        lambda s: s.kwargs.get("training", True) and s.args[9] > 0,
}


def _random_sample(op, sample):
    test = RANDOM_SAMPLES.get(op.name)
    return test is not None and test(sample)


# Ops whose non-input tensor arguments torch requires on the CPU for any device (OpInfo's
# own samples make them with device="cpu"): moving them to the device would test our harness.
CPU_ARGS = {"tensor_split"}  # "expected tensor_indices_or_sections to be on cpu"


def _lt():
    return _checkout.frontend('torch')


def _to(x, device):
    if isinstance(x, torch.Tensor):
        return x.detach().to(device).requires_grad_(x.requires_grad) if x.is_floating_point() \
            else x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(_to(i, device) for i in x)
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    return x


def _cpu(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(_cpu(i) for i in x)
    return x


def run_sample(op, sample, lt):
    """'pass', 'fallback', 'skip' (eager refused, or random values), or 'fail: reason'."""
    import lazyx
    if _random_sample(op, sample):
        return "skip"
    try:
        expected = op(sample.input, *sample.args, **sample.kwargs)
    except Exception:
        return "skip"
    before = lazyx.metrics()["fallbacks"]
    before_ops = dict(lazyx.metrics()["fallback_ops"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            args = sample.args if op.name in CPU_ARGS else _to(sample.args, lt.device)
            got = op(_to(sample.input, lt.device), *args, **_to(sample.kwargs, lt.device))
            got = _cpu(got)
    except Exception as err:
        return f"fail: {type(err).__name__}: {str(err).splitlines()[0][:120] if str(err) else ''}"
    fell_back = lazyx.metrics()["fallbacks"] > before
    if fell_back:
        after = lazyx.metrics()["fallback_ops"]
        names = sorted(k for k, n in after.items() if n > before_ops.get(k, 0))
    try:
        torch.testing.assert_close(got, _cpu(expected), rtol=1e-4, atol=1e-5, equal_nan=True,
                                   check_device=False, check_stride=False)
    except Exception as err:
        return f"fail: mismatch {str(err).splitlines()[0][:100]}"
    return "fallback: " + " ".join(names) if fell_back else "pass"


def run_sample_compiled(op, sample, lt):
    """The sample through torch.compile(backend=lazyx): a compiled single-op function on CPU
    tensors. 'pass' needs eager's values, no fallback, and a graph lazyx compiled."""
    import lazyx
    from lazyx.frontends.torch import dynamo
    if _random_sample(op, sample):
        return "skip"
    try:
        expected = op(sample.input, *sample.args, **sample.kwargs)
    except Exception:
        return "skip"
    torch._dynamo.reset()  # a fresh cache: Dynamo gives up recompiling after 8 shapes
    before = dict(lazyx.metrics()["fallback_ops"])
    last = dynamo.RECENT[-1] if dynamo.RECENT else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn = torch.compile(lambda x, *a, **k: op(x, *a, **k), backend=lt.dynamo_backend,
                               dynamic=False)
            got = _cpu(fn(sample.input, *sample.args, **sample.kwargs))
    except Exception as err:
        return f"fail: {type(err).__name__}: {str(err).splitlines()[0][:120] if str(err) else ''}"
    after = lazyx.metrics()["fallback_ops"]
    names = sorted(k for k, n in after.items() if n > before.get(k, 0))
    try:
        torch.testing.assert_close(got, _cpu(expected), rtol=1e-4, atol=1e-5, equal_nan=True,
                                   check_device=False, check_stride=False)
    except Exception as err:
        return f"fail: mismatch {str(err).splitlines()[0][:100]}"
    if names:
        return "fallback: " + " ".join(names)
    compiled = dynamo.RECENT and dynamo.RECENT[-1] is not last
    return "pass" if compiled else "fallback: no-graph-compiled"


def run_op(op, lt, max_samples=None, dtype=torch.float32, compiled=False):
    results = []
    samples = op.sample_inputs("cpu", dtype, requires_grad=False)
    for i, sample in enumerate(samples):
        if max_samples is not None and i >= max_samples:
            break
        results.append((run_sample_compiled if compiled else run_sample)(op, sample, lt))
    return results


def float32_ops(names=None, dtype=torch.float32):
    from torch.testing._internal.common_methods_invocations import op_db
    chosen = []
    for op in op_db:
        full = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        if names is not None and op.name not in names and full not in names:
            continue
        if dtype not in op.supported_dtypes("cpu"):
            continue
        chosen.append((full, op))
    return chosen


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated OpInfo names (default: all)")
    parser.add_argument("--max-samples", type=int, default=None)
    parser.add_argument("--out", help="write a markdown report here")
    parser.add_argument("--dtype", default="float32", help="sample dtype (default float32)")
    parser.add_argument("--compiled", action="store_true",
                        help="through torch.compile(backend='lazyx') instead of lt.device")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    lt = _lt()
    import lazyx
    names = set(args.ops.split(",")) if args.ops else None
    totals = {"pass": 0, "fallback": 0, "fail": 0, "skip": 0}
    per_op, skipped, failures, falling = {}, {}, {}, {}
    start = time.time()
    for full, op in float32_ops(names, dtype):
        if op.name in SKIP:
            skipped[full] = SKIP[op.name]
            continue
        try:
            results = run_op(op, lt, args.max_samples, dtype, args.compiled)
        except Exception as err:  # sample generation itself failed
            skipped[full] = f"sample inputs raised {type(err).__name__}"
            continue
        counts = {"pass": 0, "fallback": 0, "fail": 0, "skip": 0}
        for r in results:
            kind = r.split(":")[0]
            counts[kind] += 1
            if kind == "fail":
                failures.setdefault(full, r)
            if kind == "fallback":
                for name in r.split(": ", 1)[1].split():
                    falling.setdefault(full, {}).setdefault(name, 0)
                    falling[full][name] += 1
        per_op[full] = counts
        for k in totals:
            totals[k] += counts[k]
        lazyx.sync()
    ran = totals["pass"] + totals["fallback"] + totals["fail"]
    rate = 100.0 * totals["pass"] / max(ran, 1)
    m = lazyx.metrics()
    fallback_ops = sorted(m["fallback_ops"].items(), key=lambda kv: -kv[1])
    lines = [
        "# OpInfo float32 report (lazyx torch frontend"
        + (", through torch.compile(backend=\"lazyx\"))" if args.compiled else ")"),
        "",
        f"backend: {lazyx.backend()}; torch {torch.__version__}; ops run: {len(per_op)}; "
        f"ops skipped: {len(skipped)}; time: {time.time() - start:.0f} s",
        "",
        f"samples compared: {ran}; **pass without fallback: {totals['pass']} ({rate:.1f} %)**; "
        f"pass only through a fallback: {totals['fallback']}; fail: {totals['fail']}; "
        f"skipped (eager raised): {totals['skip']}",
        f"fallback count (aten calls run on CPU torch): {m['fallbacks']}",
        "",
        "## Fallback ops (calls)",
        "",
        *[f"- `{name}`: {n}" for name, n in fallback_ops],
        "",
        "## OpInfos with samples that fell back (samples: aten ops)",
        "",
        *[f"- `{name}` ({per_op[name]['fallback']}/{sum(per_op[name].values())}): "
          + ", ".join(f"{k} x{n}" for k, n in sorted(ops.items()))
          for name, ops in sorted(falling.items(), key=lambda kv: -per_op[kv[0]]['fallback'])],
        "",
        "## Skipped OpInfos",
        "",
        *[f"- `{name}`: {why}" for name, why in sorted(skipped.items())],
        "",
        "## Ops with failing samples (first failure)",
        "",
        *[f"- `{name}` ({per_op[name]['fail']}/{sum(per_op[name].values())}): {why}"
          for name, why in sorted(failures.items())],
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()
