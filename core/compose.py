"""Decompositions shared by every frontend, written once over the primitives.

When torch, NumPy and TF all build softmax, a mean or a random draw through these functions,
the same program yields the same graph (and hash) whichever frontend recorded it. Frontends
apply their own promotion and broadcasting rules first and call these with operands that
already agree in dtype.
"""
import math

from . import dtypes as dt
from . import ir, ops
from .prng import seed_key


# ---------------------------------------------------------------- shapes

def broadcast_shapes(*shapes):
    """NumPy-style broadcast of shapes, or None when they are incompatible."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        size = 1
        for s in shapes:
            d = s[i - ndim + len(s)] if i - ndim + len(s) >= 0 else 1
            if d != 1:
                if size not in (1, d):
                    return None
                size = d
        out.append(size)
    return tuple(out)


def broadcast_to(x, shape):
    """x broadcast to `shape` (trailing axes aligned), as one broadcast_in_dim."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    offset = len(shape) - x.ndim
    return ops.broadcast_in_dim(x, shape=shape, broadcast_dimensions=tuple(range(offset, len(shape))))


def scalar(value, dtype, shape=()):
    """A Python number as a run-time parameter (never a constant: no recompiles), broadcast."""
    return broadcast_to(ir.param(value, dtype), shape)


def keepdims(reduced, shape, axes):
    """Re-insert the reduced axes as size 1 (the keepdims=True form)."""
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return ops.reshape(reduced, new_sizes=kept)


# ---------------------------------------------------------------- statistics

def mean(x, axes, keep=False):
    """sum(x) / n, with n a run-time parameter of x's dtype."""
    axes = tuple(sorted(axes))
    n = math.prod(x.shape[a] for a in axes)
    total = ops.reduce_sum(x, axes=axes)
    out = ops.div(total, scalar(n, x.dtype, total.shape))
    return keepdims(out, x.shape, axes) if keep else out


def var(x, axes, correction=0, keep=False):
    """mean((x - mean(x))**2) with n - correction in the denominator."""
    axes = tuple(sorted(axes))
    n = math.prod(x.shape[a] for a in axes)
    centered = ops.sub(x, broadcast_to(keepdims(mean(x, axes), x.shape, axes), x.shape))
    total = ops.reduce_sum(ops.mul(centered, centered), axes=axes)
    out = ops.div(total, scalar(max(n - correction, 0), x.dtype, total.shape))
    return keepdims(out, x.shape, axes) if keep else out


def softmax(x, axis):
    """exp(x - max) / sum(exp(x - max)) along axis."""
    m = keepdims(ops.reduce_max(x, axes=(axis,)), x.shape, (axis,))
    e = ops.exp(ops.sub(x, broadcast_to(m, x.shape)))
    s = keepdims(ops.reduce_sum(e, axes=(axis,)), x.shape, (axis,))
    return ops.div(e, broadcast_to(s, x.shape))


def log_softmax(x, axis):
    """(x - max) - log(sum(exp(x - max))) along axis."""
    m = keepdims(ops.reduce_max(x, axes=(axis,)), x.shape, (axis,))
    shifted = ops.sub(x, broadcast_to(m, x.shape))
    s = keepdims(ops.reduce_sum(ops.exp(shifted), axes=(axis,)), x.shape, (axis,))
    return ops.sub(shifted, broadcast_to(ops.log(s), x.shape))


# ---------------------------------------------------------------- randomness

def random_key(seed, counter=0):
    """seed_key as a run-time parameter leaf: a new seed or counter never recompiles."""
    return ir.param(seed_key(seed, counter), "uint32")


_MANTISSA = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}


def uniform(key, shape, dtype="float32", low=0.0, high=1.0):
    """Uniform floats in [low, high) from random_bits: mantissa bits over [1, 2), minus 1."""
    if not dt.is_float(dtype):
        raise TypeError(f"uniform: dtype must be floating, got {dtype}")
    work = "float64" if dtype == "float64" else "float32"
    nbits = 64 if work == "float64" else 32
    bits = ops.random_bits(key, shape=tuple(shape) + ((2,) if nbits == 64 else ()))
    if nbits == 64:
        hi = ops.convert(ops.slice_(bits, start_indices=(0,) * len(shape) + (0,),
                                    limit_indices=tuple(shape) + (1,)), dtype="uint64")
        lo = ops.convert(ops.slice_(bits, start_indices=(0,) * len(shape) + (1,),
                                    limit_indices=tuple(shape) + (2,)), dtype="uint64")
        bits = ops.reshape(ops.or_(ops.shift_left(hi, scalar(32, "uint64", hi.shape)), lo),
                           new_sizes=tuple(shape))
    utype = "uint64" if nbits == 64 else "uint32"
    mantissa = _MANTISSA[work]
    one_bits = 0x3FF0000000000000 if nbits == 64 else 0x3F800000
    shifted = ops.shift_right_logical(bits, scalar(nbits - mantissa, utype, tuple(shape)))
    floats = ops.bitcast_convert(ops.or_(shifted, scalar(one_bits, utype, tuple(shape))),
                                 dtype=work)
    unit = ops.sub(floats, scalar(1.0, work, tuple(shape)))
    span = ops.mul(unit, scalar(high - low, work, tuple(shape)))
    out = ops.add(span, scalar(low, work, tuple(shape)))
    return ops.convert(out, dtype=dtype)


def normal(key, shape, dtype="float32"):
    """Standard normal by Box-Muller over two uniform halves of one draw."""
    work = "float64" if dtype == "float64" else "float32"
    u = uniform(key, (2,) + tuple(shape), work)
    u1 = ops.reshape(ops.slice_(u, start_indices=(0,) * (len(shape) + 1),
                                limit_indices=(1,) + tuple(shape)), new_sizes=tuple(shape))
    u2 = ops.reshape(ops.slice_(u, start_indices=(1,) + (0,) * len(shape),
                                limit_indices=(2,) + tuple(shape)), new_sizes=tuple(shape))
    # 1 - u1 lies in (0, 1], so the log is finite
    radius = ops.sqrt(ops.mul(scalar(-2.0, work, tuple(shape)),
                              ops.log(ops.sub(scalar(1.0, work, tuple(shape)), u1))))
    angle = ops.mul(scalar(2 * math.pi, work, tuple(shape)), u2)
    return ops.convert(ops.mul(radius, ops.cos(angle)), dtype=dtype)
