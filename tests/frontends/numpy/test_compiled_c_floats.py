"""A float argument that NumPy's own C code reads (np.quantile's q, np.linspace's stop,
np.interp's x, np.linalg.norm's ord) while the same float also feeds the graph as a run-time
parameter: the first call with a new value traces again, sees the baked value change, and
guards that float by value from then on. Each call computes what NumPy computes; before,
replays kept the traced call's value where C code had read it."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

HOST = np.array([3.0, -1.5, 0.25, 7.0, 2.0, -4.0, 5.5, 1.0], dtype=np.float64)


def _steps():
    return [
        ("quantile", lambda x, q: np.quantile(x, q) + x.sum() * q),
        ("percentile", lambda x, q: np.percentile(x, q * 100.0) * q),
        ("linspace", lambda x, k: x * np.linspace(0.0, k, x.shape[0]) + k),
        ("interp", lambda x, k: np.interp(k, np.arange(x.shape[0]), x) * k),
        ("norm_ord", lambda x, k: np.linalg.norm(x, ord=k) + k),
    ]


@pytest.mark.parametrize("name,fn", _steps(), ids=[n for n, _ in _steps()])
def test_a_float_read_in_c_and_in_the_graph_follows_each_call(name, fn):
    step = lazyx.compile(fn)
    x = lnp.asarray(HOST.copy())
    values = [0.25, 0.5, 0.75, 0.5, 0.25, 0.9]
    for v in values:
        want = fn(HOST, v)
        np.testing.assert_allclose(np.asarray(step(x, v)), want, rtol=1e-12,
                                   err_msg=f"{name} at {v}")


def test_a_float_used_only_as_a_parameter_still_replays_after_one_check():
    step = lazyx.compile(lambda x, lr: x - lr * x.sum())
    x = lnp.asarray(HOST.copy())
    lazyx.reset_metrics()
    for lr in [0.1, 0.2, 0.3, 0.4, 0.5]:
        np.testing.assert_allclose(np.asarray(step(x, lr)), HOST - lr * HOST.sum(),
                                   rtol=1e-12)
    m = lazyx.metrics()
    # first call traces, the second traces again to confirm lr only feeds the graph
    assert m["replays"] == 3 and m["replay_misses"] == 0, m


def test_a_repeated_quantile_replays_once_guarded_by_value():
    fn = lambda x, q: np.quantile(x, q) + x.sum() * q  # noqa: E731
    step = lazyx.compile(fn)
    x = lnp.asarray(HOST.copy())
    for q in [0.25, 0.5]:  # the second call finds q read in C and guards it by value
        step(x, q)
    lazyx.reset_metrics()
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(step(x, 0.5)), fn(HOST, 0.5), rtol=1e-12)
    assert lazyx.metrics()["replays"] == 3
