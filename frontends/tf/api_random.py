"""Randomness, lowered to IR.

TF's stateless ops -- tf.random.stateless_uniform/normal, tf.nn.experimental.stateless_dropout,
and through them keras.random, Keras' Dropout and noise layers -- draw TF's own numbers
(Philox, philox.py), whether the seed is a host value or lazy (a Keras SeedGenerator's state
in a training step or under lazyx.compile): the uncompiled run, its compiled replays and
eager TF agree. lazyx's own `ltf.random` draws keyed Threefry, the stream torch and NumPy
share (key_from_seed, uniform_node, normal_node).
"""
import math

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import random_ops_util as _random_ops_util

from ...core import compose, ir, ops
from ...core import dtypes as dt
from . import philox, variables
from .lowering import Reject, broadcast_to, const, operand_nodes, static_ints
from .registry import lower
from .tensor import LazyTensor, ir_dtype, node_of, wrap


# ---------------------------------------------------------------- lazyx's stream (Threefry)

def key_from_seed(seed):
    """A uint32[2] Threefry key from a seed (a pair of ints, a tensor, or a lazy tensor)."""
    if isinstance(seed, LazyTensor):
        node = seed.node
    else:
        host = np.asarray(seed.numpy() if hasattr(seed, "numpy") else seed).astype(np.int64)
        if host.shape != (2,):
            raise Reject()
        # seed (s, k) is draw k after seeding with s: the key torch.manual_seed(s) and
        # lnp.random.default_rng(s) use for their k-th draw; a run-time input, never recompiled
        return compose.random_key(int(host[0]), int(host[1]))
    if node.shape != (2,) or not dt.is_int(node.dtype):
        raise Reject()
    return compose.traced_seed_key(node)  # the key a host seed of the same value gets


def uniform_node(key, shape, dtype):
    """Uniform [0, 1) floats (the construction every frontend shares)."""
    return compose.uniform(key, tuple(shape), dtype)


def normal_node(key, shape, dtype):
    return compose.normal(key, tuple(shape), dtype)


# ---------------------------------------------------------------- TF's stream (Philox)

_PHILOX_ALGORITHMS = (1, 3)  # TF's Algorithm.PHILOX, and AUTO_SELECT (Philox on CPU and GPU)


def _tf_key_counter(seed, alg):
    """(key, counter) nodes of TF's stream for a stateless op's seed; Reject for what TF
    itself must answer (Threefry, a seed of the wrong shape or type: TF's errors)."""
    try:
        if _random_ops_util.convert_alg_to_int("auto_select" if alg is None else alg) \
                not in _PHILOX_ALGORITHMS:
            raise Reject()
    except (TypeError, ValueError):
        raise Reject() from None
    if isinstance(seed, LazyTensor):
        if seed.node.shape != (2,) or seed.node.dtype not in ("int32", "int64"):
            raise Reject()
        return philox.traced_key_counter(seed.node)
    host = np.asarray(seed.numpy() if hasattr(seed, "numpy") else seed)
    if host.shape != (2,) or host.dtype.kind not in "iu":
        raise Reject()
    return philox.host_key_counter(host.tolist())


def _host_number(value):
    """A bound, mean, stddev or rate known on the host (a Python or NumPy number, or a 0-d
    eager tensor -- Keras passes tf.cast(minval, dtype)) as a Python number; else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        return value.item() if isinstance(value, np.generic) else value
    if tf.is_tensor(value) and not isinstance(value, LazyTensor) and value.shape == () \
            and hasattr(value, "numpy"):
        return value.numpy().item()
    return None


def _scaled(draw, scale, shift):
    """draw * scale + shift, as TF computes it in the draw's dtype: host numbers become run-time
    parameters (rounded to dtype, as TF converts them), tensors use TF's own broadcast."""
    out = wrap(draw)
    if not isinstance(scale, (int, float)) or not isinstance(shift, (int, float)):
        return out * scale + shift
    if (scale, shift) == (1, 0):  # (times 1 plus 0: TF's numbers unchanged)
        return out
    scale = broadcast_to(ir.param(scale, draw.dtype), draw.shape)
    return wrap(ops.add(ops.mul(draw, scale), broadcast_to(ir.param(shift, draw.dtype),
                                                             draw.shape)))


@lower(tf.random.stateless_uniform, "seed")
def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=tf.float32, alg="auto_select"):
    kind = tf.as_dtype(dtype)
    shape = tuple(static_ints(shape))
    if kind.is_integer:
        _check_integer_bounds(minval, maxval, kind)
    elif not kind.is_floating:
        raise Reject()
    return _uniform(_tf_key_counter(seed, alg), shape, minval, maxval, kind)


def _uniform(key_counter, shape, minval, maxval, kind):
    """TF's uniform numbers of `kind` from TF's stream at `key_counter` (bounds checked)."""
    if kind.is_integer:
        low, high = _host_number(minval), _host_number(maxval)
        return wrap(philox.integers(key_counter, shape, low, high - low, ir_dtype(kind)))
    d = ir_dtype(kind)
    draw = philox.uniform(key_counter, shape, d)
    maxval = 1 if maxval is None else maxval
    low, high = _host_number(minval), _host_number(maxval)
    if low is None or high is None:
        low, high = tf.cast(minval, kind), tf.cast(maxval, kind)
        return _scaled(draw, high - low, low)
    # (maxval - minval) of the two converted to dtype, as TF subtracts them
    as_dtype = dt.to_numpy(d).type
    return _scaled(draw, float(as_dtype(high) - as_dtype(low)), float(as_dtype(low)))


def _check_integer_bounds(minval, maxval, kind):
    """Integers in [minval, maxval) with host bounds are drawn here; TF's own call answers
    the rest (the full range, unsigned types, lazy bounds, and their errors)."""
    low, high = _host_number(minval), _host_number(maxval)
    if kind not in (tf.int32, tf.int64) or not isinstance(low, int) or \
            not isinstance(high, int):
        raise Reject()
    if not low < high:
        raise tf.errors.InvalidArgumentError(None, None,
                                             f"Need minval < maxval, got {low} >= {high}")


@lower(tf.random.stateless_normal, "seed")
def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=tf.float32, alg="auto_select"):
    kind = tf.as_dtype(dtype)
    if not kind.is_floating:
        raise Reject()
    return _normal(_tf_key_counter(seed, alg), tuple(static_ints(shape)), mean, stddev, kind)


def _normal(key_counter, shape, mean, stddev, kind):
    draw = philox.normal(key_counter, shape, ir_dtype(kind))
    scale, shift = _host_number(stddev), _host_number(mean)
    if scale is None or shift is None:
        return _scaled(draw, tf.cast(stddev, kind), tf.cast(mean, kind))
    return _scaled(draw, scale, shift)


@lower(tf.nn.experimental.stateless_dropout, "x")
def stateless_dropout(x, rate, seed, rng_alg=None, noise_shape=None):
    node, rate, shape = _dropout_call(x, rate, noise_shape)
    if rate == 0:
        return x  # (as TF: x itself)
    draw = philox.uniform(_tf_key_counter(seed, rng_alg), shape, node.dtype)
    return _dropped(x, node, draw, rate)


@lower(tf.nn.dropout, "x")
def dropout(x, rate, noise_shape=None, seed=None):
    """TF's steps on the lazy x (it ran on TF, a fallback that read x). The uniform draw is
    TF's kernel's -- new host numbers at each call -- or, in a step lazyx.compile traces
    without an op seed, lazy (unseeded_draw below)."""
    node, rate, shape = _dropout_call(x, rate, noise_shape)
    if rate == 0:
        return x
    draw = tf.random.uniform(shape, seed=seed, dtype=x.dtype)
    return _dropped(x, node, node_of(draw), rate)


def _dropout_call(x, rate, noise_shape):
    """(x's node, the rate as a host number, the noise shape); Reject for what TF's own code
    answers (a tensor rate, a partly unknown noise shape, and TF's errors)."""
    (node,) = operand_nodes(x)
    rate = _host_number(rate)
    if not dt.is_float(node.dtype) or rate is None or not 0 <= rate < 1:
        raise Reject()
    return node, rate, node.shape if noise_shape is None else tuple(static_ints(noise_shape))


def _dropped(x, node, draw, rate):
    """x kept where draw >= rate, scaled by 1 / (1 - rate) -- in TF's order: x times that
    double rounded to x's dtype, then the mask (a noise shape broadcast to x's)."""
    keep = ops.ge(draw, broadcast_to(ir.param(rate, node.dtype), draw.shape))
    scaled = ops.mul(node, broadcast_to(ir.param(1 / (1 - rate), node.dtype), node.shape))
    return wrap(ops.select(broadcast_to(keep, node.shape), scaled, const(0, node)), x)


# ---------------------------------------------------------------- tf.random.Generator

# A Generator's state is a tf.Variable, which lazyx.compile captures (replay.py): its draws
# read that lazy state and move its counter on in the program, so every replay draws new
# numbers -- TF's, from the same state, as TF's stateful kernels would. (They read the state
# through its handle: run by TF, the traced call's numbers were baked into the program.)
# Without a lazy state -- any draw outside lazyx.compile -- TF's own method runs. (hooks.py
# installs these two as the class's methods.)
_TF_GENERATOR_UNIFORM = tf.random.Generator.uniform
_TF_GENERATOR_NORMAL = tf.random.Generator.normal
_PHILOX = 1  # (Generator.algorithm)


def _from_lazy_state(generator, shape, draw):
    """draw(key_counter, shape) from a generator's lazy Philox state, which moves on by the
    numbers drawn; None when TF's own method must draw."""
    state = generator.state
    if not variables.has_shadow(state) or generator.algorithm != _PHILOX:
        return None
    try:
        shape = tuple(static_ints(shape))
        current = variables.read(state)
        out = draw(philox.state_key_counter(current.node), shape)
    except Reject:
        return None
    state.assign(wrap(philox.advanced_state(current.node, math.prod(shape))))
    return out


def generator_uniform(self, shape, minval=0, maxval=None, dtype=tf.float32, name=None):
    kind = tf.as_dtype(dtype)
    if kind.is_integer and variables.has_shadow(self.state):
        try:
            _check_integer_bounds(minval, maxval, kind)
        except Reject:
            return _TF_GENERATOR_UNIFORM(self, shape, minval, maxval, dtype, name)
    out = _from_lazy_state(self, shape, lambda kc, sh: _uniform(kc, sh, minval, maxval, kind))
    return _TF_GENERATOR_UNIFORM(self, shape, minval, maxval, dtype, name) if out is None \
        else out


def generator_normal(self, shape, mean=0.0, stddev=1.0, dtype=tf.float32, name=None):
    kind = tf.as_dtype(dtype)
    out = None if not kind.is_floating else \
        _from_lazy_state(self, shape, lambda kc, sh: _normal(kc, sh, mean, stddev, kind))
    return _TF_GENERATOR_NORMAL(self, shape, mean, stddev, dtype, name) if out is None else out


# ---------------------------------------------------------------- TF's global random ops

# tf.random.normal / uniform and tf.nn.dropout without an op seed run TF's stateful kernels
# under a new (seed, seed2) pair per call, which TF's context hands out (random_seed.get_seed:
# derived from tf.random.set_seed's seed, or random when none is set). A new kernel starts
# Philox at counter 0, under key `seed`, with `seed2` as its counter's high half. In a step
# lazyx.compile traces, such a draw is a lazy Philox draw whose key and counter are run-time
# parameters linked to the stream below: a replay asks TF's context for the next pairs, as the
# uncompiled calls would, so every replay draws the numbers the uncompiled run draws. (hooks.py
# routes the generated ops here; a draw with an op seed, which continues one cached kernel's
# stream across calls, stays TF's own.)
_M32 = 0xFFFFFFFF


class _OpSeeds:
    """The seed pairs of TF's unseeded stateful draws, as a stream of lazyx.compile's
    (core/capture.linked_draw): draw i runs under the i-th pair handed out."""
    __slots__ = ("counter", "_pairs")

    def __init__(self):
        self.counter = 0
        self._pairs = {}

    def take(self, pair):
        """Draw number i (returned) of a trace runs under `pair`, the one TF gave it."""
        self._forget_used()
        i = self.counter
        self._pairs[i] = pair
        self.counter += 1
        return i

    def value_at(self, i, part):
        self._forget_used()
        while i not in self._pairs:  # asked in order, as the uncompiled calls ask TF
            self._pairs[max(self._pairs, default=self.counter - 1) + 1] = _next_pair()
        key, counter = _kernel_key_counter(self._pairs[i])
        return key if part == "key" else counter

    def _forget_used(self):
        if any(j < self.counter for j in self._pairs):
            self._pairs = {j: p for j, p in self._pairs.items() if j >= self.counter}


_OP_SEEDS = _OpSeeds()


def _next_pair():
    from tensorflow.python.framework import random_seed
    return _kernel_pair(*random_seed.get_seed(None))


def _kernel_pair(seed, seed2):
    """The pair a kernel runs under: TF's, or two random 64-bit words for none (0, 0)."""
    if not seed and not seed2:
        import secrets
        return secrets.randbits(63), secrets.randbits(63)
    return int(seed), int(seed2)


def _kernel_key_counter(pair):
    seed, seed2 = (v & 0xFFFFFFFFFFFFFFFF for v in pair)
    return (np.array([seed & _M32, seed >> 32], np.uint32),
            np.array([0, 0, seed2 & _M32, seed2 >> 32], np.uint32))


def _is_unseeded_call(caller):
    """Whether `caller` (the frame that called the generated op) is random_ops' normal or
    uniform called without an op seed (tf.nn.dropout's call among them)."""
    return caller.f_globals.get("__name__") == "tensorflow.python.ops.random_ops" and \
        caller.f_code.co_name in ("random_normal", "random_uniform") and \
        caller.f_locals.get("seed", 0) is None


def unseeded_draw(name, bound, caller):
    """The lazy draw of gen_random_ops.`name` (its arguments `bound`, a BoundArguments) for
    a step lazyx.compile traces, or None where TF's kernel must draw."""
    from ...core import capture
    # (inside a tf.function's trace the op is the graph's: TF's own)
    if name not in ("random_standard_normal", "random_uniform", "random_uniform_int") or \
            not tf.executing_eagerly() or not _is_unseeded_call(caller):
        return None
    args = bound.arguments
    try:
        shape = tuple(static_ints(args["shape"]))
        kind = tf.as_dtype(args["minval"].dtype if name == "random_uniform_int"
                           else args["dtype"])
        if name == "random_uniform_int":
            _check_integer_bounds(args["minval"], args["maxval"], kind)
        elif not kind.is_floating:
            raise Reject()
    except (Reject, TypeError, ValueError, tf.errors.InvalidArgumentError):
        return None  # (TF's kernel gives its own error)
    pair = _kernel_pair(args.get("seed") or 0, args.get("seed2") or 0)
    i = _OP_SEEDS.take(pair)
    key, counter = _kernel_key_counter(pair)
    key_counter = (capture.linked_draw(ir.param(key, "uint32"), _OP_SEEDS, i, "key"),
                   capture.linked_draw(ir.param(counter, "uint32"), _OP_SEEDS, i, "counter"))
    if name == "random_standard_normal":
        return wrap(philox.normal(key_counter, shape, ir_dtype(kind)))
    return _uniform(key_counter, shape, args.get("minval", 0), args.get("maxval"), kind)

