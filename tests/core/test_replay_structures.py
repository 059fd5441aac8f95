"""lazyx.compile with the containers steps take and return besides tuples, lists and dicts:
namedtuples, dict subclasses (OrderedDict; HF's ModelOutput in the torch tests) and
dataclasses, through the NumPy frontend against NumPy. A namedtuple result was one object
shared by every call (earlier results overwritten), a namedtuple argument never replayed, and
the others were refused."""
import collections
import dataclasses

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

Batch = collections.namedtuple("Batch", "x scale")


@dataclasses.dataclass
class Out:
    loss: object
    count: int = 0


def _step(batch):
    y = batch.x * batch.scale
    return Out(loss=(y * y).sum(), count=3), collections.OrderedDict(y=y, mean=y.mean()), \
        Batch(y, batch.scale + 1.0)


def _check(results, batches, make):
    for got, batch in zip(results, batches):
        want = _step(Batch(np.asarray(batch.x), batch.scale))
        assert type(got[0]) is Out and got[0].count == 3
        np.testing.assert_allclose(float(got[0].loss), want[0].loss)
        assert type(got[1]) is collections.OrderedDict and list(got[1]) == ["y", "mean"]
        np.testing.assert_allclose(np.asarray(got[1]["y"]), want[1]["y"])
        assert type(got[2]) is Batch and got[2].scale == want[2].scale
        np.testing.assert_allclose(np.asarray(got[2].x), want[2].x)


def test_structured_arguments_and_results_replay():
    step = lazyx.compile(_step)
    batches = [Batch(lnp.asarray(np.arange(3.0) + k), 0.5 + k) for k in range(5)]
    lazyx.reset_metrics()
    results = [step(b) for b in batches]
    assert lazyx.metrics()["replays"] >= 3
    assert len({id(r[0]) for r in results}) == 5  # a new object per call
    _check(results, batches, lnp.asarray)


def test_a_dataclass_argument_with_a_number_is_a_run_time_parameter():
    @dataclasses.dataclass
    class Config:
        x: object
        lr: float

    step = lazyx.compile(lambda c: c.x * c.lr)
    lazyx.reset_metrics()
    for lr in (0.1, 0.2, 0.3, 0.4):
        np.testing.assert_allclose(np.asarray(step(Config(lnp.asarray(np.ones(2)), lr))),
                                   np.full(2, lr))
    assert lazyx.metrics()["replays"] >= 2


def test_a_dict_subclass_with_its_own_constructor_is_refused_clearly():
    class Weird(dict):
        def __init__(self, factory):
            super().__init__()

    with pytest.raises(TypeError, match="neither a tensor"):
        lazyx.compile(lambda d: d)(Weird(None))
