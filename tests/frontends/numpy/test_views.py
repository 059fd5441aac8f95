"""NumPy views of lazy arrays, against NumPy: a write through a view (A[0][1] = 5, A.T[0] = 1,
for row in A: row *= 2, out=A[0], z.real[...] = 0, numpy-100's Game of Life) changes its base,
a write into a base changes its live views, NumPy's copies stay copies, read-only views refuse
writes, and .base / np.shares_memory / strides / flags are NumPy's -- on random chains of view
operations too, and under lazyx.compile."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.numpy as lnp


def _pair(shape=(3, 4), dtype=float):
    host = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape).copy()  # (owns its data)
    return host, lnp.asarray(host.copy())


def _same(lazy, host):
    got = np.asarray(lazy)
    assert got.dtype == host.dtype and got.shape == host.shape
    np.testing.assert_array_equal(got, host)


def _chained(A):
    A[0][1] = 5


def _rows(A):
    for row in A:
        row *= 2


def _rows_setitem(A):
    for i, row in enumerate(A):
        row[...] = i


def _transpose(A):
    A.T[0] = 1


def _transpose_axes(A):
    A.transpose(1, 0)[1, :2] = -3


def _swapaxes(A):
    np.swapaxes(A, 0, 1)[2] += 10


def _moveaxis(A):
    np.moveaxis(A, 0, -1)[-1] = 4


def _ravel(A):
    A.ravel()[0] = 7


def _reshape(A):
    A.reshape(-1)[2] = 7


def _np_reshape(A):
    np.reshape(A, (2, 6))[1, ::3] = 8


def _expand_squeeze(A):
    np.expand_dims(A, 0)[0, 1] = 6
    A[None][:, 2].squeeze()[1:] = 9


def _out_view(A):
    np.add(A[0], 1, out=A[0])


def _masked_subview(A):  # numpy-100 #88's update
    A[1:, 1:][A[1:, 1:] > 4] = -1


def _negative_steps(A):
    A[::-1, ::-2][0] = 100


def _ellipsis_and_newaxis(A):
    A[..., 1][None, 1:] *= -1


def _column_swap(A):  # NumPy's aliasing trap: both columns end up equal to the old column 1
    A[:, 0], A[:, 1] = A[:, 1], A[:, 0]


def _views_read_after(A):
    v = A[1:]
    w = v[:, ::2]
    A[...] = 3
    w[0] = 9
    v += w.sum()


def _siblings(A):
    row, col = A[0], A[:, 0]
    row[0] = 50
    col[1:] = row[0] + 1


def _scalar_is_not_a_view(A):
    s = A[0, 1]  # a NumPy scalar: owns its value
    s += 1
    A[1] += s


def _copies_stay_copies(A):
    A.T.reshape(-1)[0] = 99  # a transposed array reshaped: a copy
    A[[0, 1]][0] = 99  # advanced indexing: a copy
    A.flatten()[0] = 99
    A[:, ::2].ravel()[0] = 99  # ravel of a strided view: a copy
    A[A > 2][0] = 99
    A.astype(np.float32)[0] = 99
    A.copy()[0] = 99


def _base_written_then_view_read(A):
    v = A[1]
    A += 1
    A[1, 1] = v[0] + v[1]


IDIOMS = [_chained, _rows, _rows_setitem, _transpose, _transpose_axes, _swapaxes, _moveaxis,
          _ravel, _reshape, _np_reshape, _expand_squeeze, _out_view, _masked_subview,
          _negative_steps, _ellipsis_and_newaxis, _column_swap, _views_read_after, _siblings,
          _scalar_is_not_a_view, _copies_stay_copies, _base_written_then_view_read]


@pytest.mark.parametrize("idiom", IDIOMS, ids=lambda f: f.__name__.strip("_"))
def test_writes_through_views_are_numpys(idiom):
    host, lazy = _pair()
    idiom(host)
    idiom(lazy)
    _same(lazy, host)


def test_views_record_without_a_sync():
    host, lazy = _pair()
    lazyx.sync()
    lazyx.reset_metrics()
    for f in (_chained, _rows, _transpose, _reshape, _masked_subview, _views_read_after):
        f(host)
        f(lazy)
    assert lazyx.metrics()["syncs"] == 0
    _same(lazy, host)


def test_complex_parts_and_dtype_views():
    z = np.array([1 + 2j, 3 + 4j, -5 - 6j])
    lz = lnp.asarray(z.copy())
    for x in (z, lz):
        x.real[...] = 0
        x.imag[1:] *= 3
        np.real(x)[0] = 7
    _same(lz, z)
    im = lnp.asarray(np.arange(3.0)).imag  # of a real array: read-only zeros (NumPy)
    with pytest.raises(ValueError, match="read-only"):
        im[0] = 1
    r = lnp.asarray(np.arange(3.0))
    assert r.real is r
    # numpy-100 #53: float32 -> int32 in place through a view of the same width
    for Z in (np.arange(10, dtype=np.float32), lnp.asarray(np.arange(10, dtype=np.float32))):
        Y = Z.view(np.int32)
        Y[:] = Z
        if isinstance(Z, np.ndarray):
            want, want_y = Z, Y
        else:
            _same(Z, want)
            _same(Y, want_y)


def test_game_of_life_is_numpys():
    """numpy-100 #88, as written there."""
    def iterate(Z):
        N = (Z[0:-2, 0:-2] + Z[0:-2, 1:-1] + Z[0:-2, 2:] + Z[1:-1, 0:-2] + Z[1:-1, 2:] +
             Z[2:, 0:-2] + Z[2:, 1:-1] + Z[2:, 2:])
        birth = (N == 3) & (Z[1:-1, 1:-1] == 0)
        survive = ((N == 2) | (N == 3)) & (Z[1:-1, 1:-1] == 1)
        Z[...] = 0
        Z[1:-1, 1:-1][birth | survive] = 1
        return Z

    host = np.random.default_rng(0).integers(0, 2, (20, 20))
    lazy = lnp.asarray(host.copy())
    for _ in range(10):
        host, lazy = iterate(host), iterate(lazy)
    assert host.sum() > 0
    _same(lazy, host)


def test_read_only_views_refuse_writes_as_numpy():
    for make in (lambda a: np.broadcast_to(a[0], (2, 4)), lambda a: a.diagonal(),
                 lambda a: np.diagonal(a)):
        for a in _pair():
            v = make(a)
            assert not v.flags.writeable
            with pytest.raises(ValueError, match="assignment destination is read-only"):
                v[0] = 1
            with pytest.raises(ValueError, match="output array is read-only"):
                v += 1
    host, lazy = _pair()
    b = np.broadcast_to(lazy[:, 1], (2, 3))
    lazy[1, 1] = -7  # a read-only view still follows its base
    _same(b, np.broadcast_to(np.where(host == 5, -7.0, host)[:, 1], (2, 3)))


def test_flags_writeable_false_is_numpys():
    """numpy-100 #43: Z.flags.writeable = False makes Z read-only (and views made after)."""
    for Z in (np.zeros(10), lnp.zeros(10)):
        before = Z[2:]
        Z.flags.writeable = False
        assert not Z.flags.writeable and not Z[1:].flags.writeable
        with pytest.raises(ValueError, match="assignment destination is read-only"):
            Z[0] = 1
        with pytest.raises(ValueError, match="output array is read-only"):
            Z += 1
        with pytest.raises(ValueError, match="output array is read-only"):
            np.add(Z, 1, out=Z)
        with pytest.raises(ValueError, match="read-only"):
            Z[1:][0] = 1
        before[0] = 5  # a view made before still writes (NumPy)
        assert float(Z[2]) == 5.0
        with pytest.raises(ValueError):
            Z[1:].setflags(write=True)
        Z.setflags(write=True)
        Z[0] = 1
        assert float(Z[0]) == 1.0


def test_base_shares_memory_strides_and_flags_are_numpys():
    host, lazy = _pair((2, 3, 4))
    cases = [lambda a: a, lambda a: a[1], lambda a: a[:, ::2], lambda a: a.T,
             lambda a: a.transpose(1, 0, 2)[0], lambda a: a.reshape(6, 4),
             lambda a: a[::-1, 1:, None], lambda a: a.ravel()[3:]]
    for f in cases:
        h, z = f(host), f(lazy)
        assert (h.base is None) == (z.base is None)
        if h.base is not None:
            assert z.base is lazy
        assert z.strides == h.strides, f
        for flag in ("c_contiguous", "f_contiguous", "writeable"):
            assert getattr(z.flags, flag) == getattr(h.flags, flag), (f, flag)
        for g in cases:
            assert np.shares_memory(z, g(lazy)) == np.shares_memory(h, g(host))
            assert np.may_share_memory(z, g(lazy)) == np.may_share_memory(h, g(host))
    assert not np.shares_memory(lazy, lnp.asarray(host))
    assert not np.shares_memory(lazy[0, 0], lazy[1, 0])


def test_order_a_follows_the_views_layout():
    host, lazy = _pair()
    for order in ("A", "K", "C", "F"):
        _same(lazy.T.ravel(order), host.T.ravel(order))
    _same(lazy.T.reshape(12, order="A"), host.T.reshape(12, order="A"))
    with pytest.raises(ValueError, match="copy"):
        lazy.T.reshape(12, copy=False)
    lazy.reshape(2, 6, copy=False)[0, 0] = -1
    assert float(lazy[0, 0]) == -1.0


def test_resize_and_shape_of_views():
    host, lazy = _pair()
    for a in (host, lazy):
        with pytest.raises(ValueError, match="does not own its data"):
            a[1:].resize(4)
    v = lazy[0]
    with pytest.raises(ValueError, match="referenced"):
        lazy.resize(20)
    lazy.resize(20, refcheck=False)
    host.resize(20, refcheck=False)
    _same(lazy, host)
    _same(v, np.arange(4.0))  # (it leaves the family: NumPy's would read freed memory)


# ---------------------------------------------------------------- random chains

def _steps(shape, draw):
    """A chain of view operations valid for `shape` (a list of (name, argument))."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["key", "T", "perm", "reshape", "ravel", "expand",
                                     "squeeze"]))
        if kind == "key" and shape:
            key = []
            for n in shape:
                if draw(st.booleans()):
                    start = draw(st.integers(-n, n))
                    stop = draw(st.integers(-n, n))
                    step = draw(st.sampled_from([1, 1, 2, -1, -2]))
                    key.append(slice(start, stop, step))
                else:
                    key.append(draw(st.integers(-n, n - 1)) if n else slice(None))
            if draw(st.booleans()):
                key.insert(draw(st.integers(0, len(key))), None)
            if all(type(k) is int for k in key):
                key.append(Ellipsis)  # (else a scalar, not a view)
            key = tuple(key)
            out.append(("key", key))
            shape = np.empty(shape)[key].shape
        elif kind == "perm" and len(shape) > 1:
            perm = tuple(draw(st.permutations(range(len(shape)))))
            out.append(("perm", perm))
            shape = tuple(shape[p] for p in perm)
        elif kind == "T":
            out.append(("T", None))
            shape = shape[::-1]
        elif kind == "reshape":
            size = int(np.prod(shape))
            first = draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]
                                         or [1]))
            new = (first, -1) if size else (0,)
            out.append(("reshape", new))
            shape = np.empty(shape).reshape(new).shape
        elif kind == "ravel":
            out.append(("ravel", None))
            shape = (int(np.prod(shape)),)
        elif kind == "expand":
            axis = draw(st.integers(0, len(shape)))
            out.append(("expand", axis))
            shape = shape[:axis] + (1,) + shape[axis:]
        elif kind == "squeeze":
            out.append(("squeeze", None))
            shape = tuple(d for d in shape if d != 1)
    return out


def _apply(x, step):
    kind, arg = step
    if kind == "key":
        return x[arg]
    if kind == "T":
        return x.T
    if kind == "perm":
        return np.transpose(x, arg)
    if kind == "reshape":
        return x.reshape(arg)
    if kind == "ravel":
        return np.ravel(x)
    if kind == "expand":
        return np.expand_dims(x, arg)
    return x.squeeze()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_view_chains_then_writes_are_numpys(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    steps = _steps(shape, data.draw)
    host, lazy = _pair(shape)
    hs, zs = [host], [lazy]
    for step in steps:
        hs.append(_apply(hs[-1], step))
        zs.append(_apply(zs[-1], step))
    other = data.draw(st.integers(0, len(hs) - 1))
    how = data.draw(st.sampled_from(["fill", "add", "first", "base"]))
    for views in (hs, zs):
        target = views[-1]
        if how == "fill":
            target[...] = -1.5
        elif how == "add":
            target += 100
        elif how == "first" and target.ndim:
            target[0] = -2
        else:
            views[0][...] = views[0] * 2 + 1  # a write into the base, read through the views
        views[other] *= 3  # then a write through another member of the family
    for h, z in zip(hs, zs):
        _same(z, h)


# ---------------------------------------------------------------- lazyx.compile

def test_a_view_written_inside_a_compiled_step_updates_its_base_each_replay():
    def step(A, x):
        A[1:, 1:] += x  # a view of an argument, written
        A[0][0] = A[1:].sum()
        for row in A[1:]:
            row *= 0.5
        return A.T[0].sum()

    host, lazy = _pair((4, 4))
    eager_A, eager = host.copy(), []
    compiled = lazyx.compile(step)
    lazyx.reset_metrics()
    for k in range(5):
        x = np.arange(9.0).reshape(3, 3) * (k + 1)
        eager.append(step(eager_A, x))
        got = compiled(lazy, lnp.asarray(x))
        np.testing.assert_allclose(float(got), eager[-1], rtol=1e-12)
        np.testing.assert_allclose(np.asarray(lazy), eager_A, rtol=1e-12)
    assert lazyx.metrics()["replays"] >= 3


def test_real_and_imag_setters_write_in_place():
    """`z.imag = 0`, `z.real = v` (explore_np100 F5: AttributeError, no setter)."""
    z = np.array([1 + 2j, 3 + 4j, 5 - 6j])
    lz = lnp.asarray(z.copy())
    v = lz[1:]
    for x in (z, lz):
        x.imag = 0
        x.real = np.array([5.0, 6.0, 7.0]) if x is z else lnp.asarray([5.0, 6.0, 7.0])
        x[1:].imag = -1
    _same(lz, z)
    _same(v, z[1:])
    r, lr = np.arange(3.0), lnp.asarray(np.arange(3.0))
    for x in (r, lr):
        x.real = 4
        with pytest.raises(TypeError, match="array does not have imaginary part to set"):
            x.imag = 1
    _same(lr, r)


class _NamedArray(lnp.ndarray):
    """numpy-100's exercise 63 written against lnp: a subclass made by viewing."""

    def __new__(cls, array, name="no name"):
        obj = lnp.asarray(array).view(cls)
        obj.name = name
        return obj

    def __array_finalize__(self, obj):
        if obj is None:
            return
        self.name = getattr(obj, "name", "no name")


def test_a_view_as_a_subclass_of_lnp_ndarray():
    """a.view(Sub) for a subclass of lnp.ndarray is an instance of Sub holding a's values,
    made as NumPy makes one (no Sub.__new__; Sub.__array_finalize__(a)); it ran NumPy's view
    on a host copy with dtype=Sub (a fallback) and failed with NumPy's object-dtype message.
    A view as a subclass of np.ndarray stays refused by name."""
    z = _NamedArray(np.arange(10), "range_10")
    assert type(z) is _NamedArray and z.name == "range_10"
    np.testing.assert_array_equal(np.asarray(z * 2), np.arange(10) * 2)
    plain = lnp.asarray(np.arange(3.0))
    for made in (plain.view(_NamedArray), plain.view(type=_NamedArray)):
        assert type(made) is _NamedArray and made.name == "no name"
        np.testing.assert_array_equal(np.asarray(made), np.arange(3.0))

    class HostSub(np.ndarray):
        pass
    with pytest.raises(TypeError, match="no ndarray subclass views"):
        plain.view(HostSub)
    with pytest.raises(TypeError):
        lnp.ndarray(plain._node, "extra")
