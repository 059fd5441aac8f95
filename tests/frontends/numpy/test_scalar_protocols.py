"""Where NumPy hands code a scalar (an index or a reduction that leaves no axis), a lazy 0-d
array answers what that scalar answers: hashing, round(), math.trunc, is_integer; and the
ndarray protocols NumPy code relies on besides: `a.shape = ...`, and `a ** 0.5` as np.sqrt."""
import math

import numpy as np
import pytest

import lazyx.frontends.numpy as lnp

_VALUES = np.array([1.234, -2.5, 2.5, 3.0, -0.0, 7.75])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
def test_a_0d_lazy_array_hashes_and_rounds_like_numpys_scalar(dtype):
    host = _VALUES.astype(dtype)
    lazy = lnp.asarray(host)
    for i in range(len(host)):
        scalar, value = host[i], lazy[i]
        assert hash(value) == hash(scalar)
        assert round(value) == round(scalar) and type(round(value)) is int
        rounded = round(value, 1)
        assert rounded.dtype == np.asarray(round(scalar, 1)).dtype
        # (np.round to decimals on XLA: x * 10, rounded, / 10 may land an ulp away)
        assert float(rounded) == pytest.approx(float(round(scalar, 1)), rel=1e-15)
        if dtype is np.float64:  # (a float subclass; the other scalars have no __trunc__)
            assert math.trunc(value) == math.trunc(scalar)
        else:
            with pytest.raises(TypeError):
                math.trunc(scalar)
            with pytest.raises(TypeError):
                math.trunc(value)
        assert value.is_integer() == scalar.is_integer()
    names = {1: "one", 2: "two", 5: "five"}
    assert names[lnp.asarray(host[:3]).argmax()] == names[host[:3].argmax()]
    assert {lazy[3]: "x"} == {host[3]: "x"}


def test_arrays_stay_unhashable_and_unroundable_as_in_numpy():
    lazy = lnp.asarray(_VALUES)
    for fn in (hash, round, math.trunc):
        with pytest.raises(TypeError):
            fn(lazy)
        with pytest.raises(TypeError):
            fn(_VALUES)
    with pytest.raises(AttributeError):
        lazy.is_integer()


@pytest.mark.parametrize("shape", [(2, 3), (3, -1), 6, [1, 6], (6, 1, 1)])
def test_assigning_shape_reshapes_in_place(shape):
    host, lazy = np.arange(6.0), lnp.asarray(np.arange(6.0))
    host.shape = shape
    lazy.shape = shape
    assert lazy.shape == host.shape
    np.testing.assert_array_equal(np.asarray(lazy), host)
    with pytest.raises(ValueError, match="cannot reshape array of size 6"):
        lazy.shape = (4,)
    assert lazy.shape == host.shape


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_the_half_power_operator_is_numpys_sqrt(dtype):
    host = np.array([-np.inf, -0.0, 0.0, 4.0, np.nan, 2.0, np.inf], dtype)
    with np.errstate(all="ignore"):
        for exponent in (0.5, 2, 2.0, -1.0, 1, 3.0):
            # (complex infinities through pow are XLA's own: only 0.5's are compared there)
            x = host if exponent == 0.5 or dtype is not np.complex128 else \
                host[np.isfinite(host)]
            want = x ** exponent
            got = np.asarray(lnp.asarray(x) ** exponent)
            np.testing.assert_array_equal(got, want)
            if dtype is not np.complex128:  # (the signs of complex zeros: not promised)
                finite = ~np.isnan(want)  # (nor a NaN's sign bit)
                assert (np.signbit(got) == np.signbit(want))[finite].all()
        want, lazy = host.copy(), lnp.asarray(host)
        want **= 0.5
        lazy **= 0.5
        np.testing.assert_array_equal(np.asarray(lazy), want)
        # np.power of a complex array is pow, not sqrt (finite values: see above)
        x = host[np.isfinite(host)] if dtype is np.complex128 else host
        np.testing.assert_allclose(np.asarray(np.power(lnp.asarray(x), 0.5)),
                                   np.power(x, 0.5), rtol=1e-15, atol=0)


def test_three_argument_pow_is_refused_as_numpy_refuses_it():
    with pytest.raises(TypeError) as eager:
        pow(np.array([2, 3]), 2, 3)
    with pytest.raises(TypeError) as lazy:
        pow(lnp.asarray(np.array([2, 3])), 2, 3)
    assert str(lazy.value) == str(eager.value)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int32, np.bool_,
                                   np.complex64])
def test_a_0d_lazy_array_formats_like_numpys_scalar(dtype):
    """numpy-tutorials print losses with '... Loss : {}'.format(np.mean(costs)): NumPy's
    float32 scalar formats its float's digits (0.15000000596046448), str() the short form."""
    host = np.array([0.1, 0.2, 0.7], dtype)
    lazy = lnp.asarray(host)
    for want, got in ((np.mean(host) if dtype is not np.bool_ else host.any(),
                       np.mean(lazy) if dtype is not np.bool_ else lazy.any()),
                      (host[1], lazy[1])):
        assert f"{got}" == f"{want}" and "{}".format(got) == "{}".format(want)
        assert str(got) == str(want)
        if dtype is not np.bool_ and dtype is not np.complex64:
            assert f"{got:.3f}" == f"{want:.3f}"
    assert f"{lazy}" == f"{host}"  # arrays: str()
