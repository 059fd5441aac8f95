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


_LOOPS = {  # (from 0: a window from 0 is one too, since 2026-11-30)
    "rows X[i:i+b]": lambda X: ((X[i:i + 4] * 2.0).sum(0) for i in range(0, 21, 4)),
    "row X[i]": lambda X: (X[i] * 3.0 for i in range(0, 8)),
    "columns X[:, i:i+2]": lambda X: (X[:, i:i + 2].exp() for i in range(0, 5)),
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
        for i in range(0, 6):
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


def test_windows_of_every_kind_are_right():
    X = torch.from_numpy(_X)
    L = X.to(lt.device)
    for f in (lambda t: t[:5], lambda t: t[1:9:2], lambda t: t[3:3], lambda t: t[:, -2:],
              lambda t: t[20:100], lambda t: t[0], lambda t: t[:, 0], lambda t: t[:, :]):
        np.testing.assert_array_equal(f(L).cpu().numpy(), f(X).numpy())


@pytest.mark.parametrize("index", [(slice(None), slice(1, 5)), 2, 0, slice(0, 5),
                                   (slice(None), slice(0, 2)), (slice(None), 0), (0, 3)],
                         ids=["x[:, 1:5]", "x[2]", "x[0]", "x[:5]", "x[:, :2]", "x[:, 0]",
                              "x[0, 3]"])
def test_torch_and_numpy_record_one_graph_for_a_unit_step_window(index):
    t = torch.from_numpy(_X).to(lt.device)
    a = lnp.asarray(_X)
    assert lazyx.graph_hash(t[index]) == lazyx.graph_hash(a[index])


def test_an_element_loop_without_a_barrier_compiles_a_few_pieces(monkeypatch):
    """d2l's `A[i, j] = torch.dot(B[i, :], C[:, j])` over every element, no barrier: the loop
    is cut into pieces, which repeat -- but a static x[0] made each piece differ where an
    index 0 fell: a compile per piece (465 s on XLA for a 64x64 A, 0.08 s eager)."""
    monkeypatch.setenv("LAZYX_LOOP_CUT", "300")
    n = 24
    B, C = torch.from_numpy(_X[:n, :4].copy()), torch.from_numpy(_X[:n, 2:].T.copy())
    Bl, Cl = B.to(lt.device), C.to(lt.device)
    lazyx.sync()
    lazyx.reset_metrics()
    A = torch.zeros(n, n, device=lt.device)
    for i in range(n):
        for j in range(n):
            A[i, j] = torch.dot(Bl[i, :], Cl[:, j])
    lazyx.sync()
    metrics = lazyx.metrics()
    assert metrics["syncs"] >= 20  # pieces
    assert metrics["compiles"] <= 3
    np.testing.assert_allclose(A.cpu().numpy(), (B @ C).numpy(), rtol=1e-5, atol=1e-6)
