"""lazyx.compile's results belong to the caller: a result of an earlier call keeps its value
through later replays, and each replay returns this call's values."""
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
