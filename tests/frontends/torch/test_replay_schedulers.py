"""An LR scheduler stepped inside a lazyx.compile'd step, after its optimizer's step (the
order torch asks for): each replay steps it again after its program
(frontends/torch/replay._scheduler_steps), so the step is replayed with the numbers of the
uncompiled run -- a class with a step of its own and one stepping others (SequentialLR,
ChainedScheduler) included. Stepped any other way -- before the optimizer, or with an
argument (ReduceLROnPlateau's metric) -- the step runs lazily, warned, with the same
numbers."""
import warnings

import pytest
import torch
from torch.optim import lr_scheduler as S

import lazyx
import lazyx.frontends.torch as lt

SCHEDULERS = {
    "StepLR": lambda o: S.StepLR(o, 2, 0.5),
    "MultiStepLR": lambda o: S.MultiStepLR(o, [2, 5], 0.5),
    "ConstantLR": lambda o: S.ConstantLR(o, 0.5, 3),
    "ExponentialLR": lambda o: S.ExponentialLR(o, 0.9),
    "PolynomialLR": lambda o: S.PolynomialLR(o, 6, 2.0),
    "CosineAnnealingLR": lambda o: S.CosineAnnealingLR(o, 5),
    "OneCycleLR": lambda o: S.OneCycleLR(o, 0.5, total_steps=20),  # momentum / betas too
    "CyclicLR": lambda o: S.CyclicLR(o, 0.01, 0.1, 2, cycle_momentum=False),
    "LambdaLR": lambda o: S.LambdaLR(o, lambda epoch: min(1.0, (epoch + 1) / 4)),
    "MultiplicativeLR": lambda o: S.MultiplicativeLR(o, lambda epoch: 0.95),
    "LinearLR": lambda o: S.LinearLR(o, 0.2, 1.0, 4),
    # a step of its own (until 2026-12-05 these three ran lazily)
    "CosineAnnealingWarmRestarts": lambda o: S.CosineAnnealingWarmRestarts(o, 3, 2),
    "SequentialLR": lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.2, 1.0, 2),
                                                 S.ExponentialLR(o, 0.9)], [2]),
    "ChainedScheduler": lambda o: S.ChainedScheduler([S.ConstantLR(o, 0.5, 3),
                                                      S.ExponentialLR(o, 0.9)]),
}
CALLS = 8


def _run(make_scheduler, compiled, opt_name="SGD", order="after", step_args=()):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                torch.nn.Linear(8, 2)).to(lt.device)
    # capturable: the path lazyx.compile switches Adam-like optimizers to (test_replay.py)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if opt_name == "SGD" else \
        torch.optim.AdamW(model.parameters(), lr=0.01, capturable=True)
    scheduler = make_scheduler(opt)

    def step(x, y):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if order == "before":
            scheduler.step()
        opt.step()
        if order == "after":
            scheduler.step(*step_args)
        return loss

    run = lazyx.compile(step) if compiled else step
    gen = torch.Generator().manual_seed(1)
    losses = []
    lazyx.reset_metrics()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(CALLS):
            x, y = torch.randn(5, 4, generator=gen), torch.randn(5, 2, generator=gen)
            losses.append(run(x.to(lt.device), y.to(lt.device)).item())
            if not compiled:
                lt.mark_step()
    lazily = [w for w in caught if "runs lazily" in str(w.message)]
    return {"losses": losses, "params": [p.detach().cpu() for p in model.parameters()],
            "group": {k: v for k, v in opt.param_groups[0].items() if k != "params"},
            "last_lr": scheduler.get_last_lr(), "epoch": getattr(scheduler, "last_epoch", None),
            "inner_last_lr": [s.get_last_lr() for s in getattr(scheduler, "_schedulers", ())],
            "replays": lazyx.metrics()["replays"], "lazily": lazily}


def _same(compiled, plain):
    assert compiled["losses"] == plain["losses"]
    for p, q in zip(compiled["params"], plain["params"]):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    assert compiled["group"] == plain["group"]
    assert compiled["last_lr"] == plain["last_lr"] and compiled["epoch"] == plain["epoch"]
    assert compiled["inner_last_lr"] == plain["inner_last_lr"]  # (SequentialLR's, ...)
    assert all(type(v) is float for v in compiled["last_lr"] +  # (SymFloats while traced)
               [v for rates in compiled["inner_last_lr"] for v in rates])


@pytest.mark.parametrize("opt_name", ["SGD", "AdamW"])
@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_a_scheduler_stepped_after_its_optimizer_inside_the_step_is_replayed(name, opt_name):
    plain = _run(SCHEDULERS[name], False, opt_name)
    compiled = _run(SCHEDULERS[name], True, opt_name)
    _same(compiled, plain)
    # the learning rate changes at every call: replayed from the fourth (docs: README)
    assert compiled["replays"] >= CALLS - 3, compiled["replays"]
    assert not compiled["lazily"], compiled["lazily"][0].message


def test_a_scheduler_stepped_with_an_argument_keeps_the_step_lazy():
    # (what it does depends on the argument: ReduceLROnPlateau's metric, an epoch)
    plateau = lambda o: S.ReduceLROnPlateau(o, patience=0, factor=0.5)  # noqa: E731
    plain = _run(plateau, False, step_args=(1.0,))
    compiled = _run(plateau, True, step_args=(1.0,))
    _same(compiled, plain)
    assert plain["group"]["lr"] < 0.1 / 8  # (the metric never improves: halved each call)
    assert compiled["replays"] == 0 and compiled["lazily"]


def test_a_scheduler_stepped_before_its_optimizer_keeps_the_step_lazy():
    # (torch warns about that order; the update then uses the new rate, which a replay
    # reading its numbers at the start could not)
    plain = _run(SCHEDULERS["ExponentialLR"], False, order="before")
    compiled = _run(SCHEDULERS["ExponentialLR"], True, order="before")
    _same(compiled, plain)
    assert compiled["replays"] == 0 and compiled["lazily"]


def test_a_step_returning_its_schedulers_rate_keeps_the_step_lazy():
    """A plain number among the results would be replayed as traced: OneCycleLR's rate, made
    from its counters, from before the replayed scheduler step."""
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.ones(3).to(lt.device))
    opt = torch.optim.SGD([w], lr=0.1)
    scheduler = S.OneCycleLR(opt, 0.5, total_steps=20)

    @lazyx.compile
    def step(x):
        opt.zero_grad()
        (w * x).sum().backward()
        opt.step()
        scheduler.step()
        return w.sum(), scheduler.get_last_lr()[0]

    rates = []
    with pytest.warns(RuntimeWarning, match="runs lazily"):
        for _ in range(5):
            rates.append(step(torch.ones(3).to(lt.device))[1])
    assert rates == sorted(set(rates)) and len(rates) == 5  # each call's own, rising


def test_a_step_writing_into_its_dict_argument_and_stepping_its_scheduler():
    """Both after the program: the dict written at each replay (replay's arg_writes) is the
    call's argument, not the scheduler's replayed step (the loop making the effects once
    rebound the name the argument writes read)."""
    def run(compiled):
        torch.manual_seed(0)
        w = torch.nn.Parameter(torch.ones(3).to(lt.device))
        opt = torch.optim.SGD([w], lr=0.1)
        scheduler = S.ExponentialLR(opt, 0.5)

        def step(x, record):
            opt.zero_grad()
            loss = (w * x).sum()
            loss.backward()
            opt.step()
            scheduler.step()
            record["twice"] = loss * 2
            return loss

        run = lazyx.compile(step) if compiled else step
        lazyx.reset_metrics()
        logs = []
        for k in range(6):
            record = {"twice": None}
            run(torch.full((3,), float(k)).to(lt.device), record)
            logs.append(record["twice"].item())
        return logs, w.detach().cpu(), lazyx.metrics()["replays"]

    plain_logs, plain_w, _ = run(False)
    logs, w, replays = run(True)
    assert replays >= 2
    assert logs == plain_logs
    torch.testing.assert_close(w, plain_w, rtol=0, atol=0)
