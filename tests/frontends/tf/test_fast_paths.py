"""The per-op shortcuts of the TF frontend (registry._binder, the operators' direct path, the
Python-scalar table in tensor.node_of, memoized broadcast shapes) and its cheaper formulations
(activations @ weights) never differ from what TF itself does: same values, dtypes and
shapes, same errors, whatever was cached before."""
import inspect
import operator

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import lazyx
import lazyx.frontends.tf as ltf
from lazyx.core import ir
from lazyx.frontends.tf import registry, tensor
from .conftest import assert_matches

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
DTYPES = [tf.float16, tf.float32, tf.float64, tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8,
          tf.uint16, tf.uint32, tf.uint64, tf.bool, tf.bfloat16]
NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**70, 2**70),
                    st.sampled_from([0.0, -0.0, 65504.0, 65520.0, 3.4028235e38, 3.5e38, 2**31,
                                     -2**31 - 1, 2**63, 2**64, True, False, 255, 256, -1]))


def _convert(value, dtype):
    """What TF makes of a Python number as an operand of `dtype`, or its error type."""
    try:
        return tf.convert_to_tensor(value, dtype=dtype).numpy()
    except Exception as err:  # noqa: BLE001 - the error type is what we compare
        return type(err)


@SETTINGS
@given(value=NUMBERS, dtype=st.sampled_from(DTYPES))
@example(value=-300, dtype=tf.uint64)
@example(value=-2**63, dtype=tf.uint64)
@example(value=-2**70, dtype=tf.uint64)
def test_python_scalars_convert_as_tf_converts_them(value, dtype):
    if dtype == tf.uint64 and type(value) is int and value < 0:
        # TF 2.21 turns a negative int into uint64 into a SystemError, or aborts the process
        # (it killed a CI worker): never ask it. lazyx does what TF does for uint8/16/32
        want = np.uint64(value % 2**64) if value >= -2**63 else ValueError
    else:
        want = _convert(value, dtype)
    assume(want is not SystemError)
    with np.errstate(all="ignore"):
        try:
            node = tensor.node_of(value, dtype)
        except Exception as err:  # noqa: BLE001
            assert isinstance(want, type) and isinstance(err, want), (value, dtype, err, want)
            return
    assert not isinstance(want, type), (value, dtype, want)
    got = node.value
    assert node.dtype == dtype.name and got.dtype == want.dtype, (got.dtype, want.dtype)
    # NaN is NaN, rounding is TF's. (Not the sign of a zero: TF's own scalar cache hands back
    # -0.0 for 0.0 once it has converted -0.0 -- keyed by ==; lazyx gives the number asked.)
    if dtype == tf.bfloat16:  # NumPy's NaN check does not know ml_dtypes' bfloat16 (exact)
        got, want = np.float32(got), np.float32(want)
    np.testing.assert_array_equal(got, want, err_msg=f"{value!r} as {dtype.name}")
    if value == 0 and dtype in tensor._SCALAR_RANGE:
        assert np.signbit(got) == np.signbit(np.float64(value)), value


SHAPES = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)
OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
             "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<": operator.lt,
             ">=": operator.ge, "==": operator.eq, "!=": operator.ne}


@SETTINGS
@given(value=NUMBERS, dtype=st.sampled_from(DTYPES))
def test_a_scalar_splat_is_node_of_its_number(value, dtype):
    """tensor.scalar_splat (the operators' shortcut, keyed by the IR dtype) makes exactly the
    param node_of makes for the same number, dtype and shape, or leaves the number to it."""
    like = ir.data(None, (2, 3), tensor.ir_dtype(dtype))
    with np.errstate(all="ignore"):
        splat = tensor.scalar_splat(value, like) if type(value) in (float, int) else None
        if splat is None:
            return
        want = tensor.node_of(value, dtype, (2, 3))
    assert (splat.op, splat.shape, splat.dtype, splat.attrs) == \
        (want.op, want.shape, want.dtype, want.attrs)
    assert splat.value.dtype == want.value.dtype
    np.testing.assert_array_equal(splat.value, want.value)


def _broadcastable(shape, rng):
    """`shape` with some leading axes dropped and some sizes set to 1."""
    out = list(shape[rng.integers(0, len(shape) + 1):])
    return tuple(1 if rng.random() < 0.3 else n for n in out)


@SETTINGS
@given(shape=SHAPES, dtype=st.sampled_from(["float32", "float64", "int32", "int64"]),
       op=st.sampled_from(sorted(OPERATORS)), kind=st.sampled_from(["tensor", "scalar", "bad"]),
       reflected=st.booleans(), seed=st.integers(0, 2**16))
def test_operators_match_eager_tf_across_shapes_and_dtypes(shape, dtype, op, kind, reflected,
                                                           seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 7, shape).astype(dtype) if dtype.startswith("int") else \
        (rng.standard_normal(shape) * 4).astype(dtype)
    if kind == "tensor":
        # ints: no zero divisor, no negative power (TF raises those at run time only)
        other = tf.constant(rng.integers(1, 5, _broadcastable(shape, rng)).astype(dtype)
                            if dtype.startswith("int") else
                            rng.standard_normal(_broadcastable(shape, rng)).astype(dtype))
    elif kind == "scalar":
        other = int(rng.integers(1, 4)) if dtype.startswith("int") else float(rng.random() + 1)
    else:  # a dtype TF refuses to mix, or an incompatible shape: TF's error either way
        other = tf.constant(np.ones(shape + (5,) if shape else (2, 5), "float16"))
    fn = OPERATORS[op]

    def apply(t):
        return fn(other, t) if reflected else fn(t, other)
    try:
        want = apply(tf.constant(x))
    except Exception as err:  # noqa: BLE001
        with pytest.raises(type(err)):
            apply(ltf.constant(x))
        return
    got = apply(ltf.constant(x))
    if isinstance(want, bool):  # == / != against something TF will not compare
        assert got is want
        return
    assert_matches(got, want, rtol=1e-5, atol=1e-5)


def test_operators_after_many_shapes_still_broadcast_correctly():
    """The memoized broadcast shapes are keyed by every operand's shape: a cached result is
    never used for another pair, and a bad pair is still TF's error after good ones."""
    for a, b in [((3, 1), (1, 4)), ((1, 4), (3, 1)), ((4,), (3, 1)), ((3, 1), (4,))] * 2:
        x, y = np.ones(a, "float32"), np.arange(np.prod(b), dtype="float32").reshape(b)
        assert_matches(ltf.constant(x) + tf.constant(y), tf.constant(x) + tf.constant(y))
    with pytest.raises(tf.errors.InvalidArgumentError):
        ltf.constant(np.ones((3, 2), "float32")) + tf.constant(np.ones((3,), "float32"))


APIS = [tf.math.add, tf.math.reduce_sum, tf.reshape, tf.linalg.matmul, tf.transpose,
        tf.nn.softmax, tf.concat, tf.math.reduce_mean, tf.cast, tf.one_hot]


def _calls(api, draw):
    names = list(inspect.signature(api).parameters)
    n_pos = draw(st.integers(0, len(names) + 1))
    args = tuple(object() for _ in range(n_pos))
    keys = draw(st.lists(st.sampled_from(names + ["bogus"]), max_size=4, unique=True))
    return args, {k: object() for k in keys}


@SETTINGS
@given(api=st.sampled_from(APIS), data=st.data())
def test_signature_binding_matches_inspect(api, data):
    args, kwargs = _calls(api, data.draw)
    signature = inspect.signature(api)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        with pytest.raises(TypeError):
            registry._binder(signature)(args, kwargs)
        return
    bound.apply_defaults()
    want = dict(bound.arguments)
    want.pop("name", None)
    got = registry._binder(signature)(args, kwargs)
    assert got.keys() == want.keys()
    assert all(got[k] is want[k] for k in want), (got, want)


def test_keyword_calls_and_defaults_reach_the_lowering():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    assert_matches(tf.reduce_sum(input_tensor=ltf.constant(x), axis=1, keepdims=True),
                   tf.reduce_sum(x, axis=1, keepdims=True))
    assert_matches(tf.reduce_sum(ltf.constant(x), 0), tf.reduce_sum(x, 0))
    with pytest.raises(TypeError):
        tf.reduce_sum(ltf.constant(x), axis=1, bogus=2)
    with pytest.raises(TypeError):
        tf.reduce_sum(ltf.constant(x), 1, axis=1)


def test_operators_with_a_variable_operand_read_it():
    v = tf.Variable(np.array([1.0, 2.0], "float32"))
    x = ltf.constant([10.0, 20.0])
    assert_matches(x + v, tf.constant([11.0, 22.0]))
    assert_matches(x * v, tf.constant([10.0, 40.0]))


@SETTINGS
@given(lead=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
       transpose_b=st.booleans(), seed=st.integers(0, 2**16))
def test_activations_times_weights_is_one_matrix_product(lead, transpose_b, seed):
    """(..., k) @ (k, n) matches TF (values and lazy-tape gradients) and records one plain
    matrix product: the weight is never broadcast over the batch (nor its gradient summed)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(lead + (4,)).astype("float32")
    w0 = rng.standard_normal((3, 4) if transpose_b else (4, 3)).astype("float32")

    def loss(t, w):
        return tf.reduce_sum(tf.tanh(tf.linalg.matmul(t, w, transpose_b=transpose_b)))
    w = tf.Variable(w0)
    with tf.GradientTape() as tape:
        want = loss(tf.constant(x), w)
    want_grad = tape.gradient(want, w)
    with ltf.GradientTape() as tape:
        got = loss(ltf.constant(x), w)
    got_grad = tape.gradient(got, w)
    dots = [n for n in ir.topo_order([got.node, got_grad.node]) if n.op == "dot_general"]
    assert dots and all(n.attrs["batch_dimensions"] == ((), ()) for n in dots), dots
    np.testing.assert_allclose(float(got), float(want), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_grad.numpy(), want_grad.numpy(), rtol=1e-4, atol=1e-4)
    ltf.sync()


# ---------------------------------------------------------------- public names, called directly

def _direct_names():
    """(public path, original API, operand count) for every name hooks.install redirected."""
    out = []
    by_name = sorted(registry.DIRECT.items(), key=lambda kv: registry.api_name(kv[0]))
    for api, (_, arity) in by_name:
        for path in tf.__internal__.decorator.unwrap(api)[1]._tf_api_names:
            out.append((path, api, arity))
    assert out and len({p for p, _, _ in out}) == len(out)
    return out


DIRECT_NAMES = _direct_names()


def _public(path):
    obj = tf
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _operands(rng, dtype, shape):
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.startswith("int"):
        return np.asarray(rng.integers(1, 9, shape), dtype)
    return np.asarray(rng.standard_normal(shape) * 0.9, dtype)  # (acos, atanh: in domain)


@settings(max_examples=150, deadline=None)
@given(entry=st.sampled_from(DIRECT_NAMES),
       dtype=st.sampled_from(["float16", "float32", "float64", "int8", "int32", "uint8", "bool"]),
       shape=st.sampled_from([(), (3,), (2, 3)]), scalar=st.booleans(), seed=st.integers(0, 99))
def test_public_names_called_on_lazy_tensors_match_eager_tf(entry, dtype, shape, scalar, seed):
    """Every public name of an element-wise API (tf.tanh, tf.math.add, tf.nn.sigmoid, ...) is
    lazyx's wrapper, which takes a lazy operand straight to the lowering: same value, dtype,
    shape and error as TF's own call, with a tensor or a Python number as the other operand.
    (TF refuses some dtypes the IR would compute: bool for tf.math.greater, unsigned ints for
    tf.math.abs, float16 for erfinv on a CPU; registry.require_dtype.)"""
    path, api, arity = entry
    public = _public(path)
    assert public is not api and public.__wrapped__ is api
    rng = np.random.default_rng(seed)
    x = _operands(rng, dtype, shape)
    other = (float(rng.integers(1, 3)) if dtype.startswith("float") else int(rng.integers(1, 3))) \
        if scalar and dtype != "bool" else _operands(rng, dtype, shape)
    if isinstance(other, np.ndarray):
        other = tf.constant(other)
    lazy_args = (ltf.constant(x),) if arity == 1 else (ltf.constant(x), other)
    try:
        want = api(tf.constant(x), *lazy_args[1:])
    except Exception as err:  # noqa: BLE001 -- TF refuses the dtype: the same error lazily
        with pytest.raises(type(err)):
            public(*lazy_args)
        return
    tol = 2e-3 if dtype == "float16" else 2e-6
    with np.errstate(all="ignore"):
        got = public(*lazy_args)
        assert isinstance(got, ltf.Tensor), (path, type(got))
        assert got.dtype == want.dtype and got.shape == want.shape, path
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol,
                                   equal_nan=True, err_msg=path)


def test_public_names_keep_tfs_behaviour_for_everything_else():
    """Eager tensors, keyword calls, tf.function, a user's own dispatch_for_api and
    documentation are TF's own under the wrapper."""
    x = tf.constant([0.5, -1.0])
    assert type(tf.tanh(x)) is type(tf.math.tanh.__wrapped__(x))  # an EagerTensor
    assert str(inspect.signature(tf.math.add)) == str(inspect.signature(tf.math.add.__wrapped__))
    assert tf.tanh is tf.math.tanh is tf.nn.tanh and tf.add.__doc__ == tf.add.__wrapped__.__doc__
    lazy = ltf.constant(np.array([0.5, -1.0], "float32"))
    assert_matches(tf.tanh(x=lazy, name="t"), tf.tanh(x))  # through TF's dispatch
    assert_matches(tf.add(lazy, 1.0, name="a"), tf.add(x, 1.0))

    @tf.function
    def traced(t):
        return tf.tanh(t) + tf.add(t, 1.0) * tf.math.sigmoid(t)
    np.testing.assert_allclose(traced(x).numpy(),
                               (tf.tanh(x) + tf.add(x, 1.0) * tf.math.sigmoid(x)).numpy())

    class Boxed(tf.experimental.ExtensionType):
        v: tf.Tensor

    @tf.experimental.dispatch_for_api(tf.math.tanh)  # the public name: lazyx's wrapper
    def boxed_tanh(x: Boxed, name=None):
        return Boxed(tf.math.tanh(x.v) * 2)
    try:
        np.testing.assert_allclose(tf.tanh(Boxed(x)).v.numpy(), (tf.tanh(x) * 2).numpy())
    finally:
        tf.experimental.unregister_dispatch_for(boxed_tanh)
    with pytest.raises(ValueError):
        tf.tanh(Boxed(x))


FAST_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def _fast_call_operands(dtype, kind, value, shape):
    x = ltf.constant(np.linspace(-2, 3, int(np.prod(shape))).reshape(shape).astype(dtype))
    if kind == "number":
        other = value
    elif kind == "same":
        other = ltf.constant(np.full(shape, 1.5, dtype))
    else:  # broadcast against x: the general path's, whichever path is on
        other = ltf.constant(np.full(shape[1:] or (1,), 0.25, dtype))
    return x, other


@SETTINGS
@given(op=st.sampled_from(sorted(FAST_OPERATORS)), reflected=st.booleans(),
       dtype=st.sampled_from(["float16", "float32", "float64", "int32"]),
       kind=st.sampled_from(["number", "same", "broadcast"]),
       value=st.one_of(st.floats(-1e6, 1e6), st.integers(-2**40, 2**40),
                       st.sampled_from([0.0, -0.0, 7e4, 2**60, float("inf")])),
       shape=st.sampled_from([(), (3,), (2, 3)]))
def test_the_operators_fast_call_builds_what_the_general_path_builds(
        monkeypatch, op, reflected, dtype, kind, value, shape):
    """`x * 0.5` / `x + y` built at once (tensor._fast_binary) against the same call with the
    fast path off: one graph hash, the same values and dtype, the same user line -- or the
    same TF error, for a number TF will not convert."""
    fn = FAST_OPERATORS[op]

    def apply():
        x, other = _fast_call_operands(dtype, kind, value, shape)
        try:
            out = fn(other, x) if reflected else fn(x, other)  # (the user's line)
        except Exception as err:  # noqa: BLE001 -- the error type is what we compare
            return type(err), None, None, None
        return out.dtype, lazyx.graph_hash(out), out.__lazyx_handle__.node.source, out.numpy()

    fast = apply()
    with monkeypatch.context() as m:
        m.setattr(tensor, "FAST_BINARY", {})
        general = apply()
    assert fast[:2] == general[:2]
    if fast[2] is not None:
        assert fast[2][1:] == general[2][1:]  # (file, line, ... : the same line of apply)
        np.testing.assert_array_equal(fast[3], general[3])


def test_the_operators_fast_call_is_taken_only_where_nothing_watches(monkeypatch):
    """The common call is built at once, and a tape-watched operand (its gradient needs the
    general path's tape sources) is not -- its gradient still flows."""
    taken = []
    real = tensor._fast_binary

    def spy(*args):
        result = real(*args)
        taken.append(result is not None)
        return result
    monkeypatch.setattr(tensor, "_fast_binary", spy)
    x = ltf.constant(np.ones((2, 2), "float32"))
    (x * 0.5 + x).numpy()
    assert taken == [True, True]
    taken.clear()
    w = ltf.constant(np.full((2, 2), 3.0, "float32"))
    with ltf.GradientTape() as tape:
        tape.watch(w)
        loss = tf.reduce_sum(w * 0.5 - 1.0)
    assert taken == []
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), np.full((2, 2), 0.5))
