"""A replayed optimizer whose step lazyx.compile made capturable computes its bias
corrections on the device from float64 step counters (frontends/torch/replay._WideCounters):
its parameters stay within float32 ulps of the uncompiled lazy run, which computes them in
Python floats. With float32 counters, `1 - 0.999 ** step` lost five digits to cancellation
and an Adam replay drifted 5e-6 from the uncompiled run in ten steps. The optimizer's
state_dict keeps the dtypes the optimizer makes (float32 counters), and resumes on the CPU."""
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

# (beta2 = 0.9999: 1 - beta2 ** step cancels harder, which float32 counters made visible)
OPTIMIZERS = {
    "Adam": {}, "AdamW": {}, "Adam-amsgrad": {"amsgrad": True}, "NAdam": {},
    "NAdam-decoupled": {"weight_decay": 0.01, "decoupled_weight_decay": True}, "RAdam": {},
    "Adamax": {},
}
BETAS = (0.9, 0.9999)


def _run(name, kwargs, compiled, steps=10, foreach=None):
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(1000).to(lt.device))
    grads = [(torch.randn(1000) * 0.1).to(lt.device) for _ in range(steps)]
    kwargs = {"lr": 0.01, "betas": BETAS, **kwargs}
    opt = getattr(torch.optim, name.split("-")[0])([p], foreach=foreach, **kwargs)

    def step(g):
        p.grad = g * 1.0
        opt.step()

    run = lazyx.compile(step) if compiled else step
    for g in grads:
        run(g)
        lt.mark_step()
    return p.detach().cpu(), opt


@pytest.mark.parametrize("foreach", [None, False], ids=["foreach", "for-loop"])
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_replayed_optimizer_stays_within_ulps_of_the_uncompiled_run(name, foreach):
    lazyx.reset_metrics()
    replayed, opt = _run(name, OPTIMIZERS[name], compiled=True, foreach=foreach)
    assert lazyx.metrics()["replays"] >= 8  # (not a step that ran lazily instead)
    uncompiled, _ = _run(name, OPTIMIZERS[name], compiled=False, foreach=foreach)
    # float32 ulps of the parameters (|p| up to ~4; NAdam's foreach path orders its
    # operations otherwise when capturable: up to 2.4e-6), where float32 counters put Adam's
    # 6.7e-6 apart, NAdam's 5.7e-6 and RAdam's 4.3e-3 (its rectification switched on at
    # another step). Adamax's correction (1 - 0.9 ** step) hardly cancels: 2.4e-7 either way.
    torch.testing.assert_close(replayed, uncompiled, rtol=0, atol=3e-6)


def test_the_state_dict_keeps_float32_counters_and_resumes_on_the_cpu():
    replayed, opt = _run("Adam", {}, compiled=True)
    state = opt.state_dict()
    (entry,) = state["state"].values()
    assert entry["step"].dtype == torch.float32 and float(entry["step"]) == 10.0
    assert state["param_groups"][0]["capturable"] is False  # (the user's setting)
    live = next(iter(opt.state.values()))["step"]
    assert live.dtype == torch.float64  # (what the replay computes with)
    # the checkpoint resumes an eager CPU optimizer, which takes the same next step
    cpu_p = torch.nn.Parameter(replayed.clone())
    cpu_opt = torch.optim.Adam([cpu_p], lr=0.01, betas=BETAS)
    cpu_opt.load_state_dict({"state": {0: {k: v.cpu() for k, v in entry.items()}},
                             "param_groups": state["param_groups"]})
    g = torch.full((1000,), 0.05)
    cpu_p.grad = g.clone()
    cpu_opt.step()
    p = next(iter(opt.state))

    @lazyx.compile
    def step(grad):
        p.grad = grad * 1.0
        opt.step()

    step(g.to(lt.device))
    lt.mark_step()
    torch.testing.assert_close(p.detach().cpu(), cpu_p.detach(), rtol=0, atol=1e-6)


def test_a_user_capturable_optimizer_keeps_its_float32_counters():
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(10).to(lt.device))
    opt = torch.optim.Adam([p], lr=0.01, capturable=True)

    @lazyx.compile
    def step():
        p.grad = p * 0.5
        opt.step()

    for _ in range(3):
        step()
    assert opt.state[p]["step"].dtype == torch.float32
