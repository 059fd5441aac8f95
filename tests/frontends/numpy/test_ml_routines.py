"""Routines that NumPy-written ML code reaches for and that used to run on NumPy (each read its
lazy input on the host, a counted fallback): im2col windows (sliding_window_view), padding by
edge/reflect/symmetric/wrap, np.select, ufunc.outer, np.linalg.multi_dot, matrix 2-norms and
nuclear norms, einsum with a label repeated in one operand ('ii->', 'ijij->ij'), and
np.logaddexp.reduce / logaddexp2.reduce (log-domain sums). Each is
compared with NumPy on the same inputs -- values, dtypes, shapes -- with no fallback counted,
and bad calls raise NumPy's own errors."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyx
import lazyx.frontends.numpy as lnp
from numpy_checks import assert_matches

RNG = np.random.default_rng(0)
A = RNG.standard_normal((6, 5)).astype(np.float32)
I = RNG.integers(-3, 3, (4, 5))
T = RNG.standard_normal((3, 4, 5))
windows = np.lib.stride_tricks.sliding_window_view


def lowered(fn, *arrays, rtol=None, atol=0.0):
    """fn on NumPy arrays and on lazy copies: NumPy's result, lazy, with no fallback."""
    with np.errstate(all="ignore"):
        want = fn(*arrays)
    lazyx.reset_metrics()
    got = fn(*[lnp.asarray(a) for a in arrays])
    assert lazyx.metrics()["fallback_ops"] == {}
    for g in got if isinstance(got, (tuple, list)) else (got,):
        assert isinstance(g, lnp.LazyArray), type(g)
    assert_matches(got, want, rtol=rtol, atol=atol)


def same_error(fn, *arrays):
    """fn raises on NumPy arrays; on lazy copies it raises the same type and message."""
    with pytest.raises(Exception) as want:
        fn(*arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(want.type) as got:
            fn(*[lnp.asarray(a) for a in arrays])
    assert str(got.value) == str(want.value)


# ---------------------------------------------------------------- windows and padding

@settings(max_examples=40, deadline=None)
@given(st.data())
def test_sliding_windows_match_numpy(data):
    x = data.draw(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                             elements=st.floats(-10, 10, width=32)))
    axes = data.draw(st.lists(st.integers(-x.ndim, x.ndim - 1), min_size=1, max_size=x.ndim,
                              unique_by=lambda a: a % x.ndim))
    shape = [data.draw(st.integers(1, x.shape[a])) for a in axes]
    lowered(lambda a: windows(a, shape, axis=tuple(axes)), x)


def test_im2col_convolution_is_lazy_and_matches_numpy():
    image = RNG.standard_normal((2, 3, 10, 10)).astype(np.float32)
    kernel = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    lowered(lambda x, k: np.einsum("nchwij,ocij->nohw", windows(x, (3, 3), axis=(2, 3)), k),
            image, kernel, rtol=1e-5, atol=1e-5)  # float32 sums of 27 products
    lowered(lambda x: windows(x, (2, 3)), A)  # axis=None: every axis windowed


@pytest.mark.parametrize("call", [
    lambda a: windows(a, 7, axis=0), lambda a: windows(a, -1, axis=0),
    lambda a: windows(a, (2,), axis=(0, 1)), lambda a: windows(a, (2, 2, 2)),
    lambda a: windows(a, 2, axis=3)])
def test_bad_windows_raise_numpys_errors(call):
    same_error(call, A)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from(["edge", "reflect", "symmetric", "wrap"]))
def test_index_pad_modes_match_numpy(data, mode):
    x = data.draw(hnp.arrays(data.draw(st.sampled_from([np.float32, np.int64])),
                             hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                             elements=st.integers(-50, 50)))
    widths = data.draw(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)),
                                min_size=x.ndim, max_size=x.ndim))
    lowered(lambda a: np.pad(a, widths, mode=mode), x)  # (widths beyond the axis included)
    lowered(lambda a: np.pad(a, 2, mode=mode), x)


def test_pad_errors_and_the_modes_left_to_numpy():
    same_error(lambda a: np.pad(a, -1, mode="reflect"), A)
    same_error(lambda a: np.pad(a[:0], 1, mode="reflect"), A)
    with pytest.warns(RuntimeWarning, match="numpy.pad has no lowering"):
        got = np.pad(lnp.asarray(A), 2, mode="reflect", reflect_type="odd")
    np.testing.assert_array_equal(got, np.pad(A, 2, mode="reflect", reflect_type="odd"))


# ---------------------------------------------------------------- select and ufunc.outer

@pytest.mark.parametrize("call", [
    lambda a: np.select([a > 0, a < -1], [a, a * 2]),
    lambda a: np.select([a > 0, a < -1], [a, 2], default=-1.5),  # weak Python numbers
    lambda a: np.select([a > 0], [3]),        # an int choice and default: int64
    lambda a: np.select([a > 0, a > 1], [a, a[0]], default=a[:, :1]),  # broadcast
])
@pytest.mark.parametrize("x", [A, I], ids=["float32", "int64"])
def test_select_matches_numpy(call, x):
    lowered(call, x)


@pytest.mark.parametrize("call", [
    lambda a: np.select([a], [a]), lambda a: np.select([a > 0], [a, a]),
    lambda a: np.select([], []), lambda a: np.select([a > 0], ["x"])])
def test_bad_select_raises_numpys_errors(call):
    same_error(call, I)


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.maximum, np.less,
                                   np.arctan2, np.logaddexp, np.floor_divide, np.bitwise_and])
def test_ufunc_outer_matches_numpy(ufunc):
    lowered(lambda a, b: ufunc.outer(a, b), I, I[0])
    lowered(lambda a: ufunc.outer(a, 2), I)
    lowered(lambda a: ufunc.outer(3, a), I)
    if ufunc is not np.bitwise_and:
        lowered(lambda a, b: ufunc.outer(a, b), A, T[0, 0])


def test_ufunc_outer_keywords_out_and_errors():
    lowered(lambda a: np.add.outer(a, a, dtype=np.float64), A)
    lowered(lambda a: np.multiply.outer(a, [1, 2]), A)
    out = lnp.asarray(np.zeros((6, 5, 5), np.float32))
    result = np.subtract.outer(lnp.asarray(A), lnp.asarray(A[0]), out=out)
    assert result is out
    np.testing.assert_array_equal(out, np.subtract.outer(A, A[0]))
    same_error(lambda a: np.negative.outer(a, a), A)


# ---------------------------------------------------------------- linear algebra

@pytest.mark.parametrize("shapes", [
    [(6, 5), (5, 7)], [(6,), (6, 5), (5, 7)], [(6, 5), (5, 7), (7,)], [(6,), (6, 5), (5, 7), (7,)],
    [(6, 5), (5, 7), (7, 5), (5, 6)], [(9, 2), (2, 8), (8, 3), (3, 7), (7, 1)]])
def test_multi_dot_matches_numpy(shapes):
    arrays = [RNG.standard_normal(s) for s in shapes]
    lowered(lambda *xs: np.linalg.multi_dot(list(xs)), *arrays)


def test_bad_multi_dot_raises_numpys_errors():
    same_error(lambda a: np.linalg.multi_dot([a]), A)
    same_error(lambda a, t: np.linalg.multi_dot([a, t, a]), A, T)


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
def test_matrix_two_and_nuclear_norms_match_numpy(ord):
    lowered(lambda a: np.linalg.norm(a, ord), A, rtol=1e-5)
    lowered(lambda a: np.linalg.norm(a, ord), I)  # integers: in float64
    lowered(lambda t: np.linalg.norm(t, ord, axis=(2, 0), keepdims=True), T)
    lowered(lambda t: np.linalg.norm(t, ord, axis=(1, 2)), T)


@pytest.mark.parametrize("equation,shapes", [
    ("ii->", [(5, 5)]), ("ii", [(5, 5)]), ("ii->i", [(5, 5)]), ("ijij->ij", [(4, 5, 4, 5)]),
    ("ijij->ji", [(4, 5, 4, 5)]), ("iji->j", [(3, 4, 3)]), ("iii->i", [(3, 3, 3)]),
    ("ii,i->", [(5, 5), (5,)]), ("ij,jj->i", [(4, 5), (5, 5)]), ("...ii->...", [(2, 5, 5)]),
    ("ii,jj->ij", [(3, 3), (4, 4)])])
def test_einsum_with_a_repeated_label_takes_the_diagonal(equation, shapes):
    lowered(lambda *xs: np.einsum(equation, *xs), *[RNG.standard_normal(s) for s in shapes])
    lowered(lambda x: np.einsum("ii->", x), RNG.integers(0, 5, (4, 4)))


def test_einsum_repeated_label_of_two_sizes_raises_numpys_error():
    same_error(lambda a: np.einsum("ii->", a), A)


# ---------------------------------------------------------------- log-domain sums

@pytest.mark.parametrize("ufunc", [np.logaddexp, np.logaddexp2])
@pytest.mark.parametrize("x", [
    RNG.standard_normal((4, 5)) * 30, A, RNG.integers(-5, 5, (3, 4)),
    np.array([[-np.inf, -np.inf], [1.0, np.inf]]), np.array([[np.nan, 1.0], [2.0, -np.inf]])],
    ids=["float64", "float32", "int64", "infinities", "nan"])
@pytest.mark.parametrize("kwargs", [{}, {"axis": 1}, {"axis": None},
                                    {"axis": (0, 1), "keepdims": True}])
def test_logaddexp_reduce_matches_numpy(ufunc, x, kwargs):
    lowered(lambda a: ufunc.reduce(a, **kwargs), x,
            rtol=2e-6 if x.dtype == np.float32 else 1e-13)


# ---------------------------------------------------------------- piecewise

@pytest.mark.parametrize("call", [
    lambda a: np.piecewise(a, [a < 0, a >= 0], [lambda v: -v, lambda v: v]),
    lambda a: np.piecewise(a, [a < 0, a >= 0], [-1, 1]),
    lambda a: np.piecewise(a, [a < -1, a > 1], [lambda v: v * 2, 0, lambda v: v ** 2]),
    lambda a: np.piecewise(a, [a < 0], [lambda v: v / 2, lambda v: v * 1.5]),  # cast to a's
    lambda a: np.piecewise(a, [a > -3, a > 0], [1, 2]),  # the later condition wins
    lambda a: np.piecewise(a, [a < 0], [lambda v, k: v * k, 0], 3),  # extra arguments
    lambda a: np.piecewise(a[0, 0], [a[0, 0] < 0, a[0, 0] >= 0], [lambda v: -v, 7]),  # 0-d
])
@pytest.mark.parametrize("x", [A, I], ids=["float32", "int64"])
def test_piecewise_matches_numpy(call, x):
    lowered(call, x)


def test_piecewise_left_to_numpy_where_its_functions_see_only_their_elements():
    # NumPy applies each function to the elements its condition picks: v.mean() is theirs
    call = lambda a: np.piecewise(a, [a < 0, a >= 0], [lambda v: v - v.mean(), lambda v: v])
    want = call(A)
    lazyx.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = call(lnp.asarray(A))
    assert lazyx.metrics()["fallback_ops"] == {"numpy.piecewise": 1}
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_bad_piecewise_calls_raise_numpys_errors():
    same_error(lambda a: np.piecewise(a, [a < 0], [1, 2, 3]), A)


# ---------------------------------------------------------------- reduceat

N = RNG.standard_normal((8, 5)).astype(np.float32)
N[2, 1] = np.nan


@pytest.mark.parametrize("call", [
    lambda a: np.add.reduceat(a, [0, 4, 1, 5]),           # overlapping, and an empty slice
    lambda a: np.add.reduceat(a, [0, 2, 3], axis=1),
    lambda a: np.maximum.reduceat(a, [0, 3, 3, 6]),
    lambda a: np.minimum.reduceat(a, np.array([1, 2, 7])),
    lambda a: np.multiply.reduceat(a, [0, 2, 5], axis=0),
    lambda a: np.add.reduceat(a.ravel(), [0, 3, 3, 10, 39]),  # CSR rows: data by indptr
    lambda a: np.add.reduceat(a, [0, 4], dtype=np.float64),
])
@pytest.mark.parametrize("x", [A[:5].repeat(2, 0)[:8], I.repeat(2, 0), N],
                         ids=["float32", "int64", "nan"])
def test_reduceat_matches_numpy(call, x):
    lowered(call, x, rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda a: np.add.reduceat(a, [0, 9]), lambda a: np.add.reduceat(a, [-1, 2]),
    lambda a: np.add.reduceat(a, [0], axis=3), lambda a: np.add.reduceat(a, [[0, 1]])])
def test_bad_reduceat_raises_numpys_errors(call):
    same_error(call, I.repeat(2, 0))
