"""_standard_gamma_grad: the reparameterized gradient d(sample)/d(alpha) of a standard Gamma
sample (Gamma/Beta/Dirichlet .rsample() backward), -(dCDF/dalpha) / pdf. torch's CPU kernel
computes it in double by one of three approximations, picked per element; so does this, with
the same published formulas and coefficients (a Taylor series for small x, Rice's saddle
point expansion for large alpha, a bivariate rational fit elsewhere), every branch computed
and the right one selected."""
import numpy as np

from ....core import ops
from .table import aten, const, lower, operands

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
