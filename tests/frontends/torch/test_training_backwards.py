"""Training ops that used to fall back to CPU torch (a sync every step, and a CompileError
under lazyx.compile): grid_sampler_2d_backward, multi_margin_loss_backward, antialiased
bilinear interpolation and its backward, and the Gamma reparameterization gradient. Each is
compared with eager CPU torch on random inputs and must run with no CPU fallback. (And Gamma
sampling itself, checked against the distribution: lazyx's draws are its own.)"""
import itertools

import pytest
import torch
import torch.nn.functional as F

import lazyx
import lazyx.frontends.torch as lt


def _no_fallback(fn):
    before = lazyx.metrics()["fallbacks"]
    result = fn()
    lt.mark_step()
    assert lazyx.metrics()["fallbacks"] == before, lazyx.metrics()["fallback_ops"]
    return result


def _weighted_sum(y, device):
    # a cotangent with distinct entries, so a misplaced gradient cannot cancel out
    return (y * torch.arange(y.numel(), dtype=y.dtype).reshape(y.shape).sin().to(device)).sum()


def _grads(fn, inputs, device):
    leaves = [x.detach().to(device).requires_grad_() for x in inputs]
    out = fn(*leaves)
    _weighted_sum(out, device).backward()
    return [out.detach().cpu()] + [x.grad.cpu() for x in leaves]


def _compare(fn, inputs, rtol=1e-4, atol=1e-5):
    want = _grads(fn, inputs, "cpu")
    got = _no_fallback(lambda: _grads(fn, inputs, lt.device))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol)


# every mode with every padding, and each of them with both align_corners values (a covering
# set: each case compiles its own graph, and the full product took minutes on XLA)
@pytest.mark.parametrize("mode,padding,align_corners", [
    (mode, padding, bool((i + j) % 2))
    for i, mode in enumerate(["bilinear", "nearest", "bicubic"])
    for j, padding in enumerate(["zeros", "border", "reflection"])])
def test_grid_sample_gradients_match_eager(mode, padding, align_corners):
    torch.manual_seed(0)
    # the grid reaches past [-1, 1], so the padding modes matter
    inputs = (torch.randn(2, 3, 5, 7), torch.rand(2, 4, 6, 2) * 2.4 - 1.2)
    _compare(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding,
                                        align_corners=align_corners), inputs)


def test_spatial_transformer_step_matches_eager():
    """The grid is computed from the image itself (a localization net): each input's gradient
    must stop at the sampler, not flow on through the other one."""
    torch.manual_seed(1)
    identity = torch.tensor([[1.0, 0, 0], [0, 1, 0]])

    def stn(x, w):
        theta = (x.flatten(1) @ w).view(2, 2, 3) + identity.to(x.device)
        return F.grid_sample(x, F.affine_grid(theta, x.shape, align_corners=False),
                             align_corners=False)
    _compare(stn, (torch.randn(2, 1, 8, 8), torch.randn(64, 6) * 0.01))


@pytest.mark.parametrize("p,reduction,weighted", itertools.product(
    [1, 2], ["mean", "sum", "none"], [False, True]))
def test_multi_margin_loss_gradients_match_eager(p, reduction, weighted):
    torch.manual_seed(0)
    weight = torch.rand(5) if weighted else None
    target = torch.tensor([0, 4, 2, 3, 1, 4])

    def loss(x):
        return F.multi_margin_loss(x, target.to(x.device), p=p, margin=0.7,
                                   weight=None if weight is None else weight.to(x.device),
                                   reduction=reduction)
    _compare(loss, (torch.randn(6, 5),))
    _compare(lambda x: F.multi_margin_loss(x, torch.tensor(2).to(x.device)), (torch.randn(5),))


# (torch's CPU forward repeats the first output row when the output is one pixel wide and
# the height is resized, which its own backward does not assume: such sizes are left out)
_AA_CASES = [
    ((1, 1, 8, 8), {"size": (3, 3)}), ((2, 3, 17, 9), {"size": (5, 20)}),
    ((1, 2, 7, 13), {"size": (7, 4)}), ((1, 1, 10, 10), {"scale_factor": 0.3}),
    ((1, 1, 10, 12), {"scale_factor": (0.45, 2.5)}),
    ((1, 1, 10, 12), {"scale_factor": 0.37, "recompute_scale_factor": True}),
    ((1, 1, 1, 6), {"size": (3, 2)}), ((1, 1, 6, 6), {"size": (6, 6)})]


# each size with one align_corners and dtype, every (align_corners, dtype) pair twice
@pytest.mark.parametrize("shape,kwargs,align_corners,dtype", [
    (shape, kwargs, bool(i % 2), (torch.float32, torch.float64)[i // 2 % 2])
    for i, (shape, kwargs) in enumerate(_AA_CASES)])
def test_antialiased_bilinear_interpolate_matches_eager(shape, kwargs, align_corners, dtype):
    torch.manual_seed(0)
    _compare(lambda x: F.interpolate(x, mode="bilinear", antialias=True,
                                     align_corners=align_corners, **kwargs),
             (torch.randn(shape, dtype=dtype),), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_standard_gamma_grad_matches_eager(dtype):
    """Every branch of torch's kernel: small samples (series), alpha > 8 near and far from the
    mean (saddle point), the rest (rational fit), and the branch bounds themselves."""
    torch.manual_seed(0)
    alpha = torch.cat([torch.rand(300) * 0.5 + 0.01, torch.rand(300) * 8,
                       torch.rand(300) * 200 + 8, torch.tensor([8.0, 9.0, 50.0, 1.0])]).to(dtype)
    sample = torch._standard_gamma(alpha)
    sample[-4:] = torch.tensor([8.0, 9.0 * 0.9, 50.0 * 1.1, 0.8], dtype=dtype)
    want = torch._standard_gamma_grad(alpha, sample)
    got = _no_fallback(lambda: torch._standard_gamma_grad(alpha.to(lt.device),
                                                         sample.to(lt.device)).cpu())
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_gamma_rsample_gradient_matches_eager():
    """rsample's gradient at lazyx's own samples (the sampler is lowered, its draws are not
    CPU torch's): eager torch's _standard_gamma_grad at the same samples, divided by the rate."""
    concentration = torch.tensor([0.5, 2.0, 12.0]).to(lt.device).requires_grad_()
    rate = torch.tensor([1.0, 0.5, 3.0]).to(lt.device).requires_grad_()
    dist = torch.distributions.Gamma(concentration, rate, validate_args=False)
    sample = _no_fallback(lambda: dist.rsample((4,)))
    _no_fallback(lambda: _weighted_sum(sample, lt.device).backward())
    weights = torch.arange(12.).reshape(4, 3).sin()
    c, r, x = concentration.detach().cpu(), rate.detach().cpu(), sample.detach().cpu()
    standard = x * r
    want_c = (weights * torch._standard_gamma_grad(c.expand(4, 3), standard) / r).sum(0)
    want_r = (weights * -standard / (r * r)).sum(0)
    torch.testing.assert_close(concentration.grad.cpu(), want_c, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(rate.grad.cpu(), want_r, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gamma_samples_follow_the_distribution(dtype):
    """_standard_gamma and _sample_dirichlet are lowered (Marsaglia-Tsang, a fixed number of
    rounds): Kolmogorov-Smirnov against SciPy's CDFs, and the moments, for alphas below and
    above 1 and through the distributions built on them."""
    stats = pytest.importorskip("scipy.stats")
    torch.manual_seed(0)
    alpha = torch.tensor([0.3, 1.0, 5.0], dtype=dtype).to(lt.device)
    gamma = _no_fallback(lambda: torch._standard_gamma(alpha.expand(3000, 3)).cpu())
    distributions = torch.distributions.Distribution
    validating = distributions._validate_args
    distributions.set_default_validate_args(False)  # (its checks read values: documented)
    try:
        student = _no_fallback(lambda: torch.distributions.StudentT(alpha[2]).sample((3000,)))
        dirichlet = _no_fallback(lambda: torch.distributions.Dirichlet(alpha).sample((3000,)))
    finally:
        distributions.set_default_validate_args(validating)
    student, dirichlet = student.cpu(), dirichlet.cpu()
    assert gamma.dtype == dirichlet.dtype == dtype and gamma.min() > 0
    for column, a in zip(gamma.double().T, (0.3, 1.0, 5.0)):
        assert stats.kstest(column.numpy(), stats.gamma(a).cdf).pvalue > 1e-3
        torch.testing.assert_close(column.mean().item(), a, rtol=0.05, atol=0.01)
        torch.testing.assert_close(column.var().item(), a, rtol=0.1, atol=0.01)
    assert stats.kstest(student.double().numpy(), stats.t(5.0).cdf).pvalue > 1e-3
    # a Dirichlet's first coordinate is Beta(a0, a1 + a2)
    assert stats.kstest(dirichlet[:, 0].double().numpy(), stats.beta(0.3, 6.0).cdf).pvalue > 1e-3
    torch.testing.assert_close(dirichlet.sum(-1), torch.ones(3000, dtype=dtype))


def test_spatial_transformer_trains_under_lazyx_compile():
    """The STN step used to raise lazyx.CompileError (its backward fell back to CPU torch)."""
    def train(device, wrap):
        torch.manual_seed(0)
        loc, head = torch.nn.Linear(64, 6).to(device), torch.nn.Linear(64, 3).to(device)
        opt = torch.optim.SGD([*loc.parameters(), *head.parameters()], lr=0.1)
        identity = torch.tensor([[1.0, 0, 0], [0, 1, 0]]).to(device)

        def step(x, y):
            theta = loc(x.flatten(1)).view(-1, 2, 3) + identity
            warped = F.grid_sample(x, F.affine_grid(theta, x.shape, align_corners=False),
                                   align_corners=False)
            loss = F.cross_entropy(head(warped.flatten(1)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        step = wrap(step)
        torch.manual_seed(1)
        losses = [step(torch.randn(4, 1, 8, 8).to(device), torch.tensor([0, 1, 2, 1]).to(device))
                  for _ in range(3)]
        return [loss.detach().cpu() for loss in losses] + [p.detach().cpu() for p in
                                                           (*loc.parameters(), *head.parameters())]
    want = train("cpu", lambda f: f)
    got = _no_fallback(lambda: train(lt.device, lazyx.compile))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matrix_exp_and_householder_product_match_eager(dtype):
    """Both are lowered (nn.utils.parametrizations.orthogonal calls one per forward): values
    and gradients, a matrix exponential that needs scaling and squaring, a batch, and a
    non-square Householder product with fewer reflectors than columns."""
    torch.manual_seed(0)
    cases = [(torch.linalg.matrix_exp, (torch.randn(5, 5, dtype=dtype) * 3,)),
             (torch.linalg.matrix_exp, (torch.randn(2, 3, 3, dtype=dtype) * 20,)),
             (torch.linalg.householder_product, (torch.randn(5, 3, dtype=dtype),
                                                 torch.rand(2, dtype=dtype))),
             (torch.linalg.householder_product, (torch.randn(2, 4, 4, dtype=dtype),
                                                 torch.rand(2, 4, dtype=dtype)))]
    for fn, inputs in cases:
        _compare(fn, inputs)


def test_save_on_cpu_keeps_lazy_activations_lazy():
    """torch.autograd.graph.save_on_cpu packed every saved activation with .cpu(): a sync and
    a counted fallback each; lazy tensors are kept in the program now, with eager's gradients."""
    def mlp(x, w1, w2):
        with torch.autograd.graph.save_on_cpu():
            return torch.tanh(x @ w1).sin() @ w2
    torch.manual_seed(0)
    inputs = (torch.randn(4, 3), torch.randn(3, 5), torch.randn(5, 2))
    syncs = lazyx.metrics()["syncs"]
    _compare(mlp, inputs)
    assert lazyx.metrics()["syncs"] - syncs == 1  # (the step's barrier: one program)
