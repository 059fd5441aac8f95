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
