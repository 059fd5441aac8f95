import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
import lazyx.frontends.tf as ltf  # noqa: E402


def assert_matches(lazy, eager, rtol=1e-5, atol=1e-6):
    """The lazy result equals eager TF's: value, dtype and static shape."""
    assert isinstance(lazy, ltf.Tensor), type(lazy)
    assert lazy.dtype == eager.dtype, (lazy.dtype, eager.dtype)
    assert lazy.shape == eager.shape, (lazy.shape, eager.shape)
    np.testing.assert_allclose(lazy.numpy(), eager.numpy(), rtol=rtol, atol=atol)
