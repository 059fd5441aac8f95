"""np.nditer over lazy arrays (writes reach the lazy array, a counted fallback), lnp's
creation functions with datetime64 / timedelta64 / string dtypes (NumPy's own arrays, as
lnp.asarray gives), and the ndarray methods that go through host memory (byteswap, getfield,
setfield, dump(s), data), each compared with NumPy on the same inputs."""
import io
import pickle
import warnings

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp


def _double_with(a):
    with np.nditer(a, op_flags=["readwrite"]) as it:
        for v in it:
            v[...] = 2 * v
    return a


def _add_one_without_with(a):
    for v in np.nditer(a, op_flags=["readwrite"]):
        v[...] = v + 1
    return a


def _multi_index_writeonly(a):
    it = np.nditer(a, flags=["multi_index"], op_flags=["writeonly"])
    while not it.finished:
        it[0] = it.multi_index[0] * 10 + it.multi_index[-1]
        it.iternext()
    return a


def _per_operand_flags(a):
    b = a[::-1] * 1
    with np.nditer([a, b], op_flags=[["readwrite"], ["readonly"]]) as it:
        for x, y in it:
            x[...] = x * 3 - y
    return a, b


def _buffered_cast(a):
    with np.nditer(a, flags=["external_loop", "buffered"], op_flags=["readwrite"],
                   op_dtypes=["float64"], casting="unsafe") as it:
        for x in it:
            x[...] = x * 2.5
    return a


def _allocated_output(a):
    with np.nditer([a, None]) as it:
        for x, z in it:
            z[...] = x * x
        return it.operands[1]


WRITERS = {"with": _double_with, "no with": _add_one_without_with,
           "multi_index": _multi_index_writeonly, "per operand": _per_operand_flags,
           "buffered cast": _buffered_cast, "allocated output": _allocated_output}


@pytest.mark.parametrize("name", sorted(WRITERS))
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_nditer_writes_reach_the_lazy_array(name, dtype):
    host = np.arange(12).reshape(3, 4).astype(dtype)
    want = WRITERS[name](host.copy())
    lazy = lnp.asarray(host) * 1  # pending when the iterator is made
    before = lazy + 0
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = WRITERS[name](lazy)
    for w, g in zip(want if isinstance(want, tuple) else (want,),
                    got if isinstance(got, tuple) else (got,)):
        np.testing.assert_array_equal(np.asarray(g), w)
        assert np.asarray(g).dtype == w.dtype
    assert isinstance(lazy, lnp.ndarray)
    np.testing.assert_array_equal(np.asarray(before), host)  # computed before the writes
    assert lazyx.metrics()["fallback_ops"].get("numpy.nditer", 0) >= 1


def test_nditer_reads_and_is_an_nditer():
    host = np.linspace(0, 1, 6).reshape(2, 3)
    lazy = lnp.asarray(host)
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        it = np.nditer(lazy, flags=["multi_index"])
        got = [(it.multi_index, float(v)) for v in it]
    ref = np.nditer(host, flags=["multi_index"])
    assert got == [(ref.multi_index, float(v)) for v in ref]
    # NumPy's C iterator reads the value in Python: a counted fallback, not a silent read
    assert lazyx.metrics()["fallback_ops"] == {"numpy.nditer": 1}
    assert isinstance(it, np.nditer) and isinstance(ref, np.nditer)
    assert type(np.nditer(host)) is type(ref)  # host operands: NumPy's own iterator


def _creations():
    d0, d1 = np.datetime64("2024-01-01"), np.datetime64("2024-01-08")
    return {
        "arange datetime": lambda m, a: m.arange(d0, d1),
        "arange datetime step": lambda m, a: m.arange(d0, d1, np.timedelta64(2, "D")),
        "arange timedelta": lambda m, a: m.arange(np.timedelta64(0, "h"),
                                                  np.timedelta64(5, "h")),
        "zeros timedelta": lambda m, a: m.zeros((2, 3), dtype="timedelta64[s]"),
        "ones timedelta": lambda m, a: m.ones(3, dtype="timedelta64[m]"),
        "full datetime": lambda m, a: m.full(2, d0),
        "full string": lambda m, a: m.full(3, "ab"),
        "full with dtype": lambda m, a: m.full(2, "2024-03-01", dtype="datetime64[D]"),
        "zeros_like timedelta": lambda m, a: m.zeros_like(a, dtype="timedelta64[D]"),
        "ones_like timedelta": lambda m, a: m.ones_like(a, dtype="timedelta64[h]"),
        "empty_like shape": lambda m, a: m.empty_like(a, dtype="datetime64[D]").shape,
        "full_like datetime": lambda m, a: m.full_like(a, d0, dtype="datetime64[D]"),
        "zeros_like string": lambda m, a: m.zeros_like(a, dtype="U3"),
        "ones_like bytes": lambda m, a: m.ones_like(a, dtype="S2"),
        "eye timedelta": lambda m, a: m.eye(3, dtype="timedelta64[D]"),
    }


@pytest.mark.parametrize("name", sorted(_creations()))
def test_datetime_and_string_creations_give_numpys_arrays(name):
    host = np.arange(4).reshape(2, 2)
    fn = _creations()[name]
    want = fn(np, host)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = fn(lnp, lnp.asarray(host))
    if isinstance(want, tuple):
        assert got == want
        return
    assert type(got) is np.ndarray
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _memory_methods():
    def byteswap_inplace(a):
        assert a.byteswap(inplace=True) is a
        return a

    def setfield(a):
        a.setfield(7, np.int32, 0)
        return a

    def save_dict(a):  # numpy-tutorials' NLP: np.save("parameters.npy", {"W": ..., ...})
        f = io.BytesIO()
        np.save(f, {"W": a, "b": np.zeros(2)})
        f.seek(0)
        return np.load(f, allow_pickle=True).item()["W"]

    def dump(a):
        f = io.BytesIO()
        a.dump(f)
        f.seek(0)
        return pickle.load(f)
    return {"byteswap": lambda a: a.byteswap(), "byteswap inplace": byteswap_inplace,
            "getfield": lambda a: a.getfield(np.int32, 4), "setfield": setfield,
            "dumps": lambda a: pickle.loads(a.dumps()), "dump": dump,
            "pickle.dumps": lambda a: pickle.loads(pickle.dumps(a)),
            "np.save of a dict": save_dict,
            "data": lambda a: np.array(a.data)}


@pytest.mark.parametrize("name", sorted(_memory_methods()))
def test_host_memory_methods_match_numpy(name):
    host = np.array([[1.5, -2.0, 3.25], [0.0, 1e300, -7.0]])
    fn = _memory_methods()[name]
    want = fn(host.copy())
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = fn(lnp.asarray(host) * 1)
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)
    if "dump" in name or "save" in name:  # NumPy's pickle of the value: loads as NumPy's array
        assert type(got) is np.ndarray
        assert lazyx.metrics()["fallbacks"] == 0  # an observation (cause convert), also in np.save


def test_data_is_a_read_only_view_of_a_copy():
    lazy = lnp.asarray(np.arange(4.0))
    view = lazy.data
    assert (view.format, view.shape, view.tolist()) == ("d", (4,), [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(TypeError):  # a write could not reach the lazy array: refused
        view[0] = 5.0


@pytest.mark.parametrize("dtype", ["U3", "S3", [("name", "U10"), ("age", "i4"), ("w", "f8")],
                                   [("a", "U2"), ("b", "S2")]], ids=str)
def test_zeros_of_a_string_dtype_are_empty_strings(dtype):
    """NumPy's zeros (and empty, which lazyx fills with zeros) of a string dtype, or of a
    structured one with string fields, hold zero bytes: ''. They were np.full(.., 0), which
    writes the text '0' (the Python Data Science Handbook's structured-array cell)."""
    for make in (lnp.zeros, lnp.empty):
        got = make(2, dtype=dtype)
        assert got.dtype == np.dtype(dtype)
        assert got.tolist() == np.zeros(2, dtype=dtype).tolist()
    assert lnp.ones(2, dtype=dtype).tolist() == np.ones(2, dtype=dtype).tolist()
