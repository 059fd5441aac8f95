"""lazyx.compile of NumPy steps that rebind a global or a closure variable to a new array
(`global total; total = total + x.sum()`), or return a plain object holding arrays, against
running the same function uncompiled. Before, a replay wrote each new value into the array
the traced call had bound, so an array a caller kept from an earlier call changed, silently;
and a returned object was the traced call's object, its array overwritten by each replay."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

total = None


def _accumulate(x):
    global total
    total = total + x.sum()
    return x * 2


def _inputs(n=5):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(3) for _ in range(n)]


def _kept_globals(step, wrap):
    global total
    total = wrap(np.zeros(()))
    kept = []
    for x in _inputs():
        step(wrap(x))
        kept.append(total)
    return [float(np.asarray(k)) for k in kept]


def test_a_rebound_global_keeps_each_calls_array():
    lazyx.reset_metrics()
    got = _kept_globals(lazyx.compile(_accumulate), lnp.asarray)
    assert lazyx.metrics()["replays"] >= 2
    np.testing.assert_allclose(got, _kept_globals(_accumulate, np.asarray), rtol=1e-12)


def _closure(wrap):
    acc = wrap(np.zeros(()))

    def step(x):
        nonlocal acc
        acc = acc + x.sum()
        return x * 2
    return step, lambda: acc


def test_a_rebound_closure_variable_keeps_each_calls_array():
    def run(compile_, wrap):
        step, acc = _closure(wrap)
        step = compile_(step)
        kept = []
        for x in _inputs():
            step(wrap(x))
            kept.append(acc())
        return [float(np.asarray(k)) for k in kept]
    lazyx.reset_metrics()
    got = run(lazyx.compile, lnp.asarray)
    assert lazyx.metrics()["replays"] >= 2
    np.testing.assert_allclose(got, run(lambda f: f, np.asarray), rtol=1e-12)


class _Record:
    pass


def test_a_returned_plain_object_is_a_new_one_each_call():
    @lazyx.compile
    def step(x):
        out = _Record()
        out.doubled = x * 2
        return out
    with pytest.warns(RuntimeWarning, match="returns a .*_Record object holding lazy tensors"):
        kept = [step(lnp.asarray(x)) for x in _inputs(4)]
    assert len({id(r) for r in kept}) == 4
    for r, x in zip(kept, _inputs(4)):
        np.testing.assert_array_equal(np.asarray(r.doubled), x * 2)
