"""No silent eager turn (issue 15, DESIGN principle 9): every public tf.math, tf.nn, tf.linalg,
top-level array function, keras.ops function and keras.losses class we can call on lazy
inputs gives a lazy result or a counted fallback -- never an eager tensor nobody noticed.
A conversion the user writes (.numpy(), print, float, np.asarray, tf.convert_to_tensor) is an
observation; one TF's or Keras' own code asks for is a fallback named after the asker."""
import inspect
import io
import warnings

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.util import tf_decorator

import lazyx
import lazyx.frontends.tf as ltf
from lazyx.core.source import format_line

keras = pytest.importorskip("keras")

# results computed from static shapes only (no value is converted): eager by TF's design
METADATA = {"tf.shape", "tf.size", "tf.rank", "keras.ops.size", "keras.ops.shape"}
# the user asking for the host value by name: an observation, like .numpy()
OBSERVATIONS = {"keras.ops.convert_to_numpy"}
_ARRAY_MODULES = tuple("tensorflow.python.ops." + m for m in (
    "array_ops", "math_ops", "gen_array_ops", "gen_math_ops", "clip_ops", "sort_ops",
    "special_math_ops", "array_ops_stack", "manip_ops"))
X = np.random.default_rng(0).random((3, 3)).astype(np.float32) + 0.5
LABELS = np.array([0, 2, 1])


def _functions(module, prefix):
    for name in sorted(dir(module)):
        fn = getattr(module, name)
        if not name.startswith("_") and callable(fn) and not inspect.isclass(fn) \
                and not inspect.ismodule(fn):
            yield prefix + name, fn


def _entry_points():
    out = []
    for module, prefix in ((tf.math, "tf.math."), (tf.nn, "tf.nn."), (tf.linalg, "tf.linalg."),
                           (keras.ops, "keras.ops.")):
        out.extend(_functions(module, prefix))
    out.extend((n, f) for n, f in _functions(tf, "tf.")
               if getattr(tf_decorator.unwrap(f)[1], "__module__", "").startswith(_ARRAY_MODULES))
    for name, cls in sorted(vars(keras.losses).items()):
        if inspect.isclass(cls) and issubclass(cls, keras.losses.Loss) and \
                cls is not keras.losses.Loss:
            try:
                loss = cls()
            except TypeError:  # needs constructor arguments (LossFunctionWrapper)
                continue
            truth = LABELS if "Sparse" in name else X
            out.append((f"keras.losses.{name}", lambda pred, *_, _loss=loss, _truth=truth:
                        _loss(_truth, pred)))
    return out


def _outcome(name, fn):
    """'lazy', 'fallback', 'metadata', 'observation', 'n/a' (refuses these inputs) or
    'SILENT'."""
    for args in ((X,), (X, X)):
        lazyx.reset_metrics()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fn(*[ltf.constant(a) for a in args])
        except Exception:  # noqa: BLE001 - these inputs do not suit it: try the next ones
            continue
        metrics = lazyx.metrics()
        if metrics["fallback_ops"]:
            return "fallback"
        leaves = tf.nest.flatten(result)
        eager = [v for v in leaves if isinstance(v, (tf.Tensor, np.ndarray, np.generic))
                 and not isinstance(v, ltf.Tensor)]
        if not eager and not metrics["syncs"]:
            return "lazy"
        if name in METADATA and not metrics["syncs"]:
            return "metadata"
        # (a constant input is on the host already: no sync; test_ops checks that one is counted)
        return "observation" if name in OBSERVATIONS else "SILENT"
    return "n/a"


def test_every_entry_point_is_lazy_or_a_counted_fallback():
    outcomes = {name: _outcome(name, fn) for name, fn in _entry_points()}
    silent = sorted(n for n, o in outcomes.items() if o == "SILENT")
    assert silent == [], silent
    counts = {o: list(outcomes.values()).count(o) for o in set(outcomes.values())}
    assert counts.get("lazy", 0) >= 300, counts  # the table really ran
    for name in ("keras.losses.SparseCategoricalCrossentropy",
                 "keras.losses.CategoricalCrossentropy", "keras.losses.BinaryCrossentropy"):
        assert outcomes[name] == "lazy", (name, outcomes[name])
    assert outcomes["keras.ops.convert_to_numpy"] == "observation"


def test_the_users_own_conversions_are_observations():
    x = ltf.constant(X) * 2
    lazyx.reset_metrics()
    x.numpy(), np.asarray(x * 3), float(tf.reduce_sum(x)), str(x + 1)
    assert isinstance(tf.convert_to_tensor(x - 1), tf.Tensor)
    assert lazyx.metrics()["fallback_ops"] == {}
    assert lazyx.metrics()["syncs"] >= 4


def test_a_conversion_keras_asks_for_is_a_counted_fallback_with_the_users_line():
    x = ltf.constant(X) * 2
    lazyx.reset_metrics()
    told = io.StringIO()
    with lazyx.explain(told):  # what LAZYX_DEBUG=1 prints on stderr
        host = keras.utils.pad_sequences(x, maxlen=4, dtype="float32")  # np.asarray per row
        line = inspect.currentframe().f_lineno - 1
    np.testing.assert_allclose(host, np.pad(X * 2, ((0, 0), (1, 0))))
    name = "keras.src.utils.sequence_utils.pad_sequences"
    assert list(lazyx.metrics()["fallback_ops"]) == [name]
    where = list(lazyx.metrics()["fallback_sources"][name])
    assert where == [format_line((__file__, line))]  # relative only inside the working folder
    assert f"fallback at {where[0]}: {name}" in told.getvalue()


def test_keras_calling_tf_convert_to_tensor_keeps_the_value_lazy():
    # Keras' TF backend normalizes inputs with tf.convert_to_tensor (its losses, ops.cast)
    x = ltf.constant(X)
    lazyx.reset_metrics()
    out = keras.ops.sparse_categorical_crossentropy(np.array([0, 1, 2]), x)
    assert isinstance(out, ltf.Tensor) and lazyx.metrics()["syncs"] == 0


def test_eager_while_loop_on_lazy_values_is_a_counted_fallback():
    """An eager tf.while_loop on lazy values (Euclid's, as keras.ops.gcd's TF backend wrote
    it before lazyx unrolled that one): TF reads the condition every iteration (a fallback
    named after while_loop) and rebuilds the loop variables from their composite components
    at the end, which gives back the lazy values (it used to raise TypeError)."""
    a = np.array([12, 18, 7, 0, 6, 35], np.int32)
    b = np.array([8, 27, 5, 0, 4, 14], np.int32)

    def gcd(x, y):
        def body(p, q):
            safe = tf.where(tf.equal(q, 0), tf.ones_like(q), q)
            return tf.where(q != 0, q, p), tf.where(q != 0, tf.math.floormod(p, safe), 0 * q)
        return tf.while_loop(lambda p, q: tf.reduce_any(q != 0), body, [x, y])[0]
    lazyx.reset_metrics()
    got = gcd(ltf.constant(a), ltf.constant(b))
    assert isinstance(got, ltf.Tensor)
    np.testing.assert_array_equal(np.asarray(got), np.gcd(a, b))
    assert lazyx.metrics()["fallback_ops"].get(
        "tensorflow.python.ops.while_loop.while_loop", 0) > 0


def test_composite_components_round_trip_only_untouched():
    x = ltf.constant(X)
    assert tf.nest.map_structure(lambda t: t, x, expand_composites=True) is x
    with pytest.raises(TypeError, match="cannot be rebuilt"):
        tf.nest.map_structure(lambda t: t + 1, x, expand_composites=True)
