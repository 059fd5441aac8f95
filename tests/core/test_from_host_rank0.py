"""from_host keeps the rank of 0-d arrays (np.ascontiguousarray would make them 1-d)."""
import numpy as np

from lazyx.core import runtime


def test_zero_d_array_stays_zero_d():
    node = runtime.from_host(np.array(2.5))
    assert node.shape == ()
    handle = runtime.LazyHandle(node)
    assert runtime.to_host(handle).shape == ()


def test_non_contiguous_input_is_copied_in_c_order():
    host = np.arange(12.0).reshape(3, 4).T
    node = runtime.from_host(host)
    assert node.shape == (4, 3)
    np.testing.assert_array_equal(runtime.to_host(runtime.LazyHandle(node)), host)


def test_the_device_copy_does_not_alias_the_callers_array():
    # XLA on CPU may adopt a NumPy buffer rather than copy it; the caller (a torch tensor
    # updated in place after .to(lt.device), say) must not change the lazy value
    for dtype in (np.float32, np.float64, np.int64):
        host = np.arange(16, dtype=dtype)
        handle = runtime.LazyHandle(runtime.from_host(host))
        host += 100
        np.testing.assert_array_equal(runtime.to_host(handle), np.arange(16, dtype=dtype))
