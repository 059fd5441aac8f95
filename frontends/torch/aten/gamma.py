"""_standard_gamma_grad: the reparameterized gradient d(sample)/d(alpha) of a standard Gamma
sample (Gamma/Beta/Dirichlet .rsample() backward), -(dCDF/dalpha) / pdf. torch's CPU kernel
computes it in double by one of three approximations, picked per element; so does this, with
the same published formulas and coefficients (a Taylor series for small x, Rice's saddle
point expansion for large alpha, a bivariate rational fit elsewhere), every branch computed
and the right one selected."""
import numpy as np

from ....core import ops
from .table import Unsupported, aten, const, lower, operands

# rows: the constant, u and u^2 terms of each of the 8 coefficients of p(v) / q(v)
_RATIONAL = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07),
)

# the kernel's branch bounds are float literals (0.8f) compared in double
_F32_0_8, _F32_0_9, _F32_1_1 = (float(np.float32(v)) for v in (0.8, 0.9, 1.1))


@lower(aten._standard_gamma_grad.default)
def _standard_gamma_grad(out, alpha, sample):
    a, x = operands(out, alpha, sample, dtype="float64")
    shape = x.shape

    def c(value):
        return const(value, "float64", shape)
    add, sub, mul, div, log = ops.add, ops.sub, ops.mul, ops.div, ops.log

    # x < 0.8: the incomplete gamma function's series, five terms past the first
    numer, denom = c(1.0), a
    series1, series2 = div(numer, denom), div(numer, mul(denom, denom))
    for i in range(1, 6):
        numer = mul(numer, div(ops.neg(x), c(float(i))))
        denom = add(denom, c(1.0))
        series1 = add(series1, div(numer, denom))
        series2 = add(series2, div(numer, mul(denom, denom)))
    pow_x_alpha = ops.pow_(x, a)
    pdf = mul(ops.pow_(x, sub(a, c(1.0))), ops.exp(ops.neg(x)))
    cdf_alpha = sub(mul(sub(log(x), ops.digamma(a)), mul(pow_x_alpha, series1)),
                    mul(pow_x_alpha, series2))
    small = ops.neg(div(cdf_alpha, pdf))
    small = ops.select(ops.ne(small, small), c(0.0), small)  # torch's kernel: NaN -> 0

    # alpha > 8, x within 10% of alpha
    aa = mul(a, a)
    near_numer = mul(add(c(1.0), mul(mul(c(24.0), a), add(c(1.0), mul(c(12.0), a)))),
                     add(sub(add(mul(c(1440.0), aa), mul(mul(c(6.0), x),
                                                         sub(c(53.0), mul(c(120.0), x)))),
                             div(mul(mul(c(65.0), x), x), a)),
                         mul(a, add(c(107.0), mul(c(3600.0), x)))))
    near = div(near_numer, mul(c(1244160.0), mul(aa, aa)))
    # alpha > 8, x farther out
    root = ops.sqrt(mul(c(8.0), a))
    term2 = div(root, sub(a, x))
    log_ratio = log(div(x, a))
    term3 = ops.pow_(sub(sub(x, a), mul(a, log_ratio)), c(-1.5))
    term23 = ops.select(ops.lt(x, a), sub(term2, term3), add(term2, term3))
    a_minus_x = sub(a, x)
    term1 = sub(mul(log_ratio, term23),
                div(mul(ops.sqrt(div(c(2.0), a)), add(a, x)), mul(a_minus_x, a_minus_x)))
    stirling = add(c(1.0), mul(div(c(1.0), mul(c(12.0), a)),
                               add(c(1.0), div(c(1.0), mul(c(24.0), a)))))
    far = ops.neg(div(mul(stirling, mul(x, term1)), root))
    in_band = ops.and_(ops.le(mul(c(_F32_0_9), a), x), ops.le(x, mul(c(_F32_1_1), a)))
    large = ops.select(in_band, near, far)

    # elsewhere: exp(p(v) / q(v)) with u = log(x / alpha), v = log(alpha)
    u, v = log_ratio, log(a)
    coef = [add(c(k0), mul(u, add(c(k1), mul(u, c(k2))))) for k0, k1, k2 in zip(*_RATIONAL)]

    def cubic(k):
        return add(k[0], mul(v, add(k[1], mul(v, add(k[2], mul(v, k[3]))))))
    rational = ops.exp(div(cubic(coef[:4]), cubic(coef[4:])))

    result = ops.select(ops.lt(x, c(_F32_0_8)), small,
                        ops.select(ops.gt(a, c(8.0)), large, rational))
    return result  # (the dispatcher converts it to torch's result dtype)


# Marsaglia and Tsang's sampler: its acceptance chance is over 95% per round for every alpha
# (with alpha < 1 boosted to alpha + 1), so after _ROUNDS rounds a value still not accepted has
# a chance under 1e-13; it keeps the last round's candidate, slightly off the distribution in
# those cases only. Every round is drawn and the first accepted candidate selected: no loop
# with a data-dependent count, and the same random keys whatever the values.
_ROUNDS = 10


def gamma_samples(alpha):
    """Standard Gamma(alpha) samples (float64, alpha's shape) for a float64 node `alpha`."""
    from .random import standard_normal, uniform01
    shape = alpha.shape

    def c(value):
        return const(value, "float64", shape)

    def open_uniform():  # in (0, 1]: log and powers stay finite
        return ops.sub(c(1.0), ops.convert(uniform01(shape), dtype="float64"))
    boosted = ops.lt(alpha, c(1.0))
    a = ops.select(boosted, ops.add(alpha, c(1.0)), alpha)
    d = ops.sub(a, c(1.0 / 3.0))
    scale = ops.rsqrt(ops.mul(c(9.0), d))
    sample, done = c(0.0), const(False, "bool", shape)
    for i in range(_ROUNDS):
        z = standard_normal(shape, "float64")
        v = ops.add(c(1.0), ops.mul(scale, z))
        v = ops.mul(ops.mul(v, v), v)
        positive = ops.gt(v, c(0.0))
        safe_v = ops.select(positive, v, c(1.0))
        bound = ops.add(ops.mul(c(0.5), ops.mul(z, z)),
                        ops.add(ops.sub(d, ops.mul(d, safe_v)), ops.mul(d, ops.log(safe_v))))
        accept = ops.and_(positive, ops.lt(ops.log(open_uniform()), bound))
        take = ops.not_(done) if i == _ROUNDS - 1 else ops.and_(ops.not_(done), accept)
        sample = ops.select(take, ops.mul(d, safe_v), sample)
        done = ops.or_(done, accept)
    # alpha < 1: Gamma(alpha + 1) * U^(1 / alpha) is Gamma(alpha)
    power = ops.exp(ops.div(ops.log(open_uniform()), alpha))
    sample = ops.select(boosted, ops.mul(sample, power), sample)
    return sample


def _tiny(torch_dtype):
    # torch's CPU kernel clamps a sample to the dtype's smallest normal number, never 0
    return float(np.finfo(str(torch_dtype).split(".")[-1]).tiny)


@lower(aten._standard_gamma.default)
def _standard_gamma(out, alpha, generator=None):
    if generator is not None:
        raise Unsupported("a torch.Generator")
    (a,) = operands(out, alpha, dtype="float64")
    sample = gamma_samples(a)
    return ops.max_(sample, const(_tiny(out.dtype), "float64", a.shape))


@lower(aten._sample_dirichlet.default)
def _sample_dirichlet(out, alpha, generator=None):
    """Gamma samples normalized along the last axis (torch's CPU kernel, which clamps each
    gamma sample as _standard_gamma does)."""
    if generator is not None:
        raise Unsupported("a torch.Generator")
    (a,) = operands(out, alpha, dtype="float64")
    sample = ops.max_(gamma_samples(a), const(_tiny(out.dtype), "float64", a.shape))
    total = ops.reduce_sum(sample, axes=(a.ndim - 1,))
    total = ops.broadcast_in_dim(total, shape=a.shape,
                                 broadcast_dimensions=tuple(range(a.ndim - 1)))
    return ops.div(sample, total)
