"""Decompositions shared by every frontend, written once over the primitives.

When torch, NumPy and TF all build softmax, relu or a random draw through these functions,
the same program yields the same graph (and hash) whichever frontend recorded it. Frontends
apply their own promotion and broadcasting rules first and call these with operands that
already agree in dtype.
"""
import math
import weakref

import numpy as np

from . import dtypes as dt
from . import ir, ops
from .prng import PARITY, ROTATIONS, seed_key


# ---------------------------------------------------------------- shapes

def broadcast_to(x, shape):
    """x broadcast to `shape` (trailing axes aligned), as one broadcast_in_dim."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    if not x.shape and x.op == "param" and _plain_shape(shape, x.dtype):
        return ir.splat(x, shape)  # what broadcast_in_dim folds a number to, minus its rule
    offset = len(shape) - x.ndim
    return ops.broadcast_in_dim(x, shape=shape, broadcast_dimensions=tuple(range(offset, len(shape))))


def const(value, dtype, shape=()):
    """A number the graph itself needs (a shape-derived count, 0 for relu): baked in."""
    return broadcast_to(ir.constant(value, dtype), shape)


def const_like(value, like):
    """const(value) of like's dtype and shape."""
    return broadcast_to(ir.constant(value, like.dtype), like.shape)


def scalar(value, dtype, shape=()):
    """A Python number as a run-time parameter (never a constant: no recompiles), broadcast."""
    shape = tuple(shape)
    if _plain_shape(shape, dtype):
        return ir.param(value, dtype, shape)  # one splat leaf, no broadcast node
    return ops.broadcast_in_dim(ir.param(value, dtype), shape=shape, broadcast_dimensions=())


def _plain_shape(shape, dtype):
    """Whether `shape` passes broadcast_in_dim's checks (sizes are ints >= 0, the value is not
    too large), which a number's splat skips; if not, the broadcast's rule raises its error."""
    for d in shape:
        if type(d) is not int or d < 0:
            return False
    ops.check_size("broadcast_in_dim", shape, dtype)
    return True


def scalar_like(value, like):
    """scalar(value) of like's dtype and shape."""
    return ir.param(value, like.dtype, like.shape)  # (like passed the size check)


def keepdims(reduced, shape, axes):
    """Re-insert the reduced axes as size 1 (the keepdims=True form)."""
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return ops.reshape(reduced, new_sizes=kept)


def flatten(x):
    """x as one axis, in row-major order (x itself when it already is one)."""
    return ops.reshape(x, new_sizes=(x.size,))


def flat_if_none(x, axis):
    """(x, axis), or (flattened x, 0) for axis None: NumPy's axis=None and torch's dim=None."""
    return (flatten(x), 0) if axis is None else (x, axis)


def wrap_axis(axis, ndim):
    """A negative axis counted from the end; None when out of range. A rank-0 value takes
    axis 0 or -1 (as torch and TF allow); the caller raises its framework's error for None."""
    n = max(ndim, 1)
    return axis % n if -n <= axis < n else None


# ---------------------------------------------------------------- element-wise

def in_float32(fn, halves=("float16", "bfloat16")):
    """`fn` of IR nodes computed in float32 when its first operand's dtype is one of `halves`,
    its result rounded back once -- how the eager frameworks compute a half-type function
    (NumPy's float16 loops, torch's opmath): a formula of several ops rounded in the half
    type after each step loses digits (hypot 1-3 ulps, logaddexp 9 % near 0, a Cephes
    series most of them)."""
    def wide(*operands):
        dtype = operands[0].dtype
        if dtype not in halves:
            return fn(*operands)
        return ops.convert(fn(*[ops.convert(x, dtype="float32") for x in operands]),
                           dtype=dtype)
    wide.__name__ = getattr(fn, "__name__", "wide")
    return wide


def relu(x):
    """max(x, 0), the 0 a run-time scalar: the same graph as NumPy's np.maximum(x, 0.0)."""
    return ops.max_(x, scalar(0, x.dtype, x.shape))


def log_base(x, base):
    """log2 (base 2) or log10 (base 10) of a real float x: log(x) / log(base), except where x
    is the base's exact power base**k, which gives k exactly, as C's log2 and log10 (NumPy,
    torch and TF) do. The quotient alone rounds log2(8) and log10(1000) to
    2.9999999999999996, so `int(np.log2(x))` was 2. k is the quotient's nearest integer,
    and base**k its exact power: exp2 (exact at integers on every backend) or pow, exact for
    the powers of ten a float holds (10**0 to 10**22 in float64)."""
    y = ops.div(ops.log(x), const(math.log(base), x.dtype, x.shape))
    k = ops.round(y)
    power = ops.exp2(k) if base == 2 else ops.pow_(const(base, x.dtype, x.shape), k)
    return ops.select(ops.eq(power, x), k, y)


def power_scalar(x, exponent):
    """x ** exponent for a Python number: x * x for 2 (exact, and what every framework
    computes for a square), x for 1, else pow with a run-time exponent."""
    if exponent == 2:
        return ops.mul(x, x)
    if exponent == 1:
        return x
    return ops.pow_(x, scalar(exponent, x.dtype, x.shape))


def _int_division(a, b):
    """(b is zero, b with zeros replaced by one, truncated quotient, C remainder, floor fix)."""
    zero, one = const(0, a.dtype, a.shape), const(1, a.dtype, a.shape)
    b_zero = ops.eq(b, zero)
    safe = ops.select(b_zero, one, b)
    q, r = ops.div(a, safe), ops.rem(a, safe)
    # truncation rounds toward zero: step down when the remainder and divisor differ in sign
    fix = ops.and_(ops.ne(r, zero), ops.ne(ops.lt(r, zero), ops.lt(safe, zero)))
    return b_zero, safe, q, r, fix, zero


def floor_divide(a, b):
    """Integer a // b rounding toward -inf, as NumPy, torch and TF all do; x // 0 gives 0
    (NumPy's answer; torch and TF raise eagerly, which a lazy value cannot)."""
    b_zero, _, q, _, fix, zero = _int_division(a, b)
    q = ops.select(fix, ops.sub(q, const(1, a.dtype, a.shape)), q)
    return ops.select(b_zero, zero, q)


def floor_mod(a, b):
    """a % b with the divisor's sign (Python's). Integers: x % 0 gives 0 (as floor_divide).
    Floats: C fmod moved by one divisor when the signs differ (torch's and TF's formula;
    NumPy's own, which also fixes the sign of a zero result, is its frontend's)."""
    if dt.is_float(a.dtype):
        r = ops.rem(a, b)
        zero = const(0, r.dtype, r.shape)
        fix = ops.and_(ops.ne(r, zero), ops.ne(ops.lt(r, zero), ops.lt(b, zero)))
        return ops.select(fix, ops.add(r, b), r)
    b_zero, safe, _, r, fix, zero = _int_division(a, b)
    return ops.select(b_zero, zero, ops.select(fix, ops.add(r, safe), r))


def euclid(a, b, remainder=ops.rem):
    """Euclid's algorithm on integers as given (C remainders by default: the result's sign
    follows the operands'; NumPy and torch each take absolute values, at different points;
    Keras' TF backend takes floor_mod), unrolled to its worst case for the dtype (consecutive
    Fibonacci numbers take 1.44 steps per bit; two more for a floored remainder's one
    sign change, from abs(INT_MIN)), a step doing nothing once b is zero: no loop primitive
    needed. euclid(0, 0) = 0."""
    zero, one = const(0, a.dtype, a.shape), const(1, a.dtype, a.shape)
    for _ in range(int(1.4405 * 8 * np.dtype(dt.to_numpy(a.dtype)).itemsize) + 4):
        done = ops.eq(b, zero)
        r = remainder(a, ops.select(done, one, b))
        a, b = ops.select(done, a, b), ops.select(done, b, r)
    return a


def reduce_xor(x, axes):
    """The bitwise xor of x's elements over `axes` (an integer dtype; 0 for an empty
    reduction): halves folded onto each other, log2(n) xors, the IR having no xor reduction."""
    kept = [d for d in range(x.ndim) if d not in axes]
    rest = tuple(x.shape[d] for d in kept)
    n = math.prod(x.shape[d] for d in axes)
    x = ops.reshape(ops.transpose(x, permutation=(*kept, *axes)), new_sizes=(*rest, n))
    if n == 0:
        return const(0, x.dtype, rest)
    while n > 1:
        if n % 2:  # (a zero column: x ^ 0 = x)
            x = ops.pad(x, ir.constant(0, x.dtype),
                        padding_config=(*((0, 0, 0),) * len(rest), (0, 1, 0)))
            n += 1
        n //= 2
        x = ops.xor(slice_axis(x, len(rest), 0, n), slice_axis(x, len(rest), n, 2 * n))
    return ops.reshape(x, new_sizes=rest)


def nonzero_divisor(g):
    """(g == 0, g with its zeros replaced by one): for lcm's a / gcd."""
    done = ops.eq(g, const(0, g.dtype, g.shape))
    return done, ops.select(done, const(1, g.dtype, g.shape), g)


def incomplete_gamma(a, x, upper, framework):
    """The regularized incomplete gamma function P(a, x), or Q(a, x) = 1 - P with `upper`, with
    `framework`'s answers where a or x is 0, inf, negative or NaN (they differ: torch's
    P(0, x > 0) is 1, TF's NaN; TF's P(inf, inf) is 0, torch's NaN; torch answers some NaN
    operands, scipy none). The primitives are asked only inside a > 0 finite, x >= 0,
    in float64: XLA's float32 series loses 1e-5 near a = x = 30, where torch's float32 kernel
    (Temme's expansion) is good to 1e-7."""
    if a.dtype != "float64":
        wide = incomplete_gamma(ops.convert(a, dtype="float64"),
                                ops.convert(x, dtype="float64"), upper, framework)
        return ops.convert(wide, dtype=a.dtype)

    def full(value):
        return const(value, a.dtype, a.shape)

    def value(p):  # an edge's P, as P or Q
        return full(1 - p if upper else p)
    nan = full(math.nan)
    inside = ops.and_(ops.and_(ops.gt(a, full(0)), ops.lt(a, full(math.inf))),
                      ops.ge(x, full(0)))
    out = ops.select(inside, (ops.igammac if upper else ops.igamma)(a, x), nan)
    zero_a, zero_x = ops.eq(a, full(0)), ops.eq(x, full(0))
    inf_a, inf_x = ops.eq(a, full(math.inf)), ops.eq(x, full(math.inf))
    if framework == "tf":  # Eigen's
        out = ops.select(ops.and_(inf_a, ops.ge(x, full(0))),
                         ops.select(inf_x, full(0), value(0)), out)
        return ops.select(zero_x, ops.select(ops.gt(a, full(0)), full(1), nan) if upper
                          else full(0), out)
    # torch's checks, last first: x = inf; a = inf; x = 0; a = 0; a or x negative
    out = ops.select(inf_x, value(1), out)
    out = ops.select(inf_a, ops.select(inf_x, nan, value(0)), out)
    out = ops.select(zero_x, value(0), out)
    out = ops.select(zero_a, ops.select(ops.gt(x, full(0)), value(1), nan), out)
    out = ops.select(ops.or_(ops.lt(x, full(0)), ops.lt(a, full(0))), nan, out)
    if framework == "scipy":  # the same, but a NaN operand gives NaN
        out = ops.select(ops.or_(ops.ne(a, a), ops.ne(x, x)), nan, out)
    return out


# ---------------------------------------------------------------- softmax

# Nodes that the code which made them holds constant for differentiation: core/autodiff sends
# no cotangent through them. A mark, not a stop_gradient node, so that the IR stays that of
# the same math written by hand (NumPy's softmax is `exp(x - x.max())`: the frontends' graphs
# for one program must be equal, tests/equivalence). A copy of the node is not marked, and
# is differentiated as usual.
HELD_CONSTANT = weakref.WeakSet()
HELD_OPS = set()  # the ops of every node ever marked: a cheap test before the WeakSet's


def held_constant(node):
    """`node`, marked as held constant for differentiation (HELD_CONSTANT)."""
    HELD_CONSTANT.add(node)
    HELD_OPS.add(node.op)
    return node


def is_held(node):
    """Whether `node` is marked as held constant for differentiation."""
    return node.op in HELD_OPS and node in HELD_CONSTANT


def _row_peak(x, axis):
    """max along axis, kept as a broadcastable dim, held constant for differentiation: softmax
    and log-softmax do not depend on the shift, so its exact gradient is zero, and core/autodiff
    would otherwise spend a full-size equality mask and a reduction (a tape over attention
    scores) to compute that zero with rounding error."""
    return keepdims(held_constant(ops.reduce_max(x, axes=(axis,))), x.shape, (axis,))


def softmax(x, axis):
    """exp(x - max) / sum(exp(x - max)) along axis."""
    m = _row_peak(x, axis)
    e = ops.exp(ops.sub(x, broadcast_to(m, x.shape)))
    s = keepdims(ops.reduce_sum(e, axes=(axis,)), x.shape, (axis,))
    return ops.div(e, broadcast_to(s, x.shape))


def log_softmax(x, axis):
    """(x - max) - log(sum(exp(x - max))) along axis."""
    shifted, log_sum = shifted_log_sum(x, axis)
    return ops.sub(shifted, broadcast_to(log_sum, x.shape))


def shifted_log_sum(x, axis):
    """(x - max, log(sum(exp(x - max))) with axis kept as 1): log_softmax's two terms, for a
    loss that picks entries of the first (a cross-entropy: log_sum - picked is TF's kernel's
    own rounding, and its gradient needs no sum of the picked cotangents over the classes)."""
    shifted = ops.sub(x, broadcast_to(_row_peak(x, axis), x.shape))
    s = keepdims(ops.reduce_sum(ops.exp(shifted), axes=(axis,)), x.shape, (axis,))
    return shifted, ops.log(s)


# ---------------------------------------------------------------- layout and indexing

def edge_pad(x, pads, mode):
    """x padded by (lo, hi) per axis from its own edges: "reflect" (the edge not repeated:
    TF's REFLECT, torch's reflection_pad), "symmetric" (repeated: TF's SYMMETRIC) or
    "replicate" (the edge value: torch's replication_pad). Slices, reversals and one
    concatenate per axis, whose gradient is as cheap (torch's decomposition gathered, 9
    gathers in its backward). The caller checks that each pad fits its axis."""
    for axis, (lo, hi) in enumerate(pads):
        if not lo and not hi:
            continue
        n = x.shape[axis]
        parts = []
        if mode == "replicate":
            if lo:
                parts.append(broadcast_to(slice_axis(x, axis, 0, 1),
                                          with_size(x.shape, axis, lo)))
            parts.append(x)
            if hi:
                parts.append(broadcast_to(slice_axis(x, axis, n - 1, n),
                                          with_size(x.shape, axis, hi)))
        else:
            skip = 1 if mode == "reflect" else 0
            if lo:
                parts.append(ops.rev(slice_axis(x, axis, skip, skip + lo), dimensions=(axis,)))
            parts.append(x)
            if hi:
                parts.append(ops.rev(slice_axis(x, axis, n - hi - skip, n - skip),
                                     dimensions=(axis,)))
        x = ops.concatenate(*parts, dimension=axis)
    return x


def with_size(shape, axis, size):
    """`shape` with `axis` of `size`."""
    return tuple(size if i == axis else d for i, d in enumerate(shape))


def repeat_elements(x, factors):
    """x with each element repeated factors[i] times along axis i: one broadcast (the
    repeats as new axes after their own) and a reshape."""
    tiled, dims = [], []
    for size, k in zip(x.shape, factors):
        dims.append(len(tiled))
        tiled += [size, k] if k != 1 else [size]
    spread = ops.broadcast_in_dim(x, shape=tuple(tiled), broadcast_dimensions=tuple(dims))
    return ops.reshape(spread, new_sizes=tuple(s * k for s, k in zip(x.shape, factors)))


def slice_axis(x, axis, start, stop, step=1):
    """x[..., start:stop:step, ...] along one axis."""
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    starts[axis], limits[axis], strides[axis] = start, stop, step
    return ops.slice_(x, start_indices=tuple(starts), limit_indices=tuple(limits),
                      strides=tuple(strides))


def roll(x, shifts):
    """x rolled by shifts[axis] along each axis (a dict, in the caller's order): per axis the
    tail moved ahead of the head, two slices and a concatenation -- NumPy's, torch's and TF's
    roll as one graph."""
    for axis, shift in shifts.items():
        n = x.shape[axis]
        k = shift % n if n else 0
        if k:
            x = ops.concatenate(slice_axis(x, axis, n - k, n), slice_axis(x, axis, 0, n - k),
                                dimension=axis)
    return x


def strided_window(x, starts, sizes, strides):
    """x's elements starts[k] + i * strides[k] (i < sizes[k]) on each axis k, strides positive.
    The form every frontend records, and torch's one-axis-at-a-time indexing folds to
    (core/ops.py): the unit-stride axes that start past 0 are a window with run-time int32
    starts (a loop over X[i:i + b, ::2] runs one program), then one static strided slice."""
    moved = [st == 1 and s != 0 and n > 0 for s, n, st in zip(starts, sizes, strides)]
    if any(moved):
        x = ops.dynamic_slice(x, *[ir.param(s if m else 0, "int32") for s, m in zip(starts, moved)],
                              slice_sizes=tuple(n if m else d
                                                for n, m, d in zip(sizes, moved, x.shape)))
        starts = [0 if m else s for s, m in zip(starts, moved)]
    limits = tuple(s + (n - 1) * st + 1 if n else s for s, n, st in zip(starts, sizes, strides))
    return ops.slice_(x, start_indices=tuple(starts), limit_indices=limits, strides=tuple(strides))


def stack(xs, axis):
    """Insert a unit axis in each operand, then concatenate along it."""
    shape = xs[0].shape[:axis] + (1,) + xs[0].shape[axis:]
    return ops.concatenate(*[ops.reshape(x, new_sizes=shape) for x in xs], dimension=axis)


def wrap_index(index, size):
    """Negative indices count from the end (a baked-in size: it is part of the shape)."""
    zero = const(0, index.dtype, index.shape)
    return ops.select(ops.lt(index, zero), ops.add(const(size, index.dtype, index.shape), index),
                      index)


def take_along_axis(x, index, axis):
    """out[..., j, ...] = x[..., index[..., j, ...], ...] along `axis` (index has x's rank)."""
    shape = index.shape
    coords = []
    for d in range(x.ndim):
        if d == axis:
            c = wrap_index(index, x.shape[axis])
        else:
            c = ops.iota(dtype=index.dtype, shape=shape, dimension=d)
        coords.append(ops.reshape(c, new_sizes=shape + (1,)))
    return ops.gather(x, ops.concatenate(*coords, dimension=x.ndim))


def tensordot(a, b, a_axes, b_axes):
    """Contract a_axes of a with b_axes of b: move them together, flatten to one matrix
    product, unflatten (the formulation torch uses, so every frontend records the same)."""
    a_free = [d for d in range(a.ndim) if d not in a_axes]
    b_free = [d for d in range(b.ndim) if d not in b_axes]
    a_mat = ops.transpose(a, permutation=tuple(a_free) + tuple(a_axes))
    b_mat = ops.transpose(b, permutation=tuple(b_axes) + tuple(b_free))
    k = math.prod(a.shape[d] for d in a_axes)
    m = math.prod(a.shape[d] for d in a_free)
    n = math.prod(b.shape[d] for d in b_free)
    out = ops.dot_general(ops.reshape(a_mat, new_sizes=(m, k)), ops.reshape(b_mat, new_sizes=(k, n)),
                          contracting_dimensions=((1,), (0,)))
    return ops.reshape(out, new_sizes=tuple(a.shape[d] for d in a_free) +
                       tuple(b.shape[d] for d in b_free))


def matrix_transpose(x):
    """Swap the last two axes (x.mT), batch axes kept in place."""
    n = x.ndim
    return ops.transpose(x, permutation=tuple(range(n - 2)) + (n - 1, n - 2))


def batch_matmul(a, b):
    """a[..., m, k] @ b[..., k, n] over equal batch axes (broadcast by the frontend, with its
    own errors): one dot_general, batch axes first, as every frontend records it."""
    nb = a.ndim - 2
    return ops.dot_general(a, b, contracting_dimensions=((nb + 1,), (nb,)),
                           batch_dimensions=(tuple(range(nb)), tuple(range(nb))))


def convolve_valid(x, w):
    """1-d true convolution, NumPy's mode 'valid' (the kernel reversed, then correlated)."""
    n, k = x.shape[0], w.shape[0]
    if dt.is_int(x.dtype):
        # XLA:GPU hands convolutions to cuDNN, which has none for int32/int64 (UNIMPLEMENTED,
        # seen on an H100): each output's window of x (a gather), dotted with the kernel --
        # integer arithmetic, wrapping as NumPy's does
        m = n - k + 1
        iota = ops.iota(dtype="int64", shape=(m, k), dimension=0)
        starts = ops.add(iota, ops.iota(dtype="int64", shape=(m, k), dimension=1))
        windows = ops.gather(x, ops.reshape(starts, new_sizes=(m, k, 1)))
        return ops.dot_general(windows, ops.rev(w, dimensions=(0,)),
                               contracting_dimensions=((1,), (0,)))
    out = ops.conv(ops.reshape(x, new_sizes=(1, 1, n)),
                   ops.reshape(ops.rev(w, dimensions=(0,)), new_sizes=(1, 1, k)),
                   window_strides=(1,), padding=((0, 0),))
    return ops.reshape(out, new_sizes=(out.shape[-1],))


# ---------------------------------------------------------------- randomness

def random_key(seed, counter=0, stream=None):
    """seed_key as a run-time parameter leaf: a new seed or counter never recompiles.
    `stream` (a prng.Stream) names the generator it came from, for lazyx.compile's replays."""
    return ir.param(seed_key(seed, counter), "uint32")


def seed_words(seed):
    """(high, low): the uint32 words of each element of an int32/int64/uint32/uint64 seed
    node (a seed pair, a generator's state), as int(s) & 0xFFFFFFFFFFFFFFFF splits it (a
    negative 32-bit s sign-extended: its high word all ones)."""
    shape = seed.shape
    if seed.dtype in ("int64", "uint64"):
        wide = ops.bitcast_convert(seed, dtype="uint64") if seed.dtype == "int64" else seed
        high = ops.convert(ops.shift_right_logical(wide, const(32, "uint64", shape)),
                           dtype="uint32")
        low = ops.convert(ops.and_(wide, const(0xFFFFFFFF, "uint64", shape)), dtype="uint32")
        return high, low
    signed = seed.dtype in dt.SIGNED
    if seed.dtype not in ("int32", "uint32"):
        seed = ops.convert(seed, dtype="int32" if signed else "uint32")
    low = ops.bitcast_convert(seed, dtype="uint32") if signed else seed
    high = const(0, "uint32", shape) if not signed else \
        ops.select(ops.lt(seed, const(0, "int32", shape)),
                   const(0xFFFFFFFF, "uint32", shape), const(0, "uint32", shape))
    return high, low


def traced_seed_key(seed):
    """seed_key(s, k) computed by the program, for a seed pair (s, k) that is itself a lazy
    value: an int32/int64/uint32 node of shape (2,). (lazyx's own ltf.random given a lazy
    seed: it draws what the same seed on the host draws. ~100 integer ops, which XLA fuses
    into one small kernel.)"""
    high, low = seed_words(seed)

    def word(x, i):  # element i, kept 1-d (NumPy warns on 0-d unsigned overflow)
        return slice_axis(x, 0, i, i + 1)

    k0, k1, counter = word(high, 0), word(low, 0), word(low, 1)
    ks = (k0, k1, ops.xor(ops.xor(k0, k1), const(PARITY, "uint32", (1,))))
    x0 = ops.add(const(0, "uint32", (1,)), ks[0])
    x1 = ops.add(counter, ks[1])
    for i in range(5):
        for r in ROTATIONS[i % 2]:
            x0 = ops.add(x0, x1)
            rotated = ops.or_(ops.shift_left(x1, const(r, "uint32", (1,))),
                              ops.shift_right_logical(x1, const(32 - r, "uint32", (1,))))
            x1 = ops.xor(rotated, x0)
        x0 = ops.add(x0, ks[(i + 1) % 3])
        x1 = ops.add(ops.add(x1, ks[(i + 2) % 3]), const(i + 1, "uint32", (1,)))
    return ops.concatenate(x0, x1, dimension=0)


def uniform(key, shape, dtype="float32"):
    """Uniform floats in [0, 1): random mantissa bits under the exponent of 1.0, minus one.

    float32 (and the half types, rounded from it) take 23 bits of one word; float64 takes 52
    bits of two words. Scaling to [low, high) is the frontend's (with its own scalars).
    """
    if not dt.is_float(dtype):
        raise TypeError(f"uniform: dtype must be floating, got {dtype}")
    shape = tuple(shape)
    if dtype == "float64":
        words = ops.random_bits(key, shape=shape + (2,))

        def word(i):
            w = slice_axis(words, len(shape), i, i + 1)
            return ops.convert(ops.reshape(w, new_sizes=shape), dtype="uint64")
        bits = ops.or_(ops.shift_left(word(0), const(32, "uint64", shape)), word(1))
        mantissa = ops.shift_right_logical(bits, const(12, "uint64", shape))
        one = ops.or_(mantissa, const(0x3FF0000000000000, "uint64", shape))
        return ops.sub(ops.bitcast_convert(one, dtype="float64"), const(1.0, "float64", shape))
    bits = ops.random_bits(key, shape=shape)
    mantissa = ops.shift_right_logical(bits, const(9, "uint32", shape))
    one = ops.or_(mantissa, const(0x3F800000, "uint32", shape))
    u = ops.sub(ops.bitcast_convert(one, dtype="float32"), const(1.0, "float32", shape))
    return ops.convert(u, dtype=dtype)


def normal(key, shape, dtype="float32"):
    """Standard normal by the inverse CDF: sqrt(2) * erf_inv(2u - 1), u moved half a step
    into the open interval (0, 1) so erf_inv never sees -1."""
    shape = tuple(shape)
    work = "float64" if dtype == "float64" else "float32"
    half_step = 2.0 ** -53 if work == "float64" else 2.0 ** -24
    u = ops.add(uniform(key, shape, work), const(half_step, work, shape))
    centered = ops.sub(ops.mul(u, const(2.0, work, shape)), const(1.0, work, shape))
    z = ops.mul(ops.erf_inv(centered), const(math.sqrt(2.0), work, shape))
    return ops.convert(z, dtype=dtype)
