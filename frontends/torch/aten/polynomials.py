"""torch.special's orthogonal polynomials: Chebyshev (T, U, V, W and their shifted forms),
Hermite (H, He), Laguerre and Legendre.

The degree n is a tensor, so the recurrence length is data: every family is the one
`recurrence3` primitive (its loop runs max(n) steps inside the program, so a new n never
recompiles). What is torch-specific lives here as selects, checked against eager torch:
n is truncated toward zero, and NaN, +-inf or a value past int64 counts as negative (the C++
cast gives INT64_MIN); n < 0 gives 0; |x| == 1 has closed forms; Chebyshev switches to
cos/sin(n * acos x) forms for |x| < 1 past a small n; Hermite returns NaN past n = 128
(float32) / 512 (float64).
"""
import math

from ....core import ops
from .table import Unsupported, aten, const, is_float, lower, operands

_CHEBYSHEV_STEP = (0, 2, 0, 0, 0, 1, 0, 1)  # p_{k+1} = 2x p_k - p_{k-1}
_CHEBYSHEV_P1 = {"t": (1, 0), "u": (2, 0), "v": (2, -1), "w": (2, 1)}
# n past which torch evaluates the trigonometric form for |x| < 1
_TRIG_FROM = {False: {"t": 6, "u": 8, "v": 8, "w": 8}, True: {"t": 6, "u": 6, "v": 6, "w": 4}}
_HERMITE_LIMIT = {"float32": 128, "float64": 512}


def _degree(n):
    """(truncated float n with invalid values as -1, the same as an integer array for the
    recurrence's trip count)."""
    def c(v):
        return const(v, n.dtype, n.shape)
    valid = ops.and_(ops.is_finite(n), ops.lt(ops.abs_(n), c(2.0 ** 63)))
    whole = ops.select(ops.lt(n, c(0)), ops.ceil(n), ops.floor(n))
    nf = ops.select(valid, whole, c(-1))
    # int32 counts suffice: no recurrence of 2**31 steps ends anyway, and the trigonometric
    # forms use the float n
    index = "int64" if n.dtype == "float64" else "int32"
    ni = ops.convert(ops.clamp(c(-1), nf, c(2.0 ** 31 - 1)), dtype=index)
    return nf, ni


def _inputs(out, x, n):
    a, m = operands(out, x, n)
    if not is_float(a):
        raise Unsupported("integer orthogonal polynomial")
    nf, ni = _degree(m)
    return a, nf, ni


def _chebyshev(kind, shifted):
    def lowering(out, x, n):
        a, nf, ni = _inputs(out, x, n)

        def c(v):
            return const(v, a.dtype, a.shape)
        y = ops.sub(ops.add(a, a), c(1)) if shifted else a
        result = ops.recurrence3(y, ni, p1=_CHEBYSHEV_P1[kind], step=_CHEBYSHEV_STEP)
        even = ops.eq(ops.rem(nf, c(2)), c(0))
        two_n1 = ops.add(ops.add(nf, nf), c(1))

        def signed(v):  # +v for even n, -v for odd n
            return ops.select(even, v, ops.neg(v))
        top = {"t": c(1), "u": ops.add(nf, c(1)), "v": c(1), "w": two_n1}[kind]
        bottom = {"t": signed(c(1)), "u": signed(ops.add(nf, c(1))), "v": signed(two_n1),
                  "w": signed(c(1))}[kind]

        # trigonometric forms for |y| < 1 and n past the threshold
        theta = ops.acos(y)
        if kind == "t":
            trig = ops.cos(ops.mul(nf, theta))
        elif kind == "u":
            n1 = ops.add(nf, c(1))
            s = ops.sin(theta)
            trig = ops.select(ops.ne(s, c(0)), ops.div(ops.sin(ops.mul(n1, theta)), s),
                              ops.div(ops.mul(n1, ops.cos(ops.mul(n1, theta))), y))
        else:
            half = ops.div(theta, c(2))
            angle = ops.mul(ops.add(nf, c(0.5)), theta)
            if kind == "v":
                trig = ops.select(ops.ne(ops.sin(half), c(1)),
                                  ops.div(ops.cos(angle), ops.cos(half)), signed(two_n1))
            else:
                degenerate = signed(c(1)) if shifted else \
                    ops.select(ops.gt(a, c(0)), two_n1, signed(c(1)))
                trig = ops.select(ops.ne(ops.cos(half), c(1)),
                                  ops.div(ops.sin(angle), ops.sin(half)), degenerate)
        use_trig = ops.and_(ops.gt(nf, c(_TRIG_FROM[shifted][kind])),
                            ops.lt(ops.abs_(y), c(1)))
        result = ops.select(use_trig, trig, result)
        if shifted:  # torch tests x itself (x + x - 1 rounds to -1 for tiny x > 0)
            at_top, at_bottom = ops.eq(a, c(1)), ops.eq(a, c(0))
        else:
            at_top, at_bottom = ops.eq(a, c(1)), ops.eq(a, c(-1))
        result = ops.select(at_bottom, bottom, ops.select(at_top, top, result))
        return ops.select(ops.lt(nf, c(0)), c(0), result)
    return lowering


for _kind in "tuvw":
    for _shifted, _prefix in ((False, ""), (True, "shifted_")):
        _packet = getattr(aten, f"special_{_prefix}chebyshev_polynomial_{_kind}")
        lower(_packet.default, _packet.x_scalar, _packet.n_scalar)(_chebyshev(_kind, _shifted))


def _family(p1, step, edges):
    """A polynomial family: its recurrence, then `edges(a, nf, c, result)` for torch's
    special cases, then n < 0 -> 0."""
    def lowering(out, x, n):
        a, nf, ni = _inputs(out, x, n)

        def c(v):
            return const(v, a.dtype, a.shape)
        result = edges(a, nf, c, ops.recurrence3(a, ni, p1=p1, step=step))
        return ops.select(ops.lt(nf, c(0)), c(0), result)
    return lowering


def _hermite_edges(a, nf, c, result):
    limit = _HERMITE_LIMIT.get(a.dtype, 1024)
    return ops.select(ops.gt(nf, c(limit)), c(math.nan), result)


def _laguerre_edges(a, nf, c, result):
    return ops.select(ops.eq(a, c(0)), c(1), result)


def _legendre_edges(a, nf, c, result):
    even = ops.eq(ops.rem(nf, c(2)), c(0))
    at_one = ops.select(ops.or_(ops.gt(a, c(0)), even), c(1), c(-1))
    return ops.select(ops.eq(ops.abs_(a), c(1)), at_one, result)


_FAMILIES = {
    # H_{k+1} = 2x H_k - 2k H_{k-1}
    "hermite_polynomial_h": ((2, 0), (0, 2, 0, 0, 2, 0, 0, 1), _hermite_edges),
    # He_{k+1} = x He_k - k He_{k-1}
    "hermite_polynomial_he": ((1, 0), (0, 1, 0, 0, 1, 0, 0, 1), _hermite_edges),
    # (k+1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}
    "laguerre_polynomial_l": ((-1, 1), (0, -1, 2, 1, 1, 0, 1, 1), _laguerre_edges),
    # (k+1) P_{k+1} = (2k+1) x P_k - k P_{k-1}
    "legendre_polynomial_p": ((1, 0), (2, 1, 0, 0, 1, 0, 1, 1), _legendre_edges),
}
for _name, (_p1, _step, _edges) in _FAMILIES.items():
    _packet = getattr(aten, f"special_{_name}")
    lower(_packet.default, _packet.x_scalar, _packet.n_scalar)(_family(_p1, _step, _edges))
