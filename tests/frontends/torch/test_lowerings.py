"""Lowerings added for the OpInfo push (issue 4): each compared with eager CPU torch on real
inputs, with no CPU fallback, and torch's error at the call for a bad one."""
import copy
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.torch as lt


def _lazy(x):
    return x.to(lt.device) if isinstance(x, torch.Tensor) else x


def _same(fn, *xs, equal_nan=True):
    """fn on lazy copies equals fn on CPU (every output of a tuple), with no fallback."""
    expected = fn(*xs)
    before = lazyx.metrics()["fallbacks"]
    got = fn(*[_lazy(x) for x in xs])
    outs = (got,) if isinstance(got, torch.Tensor) else tuple(got)
    wants = (expected,) if isinstance(expected, torch.Tensor) else tuple(expected)
    for g, e in zip(outs, wants):
        g = g.cpu()
        assert g.shape == e.shape and g.dtype == e.dtype
        torch.testing.assert_close(g, e, equal_nan=equal_nan, rtol=1e-4, atol=1e-5)
    assert lazyx.metrics()["fallbacks"] == before, lazyx.metrics()["fallback_ops"]


def _rand(shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=dtype)
    return torch.randint(-4, 5, shape, generator=g, dtype=dtype)


# ---------------------------------------------------------------- wrong values before

@given(shape=st.sampled_from([(3, 4), (4, 3), (2, 3, 4)]), offset=st.integers(-2, 2),
       dims=st.sampled_from([(0, 1), (1, 0), (-1, 0)]), seed=st.integers(0, 3))
@settings(max_examples=12)
def test_diagonal_scatter(shape, offset, dims, seed):
    x = _rand(shape, seed)
    n = torch.diagonal(x, offset, *dims).shape
    _same(lambda a, s: torch.diagonal_scatter(a, s, offset, *dims), x, _rand(n, seed + 1))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_saved_stats_follow_cpu(training):
    x, rm, rv = _rand((3, 2, 4), 0), _rand((2,), 1), _rand((2,), 2).abs()
    w, b = _rand((2,), 3), _rand((2,), 4)
    _same(lambda *a: torch.native_batch_norm(*a, training, 0.1, 1e-5), x, w, b, rm, rv)
    _same(lambda *a: torch.ops.aten._native_batch_norm_legit(*a, training, 0.1, 1e-5),
          x, w, b, rm.clone(), rv.clone())


def test_zero_dim_bfloat16_and_linspace_with_tensor_bounds():
    _same(lambda a: a.to(torch.bfloat16), torch.tensor(1.5))
    start = torch.tensor(-2.0)
    expected = torch.linspace(start, 3, 7, device="cpu")
    got = torch.linspace(start.to(lt.device), 3, 7, device="cpu")  # an item sync, no error
    torch.testing.assert_close(got, expected)
    lazy = torch.linspace(start.to(lt.device), 3, 7, device=lt.device)
    assert lazy.device.type == "lazyx"
    torch.testing.assert_close(lazy.cpu(), expected)


def test_take_and_bucketize():
    x, i = _rand((3, 4), 0), torch.tensor([[0, -1], [5, 11]])
    _same(torch.take, x, i)
    _same(torch.take, torch.zeros(0), torch.zeros(0, dtype=torch.long))
    bounds = torch.tensor([-1.0, 0.0, 0.5, 2.0])
    for right in (False, True):
        _same(lambda v, b: torch.bucketize(v, b, right=right), _rand((2, 5), 1), bounds)
        _same(lambda v, b: torch.bucketize(v, b, right=right, out_int32=True), bounds, bounds)


# ---------------------------------------------------------------- grouped reductions

@given(reduce=st.sampled_from(["prod", "mean", "amax", "amin"]), include_self=st.booleans(),
       dtype=st.sampled_from([torch.float32, torch.int64]), dim=st.sampled_from([0, 1, -1]),
       seed=st.integers(0, 3))
@settings(max_examples=20)
def test_index_reduce(reduce, include_self, dtype, dim, seed):
    x = _rand((4, 3), seed, dtype)
    index = torch.randint(0, x.shape[dim], (5,), generator=torch.Generator().manual_seed(seed))
    src_shape = list(x.shape)
    src_shape[dim] = 5
    src = _rand(tuple(src_shape), seed + 1, dtype)
    _same(lambda a, i, s: a.index_reduce(dim, i, s, reduce, include_self=include_self),
          x, index, src)


@given(reduce=st.sampled_from(["sum", "mean", "max", "min", "prod"]),
       initial=st.sampled_from([None, 2.0]), seed=st.integers(0, 3))
@settings(max_examples=15)
def test_segment_reduce(reduce, initial, seed):
    data = _rand((2, 6, 3), seed)
    lengths = torch.tensor([[2, 0, 4], [3, 3, 0]])
    offsets = torch.tensor([[0, 1, 1, 6], [0, 0, 5, 6]])
    _same(lambda d, n: torch._segment_reduce(d, reduce, lengths=n, axis=1, initial=initial),
          data, lengths)
    _same(lambda d, o: torch._segment_reduce(d, reduce, offsets=o, axis=1, initial=initial),
          data, offsets)


def test_segment_reduce_refuses_lengths_that_do_not_add_up():
    with pytest.raises(RuntimeError, match="sum to data.size"):
        torch._segment_reduce(_lazy(torch.ones(5)), "sum", lengths=_lazy(torch.tensor([1, 1])))


@pytest.mark.parametrize("op", [torch.ops.aten._embedding_bag_forward_only,
                                torch.ops.aten._embedding_bag])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [-1, 4])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_outputs_match_cpu(op, mode, padding_idx, include_last_offset):
    w = _rand((10, 3), 0)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = torch.tensor([0, 4, 4, 8] if include_last_offset else [0, 4, 4])
    _same(lambda *a: op(*a, False, mode, False, None, include_last_offset, padding_idx),
          w, idx, offsets)
    if mode == 0:
        _same(lambda *a: op(*a[:3], False, mode, False, a[3], include_last_offset,
                            padding_idx), w, idx, offsets, _rand((8,), 1))


@pytest.mark.parametrize("mode,weighted", [("sum", False), ("mean", False), ("max", False),
                                           ("sum", True)],
                         ids=["sum", "mean", "max", "sum-per_sample_weights"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_weight_gradient_is_lowered(mode, weighted, padding_idx,
                                                  include_last_offset):
    # (a bag's weight gradient was a CPU fallback every step: DLRM-style models; the offsets
    # hold an empty bag, whose max-mode index is 0 and whose gradient goes nowhere)
    torch.manual_seed(0)
    bag = torch.nn.EmbeddingBag(10, 3, mode=mode, include_last_offset=include_last_offset,
                                padding_idx=padding_idx)
    lazy_bag = copy.deepcopy(bag).to(lt.device)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = torch.tensor([0, 2, 2, 5] + ([8] if include_last_offset else []))
    weights = torch.rand(8) if weighted else None
    y = bag(idx, offsets, per_sample_weights=weights)
    cotangent = torch.randn(y.shape)
    y.backward(cotangent)
    before = lazyx.metrics()["fallbacks"]
    lazy_y = lazy_bag(idx.to(lt.device), offsets.to(lt.device),
                      per_sample_weights=weights.to(lt.device) if weighted else None)
    lazy_y.backward(cotangent.to(lt.device))
    lt.mark_step()
    assert lazyx.metrics()["fallbacks"] == before, lazyx.metrics()["fallback_ops"]
    torch.testing.assert_close(lazy_bag.weight.grad.cpu(), bag.weight.grad)


def test_embedding_bag_functional_2d_and_max():
    w, idx = _rand((10, 4), 0), torch.tensor([[1, 2, 2], [9, 0, 9]])
    for mode in ("sum", "mean", "max"):
        _same(lambda a, i: F.embedding_bag(i, a, mode=mode), w, idx)


# ---------------------------------------------------------------- order, products, distances

@given(shape=st.sampled_from([(7,), (3, 5), (2, 3, 4)]), dim=st.integers(-1, 0),
       seed=st.integers(0, 5), nan=st.booleans())
@settings(max_examples=15)
def test_cummax_cummin_and_mode_tie_rules(shape, dim, seed, nan):
    x = torch.randint(0, 3, shape, generator=torch.Generator().manual_seed(seed)).float()
    if nan:
        x.view(-1)[seed % x.numel()] = float("nan")
    _same(lambda a: torch.cummax(a, dim), x)
    _same(lambda a: torch.cummin(a, dim), x)
    _same(lambda a: torch.cummax(a, dim), x.long())
    if not nan:
        _same(lambda a: torch.mode(a, dim), x)
        _same(lambda a: torch.mode(a, dim, keepdim=True), x.long())


def test_addbmm_bilinear_pdist():
    _same(lambda b, x, y: torch.addbmm(b, x, y, beta=0.5, alpha=2), _rand((3, 5), 0),
          _rand((4, 3, 2), 1), _rand((4, 2, 5), 2))
    _same(lambda b, x, y: torch.addbmm(b, x, y, beta=0), torch.full((3, 5), math.nan),
          _rand((4, 3, 2), 1), _rand((4, 2, 5), 2))
    _same(F.bilinear, _rand((6, 3), 0), _rand((6, 4), 1), _rand((5, 3, 4), 2), _rand((5,), 3))
    for p in (0.0, 1.0, 2.0, 3.5, math.inf):
        _same(lambda x: F.pdist(x, p), _rand((5, 3), 4))


# ---------------------------------------------------------------- masks and data-dependent

@given(shape=st.sampled_from([(3, 4), (5,), (2, 2, 3)]), seed=st.integers(0, 5))
@settings(max_examples=10)
def test_masked_scatter_and_mask_assignment(shape, seed):
    x = _rand(shape, seed)
    mask = _rand(shape, seed + 1) > 0
    k = int(mask.sum())
    _same(lambda a, m, s: a.masked_scatter(m, s), x, mask, _rand((x.numel(),), seed + 2))
    _same(lambda a, m, s: a.masked_scatter(m, s), x, mask, _rand((k,), seed + 3))

    def put_rows(a, m, v):
        a = a.clone()
        a[m] = v
        return a

    def add_rows(a, m, v):
        return a.index_put((m,), v, accumulate=True)

    _same(put_rows, x, mask, torch.tensor(7.0))
    _same(put_rows, x, mask, _rand((k,), seed + 4))
    _same(add_rows, x, mask, _rand((k,), seed + 4))


def test_mask_writes_refuse_bad_sizes_at_the_call():
    x, mask = _lazy(torch.zeros(3, 4)), _lazy(torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(RuntimeError, match="Number of elements of source"):
        x.masked_scatter(mask, _lazy(torch.ones(5)))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[mask[:, 0]] = _lazy(torch.ones(2, 4))


def test_resize_renorm_repeat_interleave():
    _same(lambda a: a.clone().resize_(2, 3), _rand((4, 2), 0))
    _same(lambda a: a.clone().resize_(5), _rand((2, 3), 0))
    _same(lambda a: torch.embedding_renorm_(a.clone(), torch.tensor([0, 2, 2]).to(a.device),
                                            1.0, 2.0), _rand((4, 3), 1) * 3)
    for repeats in ([0, 1, 2], [3, 0, 0, 2], [0, 0]):
        _same(torch.repeat_interleave, torch.tensor(repeats))
    x, r = _rand((3, 4), 2), torch.tensor([2, 0, 1])
    _same(lambda a, n: a.repeat_interleave(n, dim=0, output_size=3), x, r)
    with pytest.raises(RuntimeError, match="negative"):
        torch.repeat_interleave(_lazy(torch.tensor([1, -1])))


def test_index_reduce_and_scatter_add_of_zero_dim():
    _same(lambda a, i, s: a.index_reduce(0, i, s, "prod", include_self=False),
          torch.tensor(3.0), torch.tensor([0]), torch.tensor(2.0))
    _same(lambda a, i, s: a.scatter_add(0, i, s), torch.tensor(3.0), torch.tensor(0),
          torch.tensor(2.0))


@pytest.mark.parametrize("values", [[2.0, 2.0, 2.0], [], [0.0, 1.0, 1.0, 2.0, 3.0, 9.0]])
@pytest.mark.parametrize("options", [{}, {"range": (-1.0, 2.0)}, {"density": True},
                                     {"weight": True}])
def test_histogram(values, options):
    x = torch.tensor(values)
    if options.get("weight"):
        options = {"weight": torch.arange(len(values), dtype=torch.float32)}
    _same(lambda a, *w: torch.histogram(a, 4, **options if not w else {"weight": w[0]}),
          x, *options.values() if "weight" in options else ())
    _same(lambda a: torch.histogram(a, torch.tensor([-1.0, 0.5, 1.0, 3.0])), x)


def test_histogramdd():
    x = _rand((20, 2), 0)
    flat = lambda r: (r.hist, *r.bin_edges)  # noqa: E731
    _same(lambda a: flat(torch.histogramdd(a, [3, 4])), x)
    _same(lambda a: flat(torch.histogramdd(a, [2, 2], range=[-1.0, 1.0, 0.0, 2.0],
                                           density=True)), x)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch.histogram(_lazy(torch.tensor([1, 2])), 3)


@given(st.lists(st.booleans(), max_size=6), st.sampled_from([torch.bool, torch.float32]))
@settings(max_examples=20, deadline=None)
def test_is_all_true_and_is_any_true(values, dtype):
    # what torch.distributions' validation reduces its checks to before reading one flag
    x = torch.tensor(values, dtype=torch.bool).to(dtype)
    for fn in (torch._is_all_true, torch._is_any_true):
        if dtype == torch.bool:
            _same(fn, x)
            _same(fn, x.reshape(-1, 1) if values else x)
        else:  # torch takes only bool here; so do we, at the call
            with pytest.raises(RuntimeError) as eager:
                fn(x)
            with pytest.raises(RuntimeError) as lazy:
                fn(_lazy(x))
            assert str(lazy.value) == str(eager.value)


@pytest.mark.parametrize("dim", [0, 2, -1], ids=lambda d: f"dim{d}")  # (CPU: first or last)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_weight_norm_interface_backward(dim, dtype):
    """The fused weight_norm backward (wav2vec2's positional convolution) was a fallback."""
    torch.manual_seed(dim + 3)
    v, grad_w = torch.randn(5, 3, 4, dtype=dtype), torch.randn(5, 3, 4, dtype=dtype)
    keep = [1] * 3
    keep[dim] = v.shape[dim]
    g = torch.rand(keep, dtype=dtype) + 0.5
    norms = torch.linalg.vector_norm(v, dim=[d for d in range(3) if d != dim % 3],
                                     keepdim=True)
    _same(lambda *t: torch.ops.aten._weight_norm_interface_backward(*t, dim % 3),
          grad_w, v, g, norms)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16,
                                   torch.float16])
@pytest.mark.parametrize("exponent", [0.5, -0.5, 2, 3.0, -1, 1.5])
def test_scalar_powers_at_signed_zero_and_infinity(dtype, exponent):
    """torch's kernel takes x ** 0.5 and x ** -0.5 as sqrt and rsqrt (not for float16): at
    -0.0 and -inf those differ from pow, in value or in sign."""
    x = torch.tensor([-math.inf, -0.0, 0.0, 0.25, 4.0, math.inf, math.nan], dtype=dtype)
    want, got = x ** exponent, (_lazy(x) ** exponent).cpu()
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, equal_nan=True, atol=0, rtol=0)
    finite = ~want.isnan()
    assert torch.equal(got.signbit()[finite], want.signbit()[finite])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("exponent", [0, 1, 3, -1, -2, 1.0, 3.0, -2.0])
def test_small_integer_powers_are_products(dtype, exponent):
    """x ** 0, 1, 3, -1, -2 as torch's kernel takes them (a fill, a copy, x*x*x, 1/x, 1/(x*x)):
    eager's bits, special values included, and no `pow` in the program -- a run-time exponent
    was a full-size power, and autograd's backward of every x ** 2 multiplies by x ** 1."""
    import lazyx
    torch.manual_seed(1)
    # (no subnormal results: XLA:CPU flushes them to zero, whatever the exponent)
    x = torch.cat([torch.tensor([-math.inf, -0.0, 0.0, 1e-30, 1e30, math.inf, math.nan]),
                   torch.randn(25) * 3]).to(dtype)
    want, lazy = x ** exponent, _lazy(x) ** exponent
    assert "= pow(" not in lazyx.ir_text(lazy)
    got = lazy.cpu()
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, equal_nan=True, atol=0, rtol=0)
    finite = ~want.isnan()
    assert torch.equal(got.signbit()[finite], want.signbit()[finite])
    grads = []
    for w in (x.clone().requires_grad_(), _lazy(x.clone()).requires_grad_()):
        (w ** 2).sum().backward()
        grads.append(w.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], equal_nan=True, atol=0, rtol=0)


@pytest.mark.parametrize("rank,fmt", [(4, torch.channels_last), (5, torch.channels_last_3d),
                                      (4, torch.contiguous_format), (4, torch.preserve_format)])
def test_memory_formats_of_contiguous_and_clone(rank, fmt):
    """x.contiguous(memory_format=channels_last) / clone(...): the values are x's (a lazy
    value has no layout); the dtype probe ran them on a rank-1 stand-in, which torch refused
    ("required rank 4 tensor to use channels_last format")."""
    x = torch.randn(*(2, 3, 4, 5, 6)[:rank])
    conv = torch.nn.Conv2d(3, 4, 3) if rank == 4 else torch.nn.Conv3d(3, 4, 3)
    for op in (lambda t: t.contiguous(memory_format=fmt),
               lambda t: t.clone(memory_format=fmt) * 2):
        want, got = op(x), op(_lazy(x))
        torch.testing.assert_close(got.cpu(), want)
        if fmt is not torch.preserve_format:
            lazy_conv = copy.deepcopy(conv).to(lt.device)
            torch.testing.assert_close(lazy_conv(got).detach().cpu(), conv(want).detach(),
                                       rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,pad", [((1, 1, 3), (3, 3)), ((1, 1, 3), (0, 3)),
                                       ((1, 1, 2, 3), (1, 1, 2, 2)),
                                       ((1, 2, 2, 3, 4), (1, 1, 1, 1, 2, 2)),
                                       ((1, 1, 2, 3), (1, 1, 1, 1)), ((2, 5), (4, 0))])
def test_reflect_padding_wider_than_its_dimension_raises_torchs_error(shape, pad):
    x = torch.arange(float(math.prod(shape))).view(shape)
    try:
        want = F.pad(x, pad, mode="reflect")
    except RuntimeError as err:
        with pytest.raises(RuntimeError, match=str(err).split(":")[0]):
            F.pad(_lazy(x), pad, mode="reflect")
    else:
        torch.testing.assert_close(F.pad(_lazy(x), pad, mode="reflect").cpu(), want)


def test_numpy_of_a_tensor_requiring_grad_raises_as_on_the_cpu():
    weight = torch.nn.Linear(2, 2).to(lt.device).weight
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires"):
        weight.numpy()
    assert weight.detach().numpy().shape == weight.numpy(force=True).shape == (2, 2)


_SINGULAR = {"zeros": [[0.0, 0.0], [0.0, 0.0]], "rank-1": [[1.0, 2.0], [2.0, 4.0]],
             "second pivot": [[2.0, 1.0, 1.0], [4.0, 2.0, 2.0], [1.0, 3.0, 5.0]]}


@pytest.mark.parametrize("name", sorted(_SINGULAR))
def test_singular_matrices_raise_torchs_linalg_error_and_info(name):
    """The LU's info is LAPACK's (the first exactly-zero pivot): torch.linalg.inv / solve of
    a singular matrix raise torch's LinAlgError with eager's message on both backends (XLA gave
    inf, the reference backend NumPy's LinAlgError), and the *_ex infos are eager's (0)."""
    a = torch.tensor(_SINGULAR[name])
    b = torch.ones(a.shape[0])
    for fn in (torch.linalg.inv, torch.inverse, lambda m: torch.linalg.solve(m, b.to(m.device))):
        with pytest.raises(torch.linalg.LinAlgError) as eager:
            fn(a)
        with pytest.raises(torch.linalg.LinAlgError) as lazy:
            fn(_lazy(a))
        assert str(lazy.value) == str(eager.value)
    for fn in (lambda m: torch.linalg.inv_ex(m).info,
               lambda m: torch.linalg.solve_ex(m, b.to(m.device)).info,
               lambda m: torch.linalg.lu_factor_ex(m).info):
        assert fn(_lazy(a)).item() == fn(a).item()
    regular = a + torch.eye(a.shape[0]) * 3
    torch.testing.assert_close(torch.linalg.inv(_lazy(regular)).cpu(), torch.linalg.inv(regular))
    assert torch.linalg.inv_ex(_lazy(regular)).info.item() == 0


@given(shape=st.sampled_from([(5,), (3, 4), (2, 3, 4)]), shifts=st.lists(st.integers(-9, 9),
       min_size=1, max_size=3), seed=st.integers(0, 3), flat=st.booleans())
@settings(max_examples=20, deadline=None)
def test_roll_is_two_slices_and_a_concatenation_per_axis(shape, shifts, seed, flat):
    """aten.roll is lowered as NumPy's and TF's roll (torch's decomposition: a 16-op gather)."""
    x = _rand(shape, seed).requires_grad_()
    n = len(shape)
    dims = [] if flat else [k % n - (n if k % 2 else 0) for k in range(len(shifts))]  # (-n..)
    shifts = shifts[:1] if flat else shifts
    _same(lambda t: torch.roll(t, shifts, dims), x)
    assert "gather" not in lazyx.ir_text(torch.roll(_lazy(x.detach()), shifts, dims))
    # its gradient: the upstream rolled back
    (g,) = torch.autograd.grad(torch.roll(x, shifts, dims).square().sum(), x)
    xl = _lazy(x.detach()).requires_grad_()
    (gl,) = torch.autograd.grad(torch.roll(xl, shifts, dims).square().sum(), xl)
    torch.testing.assert_close(gl.cpu(), g)
