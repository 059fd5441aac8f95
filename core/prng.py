"""Counter-based randomness: Threefry-2x32 on the host, and how seeds become keys.

Keys are uint32[2] values fed to programs as run-time parameters; the device-side bits come
from the `random_bits` primitive, which both backends compute with this same function.
"""
import numpy as np


def _rotl(x, r):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


PARITY = 0x1BD11BDA  # Threefry's key-schedule constant
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
    k0, k1 = np.uint32(seed >> 32), np.uint32(seed & 0xFFFFFFFF)
    y0, y1 = threefry2x32(k0, k1, np.array([0], np.uint32),
                          np.array([int(counter) & 0xFFFFFFFF], np.uint32))
    return np.array([y0[0], y1[0]], np.uint32)


class Stream:
    """A frontend generator's state: a seed and the number of draws made since seeding.

    Frontends pass it to compose.random_key, so a compiled step (core/replay.py) knows which
    generator each of its keys came from and advances it on replay as the traced run did."""
    __slots__ = ("seed", "counter")

    def __init__(self, seed=0):
        self.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self.counter = 0
