"""The matrix factorization primitives on both backends: each factor satisfies its defining
identity (checked with NumPy), and the two backends agree on the unique parts (pivots,
eigenvalues, singular values, reconstructions). Each op is one node with several results
(core/ir.py): the reference backend must run one factorization for all of a node's factors."""
import numpy as np
import pytest

from lazyx.backends import reference
from lazyx.backends.reference_linalg import RUNS, TABLE as REF
from lazyx.core import ir, ops

jax = pytest.importorskip("jax")
from lazyx.backends.xla_linalg import TABLE as XLA  # noqa: E402

SHAPES = [(4, 4), (3, 5), (5, 3), (2, 4, 4), (2, 3, 1, 1)]


def _both(op, x, **attrs):
    """(reference results, XLA results): each a tuple of NumPy arrays, one per factor."""
    ref = tuple(np.asarray(r) for r in REF[op](x, **attrs))
    with jax.enable_x64(True):  # as backends/xla.py runs its programs
        xla = tuple(np.asarray(r) for r in jax.jit(lambda a: XLA[op](a, **attrs))(x))
    return ref, xla


def _matrix(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factors_reconstruct_the_permuted_matrix(shape):
    a = _matrix(shape, 0)
    m, n = shape[-2:]
    k = min(m, n)
    both = _both("lu", a)
    for lu, _pivots, perm in both:
        lower = np.tril(lu, -1)[..., :, :k] + np.eye(m, k, dtype=a.dtype)
        upper = np.triu(lu)[..., :k, :]
        permuted = np.take_along_axis(a, perm[..., :, None].astype(np.int64), axis=-2)
        np.testing.assert_allclose(lower @ upper, permuted, rtol=1e-4, atol=1e-5)
    for i in (1, 2):  # pivots, permutation
        np.testing.assert_array_equal(both[0][i], both[1][i])
        assert both[0][i].dtype == np.int32


def test_lu_pivots_replay_into_the_permutation():
    _lu, pivots, perm = _both("lu", _matrix((5, 5), 1))[0]
    replay = np.arange(5)
    for i, p in enumerate(pivots):
        replay[[i, p]] = replay[[p, i]]
    np.testing.assert_array_equal(replay, perm)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [False, True])
def test_qr_is_orthonormal_times_upper_triangular(shape, full):
    a = _matrix(shape, 2)
    both = _both("qr", a, full_matrices=full)
    for q, r in both:
        np.testing.assert_allclose(q @ r, a, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(
            np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), atol=1e-5)
        np.testing.assert_array_equal(r, np.triu(r))
    np.testing.assert_allclose(np.abs(both[0][1]), np.abs(both[1][1]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES + [(2, 3, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_geqrf_reflectors_rebuild_the_matrix_and_backends_agree(shape, dtype):
    """Q (the reflectors multiplied out, as LAPACK's orgqr does) times R is the matrix; both
    backends follow LAPACK's signs, so their compact factors agree element for element."""
    a = _matrix(shape, 7).astype(dtype)
    if shape == (2, 3, 3):  # a zero column below the diagonal: LAPACK's tau is 0 there
        a[0, 1:, 0] = 0
    m, n = shape[-2:]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    ref, xla = _both("geqrf", a)
    for compact, tau in (ref, xla):
        assert compact.dtype == tau.dtype == dtype and tau.shape == shape[:-2] + (min(m, n),)
        q = np.broadcast_to(np.eye(m), shape[:-2] + (m, m))
        for i in reversed(range(min(m, n))):
            v = np.tril(compact, -1)[..., :, i] + np.eye(m, n)[:, i]
            q = q - tau[..., i, None, None] * v[..., :, None] * (v[..., None, :] @ q)
        np.testing.assert_allclose(q[..., :, :min(m, n)] @ np.triu(compact)[..., :min(m, n), :],
                                   a, rtol=10 * tol, atol=10 * tol)
    for mine, theirs in zip(ref, xla):
        np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol)
    if shape == (2, 3, 3):
        assert ref[1][0, 0] == 0 and xla[1][0, 0] == 0


def _symmetric_cases(dtype):
    """Random symmetric stacks, one whose zero diagonal forces 2x2 pivots, one singular."""
    a = _matrix((3, 5, 5), 8).astype(dtype)
    a = a + np.swapaxes(a, -1, -2)
    a[1] -= np.diag(np.diag(a[1]))  # no diagonal: Bunch-Kaufman pivots on 2x2 blocks
    a[2, :, 0] = a[2, 0, :] = 0  # a zero column: LAPACK's info 1, no update
    return a


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ldl_backends_agree_and_ldl_solve_solves(dtype):
    a = _symmetric_cases(dtype)
    ref, xla = _both("ldl", a)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_array_equal(ref[1], xla[1])  # pivots: the same choices
    np.testing.assert_array_equal(ref[2], xla[2])
    assert ref[2].tolist() == [0, 0, 1] and (ref[1][1] < 0).any()
    np.testing.assert_allclose(ref[0], xla[0], rtol=tol, atol=tol)
    assert ref[0].dtype == dtype and ref[1].dtype == np.int32
    b = _matrix((2, 5, 3), 9).astype(dtype)
    solved = []
    for solve in (REF["ldl_solve"], jax.jit(XLA["ldl_solve"])):
        with jax.enable_x64(True):
            solved.append(np.asarray(solve(ref[0][:2], ref[1][:2], b)))
    for x in solved:
        np.testing.assert_allclose(a[:2] @ x, b, rtol=100 * tol, atol=100 * tol)


@pytest.mark.parametrize("lower", [True, False])
def test_eigh_reads_one_triangle_and_diagonalizes(lower):
    a = _matrix((2, 4, 4), 3)
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2) if lower else \
        np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
    both = _both("eigh", a, lower=lower)
    np.testing.assert_allclose(both[0][0], np.linalg.eigvalsh(sym), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(both[1][0], both[0][0], rtol=1e-4, atol=1e-5)
    for values, v in both:
        np.testing.assert_allclose(sym @ v, v * values[..., None, :], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("shape", SHAPES)
def test_svd_reconstructs(shape):
    a = _matrix(shape, 4)
    (s_ref,), (s_xla,) = _both("svd", a, full_matrices=False, compute_uv=False)
    np.testing.assert_allclose(s_ref, np.linalg.svd(a, compute_uv=False), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(s_xla, s_ref, rtol=1e-4, atol=1e-5)
    for u, s, vh in _both("svd", a, full_matrices=False, compute_uv=True):
        np.testing.assert_allclose(s, s_ref, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, rtol=1e-4, atol=1e-5)
    m, n = shape[-2:]
    ref, xla = _both("svd", a, full_matrices=True, compute_uv=True)
    assert xla[0].shape[-2:] == (m, m) and ref[2].shape[-2:] == (n, n)


def test_builders_check_shapes_and_dtypes():
    wide = ir.constant(np.zeros((3, 4), np.float32), "float32")
    lu, pivots, perm = ops.lu(wide)
    assert (lu.shape, pivots.shape, perm.shape) == ((3, 4), (3,), (3,))
    assert pivots.dtype == perm.dtype == "int32"
    q, r = ops.qr(wide)
    assert q.shape == (3, 3) and r.shape == (3, 4)
    assert ops.qr(wide, full_matrices=True)[1].shape == (3, 4)
    u, s, vh = ops.svd(wide, full_matrices=True)
    assert (u.shape, s.shape, vh.shape) == ((3, 3), (3,), (4, 4))
    assert [n.shape for n in ops.svd(wide)] == [(3, 3), (3,), (3, 4)]
    with pytest.raises(ValueError, match="eigh: needs square"):
        ops.eigh(wide)
    with pytest.raises(TypeError, match="lu: needs floating"):
        ops.lu(ir.constant(np.zeros((2, 2), np.int32), "int32"))
    with pytest.raises(ValueError, match="svd: needs matrices"):
        ops.svd(ir.constant(np.zeros((3,), np.float32), "float32"))


def test_a_multi_node_is_reachable_only_through_projections():
    x = ir.constant(np.eye(3, dtype=np.float32), "float32")
    q, r = ops.qr(x)
    multi = q.inputs[0]
    assert q.op == r.op == "result" and r.inputs[0] is multi and multi.is_multi
    assert (q.attrs, r.attrs) == ({"index": 0}, {"index": 1})
    with pytest.raises(TypeError, match="qr has several results"):
        ops.neg(multi)
    with pytest.raises(TypeError, match="result: neg has one result"):
        ops.result(ops.neg(x), index=0)
    with pytest.raises(ValueError, match="index 2 out of range"):
        ops.result(multi, index=2)
    # asked twice in one trace, the same factorization: one node (the hash sees one program)
    assert ops.qr(x)[1].inputs[0] is multi
    assert ops.qr(x, full_matrices=True)[0].inputs[0] is not multi


def _interpret(roots):
    from lazyx.core import runtime
    program, leaves = runtime.linearize(roots)
    return reference.ReferenceBackend().compile(program)([n.value for n in leaves])


@pytest.mark.parametrize("op,attrs", [("lu", {}), ("qr", {"full_matrices": False}), ("geqrf", {}),
                                      ("ldl", {}),
                                      ("eigh", {"lower": True}),
                                      ("svd", {"full_matrices": False}),
                                      ("top_k", {"k": 2}),
                                      ("sort_with_indices", {"axis": 1})])
def test_all_results_cost_one_kernel_run(op, attrs):
    """Every factor of one node, used by one program, runs the kernel once (it ran once per
    factor when each factor was its own op)."""
    x = ir.param(_matrix((2, 3, 3), 5), "float32")
    results = ops.OPS[op](x, **attrs)
    assert len(results) >= 2
    RUNS.clear()
    values = _interpret([ops.neg(r) if r.dtype == "float32" else r for r in results])
    assert RUNS == {op: 1}
    for value, node in zip(values, results):
        assert value.shape == node.shape and value.dtype == np.dtype(node.dtype)


def test_debug_text_shows_the_multi_node_and_its_projections():
    from lazyx.core import debug, runtime
    x = ir.param(_matrix((4, 4), 6), "float32")
    lu, pivots, _ = ops.lu(x)
    program, _ = runtime.linearize([lu, pivots])
    text = debug.program_text(program)
    assert "%1 = lu(%0) : (float32[4,4], int32[4], int32[4])" in text, text
    assert "%2 = result(%1) {index=0} : float32[4,4]" in text, text
    assert "%3 = result(%1) {index=1} : int32[4]" in text, text
    assert 'n1 [label="%1 lu\\n(float32[4,4], int32[4], int32[4])' in debug.program_dot(program)
