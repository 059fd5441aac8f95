"""lazyx for TensorFlow (`import lazyx.frontends.tf as ltf`).

`ltf.constant` / `ltf.convert` make lazy tensors; TF's own APIs (operators, tf.math, tf.nn,
core tf.linalg, layout, reductions, Keras 3 layers) then record IR through TensorFlow's
type-based dispatch instead of running. `ltf.sync()` is the barrier. Importing this module
imports TensorFlow; `import lazyx` alone does not.
"""
import numpy as np
import tensorflow as tf

from ... import core  # noqa: F401
from ...core import buckets as _buckets, runtime
from . import (api_array, api_bitwise, api_complex, api_counts, api_eager_only,  # noqa: F401
               api_image, api_index, api_linalg, api_linalg_more, api_losses, api_math, api_nn,
               api_nn_more, api_norms, api_random, api_signal, api_space_batch, api_special,
               variables)
from .tape import GradientTape
from . import replay as _replay  # noqa: F401,E402  (lazyx.compile learns TF's types)
from . import hooks as _hooks
from .api_random import key_from_seed, normal_node, uniform_node
from .registry import LOWERED
from .tensor import LazyTensor, ir_dtype, to_tf, wrap, _tf_leaf, sources_of

Tensor = LazyTensor
_hooks.install()


def constant(value, dtype=None, shape=None):
    """A lazy tensor holding `value`, with tf.constant's dtype rules (float32, int32)."""
    real = tf.constant(value, dtype=dtype, shape=shape)
    return LazyTensor(runtime.from_host(real.numpy(), ir_dtype(real.dtype)))


def convert(value):
    """A lazy tensor for a tf.Tensor or tf.Variable (its current value); under a tape the
    result stays connected, so gradients reach the variable."""
    if isinstance(value, LazyTensor):
        return value
    if isinstance(value, tf.Variable):
        value = value.value()
    if not isinstance(value, tf.Tensor):
        value = tf.convert_to_tensor(value)
    return LazyTensor(_tf_leaf(value), sources_of(value))


def sync():
    """The barrier: compile (or fetch from the cache) and start everything pending -- one
    program -- and return while it runs. Variables assigned lazily keep their new values on
    the device for the next step; TF gets them when it reads the variable (eager code, a
    checkpoint, a tf.function), or at once for a variable a traced graph function captured
    (see frontends/tf/variables.py)."""
    runtime.sync(cause="explicit")
    variables.after_barrier(cause="explicit")


def store_variables():
    """Store every lazily updated variable's value into its tf.Variable now (running what is
    pending, and waiting for it): TF's buffers are current and lazyx holds no second copy of
    them. Any TF read of a variable stores it by itself; this stores all of them at once, for
    a caller about to leave lazy code for a long while (it frees the device values)."""
    variables.write_back(cause="explicit")


def _seed_pair(seed):
    return (0, 0) if seed is None else seed if np.ndim(seed) else (0, int(seed))


class random:  # noqa: N801 - a namespace mirroring tf.random
    """Seeded, counter-based random tensors (Threefry): the same seed gives the same numbers
    on every backend -- not the numbers TF's Philox stream gives."""

    @staticmethod
    def uniform(shape, minval=0, maxval=None, dtype=tf.float32, seed=None):
        if tf.as_dtype(dtype).is_integer:
            return random._integers(shape, minval, maxval, dtype, seed)
        d = ir_dtype(dtype)
        u = uniform_node(key_from_seed(_seed_pair(seed)), tuple(shape), d)
        out = wrap(u)
        hi = 1 if maxval is None else maxval
        return out * (hi - minval) + minval if (minval, hi) != (0, 1) else out

    @staticmethod
    def _integers(shape, minval, maxval, dtype, seed):
        """Integers in [minval, maxval), as tf.random.uniform's integer dtypes draw them: the
        floor of a float64 uniform times the span (exact for spans up to 2**53)."""
        dtype = tf.as_dtype(dtype)
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        # (bounds known on the host only: a lazy one compared here would be read, a sync)
        if all(isinstance(v, (int, float, np.number)) for v in (minval, maxval)) and \
                not maxval > minval:
            raise tf.errors.InvalidArgumentError(
                None, None, f"Need minval < maxval, got {minval} >= {maxval}")
        u = wrap(uniform_node(key_from_seed(_seed_pair(seed)), tuple(shape), "float64"))
        span = tf.cast(maxval, tf.float64) - tf.cast(minval, tf.float64)
        # (u * span rounds up to span for a u just below 1)
        offset = tf.minimum(tf.floor(u * span), span - 1.0)
        return tf.cast(offset, dtype) + tf.cast(minval, dtype)

    @staticmethod
    def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=tf.float32):
        """tf.random.stateless_uniform on lazyx: seed (s, k) draws what torch's k-th draw
        after torch.manual_seed(s), and lnp.random.default_rng(s)'s k-th draw, give."""
        return random.uniform(shape, minval, maxval, dtype, seed=tuple(seed))

    @staticmethod
    def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=tf.float32):
        return random.normal(shape, mean, stddev, dtype, seed=tuple(seed))

    @staticmethod
    def normal(shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None):
        out = wrap(normal_node(key_from_seed(_seed_pair(seed)), tuple(shape), ir_dtype(dtype)))
        return out * stddev + mean if (mean, stddev) != (0.0, 1.0) else out


def pad_to_bucket(x, axis=-1, buckets=None, value=0):
    """(padded, mask): `x` padded with `value` at the end of `axis` up to the next bucket size
    (`buckets`, or powers of two), and a tf.bool mask of the padded shape, True where the data
    is real. Lazy in, lazy out; a tf.Tensor gives tf.Tensors (pad before ltf.constant: then
    every length in a bucket is one compiled program)."""
    axis, size, target = _buckets.pad_plan(tuple(x.shape), axis, buckets)
    paddings = [[0, 0]] * len(x.shape)
    paddings[axis] = [0, target - size]
    padded = tf.pad(x, paddings, constant_values=value) if target != size else tf.identity(x)
    mask = _buckets.host_mask(tuple(padded.shape), axis, size)
    return padded, (constant(mask) if isinstance(x, LazyTensor) else tf.constant(mask))


__all__ = ["Tensor", "GradientTape", "constant", "convert", "sync", "store_variables", "random",
           "to_tf", "LOWERED", "pad_to_bucket"]


# (last: every object its import made exists now; see core/long_lived.py)
from ...core.long_lived import freeze_imported as _freeze_imported  # noqa: E402
_freeze_imported()
