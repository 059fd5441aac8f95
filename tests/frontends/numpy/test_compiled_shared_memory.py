"""lazyx.compile given two arguments of one view family (`x[i]` with `x`) where the step
writes one: a replay applied the traced call's view (row 0) to every call, silently. Such
calls trace again, warned; a step that only reads them replays."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp


def _bump_row(base, row):
    row += 1
    return base * 2


def _run(xp, step):
    out = []
    for k in range(5):
        x = xp.asarray(np.arange(6.0).reshape(3, 2))
        out.append((np.asarray(step(x, x[k % 3])), np.asarray(x)))
    return out


def test_a_write_into_a_view_of_another_argument_follows_each_calls_view():
    with pytest.warns(RuntimeWarning, match="shares memory"):
        compiled = _run(lnp, lazyx.compile(_bump_row))
    for (r, x), (er, ex) in zip(compiled, _run(np, _bump_row)):
        np.testing.assert_array_equal(r, er)
        np.testing.assert_array_equal(x, ex)


def test_views_of_one_array_only_read_replay():
    def read(base, row):
        return base.sum(0) + row
    lazyx.reset_metrics()
    compiled = _run(lnp, lazyx.compile(read))
    assert lazyx.metrics()["replays"] >= 3
    for (r, _), (er, _) in zip(compiled, _run(np, read)):
        np.testing.assert_array_equal(r, er)
