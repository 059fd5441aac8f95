"""Run keras.ops, keras.losses, keras.metrics, keras.layers and the public tf.math, tf.nn,
tf.linalg and tf.* array functions on lazy TF tensors against eager TF on the same inputs.

    LAZYX_BACKEND=reference python scripts/tf_coverage.py [--only keras.ops,tf.nn]
        [--names relu,add] [--out docs/tf_coverage.md]

Each entry is one call, built from its namespace's argument table below (keyed by name; a
name with no entry gets the default arguments: one float tensor, then two). Outcomes:

* lazy-and-equal: the result is lazy (an ltf.Tensor) and equals eager TF's (value, dtype, shape);
* fallback: equal, but through a counted fallback (lazyx.metrics()["fallback_ops"]);
* error: the lazy call raised where eager TF did not;
* wrong: the numbers, dtype or shape differ, or the result is an eager tensor made from
  fetched lazy values although no fallback was counted (a silent eager turn; an eager result
  computed from static shapes alone, such as tf.shape's, fetches nothing and is fine);
* not tried: the call cannot be built from the table (the reason says why) -- listed, never hidden.

The pytest suite runs a fast subset through `sweep` (tests/frontends/tf/test_coverage.py).
"""
import argparse
import collections
import inspect
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _checkout  # noqa: E402  (scripts/_checkout.py: lazyx from this checkout)

OK, FALLBACK, ERROR, WRONG, SKIP = "lazy-and-equal", "fallback", "error", "wrong", "not tried"


def _ltf():
    return _checkout.frontend('tf')


# ---------------------------------------------------------------- inputs ("@name" in tables)

def _inputs():
    r = np.random.default_rng(0)
    f32 = np.float32
    spd = r.standard_normal((3, 3)).astype(f32)
    probs = r.uniform(0.05, 1, (3, 4)).astype(f32)
    inputs = {
        "x": r.uniform(0.1, 0.9, (3, 4)).astype(f32),     # in every unary domain (log, acos, atanh)
        "x2": r.uniform(0.1, 0.9, (3, 4)).astype(f32),
        "s": r.uniform(-2, 2, (3, 4)).astype(f32),         # signed
        "big": r.uniform(1.1, 3, (3, 4)).astype(f32),      # > 1 (acosh)
        "v": r.uniform(0.1, 0.9, (4,)).astype(f32),
        "v3": r.uniform(0.1, 0.9, (3,)).astype(f32),
        "i": r.integers(0, 3, (3, 4)).astype(np.int32),
        "i2": r.integers(1, 4, (3, 4)).astype(np.int32),
        "b": r.uniform(size=(3, 4)) > 0.5,
        "b2": r.uniform(size=(3, 4)) > 0.5,
        "m": (spd @ spd.T + 3 * np.eye(3)).astype(f32),   # symmetric positive definite
        "m2": r.standard_normal((3, 3)).astype(f32),
        "bm": r.standard_normal((2, 3, 3)).astype(f32),    # a batch of matrices
        "img": r.standard_normal((2, 6, 6, 3)).astype(f32),  # NHWC
        "seq": r.standard_normal((2, 5, 3)).astype(f32),    # NWC
        "vol": r.standard_normal((1, 4, 4, 4, 2)).astype(f32),  # NDHWC
        "k2": r.standard_normal((3, 3, 3, 4)).astype(f32),  # HWIO
        "k1": r.standard_normal((3, 3, 4)).astype(f32),
        "dk": r.standard_normal((3, 3, 3, 2)).astype(f32),  # depthwise, multiplier 2
        "pk": r.standard_normal((1, 1, 6, 4)).astype(f32),  # pointwise after depthwise
        "p": probs / probs.sum(-1, keepdims=True),          # rows of probabilities
        "lab": r.integers(0, 4, (3,)).astype(np.int32),     # class ids for "p"
        "y01": (r.uniform(size=(3, 4)) > 0.5).astype(f32),  # binary labels
        "onehot": np.eye(4, dtype=f32)[r.integers(0, 4, 3)],
        "seg": np.array([0, 0, 1], np.int32),               # sorted segment ids for rows
        "perm": np.array([2, 0, 1, 3], np.int32),
        "idx": np.array([2, 0, 1], np.int32),
        "c": (r.standard_normal((3, 4)) + 1j * r.standard_normal((3, 4))).astype(np.complex64),
        "mean": r.uniform(0, 1, (4,)).astype(f32), "var": r.uniform(0.5, 1, (4,)).astype(f32),
    }
    x = inputs["x"]
    chol = np.linalg.cholesky(inputs["m"]).astype(f32)
    inputs.update({
        "vs": np.sort(inputs["v"]), "x2.T": inputs["x2"].T.copy(), "x1": x[:, :1].copy(),
        "i2.f": inputs["i2"].astype(f32),
        "img4": r.standard_normal((2, 6, 6, 4)).astype(f32),
        "img6": r.standard_normal((2, 6, 6, 6)).astype(f32),
        "k2.T": r.standard_normal((3, 3, 4, 3)).astype(f32),  # conv_transpose: HW, out, in
        "seq4": r.standard_normal((2, 5, 4)).astype(f32),
        "qkv": r.standard_normal((2, 5, 2, 3)).astype(f32),  # (batch, time, heads, dim)
        "imgc": r.standard_normal((2, 3, 4, 4)).astype(f32),  # NCHW (keras.ops.unfold)
        "folded": r.standard_normal((2, 12, 9)).astype(f32),  # (N, C*2*2, 3*3 blocks)
        "long": r.standard_normal((2, 16)).astype(f32),
        "long3": r.standard_normal((2, 16, 1)).astype(f32),
        "pairs": r.standard_normal((3, 4, 2)).astype(f32),
        "k1s": r.standard_normal((3, 3, 4)).astype(f32),
        "k3": r.standard_normal((2, 2, 2, 2, 3)).astype(f32),
        "dil": r.standard_normal((2, 2, 3)).astype(f32), "lablen": np.array([4, 3, 2], np.int32),
        "chol": chol, "lu": np.linalg.qr(inputs["m2"])[1].astype(f32) + 2 * np.eye(3, dtype=f32),
        "lup": np.array([0, 1, 2], np.int32), "band": np.stack([chol.diagonal(), chol.diagonal()]),
        "tri": r.uniform(1, 2, (3, 3)).astype(f32), "v2": r.uniform(0.1, 0.9, (2,)).astype(f32),
        "m2s": 0.3 * inputs["m2"], "c33": (inputs["m"] + 0j).astype(np.complex64),
        "scalar": np.float32(0.5), "scalar2": np.float32(2.0), "iscalar": np.int32(5),
        "nd": np.array([[0, 1], [2, 3], [1, 0]], np.int32),
        "seqlen": np.array([1, 2, 3, 4], np.int32),
        "sorted": np.sort(r.uniform(0, 1, (3, 5)).astype(f32), axis=-1),
        "ctc_labels": np.array([[1, 2, 0], [2, 2, 1]], np.int32),
        "ctc_dense_labels": np.array([[1, 2, 0], [2, 2, 1]], np.int32),
        "ctc_logits": r.standard_normal((2, 6, 4)).astype(f32),
        "ctc_label_len": np.array([2, 3], np.int32), "ctc_logit_len": np.array([6, 6], np.int32),
    })
    return inputs


INPUTS = None


def _args(spec, make):
    """Table arguments -> real arguments: "@name" strings become tensors through make()."""
    if isinstance(spec, str) and spec.startswith("@"):
        return make(INPUTS[spec[1:]])
    if isinstance(spec, list):
        return [_args(s, make) for s in spec]
    if isinstance(spec, tuple):
        return tuple(_args(s, make) for s in spec)
    if isinstance(spec, dict):
        return {k: _args(v, make) for k, v in spec.items()}
    return spec


# ---------------------------------------------------------------- one call, classified

def _leaves(value):
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in _leaves(value[k])]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _fallbacks(lazyx):
    return dict(lazyx.metrics()["fallback_ops"])


def _message(err):
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:110]}"


def classify(call, args, rtol=1e-4, atol=1e-5):
    """(outcome, reason) for call(*args) on lazy inputs against eager TF."""
    import lazyx
    import tensorflow as tf
    ltf = _ltf()
    try:
        eager_args = _args(args, tf.constant)
        expected = call(*eager_args)
        want = [np.asarray(v.numpy()) if isinstance(v, (tf.Tensor, tf.Variable)) else v
                for v in _leaves(expected)]
    except Exception as err:  # noqa: BLE001 - the table's arguments do not fit
        return SKIP, f"eager TF rejects the table's arguments ({_message(err)})"
    before = _fallbacks(lazyx)
    fetched = lazyx.metrics()["transfers_to_host"]
    try:
        got = call(*_args(args, ltf.constant))
        leaves = _leaves(got)
        fell = {k: v - before.get(k, 0) for k, v in _fallbacks(lazyx).items()
                if v != before.get(k, 0)}
        # an eager result made with no lazy value fetched (tf.shape, keras.ops.full_like) was
        # computed from static shapes alone: nothing left laziness
        eager_leaves = [v for v in leaves if isinstance(v, (tf.Tensor, tf.Variable))
                        and not isinstance(v, ltf.Tensor)]
        if lazyx.metrics()["transfers_to_host"] == fetched:
            eager_leaves = []
        have = [np.asarray(v.numpy()) if isinstance(v, (tf.Tensor, tf.Variable, ltf.Tensor))
                else v
                for v in leaves]
    except Exception as err:  # noqa: BLE001
        lazyx.sync()
        return ERROR, _message(err)
    if len(have) != len(want):
        return WRONG, f"{len(have)} results, eager TF gives {len(want)}"
    for h, w in zip(have, want):
        if isinstance(w, np.ndarray):
            if not isinstance(h, np.ndarray) or h.dtype != w.dtype or h.shape != w.shape:
                return WRONG, (f"result {getattr(h, 'dtype', type(h).__name__)}"
                               f"{list(getattr(h, 'shape', ()))}, eager TF gives "
                               f"{w.dtype}{list(w.shape)}")
            if w.dtype.kind in "fc":
                close = np.allclose(h, w, rtol=rtol, atol=atol, equal_nan=True)
            else:
                close = np.array_equal(h, w)
            if not close:
                diff = np.max(np.abs(h.astype(np.float64 if w.dtype.kind != "c" else w.dtype)
                                     - w)) if w.size else 0
                return WRONG, f"numbers differ (max abs difference {diff:.3g})"
        elif not (h is w or h == w):
            return WRONG, f"{h!r} where eager TF gives {w!r}"
    if fell:
        return FALLBACK, "fallback: " + ", ".join(sorted(fell))
    if eager_leaves:
        return WRONG, "result is an eager tf.Tensor and no fallback was counted"
    return OK, ""


# ---------------------------------------------------------------- the namespaces

def _calls_of(namespace, table, skip, defaults):
    """[(name, call, args) or (name, None, reason)] for the callables of a module."""
    out = []
    for name in sorted(n for n in dir(namespace) if not n.startswith("_")):
        fn = getattr(namespace, name)
        if inspect.ismodule(fn) or inspect.isclass(fn) or not callable(fn):
            continue
        if name in skip:
            out.append((name, None, skip[name]))
        elif name in table:
            entry = table[name]
            kwargs = entry[1] if len(entry) == 2 and isinstance(entry[1], dict) else {}
            args = entry[0] if kwargs or (len(entry) == 2 and isinstance(entry[1], dict)) \
                else entry
            out.append((name, _kw(fn, kwargs), args))
        else:
            out.append((name, fn, defaults))
    return out


def _kw(fn, kwargs):
    if not kwargs:
        return fn

    def call(*args):
        return fn(*args, **_args(kwargs, _MAKE[0]))
    return call


_MAKE = [None]  # the tensor maker of the call being run (kwargs may hold "@name" tensors)


def _with_maker(call, args):
    import tensorflow as tf
    ltf = _ltf()

    def run(*real):
        lazy = any(isinstance(v, ltf.Tensor) for v in _leaves(real))
        _MAKE[0] = ltf.constant if lazy else tf.constant
        return call(*real)
    return run


SIGN_FREE = {"eigh", "svd", "qr"}  # factors are unique up to the sign of each column/row


def _abs_leaves(call):
    import tensorflow as tf

    def run(*args):
        out = call(*args)
        return [tf.abs(v) for v in _leaves(out)]
    return run


def _run_functions(calls):
    results = []
    for name, call, args in calls:
        if call is not None and name in SIGN_FREE:
            call = _abs_leaves(call)
        if call is None:
            results.append((name, SKIP, args))
            continue
        candidates = args if isinstance(args, list) else [args]
        outcome = None
        for candidate in candidates:
            outcome = classify(_with_maker(call, candidate), candidate)
            if outcome[0] != SKIP:
                break
        if outcome[0] == SKIP and isinstance(args, list):
            outcome = (SKIP, "eager TF rejects the default arguments (no table entry)")
        results.append((name, *outcome))
    return results


DEFAULT = [("@x",), ("@x", "@x2")]  # one float tensor, then two


def _layer_call(cls, config):
    """The layer is built by the eager call (classify runs it first); the lazy call reuses
    the same weights. Several inputs go in as a list, or as positional arguments where the
    config says "@positional" (MultiHeadAttention's query, value); "@wrapped" is a factory
    of the layer a wrapper takes (so the table makes a fresh one)."""
    config = dict(config)
    positional = config.pop("@positional", False)
    if "@wrapped" in config:
        config["layer"] = config.pop("@wrapped")()
    made = []

    def call(*inputs):
        if not made:
            made.append(cls(**config))
        if positional:
            return made[0](*inputs, training=False)
        return made[0](inputs[0] if len(inputs) == 1 else list(inputs), training=False)
    return call


def _run_layers(table, skip):
    import keras
    results = []
    for name in sorted(n for n in dir(keras.layers) if not n.startswith("_")):
        cls = getattr(keras.layers, name)
        if not inspect.isclass(cls) or not issubclass(cls, keras.layers.Layer):
            continue
        if name in skip:
            results.append((name, SKIP, skip[name]))
            continue
        config, inputs = table.get(name, ({}, ("@img",)))
        results.append((name, *classify(_layer_call(cls, config), inputs)))
    return results


def _run_classes(namespace, table, skip, default, metric):
    results = []
    base = namespace.Metric if metric else namespace.Loss
    for name in sorted(n for n in dir(namespace) if not n.startswith("_")):
        cls = getattr(namespace, name)
        if not inspect.isclass(cls) or not issubclass(cls, base) or cls is base:
            continue
        if name in skip:
            results.append((name, SKIP, skip[name]))
            continue
        config, inputs = table.get(name, ({}, default))

        def call(*args, cls=cls, config=config):
            obj = cls(**config)
            if not metric:
                return obj(*args)
            obj.update_state(*args)
            return obj.result()
        results.append((name, *classify(call, inputs)))
    return results


def namespaces():
    """{namespace title: function () -> [(name, outcome, reason)]}."""
    import keras
    import tensorflow as tf
    from tf_coverage_tables import (ARRAY, ARRAY_NAMES, KERAS_OPS, KERAS_OPS_SKIP, LAYERS,
                                    LAYERS_SKIP, LINALG, LINALG_SKIP, LOSSES, LOSSES_SKIP,
                                    MATH, MATH_SKIP, METRICS, METRICS_SKIP, NN, NN_SKIP)
    return {
        "keras.ops": lambda: _run_functions(_calls_of(keras.ops, KERAS_OPS, KERAS_OPS_SKIP,
                                                      DEFAULT)),
        "keras.losses": lambda: _run_classes(keras.losses, LOSSES, LOSSES_SKIP,
                                             ("@y01", "@p"), metric=False),
        "keras.metrics": lambda: _run_classes(keras.metrics, METRICS, METRICS_SKIP,
                                              ("@y01", "@p"), metric=True),
        "keras.layers": lambda: _run_layers(LAYERS, LAYERS_SKIP),
        "tf.math": lambda: _run_functions(_calls_of(tf.math, MATH, MATH_SKIP, DEFAULT)),
        "tf.nn": lambda: _run_functions(_calls_of(tf.nn, NN, NN_SKIP, DEFAULT)),
        "tf.linalg": lambda: _run_functions(_calls_of(tf.linalg, LINALG, LINALG_SKIP,
                                                      [("@m",), ("@m", "@m2")])),
        "tf (array functions)": lambda: _run_functions(
            [(n, getattr(tf, n), ARRAY.get(n, DEFAULT)) for n in ARRAY_NAMES]),
    }


def sweep(only=None, names=None):
    """{namespace: [(name, outcome, reason)]}, optionally restricted."""
    global INPUTS
    INPUTS = INPUTS or _inputs()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for title, run in namespaces().items():
            if only and title not in only:
                continue
            rows = run()
            out[title] = [r for r in rows if not names or r[0] in names]
    return out


# ---------------------------------------------------------------- the report

def report(results, backend, seconds):
    lines = ["# TensorFlow / Keras coverage report (lazyx TF frontend)", "",
             f"Reproduce: `LAZYX_BACKEND={backend} python scripts/tf_coverage.py "
             f"--out docs/tf_coverage.md` (this run: {backend} backend, {seconds:.0f} s).", "",
             "Each public function, loss, metric and layer is called on lazy inputs and on eager "
             "TF tensors holding the same numbers (arguments: `scripts/tf_coverage_tables.py`). "
             "*Lazy-and-equal*: lazy result equal to eager TF's (value, dtype, shape); "
             "*fallback*: equal through a counted fallback; *error*: the lazy call raised; "
             "*wrong*: different numbers/dtype/shape, or an eager result with no counted "
             "fallback. Percentages are of the entries tried.", "",
             "| namespace | tried | lazy-and-equal | % | fallback | error | wrong | not tried |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for title, rows in results.items():
        n = collections.Counter(r[1] for r in rows)
        tried = len(rows) - n[SKIP]
        pct = 100 * n[OK] / tried if tried else 0
        lines.append(f"| {title} | {tried} | {n[OK]} | {pct:.1f} % | {n[FALLBACK]} | "
                     f"{n[ERROR]} | {n[WRONG]} | {n[SKIP]} |")
    for title, rows in results.items():
        lines += ["", f"## {title}", ""]
        for kind in (WRONG, ERROR, FALLBACK, SKIP):
            picked = [r for r in rows if r[1] == kind]
            if picked:
                lines.append(f"**{kind}** ({len(picked)}):")
                lines.append("")
                lines += [f"- `{name}`: {reason}".replace("|", "\\|") for name, _, reason in picked]
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated namespaces (keras.ops,tf.nn,...)")
    parser.add_argument("--names", help="comma-separated entry names")
    parser.add_argument("--out", help="write the Markdown report here")
    opts = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    _ltf()
    import lazyx
    start = time.perf_counter()
    results = sweep(opts.only and opts.only.split(","), opts.names and opts.names.split(","))
    seconds = time.perf_counter() - start
    text = report(results, lazyx.backend(), seconds)
    if opts.out:
        with open(opts.out, "w") as f:
            f.write(text)
    else:
        print(text)
    for title, rows in results.items():
        n = collections.Counter(r[1] for r in rows)
        tried = len(rows) - n[SKIP]
        print(f"{title}: {n[OK]}/{tried} lazy-and-equal, {n[FALLBACK]} fallback, "
              f"{n[ERROR]} error, {n[WRONG]} wrong, {n[SKIP]} not tried", file=sys.stderr)


if __name__ == "__main__":
    main()
