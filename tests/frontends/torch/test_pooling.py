"""Pooling (lowered on reduce_window; max-pool indices by walking the window's taps,
adaptive max on a gather of its windows) against eager
CPU torch on hypothesis-drawn shapes and arguments, with no CPU fallback."""
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, strategies as st

import lazyx
import lazyx.frontends.torch as lt


def _no_fallback_match(fn, x):
    expected = fn(x)
    before = lazyx.metrics()["fallbacks"]
    got = fn(x.to(lt.device))
    got = tuple(g.cpu() for g in got) if isinstance(got, tuple) else got.cpu()
    assert lazyx.metrics()["fallbacks"] == before, lazyx.metrics()["fallback_ops"]
    torch.testing.assert_close(got, expected, equal_nan=True, rtol=1e-5, atol=1e-5)


@st.composite
def avg_case(draw):
    nsp = draw(st.sampled_from([1, 2, 3]))
    kernel = [draw(st.integers(1, 3)) for _ in range(nsp)]
    stride = [draw(st.integers(1, 3)) for _ in range(nsp)]
    padding = [draw(st.integers(0, k // 2)) for k in kernel]
    sizes = [draw(st.integers(k, k + 3)) for k in kernel]
    batch = [draw(st.integers(1, 2))] if draw(st.booleans()) else []
    return (batch + [draw(st.integers(1, 2))] + sizes, kernel, stride, padding,
            draw(st.booleans()), draw(st.booleans()), draw(st.sampled_from([None, 3])))


@given(case=avg_case(), seed=st.integers(0, 2**16))
def test_avg_pool_matches_eager(case, seed):
    shape, kernel, stride, padding, ceil_mode, include_pad, divisor = case
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[len(kernel)]
    kwargs = dict(ceil_mode=ceil_mode, count_include_pad=include_pad)
    if len(kernel) > 1:
        kwargs["divisor_override"] = divisor
    _no_fallback_match(lambda t: pool(t, kernel, stride, padding, **kwargs), x)


@given(case=avg_case(), dilation=st.integers(1, 2), special=st.sampled_from(["", "ties", "nan"]),
       seed=st.integers(0, 2**16))
def test_max_pool_matches_eager_with_indices(case, dilation, special, seed):
    shape, kernel, stride, padding, ceil_mode, _, _ = case
    shape = shape[:-len(kernel)] + [n + (k - 1) * (dilation - 1) for n, k in
                                    zip(shape[-len(kernel):], kernel)]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    if special == "ties":
        x = x.round()  # the first maximum's index, as torch's kernel picks
    elif special == "nan":
        x[x > 1] = float("nan")
        x[x < -1] = float("-inf")
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[len(kernel)]
    _no_fallback_match(lambda t: pool(t, kernel, stride, padding, dilation, ceil_mode,
                                      return_indices=True), x)


@given(nsp=st.sampled_from([1, 2, 3]), data=st.data(), seed=st.integers(0, 2**16))
def test_adaptive_pools_match_eager_with_indices(nsp, data, seed):
    sizes = [data.draw(st.integers(1, 7)) for _ in range(nsp)]
    outs = [data.draw(st.integers(0, 5)) for _ in range(nsp)]  # 0: torch allows it
    x = torch.randn([2, 3] + sizes, generator=torch.Generator().manual_seed(seed))
    if data.draw(st.booleans()):
        x = x.round()  # ties: the first maximum's index, as torch's kernel picks
    mx = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}[nsp]
    avg = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[nsp]
    _no_fallback_match(lambda t: mx(t, outs, return_indices=True), x)
    _no_fallback_match(lambda t: avg(t, outs), x)


@pytest.mark.parametrize("call", [
    lambda t: F.avg_pool2d(t, 5),                      # window larger than the input
    lambda t: F.avg_pool2d(t, 2, padding=2),           # padding over half the window
    lambda t: F.adaptive_max_pool2d(t[:, :, :0], 2),   # empty spatial input
    lambda t: F.avg_pool3d(t[0, 0], 2),                # 2-d input to a 3-d pool
])
def test_bad_pooling_calls_raise_torchs_error_at_the_call(call):
    x = torch.randn(1, 2, 4, 4)
    with pytest.raises(RuntimeError) as eager:
        call(x)
    with pytest.raises(type(eager.value)):
        call(x.to(lt.device))


GRAD_POOLS = [lambda t: F.avg_pool2d(t, 3, 2, 1),
              lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True, count_include_pad=False),
              lambda t: F.avg_pool3d(t.unsqueeze(2), (1, 2, 2), divisor_override=3),
              lambda t: F.max_pool2d(t, 3, 2, 1, dilation=2, ceil_mode=True),
              lambda t: F.max_pool3d(t.unsqueeze(2), (1, 2, 2)),
              lambda t: F.adaptive_avg_pool2d(t, 3), lambda t: F.adaptive_avg_pool2d(t, (2, 7)),
              lambda t: F.adaptive_avg_pool3d(t.unsqueeze(2), (1, 2, 3)),
              lambda t: F.adaptive_max_pool2d(t, 3),
              lambda t: F.adaptive_max_pool3d(t.unsqueeze(2), (1, 2, 3))]


@pytest.mark.parametrize("index", range(len(GRAD_POOLS)))
def test_pooling_gradients_match_eager_without_fallback(index):
    pool = GRAD_POOLS[index]
    x = torch.randn(2, 3, 7, 7, generator=torch.Generator().manual_seed(index))
    x.round_()  # ties: the gradient goes where torch's index points
    x.requires_grad_()
    pool(x).square().sum().backward()
    lazy = x.detach().to(lt.device).requires_grad_()
    before = lazyx.metrics()["fallbacks"]
    pool(lazy).square().sum().backward()
    grad = lazy.grad.cpu()
    assert lazyx.metrics()["fallbacks"] == before, lazyx.metrics()["fallback_ops"]
    torch.testing.assert_close(grad, x.grad, rtol=1e-5, atol=1e-5)
