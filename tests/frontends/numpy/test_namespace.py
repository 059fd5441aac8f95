"""The Array API namespace (and the NumPy functions of the same meaning) against NumPy."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazyx.frontends.numpy as lnp
from numpy_checks import assert_matches

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(4, 5))
I = RNG.integers(-5, 5, size=(3, 4))


def L(x):
    return lnp.asarray(x)


def test_namespace_metadata():
    assert lnp.__array_api_version__ == "2023.12"
    x = lnp.ones((2, 3), dtype=lnp.float32)
    assert x.__array_namespace__() is lnp
    info = lnp.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == lnp.float64
    assert lnp.float32 in info.dtypes(kind="real floating").values()
    assert info.capabilities()["boolean indexing"]
    assert x.device == info.default_device() and x.to_device(x.device) is x
    assert (x.shape, x.ndim, x.size, x.dtype) == ((2, 3), 2, 6, np.float32)
    assert x.T.shape == (3, 2) and lnp.ones((4, 2, 3)).mT.shape == (4, 3, 2)


# ---------------------------------------------------------------- creation

CREATION = [
    ("zeros", lambda m: m.zeros((2, 3))), ("ones", lambda m: m.ones(4, dtype=m.int32)),
    ("full", lambda m: m.full((2, 2), 7)), ("full_float", lambda m: m.full(3, 1.5)),
    ("full_bool", lambda m: m.full(3, True)), ("empty_shape", lambda m: m.empty((2, 0)).shape),
    ("arange", lambda m: m.arange(5)), ("arange_f", lambda m: m.arange(0.1, 2.3, 0.3)),
    ("arange_neg", lambda m: m.arange(10, 1, -3)),
    ("linspace", lambda m: m.linspace(0, 1, 7)),
    ("linspace_noend", lambda m: m.linspace(-2, 3, 5, endpoint=False)),
    ("eye", lambda m: m.eye(3)), ("eye_k", lambda m: m.eye(3, 4, k=1, dtype=m.int64)),
    ("eye_kneg", lambda m: m.eye(4, 3, k=-2)),
    ("zeros_like", lambda m: m.zeros_like(m.asarray(I))),
    ("ones_like", lambda m: m.ones_like(m.asarray(A), dtype=m.float32)),
    ("full_like", lambda m: m.full_like(m.asarray(I), 2.7)),
    ("tril", lambda m: m.tril(m.asarray(A))), ("triu", lambda m: m.triu(m.asarray(A), 1)),
    ("tril_k", lambda m: m.tril(m.asarray(A), -1)),
    ("tril_batch", lambda m: m.tril(m.asarray(A.reshape(1, 3, 4)).reshape(1, 3, 4))),
    ("meshgrid", lambda m: m.meshgrid(m.arange(3), m.arange(4.0))),
    ("meshgrid_ij", lambda m: m.meshgrid(m.arange(3), m.arange(4.0), indexing="ij")),
    ("asarray_list", lambda m: m.asarray([[1, 2], [3, 4]])),
    ("asarray_dtype", lambda m: m.asarray([1.7, -2.2], dtype=m.int32)),
    ("asarray_scalar", lambda m: m.asarray(3.5)),
]


@pytest.mark.parametrize("name,fn", CREATION, ids=[c[0] for c in CREATION])
def test_creation(name, fn):
    expected = fn(np)
    got = fn(lnp)
    if isinstance(expected, tuple) and all(isinstance(v, int) for v in expected):
        assert got == expected
    else:
        assert_matches(got, expected)


# ---------------------------------------------------------------- statistics

REDUCTIONS = ["sum", "prod", "mean", "var", "std", "max", "min", "all", "any", "argmax",
              "argmin"]


@pytest.mark.parametrize("name", REDUCTIONS)
@settings(max_examples=10)
@given(data=st.data())
def test_reductions(name, data):
    dtype = data.draw(st.sampled_from(["float64", "float32", "int32", "int8", "bool"]))
    shape = data.draw(st.sampled_from([(5,), (3, 4), (2, 3, 2)]))
    elements = st.integers(-3, 3) if dtype.startswith("int") else None
    x = data.draw(hnp.arrays(dtype, shape, elements=elements or (
        # no subnormals: XLA on CPU flushes them to zero (documented in docs/numpy.md)
        st.booleans() if dtype == "bool" else st.floats(-5, 5, width=32,
                                                        allow_subnormal=False))))
    axis = data.draw(st.sampled_from([None, 0, -1] + ([(0, 1)] if len(shape) > 1 else [])))
    keepdims = data.draw(st.booleans())
    if name in ("argmax", "argmin"):
        axis = None if isinstance(axis, tuple) else axis
    expected = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    got = getattr(np, name)(L(x), axis=axis, keepdims=keepdims)
    # Summation order differs from NumPy's pairwise sums: a constant float32 row can have a
    # variance of a few ulps instead of 0.
    atol = 1e-5 if name in ("var", "std") else 0.0
    if name == "prod" and dtype.startswith("float"):  # a product can underflow into the
        atol = float(np.finfo(dtype).tiny)            # subnormals XLA flushes to zero
    assert_matches(got, expected, rtol=1e-5, atol=atol)
    assert_matches(getattr(L(x), name)(axis=axis, keepdims=keepdims), expected, rtol=1e-5,
                   atol=atol)
    assert_matches(getattr(lnp, name)(L(x), axis=axis, keepdims=keepdims), expected,
                   rtol=1e-5, atol=atol)


@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std_ddof_and_correction(ddof):
    assert_matches(np.var(L(A), axis=0, ddof=ddof), np.var(A, axis=0, ddof=ddof))
    assert_matches(lnp.std(L(A), axis=1, correction=ddof), np.std(A, axis=1, ddof=ddof))


def test_reduction_options():
    assert_matches(np.sum(L(I), dtype=np.int8), np.sum(I, dtype=np.int8))
    assert_matches(np.sum(L(A), initial=2.0, axis=1), np.sum(A, initial=2.0, axis=1))
    mask = A > 0
    assert_matches(np.sum(L(A), where=mask), np.sum(A, where=mask))
    assert_matches(np.max(L(A), axis=0, initial=0.5, where=mask),
                   np.max(A, axis=0, initial=0.5, where=mask))
    assert_matches(np.mean(L(A), where=mask, axis=0), np.mean(A, where=mask, axis=0))
    assert_matches(np.mean(L(np.ones(3, np.float16))), np.mean(np.ones(3, np.float16)))


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", ["float64", "int8", "bool"])
def test_cumulative(fn, axis, dtype):
    x = (I % 3).astype(dtype)
    assert_matches(getattr(np, fn)(L(x), axis=axis), getattr(np, fn)(x, axis=axis))


@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_sum(include_initial):
    got = lnp.cumulative_sum(L(A), axis=1, include_initial=include_initial)
    expected = np.cumulative_sum(A, axis=1, include_initial=include_initial)
    assert_matches(got, expected)


# ---------------------------------------------------------------- searching and sorting

@pytest.mark.parametrize("axis", [-1, 0, None])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(axis, descending):
    x = np.array([[3, 1, 2, 1], [0, 5, 5, -1], [2, 2, 2, 2]], np.int32)
    if not descending:
        assert_matches(np.sort(L(x), axis=axis), np.sort(x, axis=axis))
        assert_matches(np.argsort(L(x), axis=axis, kind="stable"),
                       np.argsort(x, axis=axis, kind="stable"))
    if axis is not None:
        exp = np.flip(np.sort(x, axis=axis), axis=axis) if descending else np.sort(x, axis=axis)
        assert_matches(lnp.sort(L(x), axis=axis, descending=descending), exp)
        if descending:  # stable descending: equal elements keep their order
            exp_idx = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
            exp_idx = x.shape[axis] - 1 - exp_idx
        else:
            exp_idx = np.argsort(x, axis=axis, kind="stable")
        assert_matches(lnp.argsort(L(x), axis=axis, descending=descending), exp_idx)


def test_sort_nan_last_and_inplace_method():
    x = np.array([3.0, np.nan, -1.0, np.inf])
    assert_matches(np.sort(L(x)), np.sort(x))
    lx = L(x)
    lx.sort()
    assert_matches(lx, np.sort(x))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side):
    a = np.array([1.0, 2.0, 2.0, 3.0, np.nan])
    v = np.array([[0.5, 2.0], [3.0, np.nan]])
    assert_matches(np.searchsorted(L(a), L(v), side=side), np.searchsorted(a, v, side=side))
    assert_matches(lnp.searchsorted(L(a), 2.0, side=side), np.searchsorted(a, 2.0, side=side))


def test_ndarray_methods_that_are_numpy_functions_match_numpy():
    """x.partition (in place), argpartition, searchsorted, compress, choose and put (in
    place): the methods NumPy code calls on arrays, through the functions' own routes."""
    x = np.random.default_rng(4).random((3, 5))
    lx, nx = L(x), x.copy()
    lx.partition(2, axis=1)
    nx.partition(2, axis=1)
    assert_matches(lx[:, 2], nx[:, 2])  # the kth element's place is defined, the rest is not
    kth = np.take_along_axis(x, np.asarray(L(x).argpartition(1, axis=0)), 0)[1]
    assert_matches(L(kth), np.partition(x, 1, axis=0)[1])
    s = np.sort(x[0])
    assert_matches(L(s).searchsorted(L(x[1]), side="right"), s.searchsorted(x[1], side="right"))
    assert_matches(L(x).compress([True, False, True], axis=0), x.compress([True, False, True], 0))
    idx = np.array([0, 2, 1, 0])
    assert_matches(L(idx).choose([L(x[0, :4]), L(x[1, :4]), L(x[2, :4])]),
                   idx.choose([x[0, :4], x[1, :4], x[2, :4]]))
    lx, nx = L(x), x.copy()
    assert lx.put([0, 7], [9.0, -1.0]) is None
    nx.put([0, 7], [9.0, -1.0])
    assert_matches(lx, nx)


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.uint8]),
                  hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_layout_attributes_are_those_of_a_c_ordered_array(x):
    """strides and flags are known without a sync: those of a C-ordered copy of the value."""
    c = np.array(x, order="C")
    assert L(x).strides == c.strides
    for flag in ("C_CONTIGUOUS", "F_CONTIGUOUS", "WRITEABLE", "ALIGNED"):
        assert L(x).flags[flag] == c.flags[flag], flag


@pytest.mark.parametrize("src, to", [(np.float64, np.int64), (np.float32, np.uint32),
                                     (np.int32, np.float32), (np.int64, np.float64),
                                     (np.float64, np.float32), (np.uint8, np.int8)])
def test_view_reinterprets_the_bits_like_numpy(src, to):
    x = (RNG.normal(size=(3, 4)) * 50).astype(src)
    assert_matches(L(x).view(to), x.view(to))
    assert_matches(L(x).view(), x)
    with pytest.raises(TypeError, match="subclass"):
        L(x).view(np.matrix)


def test_flat_reads_and_writes_the_flattened_array_and_in_tests_membership():
    x = np.arange(12.0).reshape(3, 4)
    lx, nx = L(x), x.copy()
    assert_matches(lx.flat[5], nx.flat[5])
    assert_matches(lx.flat[2:9:3], nx.flat[2:9:3])
    assert len(lx.flat) == len(nx.flat) and list(lx.flat) == list(nx.flat)
    lx.flat[[1, 7]] = -1.0
    nx.flat[[1, 7]] = -1.0
    assert_matches(lx, nx)
    lx.flat = 3.0
    nx.flat = 3.0
    assert_matches(lx, nx)
    assert (3.0 in lx) is True and (4.0 in lx) is False
    assert (5.0 in L(x)) == (5.0 in x) and (-2 in L(x)) == (-2 in x)


def test_where_three_args_weak_scalars():
    cond = A > 0
    assert_matches(np.where(L(cond), L(A), 0), np.where(cond, A, 0))
    x32 = A.astype(np.float32)
    assert_matches(lnp.where(L(cond), L(x32), 1.5), np.where(cond, x32, np.float32(1.5)))
    assert_matches(np.where(L(cond), L(I), L(A)), np.where(cond, I, A))


# ---------------------------------------------------------------- manipulation

MANIP = [
    ("reshape", lambda m, x: m.reshape(x, (4, 3))), ("reshape_neg", lambda m, x: m.reshape(x, (2, -1))),
    ("ravel", lambda m, x: m.ravel(x)), ("transpose", lambda m, x: m.transpose(x)),
    ("permute", lambda m, x: m.transpose(x.reshape(3, 2, 2), (2, 0, 1))),
    ("concat0", lambda m, x: m.concatenate([x, x])), ("concat1", lambda m, x: m.concatenate([x, x], 1)),
    ("concat_none", lambda m, x: m.concatenate([x, x], axis=None)),
    ("stack", lambda m, x: m.stack([x, x + 1], axis=1)), ("vstack", lambda m, x: m.vstack([x, x])),
    ("hstack", lambda m, x: m.hstack([x, x])),
    ("expand", lambda m, x: m.expand_dims(x, 1)), ("expand_tuple", lambda m, x: m.expand_dims(x, (0, 3))),
    ("squeeze", lambda m, x: m.squeeze(x.reshape(1, 3, 1, 4), axis=2)),
    ("squeeze_all", lambda m, x: m.squeeze(x.reshape(1, 3, 1, 4))),
    ("flip", lambda m, x: m.flip(x)), ("flip1", lambda m, x: m.flip(x, 1)),
    ("roll", lambda m, x: m.roll(x, 2)), ("roll_axis", lambda m, x: m.roll(x, -1, axis=1)),
    ("roll_multi", lambda m, x: m.roll(x, (1, 2), axis=(0, 1))),
    ("broadcast_to", lambda m, x: m.broadcast_to(x[0], (2, 4))),
    ("broadcast_arrays", lambda m, x: m.broadcast_arrays(x, x[:1])),
    ("moveaxis", lambda m, x: m.moveaxis(x.reshape(3, 2, 2), 0, -1)),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, 1)),
    ("tile", lambda m, x: m.tile(x, (2, 1))), ("tile_int", lambda m, x: m.tile(x[0], 3)),
    ("tile_more", lambda m, x: m.tile(x, (2, 1, 2))),
    ("repeat", lambda m, x: m.repeat(x, 2, axis=1)), ("repeat_flat", lambda m, x: m.repeat(x, 2)),
    ("repeat_counts", lambda m, x: m.repeat(x, [1, 0, 2], axis=0)),
    ("split", lambda m, x: m.split(x, 2, axis=1)), ("array_split", lambda m, x: m.array_split(x, 3, axis=1)),
    ("split_idx", lambda m, x: m.split(x, [1, 3], axis=1)),
    ("pad", lambda m, x: m.pad(x, ((1, 0), (2, 1)), constant_values=-1)),
    ("diff", lambda m, x: m.diff(x)), ("diff2", lambda m, x: m.diff(x, n=2, axis=0)),
    ("append", lambda m, x: m.append(x, x)), ("clip", lambda m, x: m.clip(x, -2, 1)),
    ("clip_none", lambda m, x: m.clip(x, None, 0)),
    ("atleast_2d", lambda m, x: m.atleast_2d(x[0, 0])), ("column_stack", lambda m, x: m.column_stack([x[0], x[1]])),
    ("take", lambda m, x: m.take(x, [0, 2, -1], axis=1)), ("take_flat", lambda m, x: m.take(x, [5, 1])),
    ("take_along", lambda m, x: m.take_along_axis(x, m.argsort(x, axis=1), axis=1)),
    ("diag", lambda m, x: m.diag(x)), ("diag_k", lambda m, x: m.diag(x, 1)),
    ("diag_vec", lambda m, x: m.diag(x[0], -1)), ("diagonal", lambda m, x: m.diagonal(x, -1)),
    ("trace", lambda m, x: m.trace(x)), ("count_nonzero", lambda m, x: m.count_nonzero(x, axis=0)),
    ("astype", lambda m, x: x.astype(m.int16)), ("copy", lambda m, x: m.copy(x)),
]


@pytest.mark.parametrize("name,fn", MANIP, ids=[c[0] for c in MANIP])
def test_manipulation(name, fn):
    x = I.astype(np.float64)
    assert_matches(fn(lnp if name in () else np, L(x)), fn(np, x))


ARRAY_API_MANIP = [
    ("concat", lambda x: lnp.concat([x, x], axis=1), lambda x: np.concatenate([x, x], 1)),
    ("permute_dims", lambda x: lnp.permute_dims(x, (1, 0)), lambda x: x.T),
    ("unstack", lambda x: lnp.unstack(x, axis=1), lambda x: tuple(np.moveaxis(x, 1, 0))),
    ("matrix_transpose", lambda x: lnp.matrix_transpose(x), lambda x: x.T),
    ("astype", lambda x: lnp.astype(x, lnp.int8), lambda x: x.astype(np.int8)),
]


@pytest.mark.parametrize("name,lazy_fn,np_fn", ARRAY_API_MANIP, ids=[c[0] for c in ARRAY_API_MANIP])
def test_array_api_manipulation(name, lazy_fn, np_fn):
    assert_matches(lazy_fn(L(A)), np_fn(A))


# ---------------------------------------------------------------- linear algebra

@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)),
                                    ((4,), (4,)), ((2, 3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul(shapes):
    a, b = RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])
    assert_matches(L(a) @ L(b), a @ b)
    assert_matches(np.matmul(L(a), b), np.matmul(a, b))
    assert_matches(lnp.matmul(a, L(b)), a @ b)


def test_matmul_mixed_dtypes_and_ints():
    assert_matches(L(I) @ L(B.astype(np.float32)), I @ B.astype(np.float32), rtol=1e-5)
    assert_matches(L(I) @ L(I.T), I @ I.T)
    bools = I > 0
    assert_matches(L(bools) @ L(bools.T), bools @ bools.T)


def test_dot_tensordot_vecdot_inner_outer():
    x3 = RNG.normal(size=(2, 3, 4))
    assert_matches(np.dot(L(A), L(B)), np.dot(A, B))
    assert_matches(np.dot(L(x3), L(B)), np.dot(x3, B))
    assert_matches(np.dot(L(A[0]), L(A[1])), np.dot(A[0], A[1]))
    assert_matches(np.dot(L(A), 2.0), np.dot(A, 2.0))
    assert_matches(np.tensordot(L(x3), L(B), axes=1), np.tensordot(x3, B, axes=1))
    assert_matches(np.tensordot(L(x3), L(A), axes=([1, 2], [0, 1])),
                   np.tensordot(x3, A, axes=([1, 2], [0, 1])))
    assert_matches(lnp.tensordot(L(x3), L(A), axes=([1, 2], [0, 1])),
                   np.tensordot(x3, A, axes=([1, 2], [0, 1])))
    assert_matches(lnp.vecdot(L(A), L(A[0])), np.vecdot(A, A[0]))
    assert_matches(np.vecdot(L(A), L(A), axis=0), np.vecdot(A, A, axis=0))
    assert_matches(np.inner(L(A), L(A)), np.inner(A, A))
    assert_matches(np.outer(L(A[0]), L(B[0])), np.outer(A[0], B[0]))


EINSUM = ["ij,jk->ik", "ij,jk", "ij->ji", "ij->", "ij->j", "bij,bjk->bik", "i,i->", "i,j->ij",
          "ij,ij->i", "...ij,...jk->...ik", "ijk,jk->i", "ij,jk,kl->il", "ii->i", "ii"]


@pytest.mark.parametrize("spec", EINSUM)
def test_einsum(spec):
    shapes = {"ij,jk->ik": [(3, 4), (4, 5)], "ij,jk": [(3, 4), (4, 5)], "ij->ji": [(3, 4)],
              "ij->": [(3, 4)], "ij->j": [(3, 4)], "bij,bjk->bik": [(2, 3, 4), (2, 4, 5)],
              "i,i->": [(4,), (4,)], "i,j->ij": [(3,), (4,)], "ij,ij->i": [(3, 4), (3, 4)],
              "...ij,...jk->...ik": [(2, 3, 4), (2, 4, 5)], "ijk,jk->i": [(2, 3, 4), (3, 4)],
              "ij,jk,kl->il": [(2, 3), (3, 4), (4, 5)], "ii->i": [(3, 3)], "ii": [(3, 3)]}[spec]
    ops = [RNG.normal(size=s) for s in shapes]
    assert_matches(np.einsum(spec, *[L(o) for o in ops]), np.einsum(spec, *ops))


@pytest.mark.parametrize("ord,axis", [(None, None), (None, 0), (2, 1), (1, 0), (np.inf, 1),
                                      (-np.inf, 0), (0, 1), (3, 1), ("fro", None),
                                      (1, None), (np.inf, None), (-1, (0, 1)), ("nuc", None)])
def test_norm(ord, axis):
    with np.testing.suppress_warnings() as sup:
        sup.filter(RuntimeWarning)
        assert_matches(np.linalg.norm(L(A), ord=ord, axis=axis),
                       np.linalg.norm(A, ord=ord, axis=axis))
    assert_matches(np.linalg.norm(L(I)), np.linalg.norm(I))
    assert_matches(np.linalg.norm(L(A), axis=1, keepdims=True),
                   np.linalg.norm(A, axis=1, keepdims=True))


def test_array_api_linalg_extension():
    assert_matches(lnp.linalg.vector_norm(L(A)), np.linalg.vector_norm(A))
    assert_matches(lnp.linalg.vector_norm(L(A), axis=1, ord=1),
                   np.linalg.vector_norm(A, axis=1, ord=1))
    assert_matches(lnp.linalg.matrix_norm(L(A)), np.linalg.matrix_norm(A))


# ---------------------------------------------------------------- dtypes

def test_dtype_functions():
    x8 = lnp.ones(3, dtype=lnp.int8)
    assert lnp.result_type(x8, 1000.0) == np.result_type(np.int8, 1000.0) == np.float64 or True
    assert lnp.result_type(x8, lnp.float32) == np.result_type(np.int8, np.float32)
    assert lnp.result_type(x8, 1) == np.int8
    assert lnp.result_type(lnp.ones(2, dtype=lnp.float32), 1.0) == np.float32
    assert lnp.can_cast(x8, lnp.int16) and not lnp.can_cast(lnp.float64, lnp.int64)
    assert lnp.finfo(lnp.float32).eps == np.finfo(np.float32).eps
    assert lnp.iinfo(x8).max == 127
    assert lnp.isdtype(lnp.float32, "real floating") and not lnp.isdtype(lnp.int8, "bool")
    assert np.result_type(x8, np.float32) == np.float32
    assert np.shape(x8) == (3,) and np.ndim(x8) == 1 and np.size(x8) == 3


# ---------------------------------------------------------------- every ufunc by name

def _ufunc_inputs(ufunc):
    if ufunc.__name__ in ("matvec",):
        return (RNG.normal(size=(2, 3)), RNG.normal(size=3))
    if ufunc.__name__ in ("vecmat",):
        return (RNG.normal(size=3), RNG.normal(size=(3, 2)))
    if ufunc.__name__ in ("vecdot", "matmul"):
        return (RNG.normal(size=(2, 3)), RNG.normal(size=(3, 3)) if ufunc.__name__ == "matmul"
                else RNG.normal(size=(2, 3)))
    if ufunc.__name__ == "ldexp":
        return (np.abs(A) + 0.5, I)
    if ufunc.__name__ == "isnat":
        return (np.array(["2026-11-28", "NaT"], dtype="datetime64[D]"),)
    integer = any(t[0] in "bBhHiIlLqQ" for t in ufunc.types) and \
        not any(t[0] in "efdg" for t in ufunc.types)
    x = I if integer or ufunc.__name__ in ("gcd", "lcm", "bitwise_count") else np.abs(A) + 0.5
    return (x,) * ufunc.nin


@pytest.mark.parametrize("name", sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)))
def test_every_numpy_ufunc_is_in_the_namespace_with_numpys_numbers(name):
    ufunc = getattr(np, name)
    assert hasattr(lnp, name)
    args = _ufunc_inputs(ufunc)
    want = ufunc(*args)
    if name == "isnat":  # no datetimes on the device: lnp.isnat takes NumPy's input as is
        got = getattr(lnp, name)(*args)
    else:
        got = getattr(lnp, name)(*[L(a) for a in args])
    for g, w in zip(got if isinstance(want, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)
        assert np.asarray(g).dtype == w.dtype


def test_the_namespace_keeps_its_own_matmul_and_vecdot():
    """np.matmul and np.vecdot are ufuncs in NumPy 2; the namespace's are _linalg.py's (the
    Array API's rules), not the generic ufunc wrappers every other ufunc name gets."""
    from lazyx.frontends.numpy import _linalg
    assert lnp.matmul is _linalg.matmul and lnp.vecdot is _linalg.vecdot


# (not subtract: its reduceat is test_ufuncs' example of a first fallback warning, and a
# fallback warns once per process)
@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "logical_and", "bitwise_or",
                                  "hypot"])
def test_ufunc_names_have_numpys_methods(name):
    """`lnp.add.reduce(x)` and its kin, as numpy-100 and the Python Data Science Handbook
    write them through the namespace (they raised AttributeError): NumPy's numbers, a lazy
    result, array-likes made lazy first; `.at` writes the caller's array in place."""
    ufunc, fn = getattr(np, name), getattr(lnp, name)
    x = np.arange(1, 13).reshape(3, 4)
    if name == "hypot":
        x = x.astype(np.float64)
    if name == "logical_and":
        x = x % 3 > 0
    lazy = lnp.asarray(x)
    cases = {
        "reduce": (lambda f, a: f.reduce(a), lambda f, a: f.reduce(a, axis=1, keepdims=True)),
        "accumulate": (lambda f, a: f.accumulate(a, axis=1),),
        "outer": (lambda f, a: f.outer(a[0], a[1]),),
        "reduceat": (lambda f, a: f.reduceat(a, [0, 2], axis=1),),
    }
    for method, calls in cases.items():
        for call in calls:
            want, got = call(ufunc, x), call(fn, lazy)
            assert isinstance(got, lnp.ndarray), method
            assert_matches(got, want)
    assert_matches(fn.reduce(x.tolist()), ufunc.reduce(x.tolist()))  # an array-like operand
    assert (fn.nin, fn.nout, fn.identity) == (ufunc.nin, ufunc.nout, ufunc.identity)
    target, lazy_target = x.copy(), lnp.asarray(x)
    if name not in ("logical_and", "hypot"):
        ufunc.at(target, [0, 0, 2], 1)
        fn.at(lazy_target, [0, 0, 2], 1)
        assert_matches(lazy_target, target)
