"""np.array / np.asarray of a list of lazy arrays (explore_np100 F6): NumPy converts each
element through __array__, one sync per element; the hook stacks them lazily and reads the
stack once, with NumPy's result (type, dtype, shape) -- numpy-100 #79's
`np.array([... for p_i in p])`."""
import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

X = np.random.default_rng(0).standard_normal((12, 3))


def _check(make, *args, converts=(np.array, np.asarray), **kwargs):
    for convert in converts:
        want = convert(make(X), *args, **kwargs)
        lx = lnp.asarray(X)
        lazyx.sync()
        lazyx.reset_metrics()
        got = convert(make(lx), *args, **kwargs)
        assert lazyx.metrics()["syncs"] == 1
        assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("make", [
    lambda x: [np.linalg.norm(r) for r in x],
    lambda x: tuple(r * 2 for r in x),
    lambda x: [[r.sum(), r.max()] for r in x],
    lambda x: [r[:2] for r in x],
    lambda x: [(r.astype(np.float32), r.astype(np.float32)) for r in x[:3]],
    lambda x: [x[0].sum().astype(np.float32), x[1].sum()],  # float32 with float64: float64
], ids=["norms", "tuple", "nested", "rows", "float32", "mixed_dtypes"])
def test_a_list_of_lazy_arrays_converts_in_one_sync(make):
    _check(make)


def test_numpys_arguments_apply():
    _check(lambda x: [r.sum() for r in x], dtype=np.float32)
    _check(lambda x: [r.sum() for r in x], ndmin=3, converts=(np.array,))
    _check(lambda x: [r for r in x], order="F")


def test_other_lists_are_numpys():
    lx = lnp.asarray(X)
    mixed = np.array([lx[0, 0], 1.5, lx[1, 1]])  # a Python float among them: NumPy's path
    np.testing.assert_array_equal(mixed, np.array([X[0, 0], 1.5, X[1, 1]]))
    with pytest.raises(ValueError, match="inhomogeneous"):
        np.array([lx[0], lx[1, :2]])
    for convert in (np.array, np.asarray):
        with pytest.raises(ValueError, match="copy"):  # (lazyx's __array__ refusal first)
            convert([lx[0], lx[1]], copy=False)
    assert np.array([1, 2]).dtype == np.int64 and np.asarray([]).shape == (0,)
    assert np.array([[], []]).shape == (2, 0)


@pytest.mark.parametrize("shape", [(1000,), (7, 3)])
def test_legacy_shuffle_is_numpys_in_one_take(shape):
    """numpy-100 #89: np.random.shuffle(lazy) was traced swap by swap (XLA never finished):
    the same permutation as NumPy's, the same RandomState afterwards, a handful of nodes."""
    host = np.arange(int(np.prod(shape))).reshape(shape)
    lazy = lnp.asarray(host.copy())
    view = lazy[1:]
    np.random.seed(3)
    np.random.shuffle(host)
    after = np.random.random()
    np.random.seed(3)
    lazyx.reset_metrics()
    np.random.shuffle(lazy)
    assert lazyx.metrics()["nodes_traced"] < 20
    assert np.random.random() == after
    np.testing.assert_array_equal(np.asarray(lazy), host)
    np.testing.assert_array_equal(np.asarray(view), host[1:])  # a write: its views see it
    np.random.seed(4)  # a view shuffled: its base changes, as NumPy's
    np.random.shuffle(host[0] if host.ndim > 1 else host[:5])
    np.random.seed(4)
    np.random.shuffle(lazy[0] if lazy.ndim > 1 else lazy[:5])
    np.testing.assert_array_equal(np.asarray(lazy), host)
