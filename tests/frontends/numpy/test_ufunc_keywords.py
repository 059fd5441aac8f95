"""A ufunc's keywords (out=, casting=, where=, dtype=) on lazy arrays, as NumPy has them.

Called as `np.add(lazy, ...)` (NEP 13) and as `lnp.add(...)` (the namespace's function), against
NumPy on the same host arrays: the result, the values written into `out` (those `where` leaves
alone included) and NumPy's error for a cast its rule refuses.
"""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyx
import lazyx.frontends.numpy as lnp

F64 = np.array([1.5, 2.5, -1.0])
F32 = np.array([0.25, -3.5, 8.0], dtype=np.float32)
I64 = np.array([1, 2, 3])
I32 = np.array([7, -8, 9], dtype=np.int32)
MASK = np.array([True, False, True])
ARRAYS = {"f64": F64, "f32": F32, "i64": I64, "i32": I32}


def _outcome(call, lazy):
    """call(namespace, convert) run on NumPy or on lazyx: every result and out as host arrays,
    or the exception NumPy (or lazyx) raised."""
    ns, convert = (lnp, lnp.asarray) if lazy else (np, np.array)
    outs = []

    def make(a):
        arr = convert(np.array(a))
        outs.append(arr)
        return arr
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (a casting= other than same_kind is counted)
            result = call(ns, make)
    except Exception as err:  # noqa: BLE001  (the error is the outcome compared)
        return err
    results = result if isinstance(result, tuple) else (result,)
    return [np.asarray(r) for r in results] + [np.asarray(o) for o in outs]


def _assert_like_numpy(call):
    want, got = _outcome(call, False), _outcome(call, True)
    if isinstance(want, Exception):
        assert isinstance(got, type(want)), (want, got)
        return
    assert not isinstance(got, Exception), got
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


CALLS = {
    "out int, unsafe": lambda ns, a: ns.add(a(F64), a(F64), out=a(I64), casting="unsafe"),
    "out f32, safe (refused)": lambda ns, a: ns.add(a(F64), a(F64), out=a(F32), casting="safe"),
    "out f32, same_kind": lambda ns, a: ns.add(a(F64), a(F64), out=a(F32)),
    "out int, same_kind (refused)": lambda ns, a: ns.multiply(a(F64), 2.0, out=a(I64)),
    "input cast, no (refused)": lambda ns, a: ns.add(a(F32), a(F64), casting="no"),
    "equiv": lambda ns, a: ns.subtract(a(F32), a(F32), casting="equiv"),
    "where keeps out": lambda ns, a: ns.add(a(F64), a(F64), out=a([9.0, 9.0, 9.0]), where=MASK),
    "where, unsafe, int out": lambda ns, a: ns.multiply(a(F64), a(F64), out=a(I64), where=MASK,
                                                         casting="unsafe"),
    "two outs, unsafe": lambda ns, a: ns.divmod(a(F64), 2.0, out=(a(I64), a(I64)),
                                                casting="unsafe"),
    "dtype": lambda ns, a: ns.add(a(I32), a(I32), dtype=np.float32),
    "out None": lambda ns, a: ns.add(a(F64), 1.0, out=None),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_keywords_as_numpy_has_them(name):
    _assert_like_numpy(CALLS[name])


@settings(max_examples=40, deadline=None)
@given(ufunc=st.sampled_from(["add", "subtract", "multiply", "maximum", "true_divide"]),
       left=st.sampled_from(sorted(ARRAYS)), right=st.sampled_from(sorted(ARRAYS)),
       out=st.sampled_from(sorted(ARRAYS)),
       casting=st.sampled_from(["no", "equiv", "safe", "same_kind", "unsafe"]),
       masked=st.booleans())
def test_any_casting_rule_into_any_out(ufunc, left, right, out, casting, masked):
    kwargs = {"casting": casting}
    if masked:
        kwargs["where"] = MASK

    def call(ns, a):
        return getattr(ns, ufunc)(a(ARRAYS[left]), a(ARRAYS[right]), out=a(ARRAYS[out]), **kwargs)
    _assert_like_numpy(call)


def test_where_into_lazy_outputs_is_a_select():
    """`where=` with every output lazy is a select into the outputs' current values (it ran on
    NumPy, a counted fallback and a sync of its operands): numpy-100's `Z[mask] *= -1`
    written lazily, `np.multiply(Z, -1, out=Z, where=mask)`, and a division guarded by its
    divisor. A mask that does not broadcast is NumPy's error."""
    z = np.arange(10.0) - 3.0
    mask = (z > 0) & (z < 5)
    calls = [lambda Z, M: np.multiply(Z, -1, out=Z, where=M),
             lambda Z, M: np.divide(1.0, Z, out=Z, where=Z != 0),
             lambda Z, M: np.add(Z, [1.0] * 10, out=Z, where=mask),
             lambda Z, M: np.sqrt(Z, out=Z, where=M)]
    for call in calls:
        want = z.copy()
        call(want, mask)
        got, m = lnp.asarray(z), lnp.asarray(mask)
        lazyx.sync()
        lazyx.reset_metrics()
        assert call(got, m) is got
        assert lazyx.metrics()["syncs"] == 0 and lazyx.metrics()["fallbacks"] == 0
        np.testing.assert_array_equal(np.asarray(got), want)
    errors = []
    for arr in (z.copy(), lnp.asarray(z)):
        with pytest.raises(ValueError) as err:
            np.add(arr, 1, out=arr, where=np.array([True, False]))
        errors.append(str(err.value))
    assert errors[0] == errors[1]
