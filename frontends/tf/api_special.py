"""tf.math.zeta (Hurwitz), polygamma and betainc, on the IR's zeta and betainc primitives,
with TF's (Eigen's) answers outside the primitives' domains set here (as igamma's are in
compose.incomplete_gamma). Gradients: the primitives' rules, which are TF's -- in q for
zeta, in x for polygamma (polygamma(n + 1, x)) and betainc, none in the other operands."""
import numpy as np
import tensorflow as tf

from ...core import ops
from .lowering import Reject, broadcast_all, const, operand_nodes
from .registry import lower
from .tensor import wrap

_TF_FLOATS = ("float32", "float64")  # TF's kernels for all three


def _is_integer(v):
    return ops.eq(v, ops.floor(v))


def tf_zeta(x, q):
    """Eigen's zeta_impl: inf at x == 1, NaN below; at a pole q in {0, -1, ..., -inf} inf
    for an even integer x (inf counts as one), else NaN; for q < 0 NaN unless x is an
    integer; 0 for q = inf; at x = inf, the first term's limit: 0, 1 or inf as q is past,
    at or below 1 (set here: XLA's zeta is NaN at x = inf)."""
    x = ops.stop_gradient(x)  # TF: no gradient in x (the edge selects would give zeros)
    inf, nan, zero, one = (const(v, x) for v in (np.inf, np.nan, 0, 1))
    pole = ops.and_(ops.le(q, zero), _is_integer(q))
    even = _is_integer(ops.div(x, const(2, x)))
    limit = ops.select(ops.gt(q, one), zero, ops.select(ops.eq(q, one), one, inf))
    out = ops.select(ops.and_(ops.eq(x, inf), ops.eq(q, q)), limit, ops.zeta(x, q))
    out = ops.select(ops.eq(q, inf), zero, out)
    out = ops.select(ops.and_(ops.lt(q, zero), ops.not_(_is_integer(x))), nan, out)
    out = ops.select(pole, ops.select(even, inf, nan), out)
    out = ops.select(ops.ne(x, x), nan, ops.select(ops.lt(x, one), nan, out))
    return ops.select(ops.eq(x, one), inf, out)


def _polygamma(n, x):
    """psi(n, x) = (-1)**(n + 1) n! zeta(n + 1, x) for an integer n >= 1, digamma(x) at
    n = 0, NaN for any other n (Eigen's). n takes no gradient (TF registers none)."""
    n = ops.stop_gradient(n)
    one = const(1, n)
    odd = ops.ne(ops.rem(n, const(2, n)), const(0, n))  # then n + 1 is even: sign +1
    scale = ops.mul(ops.select(odd, one, const(-1, n)), ops.exp(ops.lgamma(ops.add(n, one))))
    out = ops.mul(scale, tf_zeta(ops.add(n, one), x))
    out = ops.select(ops.eq(n, const(0, n)), ops.digamma(x), out)
    valid = ops.and_(_is_integer(n), ops.ge(n, const(0, n)))
    return ops.select(valid, out, const(np.nan, x))


def _float_pair(api, fn, names):
    @lower(api, *names)
    def lowering(**given):
        p, q = broadcast_all(*operand_nodes(given[names[0]], given[names[1]]))
        if p.dtype not in _TF_FLOATS:
            raise Reject()  # TF's error, by replay
        return wrap(fn(p, q), given[names[0]], given[names[1]])
    lowering.__name__ = api.__name__


_float_pair(tf.math.zeta, tf_zeta, ("x", "q"))
_float_pair(tf.math.polygamma, _polygamma, ("a", "x"))


@lower(tf.math.betainc, "a", "b", "x")
def betainc(a, b, x):
    nodes = operand_nodes(a, b, x)
    shapes = {n.shape for n in nodes} - {()}
    if len(shapes) > 1 or nodes[0].dtype not in _TF_FLOATS:
        raise Reject()  # TF broadcasts only scalars here: its error, by replay
    p, q, v = broadcast_all(*nodes)
    p, q = ops.stop_gradient(p), ops.stop_gradient(q)  # TF: a gradient in x only
    zero, one = const(0, v), const(1, v)
    # Cephes' incbet, as Eigen: NaN for a or b <= 0; then 0 at x = 0 and 1 at x = 1 (NaN
    # outside [0, 1]); between, NaN where a or b is infinite
    inside = ops.and_(ops.gt(v, zero), ops.lt(v, one))
    infinite = ops.or_(ops.eq(p, const(np.inf, p)), ops.eq(q, const(np.inf, q)))
    out = ops.select(ops.and_(inside, infinite), const(np.nan, v), ops.betainc(p, q, v))
    out = ops.select(ops.eq(v, zero), zero, ops.select(ops.eq(v, one), one, out))
    out = ops.select(ops.or_(ops.lt(v, zero), ops.gt(v, one)), const(np.nan, v), out)
    bad = ops.or_(ops.le(p, zero), ops.le(q, zero))
    return wrap(ops.select(bad, const(np.nan, v), out), a, b, x)

