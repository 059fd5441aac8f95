"""Windows with a run-time start: `X[i:i + b]`, `X[i]`, `X[:, i:i + b] = v` and `X[i] = v` in a
loop over i ran one new program per start (the start was an attribute of a static slice or of
the pad that placed a write), so a minibatch loop over a dataset on lt.device compiled once
per batch in its first epoch. NumPy's frontend already made the start a run-time parameter;
torch's x[:, 1:5] now records NumPy's graph."""
import numpy as np
import pytest
import torch

import lazyx
import lazyx.frontends.numpy as lnp
import lazyx.frontends.torch as lt

_X = np.random.default_rng(0).standard_normal((24, 6)).astype(np.float32)


def _programs_for(loop):
    """(the loop's results, how many distinct graphs its reads ran)."""
    data = torch.from_numpy(_X).to(lt.device) * 1.0
    lazyx.sync()
    graphs, out = set(), []
    for value in loop(data):
        graphs.add(lazyx.graph_hash(value))
        out.append(value.cpu().numpy())
    return out, len(graphs)


_LOOPS = {
    "rows X[i:i+b]": lambda X: ((X[i:i + 4] * 2.0).sum(0) for i in range(1, 21, 4)),
    "row X[i]": lambda X: (X[i] * 3.0 for i in range(1, 8)),
    "columns X[:, i:i+2]": lambda X: (X[:, i:i + 2].exp() for i in range(1, 5)),
    "negative X[-i]": lambda X: (X[-i] + 1.0 for i in range(2, 6)),
}


@pytest.mark.parametrize("name", list(_LOOPS))
def test_a_loop_over_windows_runs_one_program(name):
    got, graphs = _programs_for(_LOOPS[name])
    want = [v.numpy() for v in _LOOPS[name](torch.from_numpy(_X))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert graphs == 1


def test_writes_into_windows_run_one_program_and_match_eager():
    def fill(X, lazy):
        graphs, outs = set(), []
        for i in range(1, 6):
            Y = X.clone()
            Y[i:i + 3] = -1.0
            Y[:, i] = Y[:, i] * 10.0
            Y[i + 10] = 7.0
            if lazy:
                graphs.add(lazyx.graph_hash(Y))
            outs.append(Y.cpu().numpy())
        return outs, graphs

    got, graphs = fill(torch.from_numpy(_X).to(lt.device), True)
    want, _ = fill(torch.from_numpy(_X), False)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert len(graphs) == 1


def test_a_window_from_the_start_and_a_strided_one_stay_static_and_right():
    X = torch.from_numpy(_X)
    L = X.to(lt.device)
    for f in (lambda t: t[:5], lambda t: t[1:9:2], lambda t: t[3:3], lambda t: t[:, -2:],
              lambda t: t[20:100]):
        np.testing.assert_array_equal(f(L).cpu().numpy(), f(X).numpy())


def test_torch_and_numpy_record_one_graph_for_a_unit_step_window():
    t = torch.from_numpy(_X).to(lt.device)
    a = lnp.asarray(_X)
    assert lazyx.graph_hash(t[:, 1:5]) == lazyx.graph_hash(a[:, 1:5])
    assert lazyx.graph_hash(t[2]) == lazyx.graph_hash(a[2])
