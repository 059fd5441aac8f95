"""lazyx.compile of a torch step that seeds the generator itself (torch.manual_seed(seed)
inside the step, reproducible augmentation or dropout): each call draws what the uncompiled
call with that seed draws, and leaves the generator where it does. Replays used to draw
on from the stream's counter as if the step had not reseeded it: new numbers each call."""
import torch

import lazyx
import lazyx.frontends.torch as lt


def _step(x, seed):
    torch.manual_seed(seed)
    return torch.nn.functional.dropout(x, 0.5) + torch.rand(3, 4, device=x.device)


def _run(compiled):
    run = lazyx.compile(_step) if compiled else _step
    x = torch.ones(3, 4).to(lt.device)
    out = [run(x, seed).cpu() for seed in (1, 2, 1, 1, 3, 3, 2)]
    return out + [torch.rand(2, device=lt.device).cpu()]  # where the step left the stream


def test_a_step_that_seeds_the_generator_draws_the_uncompiled_numbers():
    lazyx.reset_metrics()
    compiled = _run(True)
    assert lazyx.metrics()["replays"] >= 3
    for a, b in zip(compiled, _run(False)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
