"""Writing lazy arrays out -- files, strings, bytes -- and np.testing's comparisons are the
user asking for the values: observations (cause "convert"), with NumPy's own output, and
never counted as fallbacks."""
import io

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp


def _pair():
    host = np.arange(12.0).reshape(3, 4) / 8  # exact in binary: XLA and NumPy agree to the bit
    return host * 3 - 1, lnp.asarray(host) * 3 - 1  # the lazy one is still pending


def _through_bytes(write, read):
    buffer = io.BytesIO()
    write(buffer)
    buffer.seek(0)
    return read(buffer)


WRITERS = {
    "save": (lambda a, b: np.save(b, a), np.load),
    "savez": (lambda a, b: np.savez(b, x=a, y=a[0]), lambda b: dict(np.load(b))),
    "savez_compressed": (lambda a, b: np.savez_compressed(b, x=a), lambda b: dict(np.load(b))),
    "savetxt": (lambda a, b: np.savetxt(b, a, fmt="%.6f"), lambda b: b.getvalue()),
    "tofile": (lambda a, b: b.write(a.tobytes()), lambda b: b.getvalue()),
}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_writing_a_lazy_array_is_an_observation_with_numpys_output(name):
    want_host, lazy = _pair()
    write, read = WRITERS[name]
    want = _through_bytes(lambda b: write(want_host, b), read)
    lazyx.reset_metrics()
    got = _through_bytes(lambda b: write(lazy, b), read)
    metrics = lazyx.metrics()
    assert metrics["fallback_ops"] == {}
    assert metrics["sync_causes"].get("convert", 0) >= 1
    if isinstance(want, dict):
        assert want.keys() == got.keys()
        for k in want:
            np.testing.assert_array_equal(got[k], want[k])
    elif isinstance(want, np.ndarray):
        np.testing.assert_array_equal(got, want)
    else:
        assert got == want


def test_tofile_and_tobytes_match_numpy(tmp_path):
    want, lazy = _pair()
    assert lazy.tobytes() == want.tobytes() and lazy.tobytes("F") == want.tobytes("F")
    lazy.tofile(tmp_path / "lazy.bin")
    np.testing.assert_array_equal(np.fromfile(tmp_path / "lazy.bin").reshape(3, 4), want)
    lazy.tofile(tmp_path / "lazy.txt", sep=",")
    assert (tmp_path / "lazy.txt").read_text() == ",".join(map(str, want.ravel()))


@pytest.mark.parametrize("fn", [np.array2string, np.array_repr, np.array_str])
def test_array_to_string_functions_match_numpy(fn):
    want, lazy = _pair()
    lazyx.reset_metrics()
    assert fn(lazy) == fn(want)
    assert lazyx.metrics()["fallback_ops"] == {}


def test_np_testing_compares_as_an_observation():
    want, lazy = _pair()
    lazyx.reset_metrics()
    np.testing.assert_allclose(lazy, want)
    np.testing.assert_array_equal(lazy, want)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(lazy + 1, want)
    assert lazyx.metrics()["fallback_ops"] == {}
