"""torch._foreach_X on lazy tensors (frontends/torch/tensor.py `foreach`): every public one,
functional and in place, on the argument patterns torch takes, against CPU torch. The
element op is torch.X, except where torch.X takes other arguments: `_foreach_maximum(l, 1.0)`
(ASGD's capturable foreach path) is a clamp, `_foreach_powsum` has no torch.powsum, and
the Tensor overload of addcmul/addcdiv reads its scalars from a CPU tensor."""
import copy
import warnings

import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

_A = [torch.rand(3) + 0.5, torch.tensor([0.25, float("nan")])]
_B = [torch.rand(3) + 0.5, torch.tensor([1.5, 0.75])]
_C = [torch.rand(3) + 0.5, torch.tensor([0.5, 2.0])]


def _patterns(lists):
    a, b, c = (lists(x) for x in (_A, _B, _C))
    return {
        "list": (a,), "list,list": (a, b), "list,number": (a, 0.7),
        "list,numbers": (a, [0.7, 1.3]), "number,list": (2.0, a),
        "list,list,list": (a, b, c), "list,list,number": (a, b, 0.3),
        "list,list,list,number": (a, b, c, 0.3), "list,list,list,numbers": (a, b, c, [0.3, 0.4]),
        "list,list,list,cpu tensor": (a, b, c, torch.tensor([0.3, 0.4])),
    }


def _cases():
    names = sorted(n for n in dir(torch) if n.startswith("_foreach_") and not n.endswith("_"))
    cases = []
    for name in names:
        for in_place in (False, True):
            fn = getattr(torch, name + "_" if in_place else name, None)
            if fn is None:
                continue
            for pattern, args in _patterns(lambda x: [t.clone() for t in x]).items():
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        fn(*args)
                except Exception:  # noqa: BLE001 -- a pattern torch does not take
                    continue
                cases.append((fn.__name__, pattern))
    return cases


CASES = _cases()
# functionalization runs an in-place op on meta copies of its arguments first, the CPU
# scalars tensor included, and the meta kernel refuses it ("Expected scalars to be on CPU,
# got meta instead"): torch's own, on any functionalized device
_TORCH_REFUSES = {("_foreach_addcdiv_", "list,list,list,cpu tensor"),
                  ("_foreach_addcmul_", "list,list,list,cpu tensor")}


def test_the_sweep_calls_the_foreach_ops():
    assert len(CASES) >= 135, len(CASES)  # 141 with torch 2.13 (47 ops)
    assert ("_foreach_maximum_", "list,number") in CASES
    assert ("_foreach_powsum", "list,number") in CASES


@pytest.mark.parametrize("name,pattern", CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_a_foreach_op_computes_what_cpu_torch_does(name, pattern):
    if (name, pattern) in _TORCH_REFUSES:
        pytest.xfail("torch's functionalization hands the in-place op's meta kernel a meta "
                     "copy of the CPU scalars")
    fn = getattr(torch, name)
    cpu_args = _patterns(lambda x: [t.clone() for t in x])[pattern]
    lazy_args = _patterns(lambda x: [t.clone().to(lt.device) for t in x])[pattern]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = fn(*cpu_args)
        lazyx.reset_metrics()
        got = fn(*lazy_args)
    if name.endswith("_"):  # in place: the first list is the result
        expected, got = cpu_args[0], lazy_args[0]
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert g.device == lt.device and g.dtype == e.dtype
        torch.testing.assert_close(g.cpu(), e, rtol=1e-6, atol=1e-6, equal_nan=True)
    assert lazyx.metrics()["fallbacks"] == 0, lazyx.metrics()["fallback_ops"]


def test_powsum_keeps_the_dtype_asked_for():
    x = [torch.randn(5, dtype=torch.float16), torch.randn(3, dtype=torch.float16)]
    for kwargs in ({}, {"dtype": torch.float32}):
        expected = torch._foreach_powsum(x, 2, **kwargs)
        got = torch._foreach_powsum([t.to(lt.device) for t in x], 2, **kwargs)
        for e, g in zip(expected, got):
            assert g.dtype == e.dtype
            torch.testing.assert_close(g.cpu(), e, rtol=2e-3, atol=1e-3)


def test_lazy_scalars_for_addcdiv_are_refused_as_torch_refuses_them():
    a = [torch.rand(3).to(lt.device) for _ in range(2)]
    with pytest.raises(RuntimeError, match="Expected scalars to be on CPU"):
        torch._foreach_addcdiv(a, a, a, torch.tensor([0.3, 0.4]).to(lt.device))


# the optimizers with a capturable path (the one lazyx.compile makes them take) in their
# foreach form, the default on lt.device (ASGD's clamps its mu with _foreach_maximum_(mus,
# 1.0), which raised a TypeError until 2026-12-04), and two in their per-parameter form
CAPTURABLE = [(name, True) for name in ("Adam", "AdamW", "NAdam", "RAdam", "Adamax", "ASGD",
                                        "Rprop", "Adadelta", "RMSprop")] + \
    [("Adam", False), ("ASGD", False)]


@pytest.mark.parametrize("name,foreach", CAPTURABLE)
def test_a_capturable_optimizer_trains_like_the_default_one_on_cpu(name, foreach):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    lazy_model = copy.deepcopy(model).to(lt.device)
    opt = getattr(torch.optim, name)(model.parameters(), foreach=foreach)
    lazy_opt = getattr(torch.optim, name)(lazy_model.parameters(), foreach=foreach,
                                          capturable=True)
    lx, ly = x.to(lt.device), y.to(lt.device)
    for _ in range(5):
        for m, o, inputs, labels in ((model, opt, x, y), (lazy_model, lazy_opt, lx, ly)):
            o.zero_grad()
            torch.nn.functional.cross_entropy(m(inputs), labels).backward()
            o.step()
    for p, q in zip(model.parameters(), lazy_model.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-5, atol=1e-6)
