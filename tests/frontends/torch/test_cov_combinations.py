"""torch.combinations, torch.cov and torch.corrcoef on lazy tensors against eager CPU torch:
shapes, dtypes, values, warnings, errors and gradients. ATen's kernels read lazy values on the
host (masked_select's count; cov's `norm_factor <= 0`): lazyx's (frontends/torch/readless.py)
read nothing where the answer is known from shapes, and one counted data-dependent sync for
cov's checks of weights' values."""
import warnings

import pytest
import torch
from hypothesis import given, strategies as st

import lazyx
import lazyx.frontends.torch as lt

DTYPES = [torch.float32, torch.float64, torch.int64, torch.complex64]


def _values(shape, dtype, seed):
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if not (dtype.is_floating_point or dtype.is_complex):
        return torch.randint(-5, 6, shape, generator=generator, dtype=dtype)
    return torch.rand(shape, generator=generator, dtype=dtype) * 4 - 2


def _on_device(value):
    return value.to(lt.device) if isinstance(value, torch.Tensor) else value


def _calls(fn, *args, **kwargs):
    """(eager result, its warnings), (lazy result on the CPU, its warnings, metrics)."""
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        expected = fn(*[a.clone() for a in args], **kwargs)  # (ATen's cov may zero its input)
    lazy_args = [_on_device(a) for a in args]
    lazy_kwargs = {k: _on_device(v) for k, v in kwargs.items()}
    lazyx.reset_metrics()
    with warnings.catch_warnings(record=True) as lazy_told:
        warnings.simplefilter("always")
        got = fn(*lazy_args, **lazy_kwargs)
    metrics = lazyx.metrics()
    return (expected, told), (got.cpu(), lazy_told, metrics)


def _same_warnings(told, lazy_told):
    # torch's text ends with " (Triggered internally at .../Correlation.cpp:129.)"
    assert len(lazy_told) == len(told), [str(w.message) for w in lazy_told]
    for ours, torchs in zip(lazy_told, told):
        assert ours.category is torchs.category
        assert str(torchs.message).startswith(str(ours.message))
        assert ours.filename == __file__  # the caller's line, as torch's own


def _residue_free(c):
    """`c` with its diagonal's imaginary part as nan. The product of a row with its own
    conjugate is real, but the sum leaves a rounding residue in the imaginary part (its sign
    depends on the order of the sum); divided by a zero factor it is +-inf or nan."""
    c = c.clone()
    c.diagonal().imag.fill_(float("nan"))
    return c


def _matches(fn, *args, reads=0, **kwargs):
    (expected, told), (got, lazy_told, metrics) = _calls(fn, *args, **kwargs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if expected.is_complex() and expected.dim() == 2 and told:  # (told: the factor was 0)
        expected, got = _residue_free(expected), _residue_free(got)
    torch.testing.assert_close(got, expected, equal_nan=True)
    assert metrics["fallbacks"] == 0, metrics["fallback_ops"]
    assert metrics["sync_causes"] == ({"data_dependent": reads} if reads else {})
    _same_warnings(told, lazy_told)


@given(n=st.integers(0, 6), r=st.integers(0, 5), with_replacement=st.booleans(),
       dtype=st.sampled_from(DTYPES + [torch.bool]), seed=st.integers(0, 2**16))
def test_combinations_match_eager_without_a_read(n, r, with_replacement, dtype, seed):
    x = _values((n,), dtype, seed)
    # r = 0: an empty vector; r > n without replacement, or n = 0: shape (0, r)
    _matches(torch.combinations, x, r=r, with_replacement=with_replacement)


@pytest.mark.parametrize("shape, r", [((2, 3), 2), ((), 1), ((4,), -1)])
def test_combinations_raise_torchs_errors(shape, r):
    x = torch.ones(shape)
    with pytest.raises(RuntimeError) as eager:
        torch.combinations(x, r)
    with pytest.raises(RuntimeError, match=str(eager.value).replace("[", r"\[")):
        torch.combinations(x.to(lt.device), r)


@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations_gradient(with_replacement):
    x = torch.tensor([0.5, -1.0, 2.0, 3.0], dtype=torch.float64)
    grads = []
    for t in (x.clone().requires_grad_(), x.to(lt.device).requires_grad_()):
        out = torch.combinations(t, 3, with_replacement)
        (out * torch.arange(out.numel(), dtype=out.dtype, device=out.device).view(out.shape)
         ).sum().backward()
        grads.append(t.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


SHAPES = st.one_of(st.just(()), st.tuples(st.integers(0, 6)),
                   st.tuples(st.integers(0, 4), st.integers(0, 6)))


@given(shape=SHAPES, correction=st.integers(0, 7), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**16))
def test_cov_without_weights_matches_eager_without_a_read(shape, correction, dtype, seed):
    # correction >= the number of observations: torch warns, and the factor 0 gives inf/nan
    _matches(torch.cov, _values(shape, dtype, seed), correction=correction)


@given(shape=SHAPES, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_corrcoef_matches_eager_without_a_read(shape, dtype, seed):
    _matches(torch.corrcoef, _values(shape, dtype, seed))


FWEIGHTS = torch.tensor([1, 2, 0, 3, 1])
AWEIGHTS = torch.tensor([0.5, 1.25, 0.1, 2.0, 0.75])
WEIGHTED = [
    ((3, 5), torch.float32, {"fweights": FWEIGHTS}),
    ((3, 5), torch.float32, {"aweights": AWEIGHTS}),
    ((3, 5), torch.float64, {"fweights": FWEIGHTS, "aweights": AWEIGHTS}),
    ((5,), torch.float32, {"fweights": FWEIGHTS, "aweights": AWEIGHTS.double()}),
    ((2, 5), torch.int64, {"fweights": FWEIGHTS}),
    ((2, 5), torch.int64, {"aweights": AWEIGHTS}),
    ((3, 5), torch.complex64, {"aweights": AWEIGHTS}),
    ((5,), torch.complex64, {"fweights": FWEIGHTS}),
    # one observation with one kind of weights: ATen zeroes the centered input
    ((2, 1), torch.float32, {"fweights": torch.tensor([3])}),
    ((2, 1), torch.float32, {"aweights": torch.tensor([0.3])}),  # and its factor: nan
    ((2, 1), torch.int64, {"fweights": torch.tensor([2])}),
    ((2, 1), torch.float32, {"fweights": torch.tensor([3]), "aweights": torch.tensor([0.3])}),
]


@pytest.mark.parametrize("correction", [0, 1, 2, 9])
@pytest.mark.parametrize("shape, dtype, weights", WEIGHTED)
def test_cov_with_weights_reads_once(shape, dtype, weights, correction):
    # the weights' checks and the factor's sign come back in one counted read; a factor
    # <= 0 (correction 9) warns, and is zeroed in the graph: inf/nan as torch's
    _matches(torch.cov, _values(shape, dtype, 7), correction=correction, reads=1, **weights)


@pytest.mark.parametrize("weights", [
    {"fweights": torch.tensor([1, -2, 0, 3, 1])},
    {"aweights": -AWEIGHTS},
    {"fweights": torch.tensor([1, -2, 0, 3, 1]), "aweights": -AWEIGHTS},  # fweights' first
    {"fweights": torch.zeros(5, dtype=torch.int64)},  # weights sum to zero
    {"aweights": torch.zeros(5)},
    {"fweights": AWEIGHTS}, {"aweights": FWEIGHTS},  # dtypes
    {"fweights": FWEIGHTS[:3]}, {"aweights": AWEIGHTS.view(1, 5)},  # shapes
])
def test_cov_raises_torchs_errors(weights):
    x = _values((3, 5), torch.float32, 1)
    with pytest.raises(RuntimeError) as eager:
        torch.cov(x, **weights)
    lazy_weights = {k: v.to(lt.device) for k, v in weights.items()}
    with pytest.raises(RuntimeError) as lazy:
        torch.cov(x.to(lt.device), **lazy_weights)
    assert str(lazy.value) == str(eager.value)


@pytest.mark.parametrize("shape, dtype", [((3,), torch.bool), ((2, 2, 2), torch.float32)])
@pytest.mark.parametrize("fn", [torch.cov, torch.corrcoef])
def test_cov_and_corrcoef_reject_what_torch_rejects(fn, shape, dtype):
    x = torch.ones(shape, dtype=dtype)
    with pytest.raises(RuntimeError) as eager:
        fn(x)
    with pytest.raises(RuntimeError) as lazy:
        fn(x.to(lt.device))
    assert str(lazy.value) == str(eager.value)


def test_cov_leaves_its_input_alone():
    # ATen's one-observation corner case zeroes its input in place (a view of `self`);
    # lazyx's computes the same result without writing the caller's tensor
    x = torch.tensor([[0.1], [0.7]])
    lazy = x.to(lt.device)
    torch.testing.assert_close(torch.cov(lazy, fweights=torch.tensor([3]).to(lt.device)).cpu(),
                               torch.zeros(2, 2))
    torch.testing.assert_close(lazy.cpu(), x)


def _gradients(fn, *inputs, **kwargs):
    inputs = [t.clone().requires_grad_() for t in inputs]
    out = fn(*inputs, **kwargs)
    weights = torch.arange(out.numel(), dtype=out.dtype, device=out.device).view(out.shape)
    (out * (weights + 1)).sum().backward()
    return [t.grad.cpu() for t in inputs]


@pytest.mark.parametrize("fn, kwargs", [
    (torch.cov, {}), (torch.cov, {"correction": 0}), (torch.corrcoef, {}),
    (torch.cov, {"fweights": FWEIGHTS}),
])
def test_cov_and_corrcoef_gradients(fn, kwargs):
    x = _values((3, 5), torch.float64, 3)
    expected = _gradients(fn, x, **kwargs)
    got = _gradients(fn, x.to(lt.device), **{k: _on_device(v) for k, v in kwargs.items()})
    torch.testing.assert_close(got, expected)


def test_cov_gradient_through_aweights():
    x, aweights = _values((3, 5), torch.float64, 4), AWEIGHTS.double()
    fn = lambda x, a: torch.cov(x, aweights=a)  # noqa: E731
    expected = _gradients(fn, x, aweights)
    torch.testing.assert_close(_gradients(fn, x.to(lt.device), aweights.to(lt.device)),
                               expected)


def test_a_compiled_step_replays_without_a_read():
    x = _values((3, 5), torch.float32, 5)

    def step(t):
        return torch.cov(t) + torch.corrcoef(t) + torch.combinations(t[0], 2).sum()

    compiled = lazyx.compile(step)
    lazyx.reset_metrics()
    for _ in range(3):
        got = compiled(x.to(lt.device))
    metrics = lazyx.metrics()  # (a compiled step's run is one "explicit" sync)
    assert metrics["replays"] >= 1 and "data_dependent" not in metrics["sync_causes"]
    torch.testing.assert_close(got.cpu(), step(x))


def test_under_torch_compile():
    x = _values((3, 5), torch.float32, 6)

    def fn(t):
        return torch.cov(t) * 2 + torch.corrcoef(t) + torch.combinations(t[1], 2).sum()

    got = torch.compile(fn, backend=lt.dynamo_backend)(x.to(lt.device))
    torch.testing.assert_close(got.cpu(), fn(x))
