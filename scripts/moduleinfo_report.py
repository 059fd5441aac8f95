"""Run PyTorch's ModuleInfo database (torch.nn modules, float32) on lt.device against CPU torch.

    python scripts/moduleinfo_report.py [--modules nn.Linear,nn.LSTM] [--max-samples N]
                                        [--out docs/torch_moduleinfo.md]

Each sample builds its module on the CPU under a fixed seed, deep-copies it to lt.device, runs
forward on both, compares outputs and buffers (BatchNorm's running statistics), then runs
backward on the sum of the floating outputs and compares every parameter's and input's grad.
Modules whose train and eval modes differ run in both (torch's own test_modules does so).

A sample is
- pass:      every value matches (torch.testing.assert_close, opinfo_report's float32
             tolerances) and no aten op ran on CPU torch;
- wrong:     lazyx computed different numbers (the serious kind);
- error:     lazyx raised where CPU torch did not;
- fallback:  the values match, but lazyx.metrics()["fallback_ops"] counted CPU-torch ops;
- skip:      CPU torch itself raised, or the values are random (RANDOM below).
The pytest suite (tests/frontends/torch/test_moduleinfo.py) runs a slice through `run_module`.
"""
import argparse
import copy
import os
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _checkout  # noqa: E402  (scripts/_checkout.py: lazyx from this checkout)

RTOL, ATOL = 1e-4, 1e-5  # opinfo_report's float32 tolerances

# Values are random: nothing to compare against CPU torch (lazyx's RNG is its own,
# counter-based, so the same seed gives other numbers by design). Empty for now: the
# FractionalMaxPool samples pass their own `_random_samples`, and the transformers' dropout is 0.
RANDOM = {}


def _lt():
    return _checkout.frontend('torch')


def _to(x, device):
    """A fresh leaf copy on `device` of every tensor in nested args (grads kept apart)."""
    if isinstance(x, torch.Tensor):
        y = x.detach().clone().to(device)
        return y.requires_grad_(x.requires_grad) if x.is_floating_point() else y
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_to(i, device) for i in x)
    if isinstance(x, tuple):  # a namedtuple (PackedSequence)
        return type(x)(*(_to(i, device) for i in x))
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    return x


def _tensors(x):
    """Every tensor in nested outputs, in order."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for i in x for t in _tensors(i)]
    if isinstance(x, dict):
        return [t for k in x for t in _tensors(x[k])]
    return []


def _compare(what, got, expected):
    """None, or a short reason naming `what` and the largest absolute difference."""
    got = got.detach().cpu()
    expected = expected.detach()
    try:
        torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL, equal_nan=True,
                                   check_device=False, check_stride=False)
        return None
    except AssertionError as err:
        if got.shape == expected.shape and got.dtype == expected.dtype and got.numel() \
                and expected.is_floating_point():
            diff = (got.double() - expected.double()).abs().nan_to_num(float("inf")).max()
            return f"{what}: max abs error {diff.item():.3g}"
        return f"{what}: {str(err).splitlines()[0][:100]}"


def _move_plain_tensors(module, device):
    """Tensors a constructor kept as plain attributes (FractionalMaxPool's `_random_samples`):
    Module.to moves only parameters and buffers, and on CUDA as here they must be on the device."""
    for m in module.modules():
        for k, v in vars(m).items():
            if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter):
                setattr(m, k, v.to(device))


def _step(module, args, kwargs):
    """Forward, then backward on the sum of the floating outputs that need a grad."""
    out = module(*args, **kwargs)
    outs = _tensors(out)
    loss = [t.sum() for t in outs if t.is_floating_point() and t.requires_grad]
    if loss:
        sum(loss).backward()
    return outs


def _cast(x, dtype):
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_cast(i, dtype) for i in x)
    if isinstance(x, dict):
        return {k: _cast(v, dtype) for k, v in x.items()}
    return x


def run_sample(info, sample, training, lt, seed=0, dtype=torch.float32):
    """'pass', 'fallback: ops', 'skip: why', 'wrong: why' or 'error: why'."""
    import lazyx
    cls = info.module_cls
    # FractionalMaxPool's samples make `_random_samples` float64 whatever the input's dtype,
    # which CPU torch refuses for float32 input: constructor tensors take the sample's dtype
    cargs, ckw = _cast(sample.constructor_input.args, dtype), \
        _cast(sample.constructor_input.kwargs, dtype)
    fargs, fkw = sample.forward_input.args, sample.forward_input.kwargs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.manual_seed(seed)
            cpu_module = cls(*cargs, **ckw)
            cpu_module.train(training)
            if info.is_lazy:  # materialize on the CPU: the lazy copy's init would use lazyx's RNG
                with torch.no_grad():
                    cpu_module(*_to(fargs, "cpu"), **_to(fkw, "cpu"))
            lazy_module = copy.deepcopy(cpu_module)
            cpu_args, cpu_kw = _to(fargs, "cpu"), _to(fkw, "cpu")
            lazy_args, lazy_kw = _to(fargs, lt.device), _to(fkw, lt.device)
            expected = _step(cpu_module, cpu_args, cpu_kw)
        except Exception as err:
            return f"skip: CPU raised {type(err).__name__}: {str(err).splitlines()[0][:80]}" \
                if str(err) else f"skip: CPU raised {type(err).__name__}"
        before = dict(lazyx.metrics()["fallback_ops"])
        try:
            lazy_module.to(lt.device)
            _move_plain_tensors(lazy_module, lt.device)
            got = _step(lazy_module, lazy_args, lazy_kw)
            pairs = [(f"output {i}", g, e) for i, (g, e) in enumerate(zip(got, expected))]
            pairs += [(f"buffer {n}", b, dict(cpu_module.named_buffers())[n])
                      for n, b in lazy_module.named_buffers()]
            pairs += [(f"grad of {n}", p.grad, dict(cpu_module.named_parameters())[n].grad)
                      for n, p in lazy_module.named_parameters()]
            pairs += [(f"grad of input {i}", g.grad, e.grad) for i, (g, e) in
                      enumerate(zip(_tensors((lazy_args, lazy_kw)), _tensors((cpu_args, cpu_kw))))
                      if e.requires_grad]
            if len(got) != len(expected):
                return f"wrong: {len(got)} outputs, CPU gave {len(expected)}"
            reasons = []
            for what, g, e in pairs:
                if (g is None) != (e is None):
                    reasons.append(f"{what}: {'missing' if g is None else 'unexpected'}")
                elif g is not None:
                    reason = _compare(what, g, e)  # materializes: lazy errors raise here
                    if reason:
                        reasons.append(reason)
        except Exception as err:
            msg = str(err).splitlines()[0][:120] if str(err) else ""
            return f"error: {type(err).__name__}: {msg}"
    if reasons:
        return "wrong: " + "; ".join(reasons[:3]) + (f" (+{len(reasons) - 3})"
                                                      if len(reasons) > 3 else "")
    after = lazyx.metrics()["fallback_ops"]
    names = sorted(k for k, n in after.items() if n > before.get(k, 0))
    return "fallback: " + " ".join(names) if names else "pass"


def samples(info, training, dtype=torch.float32):
    return list(info.module_inputs_func(info, device="cpu", dtype=dtype, requires_grad=True,
                                        training=training))


def run_module(info, lt, max_samples=None, dtype=torch.float32):
    """[(label, result)] for the module's samples, in train (and eval, where it differs)."""
    if info.name in RANDOM:
        return [("", "skip: " + RANDOM[info.name])]
    results = []
    for training in ((True, False) if info.train_and_eval_differ else (True,)):
        torch.manual_seed(0)  # the sample inputs are random tensors
        for i, sample in enumerate(samples(info, training, dtype)):
            if max_samples is not None and i >= max_samples:
                break
            label = ("train " if training else "eval ") + (sample.desc or str(i))
            results.append((label, run_sample(info, sample, training, lt, dtype=dtype)))
    return results


def float32_modules(names=None, dtype=torch.float32):
    from torch.testing._internal.common_modules import module_db
    return [(info.name, info) for info in module_db
            if (names is None or info.name in names) and dtype in info.supported_dtypes("cpu")]


KINDS = ("pass", "wrong", "error", "fallback", "skip")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", help="comma-separated ModuleInfo names (default: all)")
    parser.add_argument("--max-samples", type=int, default=None,
                        help="samples per module and mode (train / eval)")
    parser.add_argument("--out", help="write a markdown report here")
    args = parser.parse_args()
    lt = _lt()
    import lazyx
    names = set(args.modules.split(",")) if args.modules else None
    totals = dict.fromkeys(KINDS, 0)
    rows, notes = [], []
    start = time.time()
    for name, info in float32_modules(names):
        t0 = time.time()
        try:
            results = run_module(info, lt, args.max_samples)
        except Exception as err:  # sample generation itself failed
            results = [("", f"skip: sample inputs raised {type(err).__name__}")]
        counts = dict.fromkeys(KINDS, 0)
        for label, r in results:
            kind = r.split(":")[0]
            counts[kind] += 1
            if kind != "pass":
                notes.append(f"- `{name}` {label}: **{kind}**{r[len(kind):]}")
        for k in KINDS:
            totals[k] += counts[k]
        rows.append(f"| `{name}` | " + " | ".join(str(counts[k]) for k in KINDS) + " |")
        print(f"{name}: {counts} ({time.time() - t0:.1f} s)", file=sys.stderr, flush=True)
        lazyx.sync()
    ran = sum(totals[k] for k in KINDS if k != "skip")
    lines = [
        "# ModuleInfo float32 report (lazyx torch frontend)",
        "",
        f"backend: {lazyx.backend()}; torch {torch.__version__}; modules: {len(rows)}; "
        f"max samples per module and mode: {args.max_samples}; time: {time.time() - start:.0f} s",
        "",
        f"samples compared: {ran}; **pass: {totals['pass']} "
        f"({100.0 * totals['pass'] / max(ran, 1):.1f} %)**; wrong: {totals['wrong']}; "
        f"error: {totals['error']}; fallback: {totals['fallback']}; skipped: {totals['skip']}",
        "",
        "## Per module",
        "",
        "| module | " + " | ".join(KINDS) + " |",
        "|---" * (len(KINDS) + 1) + "|",
        *rows,
        "",
        "## Samples that did not pass (first reasons)",
        "",
        *notes,
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()
