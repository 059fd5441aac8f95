"""No silent eager turn (issue 15, DESIGN principle 9): every public function of `torch`,
`torch.nn.functional`, `torch.linalg`, `torch.fft` and `torch.special` we can call on lazy
tensors gives a lazy result, or a counted fallback -- never a host value (a CPU tensor, a read
of the lazy value) that nobody was told about. `x.item()`, `print(x)`, `if x:`, `x.cpu()`
written by the user are observations (a sync with its cause), not fallbacks; a read asked for
by torch's own Python code is a fallback named after the torch function that asked.

Each function is called with the first pattern of `_argument_table()` it accepts (no value
checked here: test_ops.py and test_opinfo.py compare numbers). Outcomes of the 917
functions, torch 2.13.0, both backends (2026-12-04): 619 lazy, 10 counted fallbacks (ops with
no lowering, and torch code reading a value: F.gaussian_nll_loss), 16 data-dependent syncs
by design (nonzero, bincount, one_hot without num_classes, equal, linalg's error checks), 3
observations by design (_OBSERVATIONS), 269 not called (no pattern fits: windows and
factories without tensor inputs, quantized, sparse, cudnn/miopen kernels, ...), 0 silent.
(cov, corrcoef and combinations were data-dependent until readless.py.) The sweep takes ~5 s.
See docs/torch.md, "No silent eager turn".
"""
import inspect
import io
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lazyx
import lazyx.frontends.torch as lt
from lazyx.core import runtime
from lazyx.core.source import format_line

# Side effects (files, global settings and RNG state, threads), compilers and tracers,
# and functions of Python values only (no tensor semantics): not called.
_NOT_CALLED = {
    "torch.save", "torch.load", "torch.from_file", "torch.compile", "torch.vmap",
    "torch.cond", "torch.while_loop", "torch.manual_seed", "torch.seed", "torch.initial_seed",
    "torch.get_rng_state", "torch.set_rng_state", "torch.typename", "torch.get_file_path",
    "torch.prepare_multiprocessing_environment", "torch.classproperty",
    "torch.thread_safe_generator", "torch.compiled_with_cxx11_abi",
    "torch.profiler_allow_cudagraph_cupti_lazy_reinit_cuda12", "torch.from_dlpack",
    "torch.import_ir_module", "torch.import_ir_module_from_buffer", "torch.merge_type_from_type_comment",
    "torch.parse_ir", "torch.parse_schema", "torch.parse_type_comment", "torch.wait",
    "torch.fork", "torch.autocast_decrement_nesting", "torch.autocast_increment_nesting",
    "torch.clear_autocast_cache", "torch.init_num_threads", "torch.read_vitals",
    "torch.vitals_enabled", "torch.unify_type_list", "torch.empty_strided",
}
# An iterative solver reading its convergence state each step (every read is a counted
# fallback named torch._lobpcg.LOBPCG.*): minutes on these inputs, so left out of the sweep.
_NOT_CALLED.add("torch.lobpcg")
_NOT_CALLED_PREFIXES = ("torch.set_", "torch.use_", "torch.sym_", "torch.frombuffer")
# The result is a host value by definition (a Python bool), or a 0-d tensor passed where
# torch takes a Python number (torch.arange(t): torch's argument parser converts it, as the
# user's float(t) would; the result is a CPU tensor, as in eager torch): the caller asked for
# a host value, an observation (counted as a sync with its cause and line).
_OBSERVATIONS = {"torch.is_nonzero", "torch.arange", "torch.scalar_tensor"}
_READS = ("convert", "item", "print")  # sync causes that mean "the value was read"


def _public_functions():
    found = {}
    for module in (torch, F, torch.linalg, torch.fft, torch.special):
        prefix = module.__name__
        for name in sorted(dir(module)):
            fn = getattr(module, name, None)
            qualified = f"{prefix}.{name}"
            if name.startswith("_") or not callable(fn) or inspect.isclass(fn) \
                    or inspect.ismodule(fn) or qualified in _NOT_CALLED \
                    or qualified.startswith(_NOT_CALLED_PREFIXES):
                continue
            found[qualified] = fn
    return found


FUNCTIONS = _public_functions()


def _lazy(array):
    return torch.from_numpy(np.asarray(array)).to(lt.device)


def _argument_table():
    """Lazy inputs in shapes the common families take: vectors, a square matrix (linalg), an
    image batch (conv, pool, interpolate), class indices (losses, embedding), lists (cat),
    dims and shapes (transpose, permute, reshape), a 0-d tensor (is_nonzero)."""
    rng = np.random.default_rng(0)
    x, y = (_lazy(rng.random(3, dtype=np.float32) + 0.5) for _ in range(2))
    m = _lazy(rng.random((3, 3), dtype=np.float32) + np.eye(3, dtype=np.float32) * 3)
    image = _lazy(rng.random((1, 2, 4, 4), dtype=np.float32))
    labels = _lazy(np.array([0, 2, 1]))
    return [(x,), (x, y), (m,), (m, m), (x, 2), (m, 1), (x, y, y), (x, 0.5), (image,),
            (image, 2), (m, labels), (labels, m), (labels,), ([x, y],), ([m, m],),
            (m, 0, 1), (m, (1, 0)), (m, (9,)), (image, image), (m, x), (x, m, x), (m, m, m),
            (m, 0, labels), (x[0],)]


def _host_tensors(obj, found):
    if isinstance(obj, torch.Tensor) and obj.device.type != "lazyx" and obj.numel():
        found.append(obj)
    elif isinstance(obj, np.ndarray) and obj.size:
        found.append(obj)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            _host_tensors(v, found)
    return found


def outcome(name, fn):
    """'lazy', 'fallback', 'data-dependent' (a counted sync by design: the result's shape is
    the data's), 'observation' (_OBSERVATIONS), 'not called' (no pattern fits) or 'SILENT'."""
    for args in _argument_table():
        lazyx.reset_metrics()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fn(*args)
        except Exception:  # noqa: BLE001 -- a pattern this function does not take
            continue
        metrics = lazyx.metrics()
        if metrics["fallbacks"]:
            return "fallback"
        causes = metrics["sync_causes"]
        if _host_tensors(result, []) or any(causes.get(c) for c in _READS):
            return "observation" if name in _OBSERVATIONS else "SILENT"
        return "data-dependent" if causes.get("data_dependent") else "lazy"
    return "not called"


# torch 2.13.0, both backends: see the module's docstring. A floor each, so a change that
# stops calling functions fails instead of passing vacuously. (The fallbacks shrink as ops
# are lowered: 14 on 2026-12-03, after gcd, lcm, igamma and igammac; 10 on 2026-12-04. The
# fallback floor is only there to show the sweep still tells a fallback apart: set below.)
OUTCOME_FLOORS = {"lazy": 610, "fallback": 5, "data-dependent": 10}


def test_every_public_function_is_lazy_or_a_counted_fallback():
    outcomes = {name: outcome(name, fn) for name, fn in FUNCTIONS.items()}
    counts = {o: list(outcomes.values()).count(o) for o in sorted(set(outcomes.values()))}
    silent = sorted(n for n, o in outcomes.items() if o == "SILENT")
    assert silent == [], silent
    for kind, floor in OUTCOME_FLOORS.items():
        assert counts.get(kind, 0) >= floor, counts
    # a torch function whose Python code reads a value (`if torch.any(var < 0)`), and a C++
    # composite that reads one above our dispatcher (one_hot's class count)
    assert outcomes["torch.nn.functional.gaussian_nll_loss"] == "fallback"
    assert outcomes["torch.nn.functional.one_hot"] == "data-dependent"


def _values():
    return (torch.arange(3.0) + 1).to(lt.device) * 2  # pending: reading it syncs


def test_a_read_by_torchs_own_code_is_a_counted_fallback_with_the_users_line():
    x = _values()
    lazyx.reset_metrics()
    told = io.StringIO()
    name = "torch.nn.functional.gaussian_nll_loss"
    runtime._warned_fallbacks.discard(name)  # warned once per process: the sweep may have
    says = f"torch's own code in {name} reads a lazy value on the host"  # not "no lowering"
    with lazyx.explain(told), pytest.warns(RuntimeWarning, match=says) as warned:
        loss = F.gaussian_nll_loss(x, x + 1, x)  # torch checks `if torch.any(var < 0)`
        line = inspect.currentframe().f_lineno - 1
    assert (warned[0].filename, warned[0].lineno) == (__file__, line)  # the warning's own line
    assert lazyx.metrics()["fallback_ops"] == {name: 1}
    where = format_line((__file__, line))
    assert list(lazyx.metrics()["fallback_sources"][name]) == [where]
    assert f"fallback at {where}: {name}" in told.getvalue()
    expected = F.gaussian_nll_loss(*(t.cpu() for t in (x, x + 1, x)))
    torch.testing.assert_close(loss.cpu(), expected)
    with warnings.catch_warnings():  # warned once: the second read is counted, not warned
        warnings.simplefilter("error")
        torch.nn.GaussianNLLLoss()(x, x, x)  # the module reaches the same function
    assert lazyx.metrics()["fallback_ops"] == {name: 2}


def test_torch_distributions_validation_is_counted():
    x = _values()
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        normal = torch.distributions.Normal(x, x, validate_args=True)
        normal.log_prob(x)
        with pytest.raises(ValueError, match="scale"):  # the checks still raise torch's error
            torch.distributions.Normal(x, -x, validate_args=True)
    asked = set(lazyx.metrics()["fallback_ops"])
    assert asked == {"torch.distributions.distribution.Distribution.__init__",
                     "torch.distributions.distribution.Distribution._validate_sample"}, asked
    # validation off (torch.distributions.Distribution.set_default_validate_args): no read
    lazyx.reset_metrics()
    torch.distributions.Normal(x, x, validate_args=False).log_prob(x)
    assert lazyx.metrics()["syncs"] == 0


def test_a_read_inside_an_expansion_we_run_is_named_after_the_op():
    # An op with no lowering whose decomposition reads a value: lazyx expands it, so the
    # read is the op's (whoever wrote the decomposition), never the user's observation.
    from torch._decomp import decomposition_table
    library = torch.library.Library("lazyx_silent_probe", "DEF")
    library.define("scaled(Tensor x) -> Tensor")
    library.impl("scaled", lambda t: t * t.sum().item(), "CPU")
    op = torch.ops.lazyx_silent_probe.scaled.default
    decomposition_table[op] = lambda t: t * t.sum().item()
    try:
        x = _values()
        lazyx.reset_metrics()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = op(x)
        assert lazyx.metrics()["fallback_ops"] == {str(op): 1}
        torch.testing.assert_close(out.cpu(), op(x.cpu()))
    finally:
        del decomposition_table[op]
        library._destroy()


def test_an_op_run_eagerly_is_counted_once():
    x = _values()
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.linalg.eig(x[:1].view(1, 1))  # no lowering: CPU torch, inputs read for it
    assert sum(lazyx.metrics()["fallback_ops"].values()) == 1, lazyx.metrics()["fallback_ops"]


def test_the_users_own_reads_are_observations():
    x = _values()
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning either
        # (str first: reading x[0] would compute x with it, as it shares x's work)
        str(x), x[0].item(), bool(x[0] > 0), int(x[0]), float(x[1]), f"{x[2]}", 4.0 in x
        x.cpu(), x.to("cpu", torch.float64), x.numpy(), x.tolist(), np.asarray(x)
        torch.testing.assert_close(x, torch.tensor([2.0, 4.0, 6.0]).to(lt.device))
        if x.sum():
            pass
    metrics = lazyx.metrics()
    assert metrics["fallbacks"] == 0, metrics["fallback_ops"]
    assert metrics["sync_causes"].get("item", 0) >= 6 and metrics["sync_causes"]["print"] == 1


@pytest.mark.parametrize("values, classes", [([0, 2, 1], -1), ([[0, 3], [1, 1]], -1),
                                             ([[0, 3], [1, 1]], 5), ([], 3), ([], -1),
                                             ([0, 5], 3), ([0, -1], -1)])
def test_one_hot_reads_its_class_count_as_a_data_dependent_sync(values, classes):
    # ATen's composite reads max().item() above our dispatcher, where it looked like the
    # user's own read; now it is one counted data-dependent sync, and the rest is lazy
    x = torch.tensor(values, dtype=torch.int64)
    try:
        expected = F.one_hot(x, classes)
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match=str(error)):  # torch's own error, at the call
            F.one_hot(x.to(lt.device), classes)
        return
    lazyx.reset_metrics()
    got = F.one_hot(x.to(lt.device), classes)
    reads = 1 if classes == -1 else 0
    assert lazyx.metrics()["sync_causes"] == ({"data_dependent": 1} if reads else {})
    torch.testing.assert_close(got.cpu(), expected)
    assert lazyx.metrics()["fallbacks"] == 0


def test_one_hot_under_torch_compile():
    x = torch.tensor([0, 2, 1])
    for classes in (-1, 4):
        compiled = torch.compile(lambda t, k=classes: F.one_hot(t, k) * 2,
                                 backend=lt.dynamo_backend)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = compiled(x.to(lt.device))
        torch.testing.assert_close(got.cpu(), F.one_hot(x, classes) * 2)
