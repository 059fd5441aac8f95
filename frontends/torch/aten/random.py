"""Counter-based randomness: torch.manual_seed(s) resets (seed, counter); every random op
draws under key seed_key(seed, counter++) fed as a run-time parameter, so the numbers are the
same on both backends (and, for one seed, the same as lnp.random.default_rng(seed) and TF's
stateless ops with seed (seed, k)), and a training step with dropout never recompiles."""
import numpy as np
import torch

from ....core import compose, ops
from ....core.prng import Stream
from .table import Unsupported, aten, bcast, lower, node_of

_rng = Stream()


def manual_seed(seed):
    _rng.reseed(seed)


def get_state():
    """(seed, counter) as a CPU uint8 tensor (torch.lazyx.get_rng_state)."""
    words = np.array([_rng.seed, _rng.counter], dtype=np.uint64)
    return torch.from_numpy(words.view(np.uint8).copy())


def set_state(state):
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8 or \
            state.numel() != 16:
        raise RuntimeError(f"lazyx: an RNG state is a uint8 tensor of 16 bytes (from "
                           f"torch.lazyx.get_rng_state()), got "
                           f"{getattr(state, 'dtype', type(state).__name__)} "
                           f"{tuple(getattr(state, 'shape', ()))}")
    seed, counter = state.detach().cpu().contiguous().numpy().view(np.uint64)
    _rng.reseed(int(seed), int(counter))


def _next_key():
    key = compose.random_key(_rng.seed, _rng.counter, stream=_rng)
    _rng.counter += 1
    return key


def uniform01(shape):
    """float32 in [0, 1) (the shared construction in core.compose)."""
    return compose.uniform(_next_key(), tuple(shape), "float32")


def _scaled(u, low, high, dtype, shape):
    u = ops.convert(u, dtype=dtype) if dtype != "float32" else u
    lo, hi = bcast(node_of(low, dtype), shape), bcast(node_of(high, dtype), shape)
    return ops.add(lo, ops.mul(u, ops.sub(hi, lo)))


@lower(aten.uniform.default)
def _uniform(out, x, from_=0.0, to=1.0, generator=None):
    return _scaled(uniform01(out.shape), from_, to, node_of(x).dtype, tuple(out.shape))


def standard_normal(shape, dtype):
    return compose.normal(_next_key(), tuple(shape), dtype)


def _normal_nodes(out, mean, std):
    shape = tuple(out.shape)
    dtype = _ir_dtype(out.dtype)
    z = standard_normal(shape, dtype)
    return ops.add(bcast(node_of(mean, dtype), shape), ops.mul(z, bcast(node_of(std, dtype), shape)))


def _ir_dtype(torch_dtype):
    from .. import dtypes
    return dtypes.to_ir(torch_dtype)


@lower(aten.normal_functional.default)
def _normal_functional(out, x, mean=0.0, std=1.0, generator=None):
    return _normal_nodes(out, mean, std)


@lower(aten.normal.Tensor_float, aten.normal.float_Tensor, aten.normal.Tensor_Tensor)
def _normal(out, mean, std=1.0, generator=None):
    return _normal_nodes(out, mean, std)


@lower(aten.normal.float_float)
def _normal_ff(out, mean, std, size, generator=None, dtype=None, layout=None, device=None,
               pin_memory=None):
    return _normal_nodes(out, mean, std)


def _bernoulli_nodes(out, p):
    shape = tuple(out.shape)
    u = uniform01(shape)
    mask = ops.lt(u, bcast(node_of(p, "float32"), shape))
    return ops.convert(mask, dtype=_ir_dtype(out.dtype))


@lower(aten.bernoulli.p)
def _bernoulli_p(out, x, p=0.5, generator=None):
    return _bernoulli_nodes(out, p)


@lower(aten.bernoulli.default)
def _bernoulli(out, x, generator=None):
    return _bernoulli_nodes(out, x)


@lower(aten.bernoulli.Tensor)
def _bernoulli_t(out, x, p, generator=None):
    return _bernoulli_nodes(out, p)


def _randint_nodes(out, low, high):
    shape = tuple(out.shape)
    span = ops.convert(ops.sub(node_of(high, "float64"), node_of(low, "float64")), dtype="float64")
    u = ops.convert(uniform01(shape), dtype="float64")
    r = ops.floor(ops.mul(u, bcast(span, shape)))
    r = ops.add(r, bcast(node_of(low, "float64"), shape))
    return ops.convert(r, dtype=_ir_dtype(out.dtype))


@lower(getattr(aten.random, "from"))
def _random_from(out, x, from_, to=None, generator=None):
    if to is None:
        raise NotImplementedError("random_(from, None)")
    return _randint_nodes(out, from_, to)


@lower(aten.random.to)
def _random_to(out, x, to, generator=None):
    return _randint_nodes(out, 0, to)


@lower(aten.randint.low, aten.randint.default)
def _randint(out, *args, **kwargs):
    low, high = (0, args[0]) if len(args) == 2 or "size" in kwargs and len(args) == 1 else args[:2]
    return _randint_nodes(out, low, high)


@lower(aten.rand.default)
def _rand(out, size, **kwargs):
    u = uniform01(tuple(out.shape))
    return u


@lower(aten.randn.default)
def _randn(out, size, **kwargs):
    return standard_normal(tuple(out.shape), _ir_dtype(out.dtype))


def _on_device(kwargs):
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "lazyx":
        raise Unsupported("a random tensor made for another device")


@lower(aten.rand_like.default)
def _rand_like(out, x, **kwargs):
    _on_device(kwargs)
    return uniform01(tuple(out.shape))


@lower(aten.randn_like.default)
def _randn_like(out, x, **kwargs):
    _on_device(kwargs)
    return standard_normal(tuple(out.shape), _ir_dtype(out.dtype))


@lower(aten.randint_like.default, aten.randint_like.low_dtype)
def _randint_like(out, x, *bounds, **kwargs):
    _on_device(kwargs)
    low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
    return _randint_nodes(out, low, high)


@lower(aten.multinomial.default)
def _multinomial(out, probs, num_samples, replacement=False, generator=None):
    """Gumbel-max: argmax(log p + Gumbel noise) draws one index with probability p / sum(p)
    (unnormalized weights are fine, zeros are never drawn); the top k of one noisy row draw k
    without replacement, in the order sequential draws would give. On the device, keyed like
    every draw: sampling (HF generate(do_sample=True)) no longer syncs once per token. The
    numbers are not CPU torch's, as for every random op; the value checks torch makes on the
    weights (negative, inf, all zero) need the values and are not made."""
    p = node_of(probs)
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not p.dtype.startswith(("float", "bfloat")):
        name = torch.empty(0, dtype=probs.dtype).type().split(".")[-1][:-len("Tensor")]
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{name}")  # (torch's scalar type names: Long, Int, Bool)
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    k = p.shape[-1]
    if not replacement and num_samples > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    p = ops.convert(p, dtype="float32") if p.dtype != "float64" else p
    noise_shape = p.shape if not replacement else p.shape[:-1] + (num_samples, k)
    u = uniform01(noise_shape)
    u = ops.convert(u, dtype=p.dtype) if p.dtype != "float32" else u
    gumbel = ops.neg(ops.log(ops.neg(ops.log(u))))
    if not replacement:
        _, index = ops.top_k(ops.add(ops.log(p), gumbel), k=num_samples)
        return index
    logp = ops.broadcast_in_dim(ops.log(p), shape=noise_shape,
                                broadcast_dimensions=tuple(range(p.ndim - 1)) + (p.ndim,))
    return ops.argmax(ops.add(logp, gumbel), axis=p.ndim, index_dtype="int64")


@lower(aten.randperm.default)
def _randperm(out, n, **kwargs):
    """The order that sorts n keyed random 32-bit words: a uniformly drawn permutation (a tie,
    about n**2 / 2**33 likely, still orders distinct indices), on the device. CPU torch's
    kernel allocated and filled an out= tensor, which lazyx ran eagerly: a sync, and a step
    lazyx.compile refused (mixup's and a shuffle's `randperm(batch, device=...)`). Not CPU
    torch's numbers, as for every random op."""
    _on_device(kwargs)
    if n == 0:
        return compose.const(0, "int64", (0,))
    return ops.argsort(ops.random_bits(_next_key(), shape=(n,)), axis=0)
