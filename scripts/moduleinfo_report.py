"""Run PyTorch's ModuleInfo database (torch.nn modules, float32) on lt.device against CPU torch.

    python scripts/moduleinfo_report.py [--modules nn.Linear,nn.LSTM] [--max-samples N]
                                        [--out docs/torch_moduleinfo.md]

Each sample builds its module on the CPU under a fixed seed, deep-copies it to lt.device, runs
forward on both, compares outputs and buffers (BatchNorm's running statistics), then runs
backward on the sum of the floating outputs and compares every parameter's and input's grad.
Modules whose train and eval modes differ run in both (torch's own test_modules does so).

A sample is
- pass:      every value matches (torch.testing.assert_close, opinfo_report's float32
             tolerances) and no aten op ran on CPU torch; or, where one does not, it is as
             close to CPU torch's float64 result as CPU torch's float32 one is (listed);
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


def _to(x, device, dtype=None):
    """A fresh leaf copy on `device` of every tensor in nested args (grads kept apart), its
    floating tensors in `dtype` if given."""
    if isinstance(x, torch.Tensor):
        y = x.detach().clone().to(device)
        if dtype is not None and y.is_floating_point():
            y = y.to(dtype)
        return y.requires_grad_(x.requires_grad) if x.is_floating_point() else y
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_to(i, device, dtype) for i in x)
    if isinstance(x, tuple):  # a namedtuple (PackedSequence)
        return type(x)(*(_to(i, device, dtype) for i in x))
    if isinstance(x, dict):
        return {k: _to(v, device, dtype) for k, v in x.items()}
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


def _values(outs, module, inputs):
    """[(what, tensor or None)] a sample compares: outputs, buffers, each parameter's grad,
    each input's grad (inputs that require one), in an order fixed by the module's names."""
    values = [(f"output {i}", t) for i, t in enumerate(outs)]
    values += [(f"buffer {n}", b) for n, b in module.named_buffers()]
    values += [(f"grad of {n}", p.grad) for n, p in module.named_parameters()]
    values += [(f"grad of input {i}", t.grad) for i, t in enumerate(_tensors(inputs))
               if t.requires_grad]
    return values


def _built(info, sample, training, seed, dtype, args, kwargs):
    """The sample's module built on the CPU under `seed` (materialized on `args` if lazy)."""
    cargs, ckw = _cast(sample.constructor_input.args, dtype), \
        _cast(sample.constructor_input.kwargs, dtype)
    torch.manual_seed(seed)
    module = info.module_cls(*cargs, **ckw)
    module.train(training)
    if info.is_lazy:  # materialize on the CPU: the lazy copy's init would use lazyx's RNG
        with torch.no_grad():
            module(*_to(args, "cpu"), **_to(kwargs, "cpu"))
    return module


def _closer_to_float64(info, sample, training, seed, failed, lazy_values, cpu_values):
    """Whether every value in `failed` (indices into the value lists) is as close to CPU
    torch's float64 result as CPU torch's own float32 one is: lazyx rounding otherwise, and
    better (CTC's float64 recursion), is not wrong. The float64 module is the float32 one's
    copy, cast."""
    fargs, fkw = sample.forward_input.args, sample.forward_input.kwargs
    try:
        module = _built(info, sample, training, seed, torch.float32, fargs, fkw).double()
        args, kwargs = _to(fargs, "cpu", torch.float64), _to(fkw, "cpu", torch.float64)
        exact = _values(_step(module, args, kwargs), module, (args, kwargs))
    except Exception:  # noqa: BLE001 -- no float64 answer: the comparison stands
        return False
    for i in failed:
        got, rounded, want = lazy_values[i][1], cpu_values[i][1], exact[i][1]
        if want is None or got.shape != want.shape or not want.is_floating_point():
            return False
        want = want.detach()
        if (got.detach().cpu().double() - want).abs().nan_to_num(float("inf")).max() > \
                (rounded.detach().double() - want).abs().nan_to_num(float("inf")).max():
            return False
    return True


def run_sample(info, sample, training, lt, seed=0, dtype=torch.float32):
    """'pass', 'pass: closer to float64 ...', 'fallback: ops', 'skip: why', 'wrong: why' or
    'error: why'."""
    import lazyx
    # FractionalMaxPool's samples make `_random_samples` float64 whatever the input's dtype,
    # which CPU torch refuses for float32 input: constructor tensors take the sample's dtype
    fargs, fkw = sample.forward_input.args, sample.forward_input.kwargs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cpu_module = _built(info, sample, training, seed, dtype, fargs, fkw)
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
            if len(got) != len(expected):
                return f"wrong: {len(got)} outputs, CPU gave {len(expected)}"
            lazy_values = _values(got, lazy_module, (lazy_args, lazy_kw))
            cpu_values = _values(expected, cpu_module, (cpu_args, cpu_kw))
            reasons, failed = [], []
            for i, ((what, g), (_, e)) in enumerate(zip(lazy_values, cpu_values)):
                if (g is None) != (e is None):
                    reasons.append(f"{what}: {'missing' if g is None else 'unexpected'}")
                elif g is not None:
                    reason = _compare(what, g, e)  # materializes: lazy errors raise here
                    if reason:
                        reasons.append(reason)
                        failed.append(i)
        except Exception as err:
            msg = str(err).splitlines()[0][:120] if str(err) else ""
            return f"error: {type(err).__name__}: {msg}"
        closer = reasons and len(failed) == len(reasons) and dtype == torch.float32 and \
            _closer_to_float64(info, sample, training, seed, failed, lazy_values, cpu_values)
    after = lazyx.metrics()["fallback_ops"]
    names = sorted(k for k, n in after.items() if n > before.get(k, 0))
    if reasons and not closer:
        return "wrong: " + "; ".join(reasons[:3]) + (f" (+{len(reasons) - 3})"
                                                      if len(reasons) > 3 else "")
    if names:
        return "fallback: " + " ".join(names)
    if closer:
        return ("pass: closer to CPU torch in float64 than its float32 is (" +
                "; ".join(reasons[:2]) + (f" (+{len(reasons) - 2})" if len(reasons) > 2 else "")
                + ")")
    return "pass"


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
            if r != "pass":
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
        "## Samples that did not pass, or passed against float64 (first reasons)",
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
