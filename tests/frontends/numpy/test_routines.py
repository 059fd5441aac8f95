"""NumPy routines that were fallbacks (each read its lazy input on the host) and are lowered now
(_elementwise_routines.py, _assembly.py, _polynomials.py, _products.py, the linalg, fft and
cumulative signatures in _functions.py / _numpy_linalg.py, np.modf, np.matvec / np.vecmat):
against NumPy on the same inputs -- values, dtypes, shapes -- with no fallback counted, and
NumPy's own errors for bad calls."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.numpy as lnp

_SPECIAL = [0.0, -0.0, 1.5, -2.5, math.inf, -math.inf, math.nan]


def _floats(dtype, specials=True):
    finite = st.floats(-100, 100, width=32, allow_subnormal=False)
    return st.one_of(finite, st.sampled_from(_SPECIAL)) if specials else finite


def _array(data, dtype=np.float64, min_dims=1, max_dims=3, min_side=1, specials=False,
           shape=None):
    if shape is None:
        shape = hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                                 max_side=4)
    kind = np.dtype(dtype).kind
    elements = st.integers(-20, 20) if kind in "iu" else st.booleans() if kind == "b" else \
        _floats(dtype, specials)
    return data.draw(hnp.arrays(dtype, shape, elements=elements))


def _check(fn, *args, lazy=(0,), rtol=1e-6, atol=1e-9, zeros=True, **kwargs):
    """fn on NumPy arrays and with the arguments at `lazy` as lazy arrays: the same result
    (values, dtypes, shapes), lazy, and no fallback counted; with `zeros`, the same signs of
    zero (element-wise routines; a sum starts from +0.0 in XLA, so reductions may not)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        want = fn(*args, **kwargs)
        lazyx.reset_metrics()
        got = fn(*[lnp.asarray(a) if k in lazy else a for k, a in enumerate(args)], **kwargs)
        fallbacks = lazyx.metrics()["fallback_ops"]
    assert fallbacks == {}, fallbacks
    many = isinstance(want, (tuple, list))
    for g, w in zip(got if many else (got,), want if many else (want,)):
        assert isinstance(g, lnp.LazyArray), type(g)
        g, w = np.asarray(g), np.asarray(w)
        assert (g.shape, g.dtype) == (w.shape, w.dtype), ((g.shape, g.dtype), (w.shape, w.dtype))
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
            if zeros:
                assert (np.signbit(g.real) == np.signbit(w.real))[w.real == 0].all()
        else:
            np.testing.assert_array_equal(g, w)


def _errors_alike(fn, *args, **kwargs):
    """fn raises the same exception type on NumPy arrays and on lazy ones."""
    with pytest.raises(Exception) as numpy_error:
        fn(*args, **kwargs)
    with pytest.raises(numpy_error.type):
        fn(*[lnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)


# ---------------------------------------------------------------- element-wise routines

@settings(max_examples=15, deadline=None)
@given(st.data(), st.sampled_from([np.float32, np.float64, np.complex64, np.int32]))
def test_nan_to_num(data, dtype):
    if np.dtype(dtype).kind == "c":
        x = (_array(data, np.float32, specials=True) +
             1j * _array(data, np.float32, specials=True, shape=(1,))).astype(dtype)
    else:
        x = _array(data, dtype, specials=True)
    _check(np.nan_to_num, x)
    _check(np.nan_to_num, x, nan=-1.0, posinf=7.0, neginf=-7.0)


def test_nan_to_num_in_place_writes_the_lazy_array():
    host = np.array([np.nan, np.inf, -1.0], np.float32)
    x = lnp.asarray(host)
    out = np.nan_to_num(x, copy=False)
    assert out is x
    np.testing.assert_array_equal(np.asarray(x), np.nan_to_num(host))


@settings(max_examples=15, deadline=None)
@given(st.data(), st.sampled_from([np.float32, np.float64, np.int64]))
def test_sinc_fix_and_signed_infinities(data, dtype):
    x = _array(data, dtype, specials=True)
    _check(np.sinc, x, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    _check(np.fix, x)
    _check(np.isposinf, x)
    _check(np.isneginf, x)
    m = np.array([-2.5, 2.5, 0.0], dtype)
    _check(np.modf, m if dtype != np.int64 else m.astype(np.float64))


@settings(max_examples=15, deadline=None)
@given(st.data(), st.sampled_from([np.float32, np.float64]))
def test_modf_keeps_the_signs_of_zeros_and_infinities(data, dtype):
    _check(np.modf, _array(data, dtype, specials=True))


@settings(max_examples=15, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int64]),
       st.sampled_from([None, 1.0, 4.0]), st.sampled_from([2 * math.pi, 360, 7]))
def test_unwrap(data, dtype, discont, period):
    x = _array(data, dtype) * (3 if dtype != np.int64 else 40)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    _check(np.unwrap, x, discont=discont, axis=axis, period=period,
           rtol=1e-5 if dtype == np.float32 else 1e-10, atol=1e-3)


# ---------------------------------------------------------------- assembly

@settings(max_examples=20, deadline=None)
@given(st.data())
def test_delete(data):
    x = _array(data, np.float32)
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    n = x.size if axis is None else x.shape[axis]
    obj = data.draw(st.one_of(
        st.integers(-n, n - 1), st.lists(st.integers(-n, n - 1), max_size=3),
        st.builds(slice, st.integers(-n, n), st.integers(-n, n), st.sampled_from([1, 2, -1])),
        hnp.arrays(np.bool_, (n,))))
    _check(np.delete, x, obj, axis=axis)


def test_delete_out_of_bounds_is_numpys_index_error():
    _errors_alike(np.delete, np.ones((2, 3)), 5, axis=1)


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_splits_and_rollaxis(data):
    x = _array(data, np.int64, min_dims=3, max_dims=3, min_side=2)
    for split, axis in ((np.hsplit, 1), (np.vsplit, 0), (np.dsplit, 2)):
        _check(split, x, data.draw(st.sampled_from([1, x.shape[axis], [1]])))
    axis = data.draw(st.integers(-3, 2))
    start = data.draw(st.integers(-3, 3))
    _check(np.rollaxis, x, axis, start)


def test_split_and_rollaxis_errors_are_numpys():
    _errors_alike(np.vsplit, np.ones(4), 2)
    _errors_alike(np.hsplit, np.ones(()), 1)
    _errors_alike(np.rollaxis, np.ones((2, 3)), 0, 5)
    _errors_alike(np.rollaxis, np.ones((2, 3)), 3)


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_block(data):
    rows, cols = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    heights = [data.draw(st.integers(1, 3)) for _ in range(rows)]
    widths = [data.draw(st.integers(1, 3)) for _ in range(cols)]
    grid = [[_array(data, np.float32, shape=(h, w)) for w in widths] for h in heights]
    lazy_at = {(r, c) for r in range(rows) for c in range(cols) if data.draw(st.booleans())}
    lazy_at.add((0, 0))
    want = np.block(grid)
    lazyx.reset_metrics()
    got = np.block([[lnp.asarray(a) if (r, c) in lazy_at else a for c, a in enumerate(row)]
                    for r, row in enumerate(grid)])
    assert lazyx.metrics()["fallback_ops"] == {}
    np.testing.assert_array_equal(np.asarray(got), want)
    _check(lambda v, s: np.block([v, s, np.array([1.0, 2.0])]), np.arange(3.0), np.float64(7))
    _check(lambda m: np.block([[m], [m]]), np.ones((2,)))  # 1-d leaves, depth 2: 2-d result


def test_block_errors_are_numpys():
    x = lnp.asarray(np.ones(2))
    with pytest.raises(TypeError, match="tuple"):
        np.block((x, x))
    with pytest.raises(ValueError, match="[Dd]epth"):
        np.block([[x], x])


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_resize_diagflat_ediff1d(data):
    x = _array(data, np.float64, max_dims=2)
    shape = data.draw(st.one_of(st.integers(0, 9), hnp.array_shapes(min_dims=1, max_dims=3,
                                                                     min_side=0, max_side=4)))
    _check(np.resize, x, shape)
    _check(np.diagflat, x, data.draw(st.integers(-2, 2)))
    _check(np.ediff1d, x)
    _check(np.ediff1d, x, to_begin=[-1.0, 0.5], to_end=3)
    _check(np.ediff1d, x.astype(np.int32), to_begin=np.array([9], np.int8))


def test_ediff1d_refuses_what_numpy_refuses():
    _errors_alike(np.ediff1d, np.arange(4), to_begin=0.5)


# ---------------------------------------------------------------- polynomials, interp

@settings(max_examples=15, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int64]))
def test_polyval_and_vander(data, dtype):
    p = _array(data, dtype, max_dims=1)
    x = _array(data, dtype, max_dims=2)
    tol = dict(rtol=1e-5, atol=1e-3) if dtype == np.float32 else {}
    _check(np.polyval, p, x, lazy=(0, 1), **tol)
    _check(np.polyval, p, x, lazy=(1,), **tol)
    _check(np.polyval, p, 2.0, lazy=(0,), **tol)
    v = _array(data, dtype, max_dims=1)
    n = data.draw(st.one_of(st.none(), st.integers(0, 5)))
    _check(np.vander, v, n, data.draw(st.booleans()), **tol)


@settings(max_examples=25, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32]))
def test_interp(data, dtype):
    xp = np.sort(_array(data, dtype, max_dims=1))  # (duplicates included)
    fp = _array(data, dtype, shape=xp.shape, specials=data.draw(st.booleans()))
    x = _array(data, dtype, max_dims=2, specials=True) * 1.5
    x = np.where(np.isinf(x), 0, x).astype(dtype)
    kwargs = data.draw(st.sampled_from([{}, {"left": -1.0, "right": 2.5}, {"period": 50.0}]))
    finite = np.isfinite(xp).all()
    if "period" in kwargs and not finite:
        return
    _check(np.interp, x, xp, fp, lazy=(0, 1, 2), rtol=1e-12, atol=1e-9, **kwargs)
    _check(np.interp, x, xp, fp, lazy=(0,), rtol=1e-12, atol=1e-9, **kwargs)


def test_interp_on_a_grid_and_its_bad_calls():
    xp = np.array([0.0, 1.0, 1.0, 2.0, 4.0])
    fp = np.array([0.0, 10.0, 20.0, 30.0, -np.inf])
    x = np.array([-1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, np.nan])
    _check(np.interp, x, xp, fp)
    _check(np.interp, x, xp[:1], fp[:1])  # one point: a NaN x gets fp[0], as in NumPy
    _errors_alike(np.interp, x, xp, fp[:3])
    _errors_alike(np.interp, x, xp[:0], fp[:0])


@settings(max_examples=15, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.complex128, np.int64]),
       st.sampled_from(["valid", "same", "full"]))
def test_vdot_and_correlate(data, dtype, mode):
    a = _array(data, np.float64, max_dims=1).astype(dtype)
    v = _array(data, np.float64, max_dims=1).astype(dtype)
    if dtype == np.complex128:
        a = a + 1j * a[::-1]
        v = v - 0.5j
    tol = dict(rtol=1e-10, atol=1e-9, zeros=False)
    _check(np.correlate, a, v, mode, lazy=(0, 1), **tol)
    _check(np.correlate, a, v, mode, lazy=(1,), **tol)
    m = _array(data, np.float64, shape=(a.size,)).astype(dtype)
    _check(np.vdot, a, m, lazy=(0, 1), **tol)
    _check(np.vdot, a.reshape(1, -1), m, lazy=(0,), **tol)
    _errors_alike(np.vdot, a, np.ones(a.size + 1))


# ---------------------------------------------------------------- signatures onto lowerings

@settings(max_examples=20, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.complex128]))
def test_matvec_vecmat(data, dtype):
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    m, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    a = _array(data, np.float64, shape=batch + (m, n)).astype(dtype)
    v = _array(data, np.float64, shape=(n,)).astype(dtype)
    w = _array(data, np.float64, shape=batch + (m,)).astype(dtype)
    if dtype == np.complex128:
        a, v, w = a * (1 + 2j), v * (1 - 1j), w * 1j + 0.5
    _check(np.matvec, a, v, lazy=(0, 1), rtol=1e-10, atol=1e-9, zeros=False)
    _check(np.vecmat, w, a, lazy=(0,), rtol=1e-10, atol=1e-9, zeros=False)


@settings(max_examples=20, deadline=None)
@given(st.data(), st.sampled_from(["fft2", "ifft2", "rfft2"]), st.sampled_from([None, "ortho"]))
def test_two_dimensional_ffts(data, name, norm):
    x = _array(data, np.float64, min_dims=2, max_dims=3)
    fn = getattr(np.fft, name)
    _check(fn, x, norm=norm, rtol=1e-9, atol=1e-9)
    _check(np.fft.irfft2, np.fft.rfft2(x), s=x.shape[-2:], rtol=1e-9, atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_linalg_signatures(data):
    a = _array(data, np.float64, shape=(data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))))
    a[0, 0] += 3
    _check(np.linalg.pinv, a, rtol=1e-8, atol=1e-8, zeros=False)
    _check(np.linalg.pinv, a, rcond=0.1, rtol=1e-8, atol=1e-8, zeros=False)
    _check(np.linalg.matrix_rank, a)
    _check(np.linalg.matrix_rank, np.stack([a, a * 0]))
    _check(np.linalg.trace, a, offset=data.draw(st.integers(-1, 1)), zeros=False)
    _check(np.linalg.diagonal, a, offset=data.draw(st.integers(-1, 1)))


def test_pinv_refuses_both_tolerances_as_numpy_does():
    _errors_alike(np.linalg.pinv, np.eye(2), rcond=0.1, rtol=0.1)


@settings(max_examples=20, deadline=None)
@given(st.data(), st.booleans())
def test_cumulative_and_nan_scans(data, initial):
    x = _array(data, np.float64, max_dims=2, specials=True)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1)) if x.ndim > 1 else None
    for fn in (np.cumulative_prod, np.cumulative_sum):
        _check(fn, x, axis=axis, include_initial=initial, zeros=False)
    _check(np.nancumsum, x, axis=axis, zeros=False)
    _check(np.nancumprod, np.clip(x, -2, 2), axis=axis, zeros=False)


def test_array_api_cumulative_prod_takes_include_initial_and_needs_an_axis():
    x = lnp.asarray(np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(
        np.asarray(lnp.cumulative_prod(x, axis=1, include_initial=True)),
        np.cumulative_prod(np.asarray(x), axis=1, include_initial=True))
    with pytest.raises(ValueError):
        lnp.cumulative_prod(x)


# ---------------------------------------------------------------- histograms, ordering

@settings(max_examples=20, deadline=None)
@given(st.data(), st.sampled_from([np.float32, np.float64, np.int32]))
def test_histogram_with_a_range_or_edges(data, dtype):
    x = _array(data, dtype, specials=dtype != np.int32) * 2
    weights = data.draw(st.one_of(st.none(), st.just(_array(data, np.float32, shape=x.shape))))
    edges = st.lists(st.floats(-60, 60, allow_subnormal=False), min_size=2, max_size=6,
                     unique=True).map(sorted)
    bins = data.draw(st.one_of(st.integers(1, 12), edges))
    lo = data.draw(st.floats(-50, 10, allow_subnormal=False))
    hi = lo + data.draw(st.sampled_from([0.0, 0.1, 7.0, 60.0]))
    kwargs = dict(bins=bins, weights=weights, density=data.draw(st.booleans()))
    if np.ndim(bins) == 0:
        kwargs["range"] = (lo, hi)
    _check(np.histogram, x, lazy=(0,), rtol=1e-6, atol=1e-12, zeros=False, **kwargs)
    if weights is None and np.ndim(bins) == 0:
        _check(np.histogram_bin_edges, x, bins, (lo, hi))


def test_histogram_values_on_the_edges_and_its_bad_calls():
    x = np.linspace(0, 1, 101, dtype=np.float32)  # many values within an ulp of an edge
    _check(np.histogram, x, bins=10, range=(0.0, 1.0))
    _check(np.histogram, x, bins=7, range=(0.1, 0.9))
    _errors_alike(np.histogram, x, bins=0, range=(0, 1))
    _errors_alike(np.histogram, x, bins=3, range=(1, 0))
    _errors_alike(np.histogram, x, bins=[0.0, 1.0, 0.5])


def test_histogram_without_a_range_is_numpys_own():
    """Edges from the data's min and max need the values (NumPy refuses NaN data there)."""
    x = lnp.asarray(np.arange(5.0))
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (warned once per process)
        counts, _ = np.histogram(x, bins=3)
    assert lazyx.metrics()["fallback_ops"] == {"numpy.histogram": 1}
    np.testing.assert_array_equal(np.asarray(counts), np.histogram(np.arange(5.0), bins=3)[0])


def _is_partition(parted, original, kth, axis):
    sorted_ = np.sort(original, axis=axis)
    parted = np.moveaxis(parted, axis, -1)
    sorted_ = np.moveaxis(sorted_, axis, -1)
    for k in np.atleast_1d(kth) % parted.shape[-1]:
        np.testing.assert_array_equal(parted[..., k], sorted_[..., k])
        before, after = parted[..., :k], parted[..., k + 1:]
        kth_value = parted[..., k:k + 1]
        assert not (before > kth_value).any() and not (after < kth_value).any()


@settings(max_examples=20, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.int64]))
def test_partition_argpartition_lexsort(data, dtype):
    x = _array(data, dtype, specials=dtype == np.float64)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    kth = data.draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(0, n - 1),
                                                                 min_size=1, max_size=2)))
    lazyx.reset_metrics()
    parted = np.asarray(np.partition(lnp.asarray(x), kth, axis=axis))
    order = np.asarray(np.argpartition(lnp.asarray(x), kth, axis=axis))
    assert lazyx.metrics()["fallback_ops"] == {}
    no_nan = ~np.isnan(np.sort(x, axis=axis)).any()
    if no_nan:
        _is_partition(parted, x, kth, axis)
        _is_partition(np.take_along_axis(x, order, axis), x, kth, axis)
    keys = [_array(data, np.int64, shape=x.shape) % 3 for _ in range(data.draw(st.integers(1, 3)))]
    _check(lambda *k: np.lexsort(k, axis=axis), *keys, lazy=range(len(keys)))
    _check(np.lexsort, np.stack(keys), axis=axis)


def test_partition_checks_kth_as_numpy_does():
    _errors_alike(np.partition, np.arange(4.0), 4)
    _errors_alike(np.argpartition, np.arange(4.0), -5)


@pytest.mark.parametrize("axis", [-1, 0, None])
def test_argsort_and_argpartition_of_a_0d_array_are_numpys(axis):
    """NumPy sorts a 0-d array's indices as a 1-d array of one element: array([0]) (np.sort
    and np.partition refuse it: AxisError)."""
    x = np.array(2.5)
    _check(np.argsort, x, axis=axis)
    _check(np.argpartition, x, 0, axis=axis)
    _check(np.argpartition, x, -1, axis=axis)
    _errors_alike(np.argpartition, x, 1, axis=axis)
    _errors_alike(np.argsort, x, axis=1)
    _errors_alike(np.sort, x)
    _errors_alike(np.partition, x, 0)


@settings(max_examples=20, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int64]))
def test_i0(data, dtype):
    x = _array(data, dtype, specials=dtype != np.int64) * (4 if dtype != np.int64 else 1)
    _check(np.i0, x, rtol=1e-12 if dtype != np.float32 else 2e-6, zeros=False)


@settings(max_examples=20, deadline=None)
@given(st.data(), st.sampled_from([np.int64, np.int32, np.uint8]),
       st.sampled_from(["valid", "same", "full"]))
def test_integer_convolve_is_exact_and_wraps_as_numpy(data, dtype, mode):
    """Integer convolutions are window gathers and integer dots (XLA:GPU has no integer conv):
    exact beyond float64's 2**53, wrapping on overflow as NumPy's integer arithmetic does."""
    big = st.integers(np.iinfo(dtype).min, np.iinfo(dtype).max)
    a = data.draw(hnp.arrays(dtype, st.integers(1, 6), elements=big))
    v = data.draw(hnp.arrays(dtype, st.integers(1, 6), elements=big))
    _check(np.convolve, a, v, mode, lazy=(0, 1))
    _check(np.correlate, a, v, mode, lazy=(0,))


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int64]), st.integers(0, 7),
       st.booleans(), st.sampled_from([None, np.float32, np.int32]), st.sampled_from([0, 1]))
def test_linspace_of_lazy_endpoints(data, dtype, num, endpoint, out_dtype, lazy):
    """np.linspace with a lazy start or stop: NumPy's steps on lazy arrays (its dtypes,
    broadcasting along any axis, an integer dtype floored, retstep's step)."""
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    start = _array(data, dtype, shape=shapes.input_shapes[0])
    stop = _array(data, dtype, shape=shapes.input_shapes[1])
    axis = data.draw(st.integers(-len(shapes.result_shape) - 1, len(shapes.result_shape)))
    step_of = lambda s, e: np.linspace(s, e, num, endpoint, True, out_dtype, axis)[1]  # noqa: E731
    # (XLA may fuse a point's multiply-add, one rounding where NumPy has two: an ulp of the
    # endpoints' magnitude, which is all of a point near zero between large endpoints)
    eps = np.finfo(np.float32 if np.float32 in (dtype, out_dtype) else np.float64).eps
    scale = max(np.abs(start).max(initial=0), np.abs(stop).max(initial=0))
    points = lambda s, e: np.linspace(s, e, num, endpoint, False, out_dtype, axis)  # noqa: E731
    if out_dtype is np.int32:  # (floored: a point an ulp from an integer may floor one lower)
        got = points(*[lnp.asarray(a) if k == lazy else a for k, a in enumerate((start, stop))])
        assert isinstance(got, lnp.LazyArray)
        want = points(start, stop)
        assert np.asarray(got).dtype == want.dtype and np.asarray(got).shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=1)
    else:
        _check(points, start, stop, lazy=(lazy,), rtol=4 * eps, atol=4 * eps * scale,
               zeros=False)
    if num > 1 or not endpoint:  # (a step exists: a lazy array here, NumPy's value)
        want = step_of(start, stop)
        got = step_of(*[lnp.asarray(a) if k == lazy else a for k, a in enumerate((start, stop))])
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_linspace_of_lazy_endpoints_errors_are_numpys():
    with pytest.raises(ValueError, match="must be non-negative"):
        np.linspace(lnp.asarray(0.0), 1.0, -1)
    with pytest.raises(np.exceptions.AxisError):
        np.linspace(lnp.asarray([0.0, 1.0]), 2.0, 3, axis=3)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from([np.float16, np.float32, np.float64]))
def test_frexp_of_any_bit_pattern(data, dtype):
    """np.frexp read off the bits: every finite value (subnormals too, which XLA:CPU treats as
    zero in arithmetic), signed zeros, infinities and NaNs give NumPy's mantissa and int32
    exponent."""
    ints = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[dtype]
    bits = data.draw(hnp.arrays(ints, data.draw(hnp.array_shapes(max_dims=2, max_side=6))))
    finfo = np.finfo(dtype)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, finfo.tiny, finfo.max,
                         finfo.smallest_subnormal, -finfo.smallest_subnormal * 3], dtype)
    for x in (bits.view(dtype), specials):
        lazyx.reset_metrics()
        mantissa, exponent = np.frexp(lnp.asarray(x))
        assert lazyx.metrics()["fallback_ops"] == {}
        want_m, want_e = np.frexp(x)
        got_m, got_e = np.asarray(mantissa), np.asarray(exponent)
        assert got_m.dtype == want_m.dtype and got_e.dtype == want_e.dtype
        finite = np.isfinite(want_m)
        assert np.array_equal(got_m[finite].view(ints), want_m[finite].view(ints))
        assert np.array_equal(np.isnan(got_m), np.isnan(want_m))
        assert np.array_equal(got_m[~np.isnan(want_m)], want_m[~np.isnan(want_m)])
        np.testing.assert_array_equal(got_e, want_e)


@pytest.mark.parametrize("values", [np.arange(-3, 6), np.array([True, False])])
def test_frexp_of_integers_and_bools_takes_numpys_float(values):
    _check(np.frexp, values)
