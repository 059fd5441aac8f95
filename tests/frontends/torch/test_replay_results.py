"""lazyx.compile's results belong to the caller: a result of an earlier call keeps its value
through later replays, and each replay returns this call's values."""
import copy

import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


def test_a_returned_view_written_in_the_step_keeps_its_value_through_later_replays():
    """The view's base (the clone) is held only by the view; replays rebound the base's
    handle to their own value, and the first call's result, regenerated from its base after
    the write, read the latest call's numbers."""
    def step(x, a):
        return x.clone()[1:].fill_(a)
    run = lazyx.compile(step)
    kept, expected = [], []
    lazyx.reset_metrics()
    for k, a in enumerate((0.5, 1.5, 0.25, 2.0, 0.75)):
        x = torch.full((3, 2), float(k))
        kept.append(run(x.to(lt.device), a))
        expected.append(step(x, a))
        # (read at each call through a view, as a loop logging them would)
        assert [float(got[0, 0]) for got in kept] == [float(w[0, 0]) for w in expected]
    assert lazyx.metrics()["replays"] >= 2


@pytest.mark.parametrize("copy", [
    lambda x: x.clone(), lambda x: x.detach(), lambda x: x.reshape(x.shape),
    lambda x: x[:], lambda x: torch.cat([x]),
], ids=["clone", "detach", "reshape", "slice", "cat"])
def test_a_copy_of_an_argument_returned_is_this_calls_value(copy):
    """A result holding an argument's value unchanged (the same node) was returned as the
    traced call's tensor object at every replay: the first call's value each time."""
    run = lazyx.compile(lambda x: (copy(x), x * 2))
    lazyx.reset_metrics()
    for k in range(4):
        x = torch.full((2, 3), float(k))
        same, double = run(x.to(lt.device))
        torch.testing.assert_close(same.cpu(), x)
        torch.testing.assert_close(double.cpu(), x * 2)
    assert lazyx.metrics()["replays"] >= 2


def test_a_copy_of_state_taken_before_the_step_updates_it_is_this_calls_value():
    state = {"w": torch.zeros(3).to(lt.device)}

    def step(x):
        old = state["w"].clone()
        state["w"].add_(x)
        return old
    run = lazyx.compile(step)
    lazyx.reset_metrics()
    got = [run(torch.ones(3).to(lt.device)).cpu() for _ in range(5)]
    assert lazyx.metrics()["replays"] >= 3
    for k, old in enumerate(got):
        torch.testing.assert_close(old, torch.full((3,), float(k)))
    torch.testing.assert_close(state["w"].cpu(), torch.full((3,), 5.0))


def test_a_result_an_in_place_view_op_reshaped_keeps_its_value_through_later_replays():
    """torch.quantile squeezes its result in place: the result's views (`.detach()`) are
    regenerated from a hidden storage base of shape (1,), which each replay rebound: the
    first call's result read through .detach() gave the latest call's quantile."""
    run = lazyx.compile(lambda x, q: torch.quantile(x, q))
    torch.manual_seed(0)
    xs = [torch.randn(4, 5) for _ in range(5)]
    qs = [0.1, 0.4, 0.2, 0.7, 0.5]
    kept = [run(x.to(lt.device), q) for x, q in zip(xs, qs)]
    for got, x, q in zip(kept, xs, qs):
        torch.testing.assert_close(got.detach().cpu(), torch.quantile(x, q))


def test_state_and_arguments_copied_from_an_argument_are_written_at_each_replay():
    """`buf.copy_(x)` gives buf x's node itself (no op computes it): found among no
    outputs, it was never written by a replay, and buf kept the traced call's value."""
    state = {"buf": torch.zeros(3).to(lt.device)}

    def step(x, out):
        state["buf"].copy_(x)
        out.copy_(x)
        return x * 2
    run = lazyx.compile(step)
    lazyx.reset_metrics()
    for k in range(4):
        out = torch.zeros(3).to(lt.device)
        run(torch.full((3,), float(k)).to(lt.device), out)
        torch.testing.assert_close(state["buf"].cpu(), torch.full((3,), float(k)))
        torch.testing.assert_close(out.cpu(), torch.full((3,), float(k)))
    assert lazyx.metrics()["replays"] >= 2


def test_a_step_filling_a_fresh_list_is_replayed_with_eager_values():
    # `step(x, logs)` appending its loss and a copy of a weight to a fresh list each call:
    # the caller's list gets eager torch's values at every call, replays included
    torch.manual_seed(0)
    eager_model = torch.nn.Linear(4, 2)
    model = copy.deepcopy(eager_model).to(lt.device)
    eager_opt = torch.optim.SGD(eager_model.parameters(), lr=0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step_of(m, o):
        def step(x, logs):
            o.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            o.step()
            logs.append(loss.detach())
            logs.append({"w": m.weight.detach().clone()})
            return loss
        return step

    eager, compiled = step_of(eager_model, eager_opt), lazyx.compile(step_of(model, opt))
    lazyx.reset_metrics()
    for _ in range(4):
        x = torch.randn(3, 4)
        want, got = [], []
        eager(x, want)
        compiled(x.to(lt.device), got)
        assert len(got) == 2 and sorted(got[1]) == ["w"]
        torch.testing.assert_close(got[0].cpu(), want[0])
        torch.testing.assert_close(got[1]["w"].cpu(), want[1]["w"])
    assert lazyx.metrics()["replays"] >= 2
