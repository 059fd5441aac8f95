"""Calls third-party libraries make on lazy arrays, against NumPy: column-major reshapes
(MATLAB ports, `vec()`), the Array API namespace's unique_* functions agreeing on order
(scikit-learn's array-API path), and questions that need no values -- np.iterable (matplotlib
asks it of every plotted array), np.shares_memory / may_share_memory (scikit-learn's
copy checks) -- answered without a sync or a fallback; scipy.special's ufuncs and einops
(neither a dependency) on lazy arrays."""
import os
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.numpy as lnp
from numpy_checks import assert_matches

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import shared  # noqa: E402  (tests/shared.py)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_column_major_reshapes_are_numpys(dims, data):
    x = np.arange(float(np.prod(dims))).reshape(dims)
    size = x.size
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    first = data.draw(st.sampled_from(divisors))
    target = data.draw(st.sampled_from([(size,), (first, size // first), (-1, first),
                                        (first, -1, 1)]))
    order = data.draw(st.sampled_from(["F", "A", "C"]))
    a = lnp.asarray(x)
    np.testing.assert_array_equal(np.asarray(a.reshape(target, order=order)),
                                  x.reshape(target, order=order))
    np.testing.assert_array_equal(np.asarray(np.reshape(a, target, order=order)),
                                  np.reshape(x, target, order=order))
    for flat in ("F", "A", "K", "C"):
        np.testing.assert_array_equal(np.asarray(a.ravel(flat)), x.ravel(flat))
        np.testing.assert_array_equal(np.asarray(np.ravel(a, order=flat)),
                                      np.ravel(x, order=flat))


def test_flatten_in_fortran_order_and_bad_orders():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(lnp.asarray(x).flatten("F")), x.flatten("F"))
    for order in ("K", "X"):
        with pytest.raises(ValueError):
            x.reshape(3, 2, order=order)
        with pytest.raises(ValueError):
            lnp.asarray(x).reshape(3, 2, order=order)


def test_the_namespaces_unique_functions_agree_on_order():
    x = lnp.asarray(np.array([3, 1, 3, 0, 2, 1]))
    values = np.asarray(lnp.unique_values(x))
    np.testing.assert_array_equal(values, [0, 1, 2, 3])
    for result in (lnp.unique_counts(x), lnp.unique_inverse(x), lnp.unique_all(x)):
        np.testing.assert_array_equal(np.asarray(result.values), values)


def test_questions_that_need_no_values_run_nothing():
    y = lnp.asarray(np.arange(4.0)) * 2.0
    host = np.arange(4.0)
    lazyx.sync()
    lazyx.reset_metrics()
    assert np.iterable(y) and not np.iterable(lnp.asarray(np.float64(1.0)))
    assert np.may_share_memory(y, y) and np.shares_memory(y, y)
    assert np.may_share_memory(y, y[1:]) and np.shares_memory(y, y[1:])  # a view, as NumPy's
    assert not np.shares_memory(y[:1], y[1:]) and not np.shares_memory(y, host)
    assert not np.may_share_memory(lnp.asarray(np.zeros(0)), lnp.asarray(np.zeros(0)))
    m = lazyx.metrics()
    assert m["syncs"] == 0 and m["fallback_ops"] == {}
    assert list(y) == [0.0, 2.0, 4.0, 6.0]  # iterating still reads the values


def test_base_is_numpys():
    """Libraries test `x.base is None` before they write into x: an array lazyx made owns its
    value, a view's base is the array it was made from (as NumPy's)."""
    x = lnp.asarray(np.arange(4.0))
    assert x.base is None and x[1:].base is x and x[1:][::2].base is x
    assert (x + 1).base is None and x[[0, 1]].base is None and x[0].base is None


_REALS = [-np.inf, -30.0, -3.5, -1.0, -0.5, -0.0, 0.0, 1e-3, 0.3, 0.5, 0.7, 1.0, 2.5, 9.0,
          np.inf, np.nan]
_PROBABILITIES = [-0.5, 0.0, 1e-8, 0.01, 0.3, 0.5, 0.6, 0.9, 0.999, 1.0, 1.5, np.nan]
_PAIRS = ([0.0, 0.0, 0.0, 0.0, 1.0, 2.0, -1.0, 0.5, np.nan, 3.0, 1.0],
          [0.0, -1.0, np.nan, 2.0, 0.0, 3.0, 2.0, -0.5, 1.0, np.inf, -1.0])
_SPECIAL_INPUTS = {  # scipy.special name -> its operands, edge values included
    **dict.fromkeys(["expit", "log_expit", "erf", "erfc", "erfcx", "ndtr", "log_ndtr",
                     "gammaln", "digamma", "i0", "i0e", "i1", "i1e", "k0e", "entr", "expm1",
                     "log1p", "exp2", "cbrt"], (_REALS,)),
    "logit": (_PROBABILITIES,), "ndtri": (_PROBABILITIES,),
    "erfinv": ([-1.5, -1.0, -0.7] + _PROBABILITIES,),
    "erfcinv": ([2 * p for p in _PROBABILITIES] + [1.999, 2.0],),
    **dict.fromkeys(["xlogy", "xlog1py", "rel_entr", "kl_div"], _PAIRS),
}


# float32: one function of each kind (native float32, evaluated in float64 and rounded)
_FLOAT32_NAMES = ["expit", "logit", "xlogy", "gammaln", "ndtri", "i0e"]


@pytest.mark.parametrize("dtype,names", [
    pytest.param("float64", list(_SPECIAL_INPUTS), id="float64"),
    pytest.param("float32", _FLOAT32_NAMES, id="float32")])
def test_scipy_special_ufuncs_stay_lazy_and_match_scipy(dtype, names):
    """scipy.special's functions are ufuncs: those lazyx lowers give scipy's numbers and
    dtypes (edges included) with no fallback and no sync until read; all in one program
    (XLA compiles these series slowly: 13 s for the float64 set)."""
    special = pytest.importorskip("scipy.special")
    lazyx.sync()
    lazyx.reset_metrics()
    hosts, lazies = {}, {}
    for name in names:
        operands = _SPECIAL_INPUTS[name]
        arrays = [np.array(v, dtype=dtype) for v in operands]
        with np.errstate(all="ignore"):
            hosts[name] = getattr(special, name)(*arrays)
        lazies[name] = getattr(special, name)(*[lnp.asarray(a) for a in arrays])
    ints = lnp.asarray(np.array([-2, 0, 3]))
    lazies["expit of ints"], hosts["expit of ints"] = special.expit(ints), \
        special.expit(np.array([-2, 0, 3]))
    assert lazyx.metrics()["fallback_ops"] == {} and lazyx.metrics()["syncs"] == 0
    rtol = 5e-6 if dtype == "float32" else 1e-10
    for name, expected in hosts.items():
        got = np.asarray(lazies[name])
        assert got.dtype == expected.dtype, name
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-30, equal_nan=True,
                                   err_msg=name)


@pytest.mark.filterwarnings("ignore:lazyx")  # warned once per process: the counts are checked
def test_scipy_special_ufuncs_without_a_lowering_are_named_as_scipys():
    special = pytest.importorskip("scipy.special")
    x = np.array([0.5, 2.0])
    lazyx.reset_metrics()
    got = special.betaln(lnp.asarray(x), 1.0)
    z = np.array([1 + 1j, -0.5j])  # scipy's complex loops: run by scipy
    np.testing.assert_allclose(np.asarray(got), special.betaln(x, 1.0))
    np.testing.assert_allclose(np.asarray(special.erf(lnp.asarray(z))), special.erf(z))
    assert set(lazyx.metrics()["fallback_ops"]) == {"scipy.special.betaln",
                                                    "scipy.special.erf"}


def test_einops_on_lazy_arrays_is_numpys_and_stays_lazy():
    """einops (not a dependency) finds lazyx's backend for lazy arrays, however the imports
    were ordered (here einops comes after lazyx); every call is traced, none read."""
    einops = pytest.importorskip("einops")
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    lazyx.sync()
    lazyx.reset_metrics()
    a = lnp.asarray(x)
    calls = [lambda t: einops.rearrange(t, "b c w -> (b w) c"),
             lambda t: einops.reduce(t, "b c w -> b w", "max"),
             lambda t: einops.reduce(t, "b c w -> c", "mean"),
             lambda t: einops.repeat(t, "b c w -> b c w r", r=2),
             lambda t: einops.einsum(t, t, "b c w, b d w -> b c d"),
             lambda t: einops.pack([t, t[:, :1]], "b * w")[0]]
    lazy = [call(a) for call in calls]
    assert einops.parse_shape(a, "b c w") == {"b": 2, "c": 3, "w": 4}
    assert lazyx.metrics()["fallback_ops"] == {} and lazyx.metrics()["syncs"] == 0
    for call, got in zip(calls, lazy):
        assert isinstance(got, lnp.ndarray)
        assert_matches(got, call(x))
    host = einops.asnumpy(lazy[0])
    assert type(host) is np.ndarray and lazyx.metrics()["sync_causes"].get("fallback") is None


def test_einops_imported_before_lazyx_finds_its_backend():
    pytest.importorskip("einops")
    out = shared.program_output(
        "import einops, numpy as np, lazyx.frontends.numpy as lnp\n"
        "print(einops.rearrange(lnp.asarray(np.arange(6.0).reshape(2, 3)), 'a b -> b a')"
        ".tolist())")
    assert out == [str(np.arange(6.0).reshape(2, 3).T.tolist())]


def test_scipy_code_reading_a_lazy_array_is_a_counted_fallback():
    """scipy.ndimage / scipy.signal convert their input with np.asarray in scipy's own code: a
    host read the user did not write, so it is counted and warned under the name the user
    called (DESIGN principle 9), as NumPy's own Python code's reads are; the user's own
    np.asarray stays an observation."""
    ndimage = pytest.importorskip("scipy.ndimage")
    x = np.arange(16.0).reshape(4, 4)
    lazyx.reset_metrics()
    with pytest.warns(RuntimeWarning, match="scipy's own code in scipy.ndimage.uniform_filter"):
        got = ndimage.uniform_filter(lnp.asarray(x) * 2.0, 3)
    np.testing.assert_allclose(got, ndimage.uniform_filter(x * 2.0, 3))
    m = lazyx.metrics()
    assert m["fallback_ops"] == {"scipy.ndimage.uniform_filter": 1}
    assert m["sync_causes"] == {"fallback": 1}
    np.asarray(lnp.asarray(x) + 1.0)
    assert lazyx.metrics()["sync_causes"] == {"fallback": 1, "convert": 1}


@pytest.mark.parametrize("kind", ["Polynomial", "Chebyshev", "Legendre", "Hermite"])
@pytest.mark.parametrize("domain", [None, (-2.0, 3.0)])
def test_calling_a_numpy_polynomial_on_a_lazy_array_stays_lazy(kind, domain):
    """numpy.polynomial's __call__ mapped its argument through np.asanyarray, a host read per
    call (numpy-tutorials' fractals evaluate a Polynomial on the whole grid every step);
    the domain map is lazy now and the evaluation after it was already plain arithmetic."""
    cls = getattr(np.polynomial, kind)
    p = cls([1.0, -2.0, 0.5, 0.25], **({} if domain is None else {"domain": domain}))
    for host in (np.linspace(-1.5, 2.5, 7), np.linspace(-1, 1, 6).astype(np.float32)):
        want = p(host)
        lazyx.reset_metrics()
        got = p(lnp.asarray(host))
        assert isinstance(got, lnp.ndarray)
        assert lazyx.metrics()["fallbacks"] == 0 and lazyx.metrics()["syncs"] == 0
        assert_matches(got, want, rtol=1e-12)
    assert np.polynomial.polyutils.mapdomain(2.0, (0, 4), (-1, 1)) == 0.0  # (host: NumPy's)


@pytest.mark.parametrize("reduce", [np.mean, np.sum, np.argmax, np.max, np.std])
def test_a_reduction_of_a_list_of_lazy_values_is_one_cut_and_one_fallback(reduce):
    """NumPy converts a list element by element (reading each twice): one cut for all the
    pending elements, and the call counted once, not twice per element."""
    base = np.linspace(0.5, 3.0, 5)
    x = lnp.asarray(base)
    values = [x[i] * 2.0 + 1.0 for i in range(5)]
    before = lazyx.metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (warned once per process)
        result = reduce(values)
    after = lazyx.metrics()
    assert result == reduce([b * 2.0 + 1.0 for b in base])
    assert after["syncs"] - before["syncs"] == 1
    assert after["fallbacks"] - before["fallbacks"] == 1
    for _ in range(2):  # each call counted, in a loop as in one go
        values = [v + 1.0 for v in values]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            reduce(values)
    assert lazyx.metrics()["fallbacks"] - after["fallbacks"] == 2
    first, second = [x[i] * 3.0 for i in range(5)], [x[i] * 4.0 for i in range(5)]
    before = lazyx.metrics()["fallbacks"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reduce(first)  # back to back, nothing traced between: two calls all the same
        reduce(second)
    assert lazyx.metrics()["fallbacks"] - before == 2
