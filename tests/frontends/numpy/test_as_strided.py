"""numpy.lib.stride_tricks.as_strided of a lazy array (numpy-ml's `to_frames`, which framing
for mel spectrograms and MFCCs calls): a plain NumPy function, not dispatched, so it read the
array on the host (a counted fallback) and handed back a host view. It is now a gather of the
positions the strides name, a view of the lazy array, with NumPy's values."""
import warnings

import numpy as np
import pytest

import lazyx
import lazyx.frontends.numpy as lnp

_SIGNAL = np.random.default_rng(0).standard_normal(20).astype(np.float32)
_IMAGE = np.arange(30.0).reshape(5, 6)


def _strided(a, shape, strides_in_items, **kwargs):
    return np.lib.stride_tricks.as_strided(
        a, shape, tuple(s * a.itemsize for s in strides_in_items), **kwargs)


@pytest.mark.parametrize("base, shape, strides", [
    (_SIGNAL, (6, 5), (3, 1)),        # overlapping frames, hop 3
    (_SIGNAL, (4, 5), (5, 1)),        # frames that tile the signal
    (_SIGNAL, (5, 4), (1, 5)),        # the same, transposed
    (_SIGNAL, (3, 2, 4), (6, 1, 2)),  # three strides
    (_SIGNAL, (4, 3), (0, 1)),        # a repeated row (stride 0)
    (_IMAGE, (4, 5, 2, 2), (6, 1, 6, 1)),  # 2x2 patches of an image
    (_SIGNAL, (0, 5), (3, 1)),        # no frames
], ids=["frames", "tiles", "transposed", "three_axes", "stride_0", "patches", "empty"])
def test_a_strided_view_of_a_lazy_array_is_lazy_with_numpys_values(base, shape, strides):
    want = _strided(base, shape, strides)
    lazyx.reset_metrics()
    got = _strided(lnp.asarray(base) * 1, shape, strides)
    assert type(got) is lnp.ndarray and lazyx.metrics()["fallback_ops"] == {}
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.strides == want.strides
    np.testing.assert_array_equal(np.asarray(got), want)


def test_a_write_through_a_view_of_distinct_positions_reaches_the_array():
    want, lazy = _SIGNAL.copy(), lnp.asarray(_SIGNAL) * 1
    for a in (want, lazy):
        frames = _strided(a, (4, 5), (5, 1))
        frames[1:3] *= 2.0  # the second and third frames' samples
    np.testing.assert_array_equal(np.asarray(lazy), want)


def test_overlapping_windows_and_writeable_false_are_read_only():
    lazy = lnp.asarray(_SIGNAL) * 1
    for view in (_strided(lazy, (6, 5), (3, 1)), _strided(lazy, (4, 5), (5, 1),
                                                         writeable=False)):
        with pytest.raises(ValueError, match="read-only"):
            view[0, 0] = 1.0
    assert not _strided(_SIGNAL, (4, 5), (5, 1), writeable=False).flags.writeable


@pytest.mark.parametrize("shape, strides_in_bytes", [
    ((3, 4), (6, 2)),      # half an element (float32): NumPy reinterprets bytes
    ((5, 5), (16, 4)),     # reaches past the array's end (memory NumPy reads anyway)
], ids=["half_element", "past_the_end"])
def test_strides_lazyx_cannot_follow_run_numpys_own(shape, strides_in_bytes):
    lazyx.reset_metrics()
    with warnings.catch_warnings():  # (lazyx warns once per fallback name)
        warnings.simplefilter("ignore", RuntimeWarning)
        got = np.lib.stride_tricks.as_strided(lnp.asarray(_SIGNAL) * 1, shape,
                                              strides_in_bytes)
    assert lazyx.metrics()["fallback_ops"] == {"numpy.lib.stride_tricks.as_strided": 1}
    assert got.shape == shape


def test_numpys_own_for_host_arrays():
    assert type(np.lib.stride_tricks.as_strided(_SIGNAL, (2, 3), (4, 4))) is np.ndarray
