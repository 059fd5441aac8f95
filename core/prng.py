"""Counter-based randomness: Threefry-2x32 on the host, and how seeds become keys.

Keys are uint32[2] values fed to programs as run-time parameters; the device-side bits come
from the `random_bits` primitive, which both backends compute with this same function.
"""
import numpy as np

from .symbolic import current


def _rotl(x, r):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


PARITY = 0x1BD11BDA  # Threefry's key-schedule constant
_MASK32 = 0xFFFFFFFF
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32, 20 rounds (Salmon et al. 2011), on uint32 arrays (wrapping arithmetic)."""
    k0, k1 = np.uint32(k0), np.uint32(k1)
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(PARITY))
    with np.errstate(over="ignore"):
        x0, x1 = x0 + ks[0], x1 + ks[1]
        for i in range(5):
            for r in ROTATIONS[i % 2]:
                x0 = x0 + x1
                x1 = _rotl(x1, r) ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def seed_key(seed, counter=0):
    """The uint32[2] key for draw number `counter` after seeding with `seed`.

    Every frontend derives keys this way (torch.manual_seed(s) then its k-th draw; a NumPy
    generator seeded with s; TF's stateless ops with seed (s, k)), so one seed gives the same
    numbers whichever framework asks, on every backend.
    """
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    return np.array(_threefry_block(seed >> 32, seed & _MASK32, 0, int(counter) & _MASK32),
                    np.uint32)


def _threefry_block(k0, k1, x0, x1):
    """threefry2x32 of one counter pair, in Python ints: every draw derives its key on the
    host (a dropout per layer per step), and NumPy scalars cost ~10x."""
    ks = (k0, k1, k0 ^ k1 ^ PARITY)
    x0, x1 = (x0 + ks[0]) & _MASK32, (x1 + ks[1]) & _MASK32
    for i in range(5):
        for r in ROTATIONS[i % 2]:
            x0 = (x0 + x1) & _MASK32
            x1 = (((x1 << r) | (x1 >> (32 - r))) & _MASK32) ^ x0
        x0 = (x0 + ks[(i + 1) % 3]) & _MASK32
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & _MASK32
    return x0, x1


_EPOCH = [0]  # reseeds so far, in every stream


def epoch():
    return _EPOCH[0]


class Stream:
    """A frontend generator's state: a seed and the number of draws made since seeding.

    Frontends pass it to compose.random_key, so a compiled step (core/replay.py) knows which
    generator each of its keys came from and advances it on replay as the traced run did."""
    __slots__ = ("seed", "counter", "epoch")

    def __init__(self, seed=0):
        self.reseed(seed)

    def reseed(self, seed, counter=0):
        """Set the state (manual_seed, np.random.seed, set_state, a new generator). `epoch`
        orders reseeds: a compiled step that reseeds while traced draws the same numbers at
        every replay, and leaves the stream where the trace left it (core/replay_entry), where
        a step that only draws advances it from wherever it is."""
        self.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self.counter = int(counter)
        _EPOCH[0] += 1
        self.epoch = _EPOCH[0]
        rec = current()
        if rec is not None:
            rec.reseeded[id(self)] = self

    def value_at(self, counter, part=None):
        """The parameter of draw number `counter` (a replay asks; `part` names one of a
        draw's several parameters, for streams whose draws have more than a key)."""
        return seed_key(self.seed, counter)


# ---------------------------------------------------------------- TF's stream: Philox-4x32

# TF's stateless random ops (tf.random.stateless_*, and through them keras.random and Keras'
# dropout) draw from Philox-4x32-10 on the CPU, with a key and counter scrambled from the
# seed. lazyx draws the same words, so a step whose seed is lazy -- a Keras SeedGenerator's
# state under lazyx.compile -- gives the numbers eager TF gives (frontends/tf/philox.py).
PHILOX_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
PHILOX_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
TF_SEED_SCRAMBLE_KEY = (0x3EC8F720, 0x02461E29)
_LOW16 = 0xFFFF


def _mul_hi_lo(a, m):
    """(high, low) 32-bit words of a * m for uint32 arrays `a` and a constant m, in uint32
    arithmetic only: NumPy and jax.numpy arrays alike, without 64-bit types (which JAX has
    only under x64)."""
    m_hi, m_lo = np.uint32(m >> 16), np.uint32(m & _LOW16)
    a_hi, a_lo = a >> np.uint32(16), a & np.uint32(_LOW16)
    low_product = a_lo * m_lo
    middle = a_hi * m_lo + (low_product >> np.uint32(16))
    cross = a_lo * m_hi + (middle & np.uint32(_LOW16))
    high = a_hi * m_hi + (middle >> np.uint32(16)) + (cross >> np.uint32(16))
    return high, a * np.uint32(m)


def philox4x32(c, k):
    """Philox-4x32-10 (Salmon et al. 2011) of counters c (4 uint32 arrays) under key k (2
    uint32 scalars or arrays): 4 arrays of output words."""
    c0, c1, c2, c3 = c
    k0, k1 = k
    for _ in range(10):
        hi0, lo0 = _mul_hi_lo(c0, PHILOX_MULTIPLIERS[0])
        hi1, lo1 = _mul_hi_lo(c2, PHILOX_MULTIPLIERS[1])
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = k0 + np.uint32(PHILOX_KEY_STEPS[0])
        k1 = k1 + np.uint32(PHILOX_KEY_STEPS[1])
    return c0, c1, c2, c3


def philox_counters(counter, blocks):
    """The 128-bit counter (4 uint32 words, least significant first) plus each of `blocks`
    (a uint32 array 0, 1, ...): what Philox's block j runs on."""
    c0 = counter[0] + blocks
    carry = (c0 < blocks).astype(blocks.dtype)
    c1 = counter[1] + carry
    carry = carry & (c1 == 0).astype(blocks.dtype)
    c2 = counter[2] + carry
    carry = carry & (c2 == 0).astype(blocks.dtype)
    return c0, c1, c2, counter[3] + carry


def tf_key_counter(seed):
    """TF's key (uint32[2]) and counter (uint32[4]) for a stateless op's seed pair (two ints,
    int32 ones sign-extended as TF extends them): the seed's four words run through one
    Philox block under a fixed key; its first two words are the key, its last two the
    counter's high half. (In Python ints, with 64-bit products: a host seed is scrambled at
    every draw -- Keras draws a new one per dropout call -- and NumPy scalars cost ~20x.)"""
    c = []
    for s in seed:
        s = int(s) & 0xFFFFFFFFFFFFFFFF
        c += [s & _MASK32, s >> 32]
    k0, k1 = TF_SEED_SCRAMBLE_KEY
    m0, m1 = PHILOX_MULTIPLIERS
    for _ in range(10):
        p0, p1 = m0 * c[0], m1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & _MASK32, (p0 >> 32) ^ c[3] ^ k1, p0 & _MASK32]
        k0 = (k0 + PHILOX_KEY_STEPS[0]) & _MASK32
        k1 = (k1 + PHILOX_KEY_STEPS[1]) & _MASK32
    return np.array(c[:2], np.uint32), np.array([0, 0, c[2], c[3]], np.uint32)
