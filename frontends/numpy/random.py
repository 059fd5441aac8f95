"""lnp.random: keyed, counter-based generators whose numbers are the same on every backend.

Each draw asks ``ops.random_bits`` (Threefry-2x32) for bits under a fresh key derived on the
host from (seed, call counter). The key enters the graph as a runtime parameter, so a new draw
of the same shape reuses the compiled program. The streams are lazyx's own: they are not the
numbers ``numpy.random`` would give for the same seed.
"""
import math
import operator
import os

import numpy as np

from ...core import compose, ops, runtime
from ...core.prng import Stream
from . import _views
from ._base import LazyArray, wrap
from ._indexing import take
from ._promote import as_lazy, assign, broadcast_shapes, ir_dtype, shape_of
from ._reductions import searchsorted

_MASK64 = (1 << 64) - 1


def _size(size):
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (operator.index(size),)
    return tuple(operator.index(d) for d in size)


class Generator:
    """A keyed generator: ``lnp.random.default_rng(seed)``."""

    def __init__(self, seed=None):
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        elif isinstance(seed, np.random.BitGenerator):  # Generator(np.random.PCG64(0))
            seed = seed.seed_seq
        if isinstance(seed, np.random.SeedSequence) or \
                not isinstance(seed, (int, np.integer)):  # ([1, 2, 3]: NumPy's entropy list)
            seq = seed if isinstance(seed, np.random.SeedSequence) else \
                np.random.SeedSequence(seed)
            seed = int(seq.generate_state(1, np.uint64)[0])
        self._stream = Stream(operator.index(seed) & _MASK64)

    def __getattr__(self, name):
        """The distributions without a lowering (gamma, beta, poisson, binomial, dirichlet,
        multivariate_normal, ...): drawn on the host by NumPy's own method from a generator
        keyed like a draw of this stream, uploaded; a counted fallback (so lazyx.compile
        runs a step that draws one lazily, never replaying frozen numbers)."""
        method = getattr(np.random.Generator, name, None)
        if name.startswith("_") or not callable(method):
            raise AttributeError(f"'Generator' object has no attribute '{name}'")
        from ._fallback import run_eagerly

        def draw(*args, **kwargs):
            stream = self._stream
            host = np.random.Generator(np.random.PCG64([stream.seed, stream.counter]))
            stream.counter += 1
            return run_eagerly(getattr(host, name), f"numpy.random.Generator.{name}", args,
                               kwargs)
        draw.__name__ = name
        return draw

    def _key(self):
        # the key every frontend derives for draw k after seeding with s (core.prng.seed_key)
        stream = self._stream
        key = compose.random_key(stream.seed, stream.counter, stream=stream)
        stream.counter += 1
        return key

    def _uniforms(self, shape, count, dtype):
        """`count` independent uniform [0, 1) arrays of `shape`, one key each."""
        runtime.maybe_cut()
        return [compose.uniform(self._key(), shape, dtype) for _ in range(count)]

    def random(self, size=None, dtype=np.float64, out=None):
        dtype = ir_dtype(dtype)
        if dtype not in ("float32", "float64"):
            raise TypeError(f"Unsupported dtype {np.dtype(dtype)!r} for random")
        result = wrap(self._uniforms(_size(size), 1, dtype)[0])
        if out is not None:
            return assign(out, result)
        return result

    def uniform(self, low=0.0, high=1.0, size=None):
        low, high = _host(low), _host(high)
        if not _any_lazy(low, high):  # NumPy's checks; lazy bounds are not read
            width = np.subtract(high, low, dtype=np.float64)
            if np.any(width < 0):
                raise ValueError("high - low < 0")
            if not np.all(np.isfinite(width)):
                raise OverflowError("high - low range exceeds valid bounds")
        shape = _size(size) if size is not None else _broadcast(low, high)
        u = wrap(self._uniforms(shape, 1, "float64")[0])
        if _any_lazy(low, high) or np.ndim(low) or np.ndim(high) or low != 0.0 or high != 1.0:
            return low + (high - low) * u
        return u

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        dtype = ir_dtype(dtype)
        if dtype not in ("float32", "float64"):
            raise TypeError(f"Unsupported dtype {np.dtype(dtype)!r} for standard_normal")
        runtime.maybe_cut()
        result = wrap(compose.normal(self._key(), _size(size), dtype))
        if out is not None:
            return assign(out, result)
        return result

    def normal(self, loc=0.0, scale=1.0, size=None):
        loc, scale = _host(loc), _nonnegative(_host(scale), "scale")
        shape = _size(size) if size is not None else _broadcast(loc, scale)
        z = self.standard_normal(shape)
        return loc + scale * z

    def exponential(self, scale=1.0, size=None):
        scale = _nonnegative(_host(scale), "scale")
        shape = _size(size) if size is not None else _broadcast(scale)
        u = self._uniforms(shape, 1, "float64")[0]
        e = wrap(ops.neg(ops.log1p(ops.neg(u))))
        return e * scale

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        if high is None:
            low, high = 0, low
        low, high = _host(low), _host(high)
        target = ir_dtype(dtype)
        if np.dtype(target).kind not in "iu":
            raise TypeError(f"Unsupported dtype {np.dtype(dtype)!r} for integers")
        shape = _size(size) if size is not None else _broadcast(low, high)
        if _any_lazy(low, high):
            # bounds unknown on the host: neither checked nor wider than int64 (docs/numpy.md)
            low, high = as_lazy(low).astype("int64"), as_lazy(high).astype("int64")
            span = (high - low + (1 if endpoint else 0)).astype("uint64")
            offset = _mulhi64(self._bits64(shape), span)
            return (low + offset.astype("int64")).astype(target)
        # Python ints (object arrays): a bound or span may not fit any fixed-width type
        lo = np.asarray(low).astype(object)
        last = np.asarray(high).astype(object) - (0 if endpoint else 1)
        info = np.iinfo(target)
        if np.any(lo < info.min):
            raise ValueError(f"low is out of bounds for {np.dtype(target)}")
        if np.any(last > info.max):
            raise ValueError(f"high is out of bounds for {np.dtype(target)}")
        if np.any(lo > last):
            raise ValueError("low > high" if endpoint else "low >= high")
        span = last - lo + 1  # 1 .. 2**64
        bits = self._bits64(shape)
        # offset = floor(bits * span / 2**64): every value of the span is reachable, each by
        # floor or ceil of 2**64/span bit patterns (float64 offsets lost the low bits past 2**53)
        full = np.asarray(span == 1 << 64)
        offset = _mulhi64(bits, _uint64(span % (1 << 64)))  # a full span (2**64) as 0
        if np.any(full):
            offset = bits if np.all(full) else np.where(full, bits, offset)
        # low + offset modulo 2**64, then read as the target: the sum lies in [low, high), so
        # the final cast is exact (casting the offset first saturated it)
        value = offset + _uint64(lo % (1 << 64))
        if info.min < 0:
            value = wrap(ops.bitcast_convert(value._node, dtype="int64"))
        return value.astype(target)

    def _bits64(self, shape):
        """Uniform uint64 bits of `shape`: two Threefry words each."""
        runtime.maybe_cut()
        words = wrap(ops.random_bits(self._key(), shape=tuple(shape) + (2,))).astype("uint64")
        return (words[..., 0] << np.uint64(32)) | words[..., 1]

    def permutation(self, x, axis=0):
        if isinstance(x, (int, np.integer)):
            n = operator.index(x)
            return self._order(n)
        x = as_lazy(x)
        if x.ndim == 0:
            raise IndexError("x must be an integer or at least 1-dimensional")
        axis = operator.index(axis)
        if not -x.ndim <= axis < x.ndim:
            raise np.exceptions.AxisError(axis, x.ndim)
        return take(x, self._order(x.shape[axis]), axis=axis)

    def shuffle(self, x, axis=0):
        if not isinstance(x, LazyArray):
            raise TypeError("lnp.random: shuffle works in place on lazy arrays")
        _views.write(x, take(x, self._order(x.shape[axis]), axis=axis)._node)

    def _order(self, n):
        u = self._uniforms((n,), 1, "float64")[0]
        return wrap(ops.argsort(u, axis=0, index_dtype="int64"))

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        if not isinstance(a, LazyArray) and np.ndim(a) == 0 and \
                np.asarray(a).dtype.kind in "iu":
            pool = n = operator.index(np.asarray(a)[()])
        elif isinstance(a, LazyArray) or np.asarray(a).dtype.kind in "biufc":
            pool, a = None, as_lazy(a)
            if a.ndim == 0:
                raise ValueError("a must be 1-dimensional or an integer")
            n = a.shape[axis]
        else:  # strings, objects: NumPy's own choice on the host (counted, as __getattr__)
            return self.__getattr__("choice")(a, size, replace, p, axis, shuffle)
        shape = _size(size)
        count = math.prod(shape)
        if n <= 0 and count:
            raise ValueError("a must be a positive integer unless no samples are taken"
                             if pool is not None else
                             "a cannot be empty unless no samples are taken")
        if p is not None and not isinstance(p, LazyArray):
            p = _probabilities(p, n)  # a lazy p cannot be checked without a read
        if not replace and count > n:
            raise ValueError("Cannot take a larger sample than population when replace is False")
        if not replace and isinstance(p, np.ndarray) and np.count_nonzero(p) < count:
            raise ValueError("Fewer non-zero entries in p than size")
        if p is not None and replace:
            cdf = np.cumsum(p) if not isinstance(p, LazyArray) else p.cumsum()
            cdf = cdf / cdf[-1]
            idx = searchsorted(cdf, self.random(shape), side="right")
            idx = np.minimum(idx, n - 1)
        elif p is not None:
            # weighted sampling without replacement: the `count` largest keys log(u)/p are a
            # draw in order, each next pick weighted by p among those left (Efraimidis-Spirakis,
            # i.e. the Gumbel top-k trick); p = 0 gives -inf, picked never
            keys = np.log(self.random((n,))) / p
            order = wrap(ops.argsort(as_lazy(keys)._node, axis=0, descending=True,
                                     index_dtype="int64"))
            idx = order[:count].reshape(shape)
        elif replace:
            idx = self.integers(0, n, shape)
        else:
            idx = self._order(n)[:count].reshape(shape)
        if pool is not None:
            return idx
        return take(a, idx, axis=axis)


def _probabilities(p, n):
    """NumPy's checks of a host-known p for choice, in its order and words."""
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError("p must be 1-dimensional")
    if p.size != n:
        raise ValueError("a and p must have same size")
    if np.isnan(p).any():
        raise ValueError("Probabilities contain NaN")
    if (p < 0).any():
        raise ValueError("Probabilities are not non-negative")
    if abs(p.sum() - 1.0) > np.sqrt(np.finfo(np.float64).eps):
        raise ValueError("Probabilities do not sum to 1. See Notes section of docstring for "
                         "more information.")
    return p


def _nonnegative(value, name):
    """NumPy's check of a host-known scale-like parameter (a lazy one is not read)."""
    if not isinstance(value, LazyArray) and np.any(np.asarray(value) < 0):
        raise ValueError(f"{name} < 0")
    return value


def _mulhi64(a, b):
    """The high 64 bits of the 128-bit product of uint64 arrays, from 32-bit halves (each
    partial product fits uint64); `b` may be lazy or a host array."""
    mask, w = np.uint64(0xFFFFFFFF), np.uint64(32)
    a0, a1, b0, b1 = a & mask, a >> w, b & mask, b >> w
    low_cross, high_cross = a0 * b1, a1 * b0
    middle = ((a0 * b0) >> w) + (low_cross & mask) + (high_cross & mask)
    return a1 * b1 + (low_cross >> w) + (high_cross >> w) + (middle >> w)


def _uint64(values):
    """Python ints (an object array) in [0, 2**64) as uint64, a 0-d one as a scalar."""
    return np.asarray(np.asarray(values).astype(np.uint64))[()]


def _host(x):
    """A list or tuple bound as NumPy's array of it; lazy and host arrays and scalars as they
    are (a list of lazy arrays becomes one lazy array)."""
    if isinstance(x, (list, tuple)):
        return as_lazy(x) if any(isinstance(v, LazyArray) for v in x) else np.asarray(x)
    return x


def _any_lazy(*xs):
    return any(isinstance(x, LazyArray) for x in xs)


def _broadcast(*xs):
    return broadcast_shapes(*[tuple(shape_of(x)) for x in xs])


def default_rng(seed=None):
    if isinstance(seed, Generator):
        return seed
    return Generator(seed)


# ---------------------------------------------------------------- legacy module-level API
_global = Generator(0)


def seed(seed=None):
    # reseed the global generator in place: a compiled step (lazyx.compile) holds its stream
    stream = _global._stream
    stream.reseed(Generator(seed)._stream.seed)


def random(size=None):
    return _global.random(size)


random_sample = random


def rand(*shape):
    return _global.random(shape)


def randn(*shape):
    return _global.standard_normal(shape)


def randint(low, high=None, size=None, dtype=int):
    return _global.integers(low, high, size, dtype)


def uniform(low=0.0, high=1.0, size=None):
    return _global.uniform(low, high, size)


def normal(loc=0.0, scale=1.0, size=None):
    return _global.normal(loc, scale, size)


def standard_normal(size=None):
    return _global.standard_normal(size)


def permutation(x):
    return _global.permutation(x)


def shuffle(x):
    return _global.shuffle(x)


def choice(a, size=None, replace=True, p=None):
    return _global.choice(a, size, replace, p)


def __getattr__(name):
    """numpy.random's other module-level names: its distributions (gamma, poisson, ...) are
    the global generator's (keyed by lnp.random.seed, a counted host draw, see
    Generator.__getattr__); its classes and state functions (SeedSequence, PCG64,
    RandomState, get_state) are NumPy's own."""
    from ._forward import forward
    if not name.startswith("_") and callable(getattr(np.random.Generator, name, None)):
        return getattr(_global, name)
    return forward(np.random, __name__, name)
