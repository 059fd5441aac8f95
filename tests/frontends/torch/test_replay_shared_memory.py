"""lazyx.compile given two arguments that view one storage (a view and its base, `x[i]` with
`x`) where the step writes one: the program computes how the write reaches the other for
the traced call's view (row 0), and a call with another row replayed it silently, writing
row 0 and returning it. Such calls trace again, warned; a step that only reads them
replays."""
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


def _bump_row(base, row):
    row.add_(1)
    return base * 2


def _run(device, step, compiled):
    run = lazyx.compile(step) if compiled else step
    out = []
    for k in range(5):
        x = torch.arange(6.0).reshape(3, 2).to(device)
        out.append((run(x, x[k % 3]).cpu(), x.cpu()))
    return out


def test_a_write_into_a_view_of_another_argument_follows_each_calls_view():
    with pytest.warns(RuntimeWarning, match="shares memory"):
        compiled = _run(lt.device, _bump_row, True)
    for (r, x), (er, ex) in zip(compiled, _run("cpu", _bump_row, False)):
        torch.testing.assert_close(r, er)
        torch.testing.assert_close(x, ex)


def test_views_of_one_storage_only_read_replay():
    def read(base, row):
        return base.sum(0) + row
    lazyx.reset_metrics()
    compiled = _run(lt.device, read, True)
    assert lazyx.metrics()["replays"] >= 3
    for (r, _), (er, _) in zip(compiled, _run("cpu", read, False)):
        torch.testing.assert_close(r, er)
