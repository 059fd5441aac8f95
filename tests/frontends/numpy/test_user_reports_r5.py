"""Outside prober's reports, round 5: each compared against NumPy on real inputs."""
import numpy as np
import pytest

import lazyx.frontends.numpy as lnp

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


# ---------------------------------------------------------------- Generator.integers
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("endpoint", [False, True])
def test_integers_cover_the_whole_dtype_range(dtype, endpoint):
    info = np.iinfo(dtype)
    high = info.max if endpoint else info.max + 1
    v = np.asarray(lnp.random.default_rng(0).integers(info.min, high, 20000, dtype=dtype,
                                                      endpoint=endpoint))
    assert v.dtype == dtype
    # both halves of the range are hit, and the extremes are approached (NumPy does the same)
    width = float(info.max) - float(info.min)
    assert float(v.min()) < float(info.min) + width * 0.01
    assert float(v.max()) > float(info.max) - width * 0.01
    if info.bits <= 8:  # small ranges: every value can be seen, both ends are
        assert v.min() == info.min and v.max() == info.max
    # low bits stay random (float offsets lost them past 2**53)
    assert len(np.unique(v.astype(np.uint64) % np.uint64(64))) == 64


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integers_uniform_on_a_range_that_overflows_the_offset(dtype):
    v = np.asarray(lnp.random.default_rng(1).integers(-100, 100, 40000, dtype=dtype))
    assert v.min() == -100 and v.max() == 99
    counts = np.bincount(v.astype(np.int64) + 100, minlength=200)
    expected = 40000 / 200
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 320  # 199 degrees of freedom: mean 199, sd ~20


def test_integers_wide_int64_spans():
    g = lnp.random.default_rng(2)
    v = np.asarray(g.integers(-2**63, 2**63 - 1, 4000))
    assert (v < 0).any() and (v > 0).any()
    w = np.asarray(g.integers(0, 2**62, 4000))
    assert 0 <= w.min() and w.max() < 2**62
    np.testing.assert_allclose(np.bincount(w % 64, minlength=64) / 4000, 1 / 64, atol=0.01)
    top = np.asarray(g.integers(2**63 - 4, 2**63 - 1, 2000, endpoint=True))
    assert set(np.unique(top)) == {2**63 - 4, 2**63 - 3, 2**63 - 2, 2**63 - 1}
    u = np.asarray(g.integers(2**64 - 3, 2**64, 600, dtype=np.uint64))
    assert set(np.unique(u)) == {2**64 - 3, 2**64 - 2, 2**64 - 1}


def test_randint_module_level_int32_full_range():
    v = np.asarray(lnp.random.randint(-2**31, 2**31, 10000, dtype=np.int32))
    assert v.min() < -2**30 and v.max() > 2**30


def test_integers_bound_errors_like_numpy():
    g, ref = lnp.random.default_rng(0), np.random.default_rng(0)
    for args, kwargs in [((5, 5), {}), ((5, 4), {"endpoint": True}),
                         ((0, 300), {"dtype": np.uint8}), ((-1, 3), {"dtype": np.uint8})]:
        with pytest.raises(ValueError) as expected:
            ref.integers(*args, **kwargs)
        with pytest.raises(ValueError, match=str(expected.value)):
            g.integers(*args, **kwargs)


# ---------------------------------------------------------------- choice, argument checks
def test_weighted_choice_without_replacement_has_no_duplicates_and_follows_p():
    g = lnp.random.default_rng(3)
    p = np.array([.6, .1, .1, .1, .1])
    firsts = []
    for _ in range(300):
        draw = np.asarray(g.choice(5, 4, replace=False, p=p))
        assert len(set(draw.tolist())) == 4
        firsts.append(draw[0])
    # the first pick is a draw from p (as NumPy's sequential sampling): item 0 about 60%
    assert 0.5 < np.mean(np.array(firsts) == 0) < 0.7
    lazy_p = np.asarray(g.choice(5, 5, replace=False, p=lnp.asarray(p)))
    assert sorted(lazy_p.tolist()) == [0, 1, 2, 3, 4]
    picks = np.asarray(g.choice(lnp.asarray(np.array([10., 20., 30.])), 2, replace=False,
                                p=[0.5, 0.5, 0.0]))
    assert sorted(picks.tolist()) == [10., 20.]


@pytest.mark.parametrize("call", [
    lambda g: g.choice(2, p=[0.5, 0.6]),
    lambda g: g.choice(2, p=[1.5, -0.5]),
    lambda g: g.choice(2, p=[np.nan, 1.0]),
    lambda g: g.choice(2, p=[[0.5, 0.5]]),
    lambda g: g.choice(5, 4, replace=False, p=[.6, .1, .1, .1, .1, 0]),
    lambda g: g.choice(3, 4, replace=False),
    lambda g: g.choice(3, 3, replace=False, p=[1.0, 0.0, 0.0]),
    lambda g: g.choice(-1),
    lambda g: g.choice(np.array([])),
    lambda g: g.normal(0, -1.0),
    lambda g: g.normal(0, [1.0, -1.0]),
    lambda g: g.exponential(-2.0),
    lambda g: g.uniform(1.0, 0.0),
], ids=range(13))
def test_random_argument_errors_are_numpys(call):
    with pytest.raises(ValueError) as expected:
        call(np.random.default_rng(0))
    with pytest.raises(ValueError) as got:
        call(lnp.random.default_rng(0))
    assert str(got.value) == str(expected.value)


def test_uniform_overflow_like_numpy():
    with pytest.raises(OverflowError, match="high - low range exceeds valid bounds"):
        lnp.random.default_rng(0).uniform(0, np.inf)


@pytest.mark.parametrize("low,high", [
    (np.zeros(3), np.arange(1, 4)), ([0, 1], [1, 2]), (0, [1, 2]), ([[0], [-10]], [1, 2, 3]),
])
def test_uniform_with_array_and_list_bounds(low, high):
    got = np.asarray(lnp.random.default_rng(0).uniform(low, high))
    expected = np.random.default_rng(0).uniform(low, high)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    lo, hi = np.broadcast_arrays(np.asarray(low, float), np.asarray(high, float))
    assert (lo <= got).all() and (got < hi).all()


def test_integers_and_normal_with_list_bounds():
    g = lnp.random.default_rng(0)
    v = np.asarray(g.integers([0, 5], 10, size=(500, 2)))
    assert v[:, 0].min() == 0 and v[:, 1].min() == 5 and v.max() == 9
    z = np.asarray(g.normal([0.0, 100.0], 1.0, size=(500, 2)))
    assert abs(z[:, 1].mean() - 100) < 0.5


def test_choice_of_strings_is_numpys_host_choice():
    g = lnp.random.default_rng(0)
    with pytest.warns(RuntimeWarning, match="no lowering"):
        draw = g.choice(['a', 'b'], 3)
    assert draw.shape == (3,) and set(draw.tolist()) <= {'a', 'b'}


# ---------------------------------------------------------------- var/std: where=, mean=
def _sample(shape, dtype, seed):
    r = np.random.default_rng(seed)
    x = r.normal(3.0, 2.0, shape) * 4
    if np.dtype(dtype).kind == "c":
        x = x + 1j * r.normal(size=shape)
    return x.astype(dtype)


@pytest.mark.parametrize("func", [np.var, np.std])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.complex128])
@pytest.mark.parametrize("shape,axis", [((4, 3), 0), ((4, 3), 1), ((2, 3, 5), (0, 2)),
                                        ((6,), None), ((3, 4), None)])
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std_where_and_mean_match_numpy(func, dtype, shape, axis, ddof):
    x = _sample(shape, dtype, 0)
    where = np.random.default_rng(1).random(shape) < 0.7
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    got = func(lnp.asarray(x), axis=axis, ddof=ddof, where=where)
    np.testing.assert_allclose(np.asarray(got), func(x, axis=axis, ddof=ddof, where=where),
                               rtol=rtol)
    got = func(lnp.asarray(x), axis=axis, ddof=ddof, where=lnp.asarray(where), keepdims=True)
    np.testing.assert_allclose(np.asarray(got), func(x, axis=axis, ddof=ddof, where=where,
                                                     keepdims=True), rtol=rtol)
    m = np.mean(x, axis=axis, keepdims=True) + 1  # deliberately not the mean: it is used
    got = func(lnp.asarray(x), axis=axis, ddof=ddof, mean=lnp.asarray(m))
    np.testing.assert_allclose(np.asarray(got), func(x, axis=axis, ddof=ddof, mean=m),
                               rtol=rtol)


def test_var_mean_of_the_report():
    a = np.arange(12.0).reshape(4, 3) ** 2
    m = np.array([[4.0, 5.0, 6.0]])
    np.testing.assert_allclose(np.asarray(np.var(lnp.asarray(a), axis=0, mean=lnp.asarray(m))),
                               np.var(a, axis=0, mean=m))
    np.testing.assert_allclose(np.asarray(lnp.asarray(a).std(axis=0, mean=m)),
                               a.std(axis=0, mean=m))


@pytest.mark.parametrize("func", [np.nanvar, np.nanstd])
def test_nanvar_nanstd_where_mean_correction_match_numpy(func):
    a = _sample((4, 3), np.float64, 2)
    a[1, 1] = np.nan
    where = np.random.default_rng(1).random(a.shape) < 0.8
    m = np.nanmean(a, axis=0, keepdims=True)
    for kwargs in [{"where": where}, {"mean": m}, {"correction": 1}]:
        np.testing.assert_allclose(np.asarray(func(lnp.asarray(a), axis=0, **kwargs)),
                                   func(a, axis=0, **kwargs))


# ---------------------------------------------------------------- median of empty slices
@pytest.mark.parametrize("shape,axis", [((0,), None), ((4, 0), 1), ((4, 0), None),
                                        ((0, 3), 0), ((2, 0, 3), (0, 1))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_median_of_empty_slices_is_nan_like_numpy(shape, axis, dtype):
    a = np.zeros(shape, dtype)
    with pytest.warns(RuntimeWarning):
        expected = np.median(a, axis=axis)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        got = np.asarray(np.median(lnp.asarray(a), axis=axis))
    assert got.shape == np.shape(expected) and got.dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------- astype(copy=False)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.complex64])
def test_astype_copy_false_same_dtype_is_the_array(dtype):
    host = np.arange(6).reshape(2, 3).astype(dtype)
    x = lnp.asarray(host)
    assert host.astype(dtype, copy=False) is host  # what NumPy does
    assert x.astype(x.dtype, copy=False) is x
    assert x.astype(dtype, copy=False) is x
    assert np.astype(x, dtype, copy=False) is x
    assert lnp.astype(x, dtype, copy=False) is x
    copied = x.astype(dtype)
    assert copied is not x
    other = x.astype(np.float64 if dtype != np.float64 else np.float32, copy=False)
    assert other is not x and other.dtype != x.dtype
    np.testing.assert_array_equal(np.asarray(other), host.astype(other.dtype))


# ---------------------------------------------------------------- namespace gaps
_A = np.random.default_rng(5).normal(size=(4, 4))
_V = np.random.default_rng(6).normal(size=8)
FORWARDED = [
    ("allclose", (_A, _A)), ("isclose", (_A, _A + 1e-9)), ("array_equal", (_A, _A)),
    ("cov", (_A,)), ("corrcoef", (_A,)), ("median", (_A,)), ("percentile", (_A, 30)),
    ("quantile", (_A, 0.3)), ("nanmean", (_A,)), ("nanstd", (_A,)), ("nansum", (_A,)),
    ("average", (_A,)), ("kron", (_A, _A)), ("convolve", (_V, _V)), ("around", (_A, 2)),
    ("isin", (_V, _V[:3])), ("interp", (_V, np.sort(_V), _V)), ("trapezoid", (_V,)),
    ("gradient", (_V,)), ("cross", (_A[:, :3], _A[:, 1:])), ("histogram", (_V,)),
    ("bincount", (np.array([0, 1, 1, 3]),)), ("unravel_index", (np.array([3, 7]), (2, 4))),
]


def _same(got, expected):
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _same(g, e)
        return
    got = np.asarray(got)
    assert got.shape == np.shape(expected) and got.dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(got, expected, rtol=1e-10)


@pytest.mark.parametrize("name,args", FORWARDED, ids=[f[0] for f in FORWARDED])
def test_forwarded_names_are_numpys_on_lazy_arrays(name, args):
    lazy = [lnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    got = getattr(lnp, name)(*lazy)
    _same(got, getattr(np, name)(*[np.asarray(a) if isinstance(a, np.ndarray) else a
                                   for a in args]))
    _same(got, getattr(np, name)(*lazy))


def test_forwarded_host_helpers_and_submodules():
    assert lnp.ix_ is np.ix_ and lnp.triu_indices is np.triu_indices
    x = lnp.asarray(np.zeros((3, 3)))
    lnp.fill_diagonal(x, 2.0)
    np.testing.assert_array_equal(np.asarray(x), np.eye(3) * 2)
    lnp.put(x, [0, 1], [5.0, 6.0])
    assert np.asarray(x)[0, :2].tolist() == [5.0, 6.0]
    m = lnp.asarray(_A)
    _same(lnp.linalg.multi_dot([m, m, m]), np.linalg.multi_dot([_A, _A, _A]))
    # (lowered since: SVD rounding, so zeros of the exact answer differ by ~1e-15)
    np.testing.assert_allclose(np.asarray(lnp.linalg.lstsq(m, m[:, 0])[0]),
                               np.linalg.lstsq(_A, _A[:, 0])[0], atol=1e-12)
    _same(lnp.linalg.cond(m), np.linalg.cond(_A))
    _same(lnp.fft.fft2(m), np.fft.fft2(_A))
    _same(lnp.fft.ifft2(m), np.fft.ifft2(_A))
    _same(lnp.fft.rfft2(m), np.fft.rfft2(_A))
    assert lnp.linalg.LinAlgError is np.linalg.LinAlgError
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        lnp.no_such_name
    assert "allclose" in dir(lnp)


def test_module_level_random_distributions_are_keyed_draws():
    lnp.random.seed(3)
    a = np.asarray(lnp.random.gamma(2.0, size=5))
    lnp.random.seed(3)
    b = np.asarray(lnp.random.gamma(2.0, size=5))
    np.testing.assert_array_equal(a, b)
    assert (a > 0).all()
    assert lnp.random.SeedSequence is np.random.SeedSequence


def test_dtype_names_are_numpys_scalar_types():
    v = lnp.float32(1.5)
    assert v == np.float32(1.5) and type(v) is np.float32
    assert isinstance(v, lnp.floating) and isinstance(lnp.int8(3), lnp.integer)
    for name in ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64", "complex64", "complex128"]:
        assert getattr(lnp, name) is getattr(np, name)
        x = lnp.ones(2, dtype=getattr(lnp, name))
        assert x.dtype == getattr(lnp, name) and x.dtype == np.dtype(name)
    info = lnp.__array_namespace_info__()
    assert info.default_dtypes() == np.__array_namespace_info__().default_dtypes()
    assert lnp.float32 in info.dtypes(kind="real floating").values()
    assert np.finfo(lnp.float32).bits == 32 and lnp.finfo(lnp.float32).bits == 32


# ---------------------------------------------------------------- NumPy's signatures
_M = np.random.default_rng(7).normal(size=(5, 5))
_S = _M + _M.T
_W = np.random.default_rng(8).normal(size=12)
SIGNATURES = [
    ("fft n", lambda m, x, v: m.fft.fft(v, 16)),
    ("fft n axis norm", lambda m, x, v: m.fft.fft(x, 4, 0, "ortho")),
    ("ifft norm None", lambda m, x, v: m.fft.ifft(v, None, -1, None)),
    ("irfft n", lambda m, x, v: m.fft.irfft(m.fft.rfft(v), 12)),
    ("rfft axis kw", lambda m, x, v: m.fft.rfft(x, axis=0)),
    ("hfft n", lambda m, x, v: m.fft.hfft(v, 8)),
    ("fftn s axes", lambda m, x, v: m.fft.fftn(x, (3, 4), (0, 1))),
    ("irfftn s", lambda m, x, v: m.fft.irfftn(x, (5, 8))),
    ("fft2", lambda m, x, v: m.fft.fft2(x)), ("ifft2 s", lambda m, x, v: m.fft.ifft2(x, (4, 4))),
    ("rfft2", lambda m, x, v: m.fft.rfft2(x)), ("irfft2", lambda m, x, v: m.fft.irfft2(x)),
    ("fftfreq d", lambda m, x, v: m.fft.fftfreq(8, 0.01)),
    ("rfftfreq d", lambda m, x, v: m.fft.rfftfreq(9, 0.5)),
    ("fftshift axes", lambda m, x, v: m.fft.fftshift(x, 0)),
    ("ifftshift axes", lambda m, x, v: m.fft.ifftshift(x, (0, 1))),
    ("linspace endpoint", lambda m, x, v: m.linspace(0, 1, 5, False)),
    ("linspace retstep", lambda m, x, v: m.linspace(0, 1, 5, True, True)[0]),
    ("svd full_matrices", lambda m, x, v: m.linalg.svd(x, False)[1]),
    ("svd compute_uv", lambda m, x, v: m.linalg.svd(x, compute_uv=False)),
    ("qr r", lambda m, x, v: abs(m.linalg.qr(x, mode="r"))),
    ("eigh UPLO", lambda m, x, v: m.linalg.eigh(m.asarray(_S) if m is lnp else _S,
                                                UPLO="U")[0]),
    ("eigvalsh UPLO", lambda m, x, v: m.linalg.eigvalsh(x, "U")),
    ("pinv rcond", lambda m, x, v: m.linalg.pinv(x, rcond=1e-10)),
    ("pinv default", lambda m, x, v: m.linalg.pinv(x)),
    ("matrix_rank tol", lambda m, x, v: m.linalg.matrix_rank(x, tol=1e-3)),
    ("matrix_rank rtol", lambda m, x, v: m.linalg.matrix_rank(x, rtol=0.5)),
    ("multi_dot", lambda m, x, v: m.linalg.multi_dot([x, x, x])),
    ("sum a", lambda m, x, v: m.sum(a=x)), ("prod a", lambda m, x, v: m.prod(a=v[:4])),
    ("mean a", lambda m, x, v: m.mean(a=x, axis=0)), ("var a", lambda m, x, v: m.var(a=x)),
    ("std a", lambda m, x, v: m.std(a=x, ddof=1)), ("max a", lambda m, x, v: m.max(a=x)),
    ("min a", lambda m, x, v: m.min(a=x, axis=1)), ("all a", lambda m, x, v: m.all(a=x > -9)),
    ("any a", lambda m, x, v: m.any(a=x > 0)), ("argmax a", lambda m, x, v: m.argmax(a=x)),
    ("cumsum a", lambda m, x, v: m.cumsum(a=v)), ("sort a", lambda m, x, v: m.sort(a=v)),
]


@pytest.mark.parametrize("call", [s[1] for s in SIGNATURES], ids=[s[0] for s in SIGNATURES])
def test_numpy_signatures_are_accepted(call):
    expected = call(np, _M, _W)
    got = call(lnp, lnp.asarray(_M), lnp.asarray(_W))
    _same(got, expected)
    # a plain numpy call on lazy arrays takes the same route
    _same(call(np, lnp.asarray(_M), lnp.asarray(_W)), expected)


def test_asanyarray_and_ascontiguousarray_stay_lazy():
    x = lnp.asarray(_V)
    for name in ("asanyarray", "ascontiguousarray"):
        y = getattr(lnp, name)(x)
        assert isinstance(y, lnp.ndarray)
        _same(y, getattr(np, name)(_V))
        _same(getattr(lnp, name)(_V.tolist(), np.float32), getattr(np, name)(_V, np.float32))
