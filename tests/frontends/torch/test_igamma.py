"""torch.igamma / igammac are lowered (they were fallbacks): the values, torch's own answers
where a or x is 0, inf, negative or NaN, and the gradient with respect to x, against eager
torch; dtype by dtype (float32 is computed in float64, closer to torch's float32 kernel than
XLA's float32 series)."""
import numpy as np
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

EDGES = [-1.0, 0.0, 0.5, 2.0, float("inf"), float("nan"), 1e-3, 30.0, 100.0, 7.5]
XS = EDGES + [31.0, 90.0, 200.0, 0.1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=["igamma", "igammac"])
def test_values_and_edges(fn, dtype):
    a, x = (torch.tensor(v, dtype=dtype) for v in np.meshgrid(EDGES, XS, indexing="ij"))
    lazyx.reset_metrics()
    got = fn(a.to(lt.device), x.to(lt.device)).cpu()
    assert lazyx.metrics()["fallbacks"] == 0
    tol = {torch.float64: 1e-9, torch.float32: 1e-5, torch.float16: 2e-3}[dtype]
    torch.testing.assert_close(got, fn(a, x), rtol=tol, atol=tol, equal_nan=True)


def test_gradient_with_respect_to_x():
    a = torch.tensor([0.5, 2.0, 30.0, 4.0], dtype=torch.float64)
    x = torch.tensor([0.3, 2.5, 28.0, 9.0], dtype=torch.float64)
    want = []
    for fn in (torch.igamma, torch.igammac):
        xe = x.clone().requires_grad_()
        fn(a, xe).mul(torch.arange(1.0, 5.0, dtype=torch.float64)).sum().backward()
        xl = x.to(lt.device).requires_grad_()
        fn(a.to(lt.device), xl).mul(torch.arange(1.0, 5.0, dtype=torch.float64)
                                    .to(lt.device)).sum().backward()
        want.append((xl.grad.cpu(), xe.grad))
    for got, expected in want:
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
