"""lazyx.compile with results computed outside lazyx (a NumPy array or scalar, an unhashable
value), through the NumPy frontend against NumPy: they are returned as the uncompiled step
returns them -- they raised TypeError, or (a NumPy scalar) took another result's place -- and
one made from a changing number is not replayed stale."""
import warnings

import numpy as np

import lazyx
import lazyx.frontends.numpy as lnp


def _step(x, k):
    return x * k, np.arange(3), np.float32(2.5), [1, 2]


def test_constant_host_results_are_returned_and_the_step_replays():
    g = lazyx.compile(_step)
    lazyx.reset_metrics()
    for k in (0.5, 2.0, 3.0, 4.0, 5.0):
        x = np.linspace(0.0, 1.0, 4, dtype=np.float32) + k
        want = _step(x, k)
        got = g(lnp.asarray(x), k)
        assert len(got) == 4
        np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-6)
        np.testing.assert_array_equal(got[1], want[1])
        assert type(got[2]) is np.float32 and got[2] == want[2]
        assert got[3] == want[3]
    assert lazyx.metrics()["replays"] >= 3


def test_host_result_made_from_a_changing_number_is_not_stale():
    def step(x, k):
        return x + k, np.full(2, k)
    g = lazyx.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in (1.5, 2.5, 3.5):
            got = g(lnp.asarray(np.zeros(2, np.float32)), k)
            np.testing.assert_allclose(np.asarray(got[0]), np.float32(k))
            np.testing.assert_array_equal(got[1], np.full(2, k))
    assert any("computed outside lazyx" in str(w.message) for w in caught)
