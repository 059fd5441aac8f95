"""lazyx.compile with torch: an nn.Module trained by SGD, Adam and AdamW (and a small
HuggingFace GPT-2) replays with the uncompiled lazy run's numbers exactly and eager torch's
within tolerance; dropout draws what the uncompiled run draws; a learning rate that changes
every call never recompiles; state reads back through torch (views, state_dict)."""
import copy
import warnings

import numpy as np
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


class _Net(torch.nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(6, 16), torch.nn.Linear(16, 3)
        self.drop = torch.nn.Dropout(dropout)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


def _train(model, opt_name, device, compiled, steps, dropout_seed=None):
    # capturable (the step counter on the device) is the path lazyx.compile switches lazy
    # optimizers to; the uncompiled lazy run takes it too, so both compute the same formulas
    # (eager CPU torch cannot: it keeps the counter on the host)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9) if opt_name == "SGD" else \
        getattr(torch.optim, opt_name)(model.parameters(), lr=0.01,
                                       capturable=device != "cpu")
    gen = torch.Generator().manual_seed(3)
    batches = [(torch.randn(8, 6, generator=gen), torch.randn(8, 3, generator=gen))
               for _ in range(steps)]

    def step(x, y, lr):
        for group in opt.param_groups:
            group["lr"] = lr
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = lazyx.compile(step) if compiled else step
    losses = []
    if dropout_seed is not None:
        torch.manual_seed(dropout_seed)
    for k, (x, y) in enumerate(batches):
        loss = run(x.to(device), y.to(device), 0.05 / (k + 1))
        if device != "cpu" and not compiled:
            lt.mark_step()
        losses.append(loss.item())
    return losses, {k: v.detach().cpu() for k, v in model.state_dict().items()}


# (ASGD and NAdam: foreach paths of their own on the device, ASGD's clamping its mu with
# _foreach_maximum_, which raised a TypeError in every compiled ASGD step until 2026-12-04)
@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW", "ASGD", "NAdam"])
def test_module_with_optimizer_replays_like_the_uncompiled_run(opt_name):
    torch.manual_seed(0)
    eager = _Net()
    plain, comp = copy.deepcopy(eager).to(lt.device), copy.deepcopy(eager).to(lt.device)
    want, want_state = _train(eager, opt_name, "cpu", False, 6)
    a, a_state = _train(plain, opt_name, lt.device, False, 6)
    lazyx.reset_metrics()
    b, b_state = _train(comp, opt_name, lt.device, True, 6)
    m = lazyx.metrics()
    assert m["replays"] >= 3, m  # the learning rate changes every call: still replayed
    assert m["compiles"] <= 3, m
    assert a == b
    for k in a_state:
        torch.testing.assert_close(b_state[k], a_state[k], rtol=0, atol=0)
        torch.testing.assert_close(b_state[k], want_state[k], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b, want, rtol=1e-4)


@pytest.mark.parametrize("set_to_none", [False, True])
def test_many_replays_keep_grads_and_their_views_right(set_to_none):
    """Gradients zeroed in place stay the same objects, and every replay's write is synced
    into their functional storage every few calls: after 40 replays the .grad, a view of it
    (what clip_grad_norm_ reads) and state_dict() are the uncompiled run's."""
    torch.manual_seed(0)
    base = _Net()
    runs = []
    for compiled in (False, True):
        model = copy.deepcopy(base).to(lt.device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step(x, y):
            opt.zero_grad(set_to_none=set_to_none)
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        run = lazyx.compile(step) if compiled else step
        gen = torch.Generator().manual_seed(5)
        for _ in range(43):
            run(torch.randn(8, 6, generator=gen).to(lt.device),
                torch.randn(8, 3, generator=gen).to(lt.device))
            lt.mark_step()
        grads = {n: (p.grad.cpu(), p.grad.detach().view(-1).cpu())
                 for n, p in model.named_parameters()}
        runs.append((grads, {k: v.cpu() for k, v in model.state_dict().items()}))
    (want_grads, want_state), (grads, state) = runs
    for n, (grad, view) in grads.items():
        torch.testing.assert_close(grad, want_grads[n][0], rtol=0, atol=0)
        torch.testing.assert_close(view, want_grads[n][1], rtol=0, atol=0)
    for k in state:
        torch.testing.assert_close(state[k], want_state[k], rtol=0, atol=0)


def test_dropout_draws_what_the_uncompiled_run_draws():
    torch.manual_seed(0)
    base = _Net(dropout=0.3)
    plain, comp = copy.deepcopy(base).to(lt.device), copy.deepcopy(base).to(lt.device)
    a, a_state = _train(plain, "SGD", lt.device, False, 5, dropout_seed=11)
    lazyx.reset_metrics()
    b, b_state = _train(comp, "SGD", lt.device, True, 5, dropout_seed=11)
    assert lazyx.metrics()["replays"] >= 2  # after the warm-up call (momentum) and the trace
    assert a == b
    for k in a_state:
        torch.testing.assert_close(b_state[k], a_state[k], rtol=0, atol=0)


def test_state_written_back_is_read_by_torch_and_guards_identity():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to(lt.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @lazyx.compile
    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    x = torch.ones(3, 4).to(lt.device)
    values = []
    for _ in range(4):
        step(x)
        values.append(model.bias.detach().cpu().clone())
        grad = model.bias.grad.cpu()
    assert all(not torch.equal(u, v) for u, v in zip(values, values[1:]))
    # the replayed gradient is the one of the last call: recompute it eagerly
    cpu = torch.nn.Linear(4, 2)
    cpu.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    with torch.no_grad():
        cpu.bias.add_(0.1 * grad)  # undo the last update
        cpu.weight.add_(0.1 * model.weight.grad.cpu())
    cpu(torch.ones(3, 4)).pow(2).sum().backward()
    torch.testing.assert_close(cpu.bias.grad, grad)
    lazyx.reset_metrics()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # a new optimizer: a new identity
    step(x)
    assert lazyx.metrics()["replay_misses"] == 1


def test_a_grad_the_step_replaces_is_a_new_tensor_at_each_replay():
    """zero_grad(set_to_none=True) then backward leaves a new .grad each eager step; a
    replay stores a new one too (it does not write into the old one, so a gradient kept from
    an earlier step keeps its value, as in eager torch), and the next replay still hits."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to(lt.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @lazyx.compile
    def step(x):
        opt.zero_grad(set_to_none=True)
        loss = model(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    x = torch.ones(3, 4).to(lt.device)
    for _ in range(3):
        step(x)
    lazyx.reset_metrics()
    for _ in range(3):
        kept = model.weight.grad
        before = kept.cpu().clone()
        params = {k: v.detach().cpu().clone() for k, v in model.named_parameters()}
        step(x)
        assert model.weight.grad is not kept
        torch.testing.assert_close(kept.cpu(), before, rtol=0, atol=0)
        cpu = torch.nn.Linear(4, 2)  # this call's gradient, from the parameters it started at
        cpu.load_state_dict(params)
        cpu(torch.ones(3, 4)).pow(2).sum().backward()
        torch.testing.assert_close(model.weight.grad.cpu(), cpu.weight.grad)
        torch.testing.assert_close(model.weight.detach().cpu(),
                                   params["weight"] - 0.1 * cpu.weight.grad)
    assert lazyx.metrics()["replays"] == 3 and lazyx.metrics()["replay_misses"] == 0


def test_item_inside_the_step_is_refused():
    model = torch.nn.Linear(4, 2).to(lt.device)

    @lazyx.compile
    def step(x):
        loss = model(x).sum()
        print(loss.item())
        return loss

    with pytest.raises(lazyx.CompileError, match=r"test_replay.py:\d+"):
        step(torch.ones(2, 4).to(lt.device))


def test_a_read_the_step_structure_fixes_is_allowed_and_replayed():
    # HF's BART decoder builds a mask of ones and asks whether it is all ones: the answer
    # depends on no input and no number a call changes, so each replay would read the same
    model = torch.nn.Linear(4, 2).to(lt.device)
    calls = []

    @lazyx.compile
    def step(x):
        mask = torch.ones(x.shape[0], device=x.device)
        calls.append(1)
        if bool(mask.sum() == x.shape[0]):  # (a second read of `mask`, synced now, refuses)
            return model(x).sum() * 2
        return model(x).sum()

    before = lazyx.metrics()["replays"]
    for _ in range(4):
        x = torch.randn(3, 4)
        got = step(x.to(lt.device))
        want = torch.nn.functional.linear(x, model.weight.detach().cpu(),
                                          model.bias.detach().cpu()).sum() * 2
        torch.testing.assert_close(got.item(), want.item(), rtol=1e-5, atol=1e-6)
    assert lazyx.metrics()["replays"] - before == 3 and len(calls) == 1


@pytest.mark.parametrize("read", ["the call's number", "a literal after a number", "an input"])
def test_a_read_a_replay_would_change_is_still_refused(read):
    # (torch folds `ones * scale` into one number, which no longer names `scale`: a number
    # met before the read makes any read of a data-free value refused)
    @lazyx.compile
    def step(x, scale):
        if read == "an input":
            probe = x
        else:
            probe = torch.ones(2, device=x.device) * (scale if read == "the call's number" else 3)
        if probe.sum().item() > 0:
            return x * 2
        return x

    with pytest.raises(lazyx.CompileError, match=r"test_replay.py:\d+"):
        step(torch.ones(2).to(lt.device), 0.5)


def test_cpu_tensors_are_refused():
    step = lazyx.compile(lambda x: x * 2)
    with pytest.raises(TypeError, match="not a lazyx tensor"):
        step(torch.ones(2))


def test_gpt2_adamw_replays_like_the_uncompiled_run(runs_bitwise):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2,
                                     n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     bos_token_id=0, eos_token_id=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = transformers.GPT2LMHeadModel(config)
    ids = torch.randint(0, 64, (2, 12))
    losses = []
    for compiled in (False, True):
        model = copy.deepcopy(base).to(lt.device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)

        def step(ids):
            opt.zero_grad()
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            return loss

        run = lazyx.compile(step) if compiled else step
        lazyx.reset_metrics()
        out = []
        for _ in range(4):
            loss = run(ids.to(lt.device))
            if not compiled:
                lt.mark_step()
            out.append(loss.item())
        losses.append(out)
        if compiled:
            assert lazyx.metrics()["replays"] == 2
            assert model.lm_head.weight is model.transformer.wte.weight
    if runs_bitwise:
        assert losses[0] == losses[1]
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-6)


def _train_step(m, o, a, b):
    o.zero_grad()
    loss = torch.nn.functional.mse_loss(m(a), b)
    loss.backward()
    o.step()
    return loss


def _eager_and_lazy(opt_name, lr, momentum=0.0):
    """(model, optimizer) pairs on CPU and on the lazyx device, from the same weights."""
    torch.manual_seed(0)
    model = _Net()
    lazy_model = copy.deepcopy(model).to(lt.device)
    make = (lambda p: torch.optim.SGD(p, lr=lr, momentum=momentum)) if opt_name == "SGD" else \
        (lambda p: torch.optim.Adam(p, lr=lr))
    return (model, make(model.parameters())), (lazy_model, make(lazy_model.parameters()))


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_a_module_and_optimizer_passed_as_arguments_are_state(opt_name):
    # `train_step(model, opt, x, y)`: the module and optimizer are arguments, not names the
    # step refers to. Their tensors are state all the same (read, updated, written back);
    # they used to be baked into the program as constants, so every replay repeated step 1.
    (model, opt), (lazy_model, lazy_opt) = _eager_and_lazy(opt_name, 0.1 if opt_name == "SGD"
                                                           else 0.01)
    x, y = torch.randn(4, 6), torch.randn(4, 3)
    train_step = _train_step
    step = lazyx.compile(train_step)
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "baked into the compiled step" warning
        for _ in range(5):
            expected = train_step(model, opt, x, y)
            got = step(lazy_model, lazy_opt, x.to(lt.device), y.to(lt.device))
            torch.testing.assert_close(got.item(), expected.item(), rtol=1e-5, atol=1e-7)
    assert lazyx.metrics()["replays"] >= 3
    for p, q in zip(model.parameters(), lazy_model.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-5, atol=1e-6)


SCHEDULERS = {
    "exponential": lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.7),
    # cycles the momentum too (SGD's momentum, Adam's betas[0])
    "one_cycle": lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=20),
}


@pytest.mark.parametrize("schedule", sorted(SCHEDULERS))
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_a_scheduler_outside_the_step_changes_the_replayed_hyperparameters(opt_name, schedule):
    # `for batch: step(batch); scheduler.step()`: the learning rate (and, for a one-cycle
    # schedule, the momentum or Adam's beta1) lives in the optimizer's param_groups, not in the
    # step's arguments. It was baked into the program at the trace, so every replay kept
    # training with the first call's values (silently: no miss, no warning).
    (model, opt), (lazy_model, lazy_opt) = _eager_and_lazy(
        opt_name, 0.1 if opt_name == "SGD" else 0.05, momentum=0.9)
    sched, lazy_sched = SCHEDULERS[schedule](opt), SCHEDULERS[schedule](lazy_opt)
    x, y = torch.randn(4, 6), torch.randn(4, 3)
    train_step = _train_step
    step = lazyx.compile(train_step)
    lazyx.reset_metrics()
    for _ in range(8):
        expected = train_step(model, opt, x, y)
        got = step(lazy_model, lazy_opt, x.to(lt.device), y.to(lt.device))
        torch.testing.assert_close(got.item(), expected.item(), rtol=1e-4, atol=1e-6)
        sched.step()
        lazy_sched.step()
        assert type(lazy_opt.param_groups[0]["lr"]) is float
    assert lazyx.metrics()["replays"] >= 4
    for p, q in zip(model.parameters(), lazy_model.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("schedule", sorted(SCHEDULERS))
def test_a_scheduler_stepped_inside_the_step_keeps_eagers_numbers(schedule):
    """`loss.backward(); opt.step(); scheduler.step()` inside the compiled function: a replay
    runs no Python, so the scheduler would advance only at traces (the learning rate stuck,
    the losses drifting, and verify_every blind: the graph is the same). Until 2026-12-04
    the trace saw the number it changed and the step ran lazily, warned; now each replay
    steps the scheduler again after its program (test_replay_schedulers.py)."""
    (model, opt), (lazy_model, lazy_opt) = _eager_and_lazy("SGD", 0.1, momentum=0.9)
    sched, lazy_sched = SCHEDULERS[schedule](opt), SCHEDULERS[schedule](lazy_opt)
    x, y = torch.randn(4, 6), torch.randn(4, 3)

    def with_schedule(model, opt, sched, x, y):
        loss = _train_step(model, opt, x, y)
        sched.step()
        return loss
    step = lazyx.compile(with_schedule)
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "runs lazily" warning
        for _ in range(6):
            expected = with_schedule(model, opt, sched, x, y)
            got = step(lazy_model, lazy_opt, lazy_sched, x.to(lt.device), y.to(lt.device))
            torch.testing.assert_close(got.item(), expected.item(), rtol=1e-4, atol=1e-6)
    assert lazyx.metrics()["replays"] >= 3
    assert lazy_opt.param_groups[0]["lr"] == pytest.approx(opt.param_groups[0]["lr"])
    assert lazy_sched.last_epoch == sched.last_epoch == 6


def test_train_and_eval_modes_are_part_of_the_guard():
    # a compiled forward traced in train mode kept applying dropout after model.eval()
    # (the module's `training` flags decide the graph, and nothing guarded them)
    torch.manual_seed(0)
    model = _Net(dropout=0.5).to(lt.device)

    @lazyx.compile
    def forward(x):
        return model(x)

    x = torch.randn(3, 6).to(lt.device)
    lazyx.reset_metrics()
    for _ in range(2):
        forward(x)  # train mode: random masks
    model.eval()
    expected = model(x).detach().cpu()
    for _ in range(3):
        torch.testing.assert_close(forward(x).detach().cpu(), expected)
    model.train()
    a, b = forward(x).detach().cpu(), forward(x).detach().cpu()
    assert not torch.equal(a, b)  # dropout again: the train-mode entry is still there
    assert lazyx.metrics()["replay_misses"] == 1  # the switch to eval traced once


def test_arguments_updated_in_place_are_updated_in_each_call():
    # the replay wrote the update into the tensor of the traced call: with two tensors
    # passed in turn, one was updated twice and the other never
    lazy = [torch.ones(3).to(lt.device), torch.full((3,), 5.0).to(lt.device)]
    eager = [torch.ones(3), torch.full((3,), 5.0)]
    g = torch.full((3,), 2.0)

    def step(p, grad):
        p.sub_(0.1 * grad)
        return p.sum()

    compiled = lazyx.compile(step)
    lazyx.reset_metrics()
    for i in range(6):
        got = compiled(lazy[i % 2], g.to(lt.device))
        torch.testing.assert_close(got.item(), step(eager[i % 2], g).item())
        for a, b in zip(lazy, eager):
            torch.testing.assert_close(a.cpu(), b)
    assert lazyx.metrics()["replays"] == 5


def _accumulate(model, compiled, rounds=4, micro=3):
    """Gradient accumulation with the optimizer outside the step: the step adds each
    micro-batch's gradients into .grad; zero_grad(set_to_none) and opt.step() run between."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    device = next(model.parameters()).device

    def fwd_bwd(x, y):
        loss = torch.nn.functional.mse_loss(model(x), y) / micro
        loss.backward()
        return loss

    run = lazyx.compile(fwd_bwd) if compiled else fwd_bwd
    gen = torch.Generator().manual_seed(5)
    losses, grads = [], []
    for _ in range(rounds):
        for _ in range(micro):
            x, y = torch.randn(8, 6, generator=gen), torch.randn(8, 3, generator=gen)
            losses.append(run(x.to(device), y.to(device)).item())
        grads.append(model.fc1.weight.grad.detach().cpu().clone())
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device.type == "lazyx":
            lt.mark_step()
    return losses, grads, model.fc1.weight.detach().cpu()


def test_gradient_accumulation_with_the_optimizer_outside_the_step():
    """The step reads and writes .grad where it is at each call: a replay used to read the
    traced call's gradient tensors, which zero_grad(set_to_none) had dropped, and wrote into
    them, so .grad stayed None and the optimizer never moved the weights."""
    torch.manual_seed(0)
    eager = _Net()
    plain, comp = copy.deepcopy(eager).to(lt.device), copy.deepcopy(eager).to(lt.device)
    want = _accumulate(eager, False)
    a = _accumulate(plain, False)
    lazyx.reset_metrics()
    b = _accumulate(comp, True)
    assert lazyx.metrics()["replays"] >= 6, lazyx.metrics()
    assert a[0] == b[0]
    for ga, gb, gw in zip(a[1], b[1], want[1]):
        assert torch.equal(ga, gb)
        torch.testing.assert_close(gb, gw, rtol=1e-4, atol=1e-5)
    assert torch.equal(a[2], b[2])
    torch.testing.assert_close(b[2], want[2], rtol=1e-4, atol=1e-5)


def test_parameters_and_submodules_replaced_between_calls_are_read():
    torch.manual_seed(0)
    model = _Net().to(lt.device)
    step = lazyx.compile(lambda x: model(x).sum())
    x = torch.randn(5, 6).to(lt.device)
    for _ in range(3):
        step(x)
    model.fc2 = torch.nn.Linear(16, 3).to(lt.device)  # a new submodule
    assert step(x).item() == model(x).sum().item()
    model.fc1.weight = torch.nn.Parameter(torch.ones(16, 6).to(lt.device))  # a new parameter
    assert step(x).item() == model(x).sum().item()
    assert step(x).item() == model(x).sum().item()  # and replayed from then on


def _grow(compiled):
    """A param group added between calls, then a layer appended to a Sequential."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(),
                                torch.nn.Linear(3, 2)).to(lt.device)
    opt = torch.optim.SGD(model[0].parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    run = lazyx.compile(step) if compiled else step
    gen = torch.Generator().manual_seed(1)
    losses = []
    for i in range(8):
        if i == 3:
            opt.add_param_group({"params": model[2].parameters(), "lr": 0.1})
        if i == 6:
            model.append(torch.nn.Linear(2, 2).to(lt.device))
        losses.append(run(torch.randn(5, 4, generator=gen).to(lt.device)).item())
        lt.mark_step()
    return losses, model[2].weight.detach().cpu()


def test_param_groups_and_layers_added_between_calls_trace_again():
    (a, wa), (b, wb) = _grow(False), _grow(True)
    assert a == b
    assert torch.equal(wa, wb)


def test_a_split_step_reading_its_loss_replays_and_takes_each_calls_branch():
    """`loss.item()` inside the step, a branch on it (gradient clipping when it is large)
    and a bool read (`torch.isfinite`): with on_observe="split" the step replays piece by
    piece and trains as eager torch does, whichever branch each call takes."""
    torch.manual_seed(0)
    ref = _Net()
    model = copy.deepcopy(ref).to(lt.device)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (ref, model)]

    def step(m, opt, x, y):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        value = loss.item()
        if not torch.isfinite(loss):
            raise FloatingPointError(value)
        if value > 1.2:
            torch.nn.utils.clip_grad_norm_(m.parameters(), 0.1)
        opt.step()
        return loss, value

    compiled = lazyx.compile(lambda x, y: step(model, opts[1], x, y), on_observe="split")
    gen = torch.Generator().manual_seed(5)
    lazyx.reset_metrics()
    taken = set()
    for k in range(10):
        x, y = torch.randn(8, 6, generator=gen), torch.randn(8, 3, generator=gen) * (1 + k % 3)
        want, want_value = step(ref, opts[0], x, y)
        got, value = compiled(x.to(lt.device), y.to(lt.device))
        taken.add(want_value > 1.2)
        assert value == pytest.approx(want_value, rel=1e-5)
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-5)
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(),
                                   rtol=1e-4, atol=1e-6)
    assert taken == {True, False}
    assert lazyx.metrics()["replays"] >= 3


_KL = {"beta": 0.0}


class _Anneal:
    beta = 0.0


def test_a_weight_in_a_global_dict_or_object_changed_between_calls_is_read_each_call():
    """A KL weight annealed in a global dict (`CFG["beta"]`) and an object's attribute: each
    replay kept the first call's weights (no miss, no warning), so the model trained on
    other losses than eager torch's."""
    torch.manual_seed(0)
    ref = _Net()
    model = copy.deepcopy(ref).to(lt.device)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, model)]
    holder = _Anneal()

    def step(m, opt, x):
        opt.zero_grad()
        out = m(x)
        loss = out.pow(2).mean() + _KL["beta"] * out.mean() + holder.beta * out.abs().mean()
        loss.backward()
        opt.step()
        return loss

    compiled = lazyx.compile(lambda x: step(model, opts[1], x))
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(2))
    lazyx.reset_metrics()
    try:
        for k in range(6):
            _KL["beta"], holder.beta = 0.3 * k, 1.0 / (k + 2)
            want = step(ref, opts[0], x)
            got = compiled(x.to(lt.device))
            assert got.item() == pytest.approx(want.item(), rel=1e-5)
    finally:
        _KL["beta"] = 0.0
    assert lazyx.metrics()["replays"] >= 2  # (run-time parameters: not a trace per value)
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_a_compiled_adams_state_dict_resumes_in_a_cpu_optimizer():
    """The trace switches the optimizer to its capturable path; its state_dict carried
    capturable=True, and a CPU Adam that loaded it failed at its first step."""
    (model, opt), (lazy_model, lazy_opt) = _eager_and_lazy("Adam", 0.01)
    x, y = torch.randn(4, 6), torch.randn(4, 3)
    compiled = lazyx.compile(_train_step)
    for _ in range(3):
        _train_step(model, opt, x, y)
        compiled(lazy_model, lazy_opt, x.to(lt.device), y.to(lt.device))
    state = lazy_opt.state_dict()
    assert [g["capturable"] for g in state["param_groups"]] == \
        [g["capturable"] for g in opt.state_dict()["param_groups"]] == [False]
    cpu_model = _Net()
    cpu_model.load_state_dict({k: v.cpu() for k, v in lazy_model.state_dict().items()})
    cpu_opt = torch.optim.Adam(cpu_model.parameters(), lr=0.01)
    cpu_opt.load_state_dict({"param_groups": state["param_groups"], "state": {
        i: {k: v.cpu() for k, v in s.items()} for i, s in state["state"].items()}})
    _train_step(cpu_model, cpu_opt, x, y)  # (raised: params must be on supported devices)
    _train_step(model, opt, x, y)
    for p, q in zip(cpu_model.parameters(), model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4,
                                   atol=1e-6)


def _returns_state_runs(device, compiled):
    """Three steps returning a state tensor: a parameter the caller rebinds between calls, a
    dict entry the step replaces, and a .grad the step creates after the caller removed it."""
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2).to(device)
    st = {"w": torch.ones(3, device=device)}

    def read(x):
        return m(x).sum(), m.weight

    def replace(x, lr):
        st["w"] = st["w"] - lr * x
        return st["w"]

    def grad(x):
        m(x).sum().backward()
        return m.weight.grad

    wrap = lazyx.compile if compiled else (lambda f: f)
    read, replace, grad = wrap(read), wrap(replace), wrap(grad)
    out = []
    for k in range(5):
        if k == 3:
            m.weight = torch.nn.Parameter(torch.full((2, 3), float(k)).to(device))
        x = torch.arange(3.0).to(device) + k
        with torch.no_grad():
            out.append(read(x)[1].detach().cpu())
        r = replace(x, 0.5)
        assert r is st["w"]
        out.append(r.cpu())
        m.weight.grad = None
        out.append(grad(x).cpu())
    return out


def test_a_result_that_is_state_is_the_state_of_each_call():
    """A replay returned the traced call's tensor object for a result that is state: the
    parameter the caller had since replaced, the dict entry of the first call (0.5 at every
    call where eager gives 0.5, 0, -0.5), the first .grad (silently)."""
    lazyx.reset_metrics()
    compiled = _returns_state_runs(lt.device, True)
    assert lazyx.metrics()["replays"] >= 6
    for a, b in zip(compiled, _returns_state_runs("cpu", False)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_a_step_the_lazy_path_ran_before_compiles():
    """The lazy path had cached its own wrapper of the program (literals baked after a few
    equal runs), which the trace took for a baked program and failed on ('_Executable'
    object has no attribute 'exe')."""
    x = torch.randn(4, 3).to(lt.device)

    def step(x, k):
        return x * k
    for _ in range(6):
        step(x, 3.0).cpu()
    lazyx.sync()
    f = lazyx.compile(step)
    for k in range(4):
        np.testing.assert_allclose(f(x, float(k)).cpu().numpy(), x.cpu().numpy() * k)


@pytest.mark.parametrize("first", [1.0, 2.0, 3.0, 0.0])
def test_a_number_a_shortcut_decided_is_guarded(first):
    """`x ** k` at k = 2.0 is x * x, and `x.add(y, alpha=k)` at k = 1.0 is x + y: torch hands
    the lowering k as a plain float, whose value chose the graph unguarded. With k also a
    parameter elsewhere (torch.full), every replay computed the traced structure: x ** 2 at
    k = 3.0, 4.0, 0.5 (silently)."""
    x0 = torch.rand(8) + 0.5

    def step(x, k):
        return x ** k, x.add(x, alpha=k), torch.full((2,), k, device=x.device)
    f = lazyx.compile(step)
    for k in [first, 2.0, 1.0, 3.0, 2.5, 4.5, 0.5, 5.5]:
        got = f(x0.to(lt.device), k)
        for a, b in zip(got, step(x0, k)):
            np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-5)


def test_a_trace_kept_after_a_failed_link_check_confirms_its_own_links():
    """norm(p=k) bakes 1 / k (torch computes it in C, past the number's link) while k is a
    parameter of pow. The call at a new k traced again, found the program's numbers changed,
    and kept that trace as confirmed: every later k replayed its 1 / k (28.7 at k = 0.5 came
    out 1.63, silently)."""
    x0 = torch.randn(8)

    def step(x, k):
        return x.norm(p=k), torch.full((2,), k, device=x.device)
    f = lazyx.compile(step)
    for k in [1.0, 2.0, 2.5, 3.5, 0.5, 4.5, 5.5]:
        np.testing.assert_allclose(f(x0.to(lt.device), k)[0].cpu().numpy(),
                                   step(x0, k)[0].numpy(), rtol=1e-5)


@pytest.mark.parametrize("make", [
    lambda x, k: torch.tensor([0.0, k], device=x.device) + x[:2],
    lambda x, k: x * torch.as_tensor(k, device=x.device),
], ids=["tensor", "as_tensor"])
def test_a_constant_made_from_a_number_argument_is_checked_by_the_confirming_trace(make):
    """torch.tensor([0.0, k]) is a constant array made on the host, and k, reaching
    torch.full too, a parameter linked by value. The trace that confirms the link at the first
    new k compared the parameters and baked scalars only, not such arrays, and took the step as
    confirmed: every later k replayed the first call's array (silently)."""
    x0 = torch.randn(5)

    def step(x, k):
        return make(x, k), torch.full((2,), k, device=x.device)
    f = lazyx.compile(step)
    for k in [1.0, 2.5, 3.5, 4.5, 5.5]:
        np.testing.assert_allclose(f(x0.to(lt.device), k)[0].cpu().numpy(),
                                   make(x0, k).numpy(), rtol=1e-6)
