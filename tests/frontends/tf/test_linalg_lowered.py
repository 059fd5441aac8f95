"""tf.linalg functions that ran eagerly on TF (a counted fallback, a mid-step sync) and are
lowered now (frontends/tf/api_linalg_more.py): lu_solve / lu_reconstruct /
lu_matrix_inverse, tridiagonal_matmul / tridiagonal_solve in every diagonals format,
banded_triangular_solve, lstsq (fast and not), expm and eigh_tridiagonal's eigenvalues.
Each against eager TF on the same random inputs: values, dtype, shape, no fallback, TF's own
errors for bad calls, and gradients under both tapes."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx

from .conftest import same_as_eager

tf = pytest.importorskip("tensorflow")
import lazyx.frontends.tf as ltf  # noqa: E402

_DTYPES = st.sampled_from([np.float32, np.float64])
_BATCH = st.sampled_from([(), (2,), (2, 1)])


def _tol(dtype, loose=1.0):
    return dict(rtol=1e-4 * loose, atol=1e-4 * loose) if dtype == np.float32 else \
        dict(rtol=1e-9 * loose, atol=1e-9 * loose)


def _well_conditioned(rng, shape, dtype):
    n = shape[-1]
    return (rng.standard_normal(shape) + 2 * n * np.eye(n) * rng.choice([-1, 1], n)).astype(dtype)


# ---------------------------------------------------------------- from a given LU

@settings(max_examples=10, deadline=None)
@given(_DTYPES, _BATCH, st.integers(1, 5), st.integers(1, 3), st.integers(0, 2 ** 31))
def test_lu_functions_are_tfs(dtype, batch, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n)).astype(dtype)  # pivoting happens
    b = rng.standard_normal(batch + (n, k)).astype(dtype)
    same_as_eager(lambda a: tf.linalg.lu_reconstruct(*tf.linalg.lu(a)), a, **_tol(dtype))
    a = _well_conditioned(rng, batch + (n, n), dtype)
    same_as_eager(lambda a, b: tf.linalg.lu_solve(*tf.linalg.lu(a), b), a, b, **_tol(dtype))
    same_as_eager(lambda a: tf.linalg.lu_matrix_inverse(*tf.linalg.lu(a)), a, **_tol(dtype))


def test_lu_solve_broadcasts_rhs_and_takes_int64_perm():
    rng = np.random.default_rng(1)
    a = _well_conditioned(rng, (3, 4, 4), np.float64)
    b = rng.standard_normal((4, 2))
    same_as_eager(lambda a, b: tf.linalg.lu_solve(*tf.linalg.lu(a), b), a, b)
    same_as_eager(lambda a, b: tf.linalg.lu_solve(
        *tf.linalg.lu(a, output_idx_type=tf.int64), b), a[0], b)
    # an eager factorization with a lazy right-hand side
    lu, p = tf.linalg.lu(a)
    same_as_eager(lambda b: tf.linalg.lu_solve(lu, p, b), b)
    same_as_eager(lambda lu: tf.linalg.lu_reconstruct(lu, p), lu.numpy())


def test_lu_reconstruct_undoes_a_real_permutation():
    a = np.array([[0.0, 1.0, 2.0], [3.0, 0.5, 1.0], [1.0, 4.0, 0.0]])  # pivots everywhere
    got = tf.linalg.lu_reconstruct(*tf.linalg.lu(ltf.constant(a)))
    np.testing.assert_allclose(np.asarray(got), a, atol=1e-12)


# ---------------------------------------------------------------- tridiagonal

def _diagonals(rng, batch, m, dtype):
    d = rng.uniform(-1, 1, batch + (3, m))
    d[..., 1, :] += 4 * rng.choice([-1, 1], m)  # diagonally dominant: solvable either way
    if np.issubdtype(dtype, np.complexfloating):
        d = d + 1j * rng.uniform(-1, 1, d.shape)
    return d.astype(dtype)


def _dense_of(d):
    m = d.shape[-1]
    out = np.zeros(d.shape[:-2] + (m, m), d.dtype)
    i = np.arange(m)
    out[..., i, i] = d[..., 1, :]
    out[..., i[:-1], i[1:]] = d[..., 0, :-1]
    out[..., i[1:], i[:-1]] = d[..., 2, 1:]
    return out


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([np.float32, np.float64, np.complex64]), _BATCH, st.integers(1, 5),
       st.integers(1, 3), st.sampled_from(["compact", "sequence", "matrix"]),
       st.integers(0, 2 ** 31))
def test_tridiagonal_matmul_is_tfs(dtype, batch, m, n, fmt, seed):
    rng = np.random.default_rng(seed)
    d = _diagonals(rng, batch, m, dtype)
    b = rng.standard_normal(batch + (m, n)).astype(dtype)
    tol = _tol(np.float32 if dtype == np.complex64 else dtype)
    if fmt == "compact":
        same_as_eager(lambda d, b: tf.linalg.tridiagonal_matmul(d, b), d, b, **tol)
    elif fmt == "matrix":
        full = _dense_of(d) + rng.standard_normal(batch + (m, m)).astype(dtype) * (
            np.abs(np.subtract.outer(np.arange(m), np.arange(m))) > 1)  # ignored entries
        same_as_eager(lambda x, b: tf.linalg.tridiagonal_matmul(
            x, b, diagonals_format="matrix"), full, b, **tol)
    else:
        same_as_eager(lambda u, v, w, b: tf.linalg.tridiagonal_matmul(
            (u, v, w), b, diagonals_format="sequence"), d[..., 0, :], d[..., 1, :],
            d[..., 2, :], b, **tol)


@settings(max_examples=12, deadline=None)
@given(_DTYPES, _BATCH, st.integers(1, 5), st.integers(0, 3),
       st.sampled_from(["compact", "sequence", "sequence_short", "matrix"]), st.booleans(),
       st.booleans(), st.integers(0, 2 ** 31))
def test_tridiagonal_solve_is_tfs(dtype, batch, m, k, fmt, transpose, pivoting, seed):
    rng = np.random.default_rng(seed)
    d = _diagonals(rng, batch, m, dtype)
    shape = batch + ((m,) if k == 0 else (k, m) if transpose else (m, k))
    b = rng.standard_normal(shape).astype(dtype)
    kw = dict(transpose_rhs=transpose, conjugate_rhs=transpose, partial_pivoting=pivoting)
    tol = _tol(dtype, loose=10)
    if fmt == "compact":
        same_as_eager(lambda d, b: tf.linalg.tridiagonal_solve(d, b, **kw), d, b, **tol)
    elif fmt == "matrix":
        same_as_eager(lambda x, b: tf.linalg.tridiagonal_solve(
            x, b, diagonals_format="matrix", **kw), _dense_of(d), b, **tol)
    else:
        short = fmt == "sequence_short" and m > 1
        u = d[..., 0, :-1] if short else d[..., 0, :]
        w = d[..., 2, 1:] if short else d[..., 2, :]
        same_as_eager(lambda u, v, w, b: tf.linalg.tridiagonal_solve(
            (u, v, w), b, diagonals_format="sequence", **kw), u, d[..., 1, :], w, b, **tol)


def test_tridiagonal_solve_that_needs_pivoting_is_tfs():
    d = np.array([[1.0, 1.0, 1.0], [1e-9, 1.0, 1.0], [0.0, 1.0, 1.0]])  # tiny first pivot
    b = np.array([[1.0], [2.0], [3.0]])
    same_as_eager(lambda d, b: tf.linalg.tridiagonal_solve(d, b), d, b, rtol=1e-7)


def test_complex_tridiagonal_solve_still_runs_on_tf():
    rng = np.random.default_rng(2)
    d = _diagonals(rng, (), 4, np.complex64)
    b = (rng.standard_normal((4, 2)) + 1j).astype(np.complex64)
    want = tf.linalg.tridiagonal_solve(tf.constant(d), tf.constant(b))
    lazyx.reset_metrics()
    got = tf.linalg.tridiagonal_solve(ltf.constant(d), ltf.constant(b))
    assert lazyx.metrics()["fallback_ops"] == {"tf.linalg.tridiagonal_solve": 1}
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-5)


# ---------------------------------------------------------------- banded

@settings(max_examples=12, deadline=None)
@given(_DTYPES, st.sampled_from([((), ()), ((2,), ()), ((), (3,)), ((1,), (2,))]),
       st.integers(1, 5), st.integers(1, 6), st.booleans(), st.booleans(),
       st.integers(0, 2 ** 31))
def test_banded_triangular_solve_is_tfs(dtype, batches, m, bands, lower, adjoint, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, batches[0] + (bands, m))
    x[..., 0 if lower else -1, :] = rng.uniform(2, 3, m) * rng.choice([-1, 1], m)  # diagonal
    b = rng.standard_normal(batches[1] + (m, 2))
    same_as_eager(lambda x, b: tf.linalg.banded_triangular_solve(
        x, b, lower=lower, adjoint=adjoint), x.astype(dtype), b.astype(dtype),
        **_tol(dtype, loose=10))


# ---------------------------------------------------------------- least squares

@settings(max_examples=12, deadline=None)
@given(_DTYPES, st.sampled_from([((), ()), ((2,), (2,)), ((2,), ())]),
       st.sampled_from([(5, 3), (3, 3), (2, 4)]), st.sampled_from([0.0, 0.5]),
       st.booleans(), st.integers(0, 2 ** 31))
def test_lstsq_is_tfs(dtype, batches, mn, l2, fast, seed):
    if not fast and batches[0] != batches[1]:
        batches = (batches[0], batches[0])  # TF's kernel takes equal batch shapes only
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batches[0] + mn).astype(dtype)
    b = rng.standard_normal(batches[1] + (mn[0], 2)).astype(dtype)
    same_as_eager(lambda a, b: tf.linalg.lstsq(a, b, l2_regularizer=l2, fast=fast), a, b,
                  **_tol(dtype, loose=100))


def test_lstsq_minimum_norm_solution_of_a_rank_deficient_matrix_is_tfs():
    rng = np.random.default_rng(3)
    u = rng.standard_normal((6, 2))
    a = u @ rng.standard_normal((2, 4))  # rank 2
    b = rng.standard_normal((6, 3))
    same_as_eager(lambda a, b: tf.linalg.lstsq(a, b, fast=False), a, b, rtol=1e-8, atol=1e-8)


def test_lstsq_takes_a_tensor_regularizer():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 1))
    same_as_eager(lambda a, b, l2: tf.linalg.lstsq(a, b, l2_regularizer=l2), a, b,
                  np.float64(0.25))


# ---------------------------------------------------------------- expm

@settings(max_examples=12, deadline=None)
@given(_DTYPES, _BATCH, st.integers(1, 4),
       st.sampled_from([1e-3, 0.1, 0.5, 1.5, 3.0, 10.0, 100.0]), st.integers(0, 2 ** 31))
def test_expm_is_tfs(dtype, batch, n, scale, seed):
    # every Padé order and a data-dependent number of squarings, per matrix of the batch
    rng = np.random.default_rng(seed)
    a = (scale * rng.standard_normal(batch + (n, n)) / n).astype(dtype)
    same_as_eager(tf.linalg.expm, a, **_tol(dtype, loose=100 if scale >= 10 else 10))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_expm_of_special_matrices_is_tfs(dtype):
    rng = np.random.default_rng(5)
    mixed = np.stack([0.01 * rng.standard_normal((3, 3)), 20 * rng.standard_normal((3, 3)),
                      -1000 * np.eye(3), np.zeros((3, 3))]).astype(dtype)
    same_as_eager(tf.linalg.expm, mixed, rtol=1e-3 if dtype == np.float32 else 1e-8,
                  atol=1e-30)
    rotation = np.array([[0.0, -40.0], [40.0, 0.0]], dtype)  # 5 squarings; |exp| = 1
    same_as_eager(tf.linalg.expm, rotation, **_tol(dtype, loose=100))
    same_as_eager(tf.linalg.expm, np.zeros((2, 0, 0), dtype))
    with_inf = mixed.copy()
    with_inf[1, 0, 0] = np.inf  # TF: the whole batch is NaN
    same_as_eager(tf.linalg.expm, with_inf)


def test_expm_past_its_unrolled_squarings_is_nan():
    # 64 squarings at most (api_linalg_more._MAX_SQUARINGS): a 1-norm past ~1.4e20 would
    # need more; NaN there rather than a wrong finite result. The other matrix is unharmed.
    a = np.stack([np.diag([-1e21, -2e21]), np.diag([0.5, 1.0])]).astype(np.float32)
    got = np.asarray(tf.linalg.expm(ltf.constant(a)))
    assert np.isnan(got[0]).all()
    np.testing.assert_allclose(got[1], np.diag(np.exp([0.5, 1.0])), rtol=1e-6)


# ---------------------------------------------------------------- eigh_tridiagonal

@settings(max_examples=8, deadline=None)
@given(_DTYPES, st.integers(1, 6), st.integers(0, 2 ** 31))
def test_eigh_tridiagonal_eigenvalues_are_tfs(dtype, n, seed):
    rng = np.random.default_rng(seed)
    same_as_eager(tf.linalg.eigh_tridiagonal, rng.standard_normal(n).astype(dtype),
                  rng.standard_normal(n - 1).astype(dtype), **_tol(dtype, loose=10))


# ---------------------------------------------------------------- TF's errors

def _error(fn, make, arrays):
    try:
        fn(*[make(a) for a in arrays])
    except Exception as err:  # noqa: BLE001 - compared with eager TF's
        return type(err), str(err)
    return None


_F = np.ones((3, 3), np.float32)
_BAD_CALLS = {
    "lu_solve rhs rows": (lambda lu, p, b: tf.linalg.lu_solve(lu, p, b),
                          (_F, np.arange(3, dtype=np.int32), np.ones((4, 2), np.float32))),
    "lu_solve vector rhs": (lambda lu, p, b: tf.linalg.lu_solve(lu, p, b),
                            (_F, np.arange(3, dtype=np.int32), np.ones(3, np.float32))),
    "lu_reconstruct perm rank": (lambda lu, p: tf.linalg.lu_reconstruct(lu, p),
                                 (_F, np.zeros((1, 3), np.int32))),
    "lu_solve batched int64 perm": (lambda lu, p, b: tf.linalg.lu_solve(lu, p, b), (
        np.ones((2, 3, 3), np.float32), np.zeros((2, 3), np.int64), np.ones((2, 3, 1),
                                                                            np.float32))),
    "lu_matrix_inverse not square": (lambda lu, p: tf.linalg.lu_matrix_inverse(lu, p),
                                     (np.ones((3, 4), np.float32), np.arange(3))),
    "tridiagonal_solve 4 diagonals": (lambda d, b: tf.linalg.tridiagonal_solve(d, b),
                                      (np.ones((4, 3), np.float32), _F)),
    "tridiagonal_solve batch": (lambda d, b: tf.linalg.tridiagonal_solve(d, b),
                                (np.ones((2, 3, 3), np.float32), np.ones((3, 3, 1),
                                                                         np.float32))),
    "tridiagonal_solve format": (lambda d, b: tf.linalg.tridiagonal_solve(
        d, b, diagonals_format="banded"), (_F, _F)),
    "tridiagonal_solve perturb": (lambda d, b: tf.linalg.tridiagonal_solve(
        d, b, partial_pivoting=False, perturb_singular=True), (_F, _F)),
    "tridiagonal_solve rows": (lambda d, b: tf.linalg.tridiagonal_solve(d, b),
                               (_F, np.ones((4, 1), np.float32))),
    "tridiagonal_matmul rank": (lambda d, b: tf.linalg.tridiagonal_matmul(d, b),
                                (np.ones((2, 3, 3), np.float32), _F)),
    "tridiagonal_matmul dtypes": (lambda d, b: tf.linalg.tridiagonal_matmul(d, b),
                                  (_F, np.ones((3, 3), np.float64))),
    "banded no bands": (lambda x, b: tf.linalg.banded_triangular_solve(x, b),
                        (np.ones((0, 3), np.float32), _F)),
    "banded vector rhs": (lambda x, b: tf.linalg.banded_triangular_solve(x, b),
                          (_F, np.ones(3, np.float32))),
    "lstsq vector rhs": (lambda a, b: tf.linalg.lstsq(a, b), (_F, np.ones(3, np.float32))),
    "lstsq rows": (lambda a, b: tf.linalg.lstsq(a, b), (_F, np.ones((4, 1), np.float32))),
    "lstsq slow batch": (lambda a, b: tf.linalg.lstsq(a, b, fast=False),
                         (np.ones((2, 3, 3), np.float32), _F)),
    "expm not square": (tf.linalg.expm, (np.ones((3, 2), np.float32),)),
    "expm int": (tf.linalg.expm, (np.ones((3, 3), np.int32),)),
}


@pytest.mark.parametrize("name", sorted(_BAD_CALLS))
def test_bad_calls_raise_tfs_error(name):
    fn, arrays = _BAD_CALLS[name]
    want = _error(fn, tf.constant, arrays)
    assert want is not None  # (the call is bad)
    assert _error(fn, ltf.constant, arrays) == want


# ---------------------------------------------------------------- gradients

_RNG = np.random.default_rng(6)
_A = _well_conditioned(_RNG, (2, 3, 3), np.float64)
_B = _RNG.standard_normal((2, 3, 2))
# (TF has no gradient for tf.linalg.lu: the factors come from an eager factorization)
_LU, _PERM = (t.numpy() for t in tf.linalg.lu(_A))
_GRADIENTS = {
    "lu_solve": (lambda lu, b: tf.reduce_sum(tf.sin(tf.linalg.lu_solve(lu, _PERM, b))),
                 _LU, _B),
    "lu_matrix_inverse": (lambda lu, b: tf.reduce_sum(
        tf.linalg.lu_matrix_inverse(lu, _PERM) ** 2) + tf.reduce_sum(b), _LU, _B),
    "lu_reconstruct": (lambda lu, b: tf.reduce_sum(
        tf.linalg.lu_reconstruct(lu, _PERM) * tf.cos(lu)) + tf.reduce_sum(b), _LU, _B),
    "tridiagonal_solve": (lambda d, b: tf.reduce_sum(
        tf.linalg.tridiagonal_solve(d, b) ** 2), _diagonals(_RNG, (2,), 3, np.float64), _B),
    "tridiagonal_matmul": (lambda d, b: tf.reduce_sum(
        tf.sin(tf.linalg.tridiagonal_matmul(d, b))), _RNG.standard_normal((2, 3, 3)), _B),
    "banded_triangular_solve": (lambda x, b: tf.reduce_sum(
        tf.linalg.banded_triangular_solve(x + [[3.0], [0.0]], b) ** 2),
        _RNG.standard_normal((2, 2, 3)), _B),
    "lstsq": (lambda a, b: tf.reduce_sum(tf.linalg.lstsq(a, b) ** 2),
              _RNG.standard_normal((2, 5, 3)), _RNG.standard_normal((2, 5, 2))),
    "lstsq_wide_l2": (lambda a, b: tf.reduce_sum(tf.linalg.lstsq(a, b, l2_regularizer=0.3)),
                      _RNG.standard_normal((2, 2, 4)), _RNG.standard_normal((2, 2, 2))),
    "expm": (lambda a, b: tf.reduce_sum(tf.linalg.expm(a) * tf.cos(a)) + tf.reduce_sum(b),
             np.stack([0.1 * _A[0], 0.5 * _A[1]]), _B),
}


@pytest.mark.parametrize("Tape", [tf.GradientTape, ltf.GradientTape], ids=["tf", "ltf"])
@pytest.mark.parametrize("name", sorted(_GRADIENTS))
def test_gradients_are_tfs(name, Tape):
    fn, *arrays = _GRADIENTS[name]

    def gradients(make, tape_cls):
        values = [make(a) for a in arrays]
        with tape_cls() as tape:
            for v in values:
                tape.watch(v)
            y = fn(*values)
        return [np.asarray(g) for g in tape.gradient(y, values)]
    want = gradients(tf.constant, tf.GradientTape)
    lazyx.reset_metrics()
    got = gradients(ltf.constant, Tape)
    assert lazyx.metrics()["fallback_ops"] == {}
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)
