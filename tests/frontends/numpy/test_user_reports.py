"""Divergences from NumPy a user found (an exploratory test report), each checked against
the installed NumPy itself on real inputs."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyx.frontends.numpy as lnp

_INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def _outcome(fn, *args):
    """fn's result as a host array, or its exception's type and message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args)
        return "ok", np.asarray(out).dtype, np.asarray(out).tolist()
    except Exception as err:  # noqa: BLE001 -- the exception is what is compared
        return type(err), str(err)


def _same_as_numpy(fn, *hosts):
    expected = _outcome(fn, *hosts)
    got = _outcome(fn, *[lnp.asarray(h) if isinstance(h, np.ndarray) else h for h in hosts])
    assert got == expected


# ---------------------------------------------------------------- out-of-range Python ints

_BOUND = st.one_of(st.none(), st.integers(-2**64, 2**64), st.sampled_from(
    [-1, 0, 127, 128, 255, 256, -129, -32769, 65536, 2**31, 2**63 - 1, 2**63, 2**64 - 1]))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_INTS), _BOUND, _BOUND, st.sampled_from([None, "int16", "float32"]))
def test_clip_drops_a_python_int_bound_past_the_dtype_end(dtype, lo, hi, out_dtype):
    # np.clip(uint8_image, -5, 150) clips in NumPy 2 (the bound is never reached); a bound
    # inside the far side of the range still raises the ufunc's OverflowError
    host = np.array([0, 1, 100, np.iinfo(dtype).max, np.iinfo(dtype).min], dtype)
    kwargs = {} if out_dtype is None else {"dtype": out_dtype}
    _same_as_numpy(lambda a: np.clip(a, lo, hi, **kwargs), host)
    _same_as_numpy(lambda a: a.clip(lo, hi), host)


def test_clip_repro():
    img = np.array([200, 100, 3], np.uint8)
    for lo, hi in ((-5, 150), (0, 1000), (300, 400), (-400, -300)):
        _same_as_numpy(lambda a: np.clip(a, lo, hi), img)
    _same_as_numpy(lambda a: np.clip(a, -5, 150, out=np.empty(3, np.int8)), img)
    _same_as_numpy(lambda a: np.clip(a, 1.5, 150, out=np.empty(3, np.uint8)), img)


_CALLS = {
    "minimum": lambda a, v: np.minimum(a, v), "maximum": lambda a, v: np.maximum(a, v),
    "gt": lambda a, v: a > v, "lt": lambda a, v: a < v, "eq": lambda a, v: a == v,
    "rne": lambda a, v: v != a, "add": lambda a, v: a + v, "radd": lambda a, v: v + a,
    "mul": lambda a, v: a * v, "and": lambda a, v: a & v,
    "add16": lambda a, v: np.add(a, v, dtype=np.int16),
    "where": lambda a, v: np.where(a > 1, a, v), "where2": lambda a, v: np.where(a > 1, v, a),
    "select": lambda a, v: np.select([a > 1], [a], v),
    "full_like": lambda a, v: np.full_like(a, v),
    "searchsorted": lambda a, v: np.searchsorted(np.sort(a), v),
    "searchsorted_r": lambda a, v: np.searchsorted(np.sort(a), v, side="right"),
}


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(_INTS), st.sampled_from(sorted(_CALLS)),
       st.sampled_from([-2**63 - 1, -2**63, -129, -5, -1, 0, 3, 200, 300, 1000, 2**63, 2**64]))
def test_out_of_range_python_ints_as_numpy(dtype, call, value):
    # each NumPy function's own rule: ufuncs raise OverflowError, comparisons answer,
    # where/select wrap the value, full_like raises, searchsorted places it exactly
    host = np.array([0, 1, 100, np.iinfo(dtype).max], dtype)
    _same_as_numpy(_CALLS[call], host, value)


# ---------------------------------------------------------------- datetime64 and strings

_DATES = np.array(["2024-01-01", "2024-02-01", "2024-03-01"], "datetime64[D]")
_STRS = np.array(["a", "bb", "c"])
_HOST_CALLS = {
    "astype_td": lambda d: np.datetime64("2024-01-01") + d.astype("timedelta64[D]"),
    "td_times": lambda d: np.timedelta64(1, "h") * d,
    "multiply_td": lambda d: np.multiply(d, np.timedelta64(1, "m")),
    "dates_plus": lambda d: _DATES + d, "plus_dates": lambda d: d + _DATES,
    "astype_str": lambda d: d.astype(str), "astype_bytes": lambda d: d.astype("S3"),
    "np_astype": lambda d: np.astype(d, "U2"), "char_mod": lambda d: np.char.mod("%03d", d),
    "concat_str": lambda d: np.concatenate([d, _STRS]),
    "where_str": lambda d: np.where(d > 0, "a", "b"),
    "zeros_like_str": lambda d: np.zeros_like(d, dtype="U3"),
    "strings": lambda d: np.strings.zfill(d.astype(str), 3),
}


@pytest.mark.parametrize("call", sorted(_HOST_CALLS))
def test_datetime_and_string_results_fall_back_to_numpy(call):
    # the IR has no such dtypes: NumPy computes them on the host and its array comes back,
    # a counted fallback -- where a TypeError was raised
    import lazyx
    days = np.arange(3)
    expected = _outcome(_HOST_CALLS[call], days)
    before = sum(lazyx.metrics()["fallback_ops"].values())
    result = _HOST_CALLS[call](lnp.asarray(days))
    assert type(result) is np.ndarray
    assert _outcome(lambda: result) == expected
    if call != "zeros_like_str":  # (reads no value: NumPy's np.zeros, no fallback)
        assert sum(lazyx.metrics()["fallback_ops"].values()) > before


@pytest.mark.parametrize("host", [_DATES, _STRS, np.array([b"x"]), ["a", "b"]],
                         ids=["datetime", "str", "bytes", "list"])
def test_asarray_of_an_unsupported_dtype_is_numpy_own(host):
    out = lnp.asarray(host)
    assert type(out) is np.ndarray and out.tolist() == np.asarray(host).tolist()
    assert lnp.asarray(np.arange(3), dtype="datetime64[D]").dtype == np.dtype("datetime64[D]")


# ---------------------------------------------------------------- small divergences

_X = np.arange(6.0).reshape(2, 3)
_SMALL = {
    "diff_negative": lambda a: np.diff(a, n=-1), "diff_zero": lambda a: np.diff(a, n=0),
    "einsum_cast": lambda a: np.einsum("ij,jk->ik", a, a.T, dtype=np.float32),
    "einsum_int_cast": lambda a: np.einsum("ij->", a.astype(int), dtype=np.float32),
    "einsum_same_kind": lambda a: np.einsum("ij,jk->ik", a, a.T, dtype=np.float32,
                                            casting="same_kind"),
    "einsum_up": lambda a: np.einsum("ij->", a.astype(np.float32), dtype=np.float64),
    "int_1d": lambda a: int(a[0, :1]), "float_1d": lambda a: float(a[0, :1]),
    "float_2": lambda a: float(a[0, :2]), "complex_1d": lambda a: complex(a[0, :1]),
    "float_0d": lambda a: float(a[0, 1]),
    "bool_empty": lambda a: bool(a[:0]), "bool_one": lambda a: bool(a[0, :1]),
    "bool_many": lambda a: bool(a),
    "eq_none": lambda a: a == None, "ne_none": lambda a: a != None,  # noqa: E711
    "eq_str": lambda a: a == "x", "ne_bytes": lambda a: a != b"x",
    "add_str": lambda a: a + "x", "lt_str": lambda a: a < "x",
    "trace_1d": lambda a: np.trace(a[0]), "tile_negative": lambda a: np.tile(a, -1),
    "tile_negative2": lambda a: np.tile(a, (2, -1)),
}


@pytest.mark.parametrize("call", sorted(_SMALL))
def test_small_divergences_as_numpy(call):
    _same_as_numpy(_SMALL[call], _X)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["float64", "int32", "uint8", "bool"]),
       st.lists(st.integers(0, 4), min_size=0, max_size=3),
       st.lists(st.integers(0, 5), min_size=0, max_size=3))
def test_resize_in_place_as_numpy(dtype, shape, new_shape):
    host = (np.arange(int(np.prod(shape))) % 7 + 1).astype(dtype).reshape(shape).copy()
    lazy = lnp.asarray(host)
    host.resize(new_shape, refcheck=False)
    lazy.resize(new_shape)
    assert lazy.dtype == host.dtype and lazy.shape == host.shape
    np.testing.assert_array_equal(np.asarray(lazy), host)
    lazy2 = lnp.asarray(np.arange(4.0))
    lazy2.resize(2, 3)
    assert np.asarray(lazy2).tolist() == [[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]]


def test_setflags():
    x = lnp.asarray(_X)
    assert x.setflags(write=True) is None and x.setflags(align=True) is None
    with pytest.raises(ValueError, match="WRITEBACKIFCOPY"):
        x.setflags(uic=True)
    x.setflags(write=False)  # read-only as in NumPy (test_views.py)
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        x[0] = 1
