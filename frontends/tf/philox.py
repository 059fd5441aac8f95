"""TF's stateless random stream in IR: the numbers eager TF's CPU kernels draw.

tf.random.stateless_uniform/normal (and through them keras.random and Keras' noise layers)
and tf.nn.experimental.stateless_dropout (Keras' Dropout) draw Philox-4x32-10 words
(`ops.philox_bits`) under a key and counter TF scrambles from the seed, then turn words into
numbers as TF's kernels do. With a host seed the scrambling is done here, on the host, and
enters the program as run-time parameters (a new seed never recompiles); with a lazy seed --
a Keras SeedGenerator's state inside a training step, or captured by lazyx.compile -- the
program does it. Either way a step draws what eager TF draws, so the uncompiled run, its
compiled replays and eager TF agree. (lazyx's own `ltf.random` keeps keyed Threefry, the
stream every frontend shares.)
"""
import math

import numpy as np

from ...core import compose, ir, ops, prng
from ...core.compose import const

# TF's Box-Muller keeps the first uniform away from 0, whose log is -inf
_BOX_MULLER_EPSILON = 1.0e-7
# the mantissa bits each float type takes from a word (its low bits), placed in a float32
_MANTISSA_BITS = {"float32": 23, "float16": 10, "bfloat16": 7}


def host_key_counter(seed):
    """(key, counter) parameter nodes for a seed pair known on the host."""
    key, counter = prng.tf_key_counter(seed)
    return ir.param(key, "uint32"), ir.param(counter, "uint32")


def traced_key_counter(seed):
    """(key, counter) nodes the program computes from a lazy int32/int64 seed pair, as
    prng.tf_key_counter does on the host."""
    high, low = compose.seed_words(seed)
    words = ops.reshape(compose.stack([low, high], 1), new_sizes=(4,))  # s0 lo, s0 hi, ...
    scramble = ir.constant(np.array(prng.TF_SEED_SCRAMBLE_KEY, np.uint32), "uint32")
    mix = ops.philox_bits(scramble, words, shape=(4,))
    key = compose.slice_axis(mix, 0, 0, 2)
    counter = ops.concatenate(const(0, "uint32", (2,)), compose.slice_axis(mix, 0, 2, 4),
                              dimension=0)
    return key, counter


def state_key_counter(state):
    """(key, counter) nodes of a tf.random.Generator's Philox state (int64[3]: the 128-bit
    counter's low and high halves, then the key)."""
    high, low = compose.seed_words(state)
    words = ops.reshape(compose.stack([low, high], 1), new_sizes=(6,))
    return compose.slice_axis(words, 0, 4, 6), compose.slice_axis(words, 0, 0, 4)


# TF's stateful kernels move a generator's counter 256 blocks on per number drawn, whatever
# the distribution and dtype (a reserve for rejection sampling)
_BLOCKS_PER_NUMBER = 256


def advanced_state(state, count):
    """A generator's state (int64[3]) after drawing `count` numbers: its 128-bit counter
    moved on, the carry into the high half, the key kept."""
    wide = ops.bitcast_convert(state, dtype="uint64")
    low, high, key = (compose.slice_axis(wide, 0, i, i + 1) for i in range(3))
    moved = ops.add(low, const((_BLOCKS_PER_NUMBER * count) % 2**64, "uint64", (1,)))
    carry = ops.convert(ops.lt(moved, low), dtype="uint64")
    out = ops.concatenate(moved, ops.add(high, carry), key, dimension=0)
    return ops.bitcast_convert(out, dtype="int64")


def _words(key_counter, shape):
    return ops.philox_bits(*key_counter, shape=tuple(shape))


def _columns(words):
    """The last axis of a words array, one node per column, that axis dropped."""
    n = words.shape[-1]
    return [ops.reshape(compose.slice_axis(words, words.ndim - 1, i, i + 1),
                        new_sizes=words.shape[:-1]) for i in range(n)]


def _unit_float(words, dtype):
    """[0, 1) from one word per number: its low mantissa bits under 1.0's exponent, minus 1
    (TF's Uint32ToFloat and its half and bfloat16 kin; exact in float32, then rounded to
    `dtype` without loss)."""
    bits = _MANTISSA_BITS[dtype]
    shape = words.shape
    mantissa = ops.and_(words, const((1 << bits) - 1, "uint32", shape))
    if bits != 23:
        mantissa = ops.shift_left(mantissa, const(23 - bits, "uint32", shape))
    one_plus = ops.or_(mantissa, const(0x3F800000, "uint32", shape))
    u = ops.sub(ops.bitcast_convert(one_plus, dtype="float32"), const(1.0, "float32", shape))
    return u if dtype == "float32" else ops.convert(u, dtype=dtype)


def _unit_double(high, low):
    """[0, 1) float64 from two words: 52 mantissa bits of high:low (TF's Uint64ToDouble)."""
    shape = high.shape
    wide = ops.or_(ops.shift_left(ops.convert(high, dtype="uint64"), const(32, "uint64", shape)),
                   ops.convert(low, dtype="uint64"))
    mantissa = ops.and_(wide, const((1 << 52) - 1, "uint64", shape))
    one_plus = ops.or_(mantissa, const(0x3FF0000000000000, "uint64", shape))
    return ops.sub(ops.bitcast_convert(one_plus, dtype="float64"), const(1.0, "float64", shape))


def uniform(key_counter, shape, dtype):
    """Uniform [0, 1) floats of `dtype`, as StatelessRandomUniformV2."""
    shape = tuple(shape)
    n = math.prod(shape)
    if dtype == "float64":
        high, low = _columns(_words(key_counter, (n, 2)))
        return ops.reshape(_unit_double(high, low), new_sizes=shape)
    return _unit_float(_words(key_counter, shape), dtype)


def normal(key_counter, shape, dtype):
    """Standard normal floats of `dtype`, as StatelessRandomNormalV2: Box-Muller of pairs of
    uniforms, the sine first, then the cosine."""
    shape = tuple(shape)
    n = math.prod(shape)
    pairs = -(-n // 2)
    double = dtype == "float64"
    words = _columns(_words(key_counter, (pairs, 4 if double else 2)))
    first, second = _box_muller(words)
    both = compose.stack([first, second], 1)
    out = compose.slice_axis(ops.reshape(both, new_sizes=(2 * pairs,)), 0, 0, n)
    out = ops.reshape(out, new_sizes=shape)
    return out if dtype in ("float32", "float64") else ops.convert(out, dtype=dtype)


def _box_muller(words):
    """TF's BoxMuller of 2 words (float32) or 4 (float64) per pair: (sine, cosine) normals."""
    shape = words[0].shape
    if len(words) == 4:
        u, turn = _unit_double(*words[:2]), _unit_double(*words[2:])
        angle = ops.mul(turn, const(2 * math.pi, "float64", shape))
        work = "float64"
    else:
        u, turn = _unit_float(words[0], "float32"), _unit_float(words[1], "float32")
        # 2.0f * M_PI * u in C++: a double product, rounded to float
        angle = ops.convert(ops.mul(ops.convert(turn, dtype="float64"),
                                    const(2 * math.pi, "float64", shape)), dtype="float32")
        work = "float32"
    u = ops.max_(u, const(_BOX_MULLER_EPSILON, work, shape))
    radius = ops.sqrt(ops.mul(const(-2.0, work, shape), ops.log(u)))
    return ops.mul(ops.sin(angle), radius), ops.mul(ops.cos(angle), radius)


# TF's truncated normal (TruncatedNormalDistribution, under FillPhiloxRandom) fills groups of
# 4 numbers (2 doubles), group g drawing words from Philox block g * 256 * 4 / 4 (/ 2 for
# doubles) on, as many as it needs: Box-Muller normals in order, those outside (-2, 2)
# rejected. Here a group takes a fixed run of 32 normals and keeps its first accepted ones;
# one with fewer than 4 (2) accepted among 32 -- probability below 1e-30 -- would differ.
_TRUNCATED_CANDIDATES = 32


def truncated_normal(key_counter, shape, dtype):
    """Standard normal floats of `dtype` within (-2, 2), as TF's TruncatedNormal kernels."""
    shape = tuple(shape)
    n = math.prod(shape)
    double = dtype == "float64"
    group = 2 if double else 4
    groups = -(-n // group)
    per_pair = 4 if double else 2
    pairs = _TRUNCATED_CANDIDATES // 2
    words = _words_strided(key_counter, groups, pairs * per_pair, group * 256 // 4)
    words = ops.reshape(words, new_sizes=(groups, pairs, per_pair))
    first, second = _box_muller(_columns(words))
    candidates = ops.reshape(compose.stack([first, second], 2),
                             new_sizes=(groups, _TRUNCATED_CANDIDATES))
    work = candidates.dtype
    cshape = candidates.shape
    accepted = ops.lt(ops.abs_(candidates), const(2.0, work, cshape))
    rank = ops.cumsum(ops.convert(accepted, dtype="int32"), axis=1, reverse=False)
    # (the unselected are -0.0, which adds nothing to any number, a -0.0 included)
    out = [ops.reduce_sum(ops.select(ops.and_(accepted, ops.eq(rank, const(k + 1, "int32",
                                                                           cshape))),
                                     candidates, const(-0.0, work, cshape)), axes=(1,))
           for k in range(group)]
    out = ops.reshape(compose.stack(out, 1), new_sizes=(groups * group,))
    out = ops.reshape(compose.slice_axis(out, 0, 0, n), new_sizes=shape)
    return out if dtype == work else ops.convert(out, dtype=dtype)


def _words_strided(key_counter, groups, words, stride):
    return ops.philox_bits(*key_counter, shape=(groups, words), stride=stride)


def integers(key_counter, shape, low, span, dtype):
    """Integers low + bits % span of `dtype` (int32: one word each; int64: two, the first the
    low word), as StatelessRandomUniformIntV2; `low` and `span` are host ints (run-time
    parameters), span > 0."""
    shape = tuple(shape)
    unsigned = "uint32" if dtype == "int32" else "uint64"
    if dtype == "int32":
        bits = _words(key_counter, shape)
    else:
        low_word, high_word = _columns(_words(key_counter, shape + (2,)))
        bits = ops.or_(ops.shift_left(ops.convert(high_word, dtype="uint64"),
                                      const(32, "uint64", shape)),
                       ops.convert(low_word, dtype="uint64"))
    width = 32 if dtype == "int32" else 64
    offset = ops.rem(bits, compose.scalar(span % (1 << width), unsigned, shape))
    start = compose.scalar(low % (1 << width), unsigned, shape)  # (wrapping, as TF adds)
    return ops.bitcast_convert(ops.add(offset, start), dtype=dtype)
