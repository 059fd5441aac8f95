"""torch.optim.Adagrad keeps its step counters on the CPU and has no capturable path: its step
adds one to each and reads it back (`lr / (1 + (step - 1) * lr_decay)`). lazyx.compile
replays such a step (frontends/torch/replay._HostSteps, capture.host_counter): the read is a
number of each call and every replay advances the counters, so the numbers and the counters
are the uncompiled run's."""
import warnings

import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

CALLS = 8


def _train(device, compiled, make_opt, calls=CALLS, between=None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(),
                                torch.nn.Linear(7, 3)).to(device)
    opt = make_opt(model)
    x = torch.randn(6, 5).to(device)
    y = torch.randn(6, 3).to(device)

    def step(x, y):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    fn = lazyx.compile(step) if compiled else step
    losses = []
    for k in range(calls):
        if between is not None:
            between(k, opt)
        losses.append(fn(x, y).item())
    params = [p.detach().cpu() for p in model.parameters()]
    steps = [float(opt.state[p]["step"]) for p in model.parameters()]
    return losses, params, steps, opt


OPTIMIZERS = {
    "default": lambda m: torch.optim.Adagrad(m.parameters(), lr=0.1),
    "lr_decay": lambda m: torch.optim.Adagrad(m.parameters(), lr=0.1, lr_decay=0.05,
                                              weight_decay=0.01),
    "two groups": lambda m: torch.optim.Adagrad(
        [{"params": m[0].parameters(), "lr": 0.2, "lr_decay": 0.1},
         {"params": m[2].parameters()}], lr=0.05, initial_accumulator_value=0.1),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_adagrad_replays_with_the_numbers_and_counters_of_the_uncompiled_run(name):
    make = OPTIMIZERS[name]
    eager = _train("cpu", False, make)
    lazy = _train(lt.device, False, make)
    before = lazyx.metrics()["replays"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (no "runs lazily" warning)
        compiled = _train(lt.device, True, make)
    assert lazyx.metrics()["replays"] - before >= CALLS - 4
    assert compiled[2] == lazy[2] == eager[2] == [float(CALLS)] * 4
    torch.testing.assert_close(compiled[0], lazy[0], rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(compiled[1], lazy[1], rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(compiled[0], eager[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(compiled[1], eager[1], rtol=1e-5, atol=1e-6)


def test_a_replayed_adagrad_checkpoint_resumes_in_a_cpu_optimizer():
    *_, opt = _train(lt.device, True, OPTIMIZERS["lr_decay"])
    state = opt.state_dict()
    assert [float(s["step"]) for s in state["state"].values()] == [float(CALLS)] * 4
    cpu = torch.optim.Adagrad([torch.zeros(7, 5), torch.zeros(7), torch.zeros(3, 7),
                               torch.zeros(3)], lr=0.1, lr_decay=0.05, weight_decay=0.01)
    cpu.load_state_dict(state)
    assert float(cpu.state[cpu.param_groups[0]["params"][0]]["step"]) == CALLS


def test_counters_set_between_calls_are_the_ones_a_replay_reads_and_advances():
    """The counters are found where the step found them at each call: new tensors put there
    between calls (a checkpoint loaded into the optimizer) are read and advanced, as the
    uncompiled run does -- with lr_decay, the step's size depends on them."""
    def rewind(k, opt):
        if k == 5:
            for state in opt.state.values():
                state["step"] = torch.tensor(1.0)
    make = OPTIMIZERS["lr_decay"]
    eager = _train("cpu", False, make, between=rewind)
    compiled = _train(lt.device, True, make, between=rewind)
    assert compiled[2] == eager[2] == [1.0 + CALLS - 5] * 4
    torch.testing.assert_close(compiled[0], eager[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(compiled[1], eager[1], rtol=1e-5, atol=1e-6)


def test_adagrad_with_a_scheduler_replays_each_calls_learning_rate():
    def make(m):
        opt = torch.optim.Adagrad(m.parameters(), lr=0.1, lr_decay=0.02)
        opt._sched = torch.optim.lr_scheduler.ExponentialLR(opt, 0.8)
        return opt

    def run(device, compiled):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2).to(device)
        opt = make(model)
        x = torch.randn(3, 4).to(device)

        def step(x):
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            opt._sched.step()
            return loss
        fn = lazyx.compile(step) if compiled else step
        losses = [fn(x).item() for _ in range(CALLS)]
        return losses, [p.detach().cpu() for p in model.parameters()]
    before = lazyx.metrics()["replays"]
    got = run(lt.device, True)
    assert lazyx.metrics()["replays"] - before >= CALLS - 4
    want = run("cpu", False)
    torch.testing.assert_close(got[0], want[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got[1], want[1], rtol=1e-5, atol=1e-6)
