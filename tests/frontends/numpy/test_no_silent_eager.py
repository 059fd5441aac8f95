"""No silent eager turn (issue 15): every public NumPy function we can call on lazy float
arrays either stays lazy or counts a fallback (lazyx.metrics()['fallback_ops']) -- never an
eager ndarray (or a read of the lazy value) that nobody was told about. `np.asarray(x)`,
`print(x)`, `float(x)` by the user are observations, not fallbacks."""
import warnings

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

# Side effects (files, global settings, help text) or no array semantics at all: not called.
_NOT_CALLED = {"save", "savez", "savez_compressed", "savetxt", "load", "loadtxt", "genfromtxt",
               "fromfile", "fromregex", "memmap", "info", "show_config", "show_runtime",
               "test", "seterr", "seterrcall", "setbufsize", "set_printoptions", "printoptions",
               "errstate", "get_include", "getbufsize", "geterr", "geterrcall",
               "get_printoptions", "lookfor", "source", "who", "nested_iters", "nditer",
               "broadcast", "ndenumerate", "ndindex", "vectorize", "frompyfunc", "asmatrix",
               "bmat", "mat", "fromfunction", "iterable"}
# Conversions to NumPy, and predicates whose answer is a Python bool: the caller asked for a
# host value, which is an observation (counted as a sync with its cause and line), as
# np.asarray(x) or bool(x) are.
_OBSERVATIONS = {"numpy.array", "numpy.asarray", "numpy.asanyarray", "numpy.ascontiguousarray",
                 "numpy.asfortranarray", "numpy.from_dlpack", "numpy.fromiter",
                 "numpy.allclose", "numpy.array_equal", "numpy.array_equiv"}
_READS = ("convert", "item", "print")  # sync causes that mean "the value was read"


def _public_functions():
    found = {}
    for module, prefix in ((np, "numpy"), (np.linalg, "numpy.linalg"), (np.fft, "numpy.fft")):
        for name in getattr(module, "__all__", dir(module)):
            fn = getattr(module, name, None)
            if name.startswith("_") or name in _NOT_CALLED or isinstance(fn, type) \
                    or not callable(fn):
                continue
            if f"{prefix}.{name}" not in _OBSERVATIONS:
                found[f"{prefix}.{name}"] = fn
    return found


FUNCTIONS = _public_functions()


def _argument_table():
    rng = np.random.default_rng(0)
    x, y = (lnp.asarray(rng.random(4) + 0.5) for _ in range(2))
    m = lnp.asarray(rng.random((3, 3)) + np.eye(3) * 3)
    return [(x,), (x, y), (m,), (m, m), (x, 2), (m, 1), (x, y, y), (x, 0.5)]


def _host_arrays(obj, found):
    if isinstance(obj, np.ndarray) and obj.dtype != object and obj.size:
        found.append(obj)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            _host_arrays(v, found)
    return found


def _first_call(fn):
    """The first argument pattern fn accepts: (result, counters before, after), or None."""
    for args in _argument_table():
        before = lazyx.metrics()
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                result = fn(*args)
        except Exception:  # noqa: BLE001 -- a pattern this function does not take
            continue
        return result, before, lazyx.metrics()
    return None


OUTCOMES = {}  # name -> "lazy", "fallback", "not called" (no pattern fits), "silent"


def _silent(name, fn):
    call = _first_call(fn)
    OUTCOMES[name] = "not called"
    if call is None:
        return None
    result, before, after = call
    OUTCOMES[name] = "fallback"
    fell_back = after["fallbacks"] > before["fallbacks"]
    if fell_back:
        return None
    OUTCOMES[name] = "silent"
    if _host_arrays(result, []):
        return f"{name}: returned an eager ndarray without a counted fallback"
    reads = {c: after["sync_causes"].get(c, 0) - before["sync_causes"].get(c, 0)
             for c in _READS}
    reads = {c: n for c, n in reads.items() if n}
    if reads:
        return f"{name}: read the lazy value ({reads}) without a counted fallback"
    OUTCOMES[name] = "lazy"
    return None


def test_the_enumeration_is_broad():
    assert len(FUNCTIONS) > 300, len(FUNCTIONS)


def test_every_public_function_is_lazy_or_a_counted_fallback():
    problems = [p for p in (_silent(n, f) for n, f in sorted(FUNCTIONS.items())) if p]
    assert not problems, "\n".join(problems)
    called = [n for n, o in OUTCOMES.items() if o != "not called"]
    assert len(called) > 250, len(called)  # the argument table must keep reaching most


def test_a_numpy_helper_reading_the_value_is_a_counted_fallback():
    x = lnp.asarray(np.arange(4.0))
    before = lazyx.metrics()["fallback_ops"].get("numpy.vectorize.__call__", 0)
    with pytest.warns(RuntimeWarning, match="numpy.vectorize"):
        out = np.vectorize(lambda v: v * 2)(x)
    assert lazyx.metrics()["fallback_ops"]["numpy.vectorize.__call__"] > before
    np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) * 2)


def test_user_observations_are_not_fallbacks():
    x = lnp.asarray(np.arange(3.0)) + 1
    before = lazyx.metrics()["fallbacks"]
    np.asarray(x), float(x[0]), str(x), x.tolist()
    assert lazyx.metrics()["fallbacks"] == before
