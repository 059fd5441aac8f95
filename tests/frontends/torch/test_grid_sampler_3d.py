"""F.grid_sample on 5-D input (aten.grid_sampler_3d, which torch has no decomposition for) is
lowered: values and both gradients against eager torch for every mode lazyx takes (trilinear,
nearest), padding mode and align_corners, with grid points outside the volume."""
import itertools

import pytest
import torch
import torch.nn.functional as F

import lazyx
import lazyx.frontends.torch as lt


# (every combination in float64; float32 once per mode: an XLA compile each)
@pytest.mark.parametrize("mode,padding,align,dtype", [
    *((m, p, a, torch.float64) for m, p, a in itertools.product(
        ["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True])),
    ("bilinear", "reflection", False, torch.float32),
    ("nearest", "zeros", True, torch.float32)])
def test_matches_eager_with_gradients(mode, padding, align, dtype):
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 4, 5, 6, dtype=dtype, generator=gen)  # (never requires grad)
    grid = torch.rand(2, 3, 4, 2, 3, dtype=dtype, generator=gen) * 2.6 - 1.3
    weights = torch.randn(2, 3, 3, 4, 2, dtype=dtype, generator=gen)

    def run(device):
        xs, gs = (t.to(device).detach().requires_grad_() for t in (x, grid))
        out = F.grid_sample(xs, gs, mode=mode, padding_mode=padding, align_corners=align)
        (out * weights.to(device)).sum().backward()
        return [t.detach().cpu() for t in (out, xs.grad, gs.grad)]
    want = run("cpu")
    lazyx.reset_metrics()
    got = run(lt.device)
    assert lazyx.metrics()["fallbacks"] == 0
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=tol, atol=tol)


def test_bicubic_is_refused_as_torch_refuses_it():
    x, grid = torch.randn(1, 1, 2, 2, 2), torch.zeros(1, 1, 1, 1, 3)
    with pytest.raises(RuntimeError) as eager:
        F.grid_sample(x, grid, mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError) as lazy:
        F.grid_sample(x.to(lt.device), grid.to(lt.device), mode="bicubic",
                      align_corners=False)
    assert str(lazy.value) == str(eager.value)
