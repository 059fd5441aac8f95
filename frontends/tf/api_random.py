"""Randomness, lowered to IR.

TF's stateless ops -- tf.random.stateless_uniform/normal, tf.nn.experimental.stateless_dropout,
and through them keras.random, Keras' Dropout and noise layers -- draw TF's own numbers
(Philox, philox.py), whether the seed is a host value or lazy (a Keras SeedGenerator's state
in a training step or under lazyx.compile): the uncompiled run, its compiled replays and
eager TF agree. lazyx's own `ltf.random` draws keyed Threefry, the stream torch and NumPy
share (key_from_seed, uniform_node, normal_node).
"""
import math
import typing

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


def _normal(key_counter, shape, mean, stddev, kind, sample=philox.normal):
    draw = sample(key_counter, shape, ir_dtype(kind))
    scale, shift = _host_number(stddev), _host_number(mean)
    if scale is None or shift is None:
        return _scaled(draw, tf.cast(stddev, kind), tf.cast(mean, kind))
    return _scaled(draw, scale, shift)


@lower(tf.random.stateless_truncated_normal, "seed")
def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=tf.float32,
                               alg="auto_select"):
    """(keras.random.truncated_normal, Keras' TruncatedNormal and VarianceScaling
    initializers: with a lazy seed -- under lazyx.compile -- TF's op read the seed)"""
    kind = tf.as_dtype(dtype)
    if not kind.is_floating:
        raise Reject()
    return _normal(_tf_key_counter(seed, alg), tuple(static_ints(shape)), mean, stddev, kind,
                   philox.truncated_normal)


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
    without an op seed, lazy (compiled_draw below)."""
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

# TF's stateful random ops run a kernel under a (seed, seed2) pair that random_ops' wrappers
# get from TF's context (random_seed.get_seed: from tf.random.set_seed's seed and the op seed;
# without an op seed, a new pair per call). In a step lazyx.compile traces, such a draw is a
# run-time parameter linked to the stream below, which a replay asks again in the trace's
# order, as the uncompiled calls ask TF (hooks.py routes the generated ops here):
# - tf.random.normal / uniform / truncated_normal without an op seed (tf.nn.dropout's mask
#   among them) run a new kernel per call: Philox from counter 0 under key `seed`, `seed2`
#   the counter's high half.
#   They are lazy Philox draws; the parameters are the key and counter.
# - any other draw whose inputs are host values -- an op seed (its cached kernel continues one
#   stream from call to call), gamma, poisson, a categorical or shuffle of a host tensor -- has TF's kernel's output as the parameter: a replay runs that kernel under
#   the pair TF's context hands out then, so its numbers are eager TF's whatever the kernel's
#   state (draws between calls, tf.random.set_seed). (Drawn on the host and sent to the
#   device at each call, as the uncompiled run does.)
_M32 = 0xFFFFFFFF
# random_ops' functions that get a pair from get_seed(their `seed`) and pass it to the op
_SEEDING_CALLERS = ("random_normal", "random_uniform", "truncated_normal",
                    "parameterized_truncated_normal", "random_shuffle",
                    "multinomial_categorical_impl", "random_gamma", "random_poisson_v2")


class _KernelDraw(typing.NamedTuple):
    """A draw whose numbers TF's kernel makes: the generated op, the op seed its wrapper got,
    its other arguments (host values; an array as (dtype, shape, bytes), to compare)."""
    op: object
    seed: object
    args: tuple

    def pair(self):
        from tensorflow.python.framework import random_seed
        return random_seed.get_seed(self.seed)

    def run(self, pair):
        kwargs = {k: _thaw(v) for k, v in self.args}
        return self.op(**kwargs, seed=pair[0], seed2=pair[1]).numpy()


def _freeze(value):
    """A host argument as a comparable value _thaw makes again, of the same kind: TF keys its
    kernel cache by the inputs' kind too (a list shape and a tensor one: two kernels)."""
    if isinstance(value, LazyTensor):
        raise Reject()  # (a lazy input: the draw reads it, TF's fallback)
    if tf.is_tensor(value) or isinstance(value, np.ndarray):
        a = np.asarray(value)
        return ("tensor" if tf.is_tensor(value) else "array", a.dtype, a.shape, a.tobytes())
    if isinstance(value, (list, tuple)):
        return ("seq", type(value), tuple(_freeze(v) for v in value))
    hash(value)  # (a DType, a number, a string)
    return value


def _thaw(value):
    kind = value[0] if isinstance(value, tuple) and value else None
    if kind in ("tensor", "array"):
        a = np.frombuffer(value[3], value[1]).reshape(value[2])
        return tf.constant(a) if kind == "tensor" else a.copy()
    if kind == "seq":
        return value[1](_thaw(v) for v in value[2])
    return value


class _HandedOut:
    """Values a TF or Keras generator hands out one per draw, as a stream of lazyx.compile's
    (core/capture.linked_draw): the trace records draw i's value (`take`); a replay asks for
    the values after it, in order (replay_entry), as the uncompiled calls would (`_ask`)."""
    __slots__ = ("counter", "_values")

    def __init__(self):
        self.counter = 0
        self._values = {}

    def take(self, value):
        """Draw number i (returned) of a trace got `value`."""
        self._forget_used()
        i = self.counter
        self._values[i] = value
        self.counter += 1
        return i

    def _value(self, i, ask):
        """Draw i's value, asking `ask(j)` for each draw j up to it not handed out yet."""
        self._forget_used()
        while i not in self._values:
            j = max(self._values, default=self.counter - 1) + 1
            self._values[j] = ask(j)
        return self._values[i]

    def _forget_used(self):
        if any(j < self.counter for j in self._values):
            self._values = {j: v for j, v in self._values.items() if j >= self.counter}


class _OpSeeds(_HandedOut):
    """TF's draws in compiled steps: draw i runs under the i-th (seed, seed2) pair handed out.
    A draw's `part`: "key" or "counter" of a lazy Philox draw, or the _KernelDraw whose
    numbers are its parameter."""
    __slots__ = ("_numbers",)

    def __init__(self):
        super().__init__()
        self._numbers = {}

    def value_at(self, i, part):
        kernel = part if isinstance(part, _KernelDraw) else None
        pair = self._value(i, lambda j: kernel.pair() if kernel and j == i else _next_pair())
        if kernel is not None:
            if i not in self._numbers:
                self._numbers[i] = kernel.run(pair)
            return self._numbers[i]
        key, counter = _kernel_key_counter(pair)
        return key if part == "key" else counter

    def _forget_used(self):
        super()._forget_used()
        if any(j < self.counter for j in self._numbers):
            self._numbers = {j: v for j, v in self._numbers.items() if j >= self.counter}


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


def _seeding_caller(caller):
    """The function name of `caller` (the frame that called the generated op) if it is one of
    random_ops' wrappers that seed the op from get_seed(seed); else None."""
    name = caller.f_code.co_name
    if caller.f_globals.get("__name__") != "tensorflow.python.ops.random_ops" or \
            name not in _SEEDING_CALLERS or "seed" not in caller.f_locals:
        return None
    return name


def compiled_draw(name, op, bound, caller):
    """The draw of the generated op `op` (gen_random_ops.`name`, its arguments `bound`, a
    BoundArguments) for a step lazyx.compile traces, or None where the step must stay lazy
    (a lazy input, a draw in a tf.function's graph, a caller we do not know)."""
    from ...core import capture
    wrapper = _seeding_caller(caller)
    rec = capture.current()
    # (after the step read a value -- split mode -- a host input may be one it read)
    if wrapper is None or not tf.executing_eagerly() or rec is None or \
            rec.observed is not None:
        return None
    op_seed = caller.f_locals["seed"]
    if op_seed is None and wrapper in ("random_normal", "random_uniform", "truncated_normal"):
        out = _philox_draw(name, bound.arguments)
        if out is not None:
            return out
    return _kernel_draw(op, op_seed, bound)


def _philox_draw(name, args):
    """A lazy Philox draw of a new kernel (a normal, uniform or truncated normal without an
    op seed), or None."""
    from ...core import capture
    try:
        shape = tuple(static_ints(args["shape"]))
        kind = tf.as_dtype(args["minval"].dtype if name == "random_uniform_int"
                           else args["dtype"])
        if name == "random_uniform_int":
            _check_integer_bounds(args["minval"], args["maxval"], kind)
        elif not kind.is_floating:
            raise Reject()
    except (Reject, TypeError, ValueError, tf.errors.InvalidArgumentError):
        return None  # (TF's kernel draws, or gives its own error)
    pair = _kernel_pair(args.get("seed") or 0, args.get("seed2") or 0)
    i = _OP_SEEDS.take(pair)
    key, counter = _kernel_key_counter(pair)
    key_counter = (capture.linked_draw(ir.param(key, "uint32"), _OP_SEEDS, i, "key"),
                   capture.linked_draw(ir.param(counter, "uint32"), _OP_SEEDS, i, "counter"))
    if name == "random_standard_normal":
        return wrap(philox.normal(key_counter, shape, ir_dtype(kind)))
    if name == "truncated_normal":
        return wrap(philox.truncated_normal(key_counter, shape, ir_dtype(kind)))
    return _uniform(key_counter, shape, args.get("minval", 0), args.get("maxval"), kind)


def _kernel_draw(op, op_seed, bound):
    """TF's kernel's draw, its numbers a parameter a replay asks TF's kernel for again."""
    from ...core import capture
    from tensorflow.python.framework import random_seed
    args = dict(bound.arguments)
    pair = (args.pop("seed", None), args.pop("seed2", None))
    args.pop("name", None)
    try:
        draw = _KernelDraw(op, op_seed, tuple(sorted((k, _freeze(v)) for k, v in args.items())))
    except (Reject, TypeError, ValueError):
        return None
    if op_seed is not None and tuple(random_seed.get_seed(op_seed)) != pair:
        return None  # (seeds we could not ask for again)
    out = op(*bound.args, **bound.kwargs)  # this call's numbers, TF's kernel's
    value = out.numpy()
    i = _OP_SEEDS.take(pair)
    return wrap(capture.linked_draw(ir.param(value, ir_dtype(out.dtype)), _OP_SEEDS, i, draw))


# ---------------------------------------------------------------- Keras' seed generators

# keras.random without a seed draws under a seed from Keras' global SeedGenerator, kept in
# Keras' global state: a step does not refer to it, so lazyx.compile did not capture it, the
# traced call's seed was baked in and every replay drew the same numbers (silently). In a
# trace, that generator hands out its seed as a run-time parameter a replay asks Keras' global
# generator -- the one at that call: keras.utils.set_random_seed makes a new one -- for again,
# in order: the seeds, and the numbers drawn lazily from them (stateless ops above), are the
# uncompiled run's. (hooks.py routes SeedGenerator.next here. Another generator the step did
# not capture is left alone: one it makes at each call draws the same numbers each call.)

class _GlobalSeeds(_HandedOut):
    """The seeds Keras' global SeedGenerator hands out, as a stream of lazyx.compile's."""
    __slots__ = ("_next",)

    def __init__(self, next_seed):
        super().__init__()
        self._next = next_seed  # (SeedGenerator.next, Keras' own)

    def value_at(self, i, ordered):
        from keras.src.random import seed_generator
        return self._value(i, lambda j: np.asarray(
            self._next(seed_generator.global_seed_generator(), ordered)))


_GLOBAL_SEEDS = []  # [its stream], made at the first draw


def uncaptured_seed(generator, ordered, next_seed):
    """The seed SeedGenerator.next (`next_seed`, Keras' own) hands out in a trace, as a
    run-time parameter, for Keras' global generator; else None (Keras' own call)."""
    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator
    from ...core import capture
    if generator is not global_state.get_global_attribute(
            seed_generator.GLOBAL_SEED_GENERATOR) or \
            variables.has_shadow(generator.state) or not tf.executing_eagerly():
        return None  # (captured: its lazy state moves on in the program)
    seed = next_seed(generator, ordered)
    if isinstance(seed, LazyTensor) or not hasattr(seed, "numpy"):
        return seed
    if not _GLOBAL_SEEDS:
        _GLOBAL_SEEDS.append(_GlobalSeeds(next_seed))
    value = seed.numpy()
    i = _GLOBAL_SEEDS[0].take(value)
    return wrap(capture.linked_draw(ir.param(value, ir_dtype(seed.dtype)), _GLOBAL_SEEDS[0], i,
                                    ordered))
