"""tf.cond / keras.ops.cond on a lazy predicate (frontends/tf/control_flow.py): both branches are
traced, as tf.function traces them, and the results and every variable assigned in a branch are
selected with `where` -- the predicate is never read -- checked against eager TF on real inputs,
for both outcomes. Keras' optimizers that branch on the step counter (warm-up schedules, EMA
overwrite, gradient accumulation) then run lazily and replay under lazyx.compile."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402

X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]], np.float32)


def _no_read_yet():
    m = lazyx.metrics()
    assert m["syncs"] == 0 and m["fallback_ops"] == {}, (m["syncs"], m["fallback_ops"])


@pytest.mark.parametrize("threshold", [0.0, 10.0])  # the predicate true, then false
def test_tf_cond_with_a_lazy_predicate_selects_without_reading(threshold):
    def run(make):
        x = make(X)
        return tf.cond(tf.reduce_sum(x) > threshold,
                       lambda: (x * 2.0, {"s": tf.reduce_sum(x), "none": None, "k": 3}),
                       lambda: (x - 1.0, {"s": tf.reduce_max(x), "none": None, "k": 3}))
    lazyx.reset_metrics()
    got = run(ltf.constant)
    _no_read_yet()
    assert isinstance(got[0], ltf.Tensor) and got[1]["none"] is None and got[1]["k"] == 3
    want = run(tf.constant)
    np.testing.assert_allclose(np.asarray(got[0]), want[0].numpy())
    np.testing.assert_allclose(np.asarray(got[1]["s"]), want[1]["s"].numpy())


@pytest.mark.parametrize("flag", [True, False])
def test_variables_assigned_in_branches_take_the_chosen_branch_values(flag):
    def run(make, lazy):
        a = tf.Variable(np.ones((2, 3), np.float32))    # assigned in both branches
        b = tf.Variable(5.0)                            # only in the true branch
        c = tf.Variable(np.zeros(3, np.float32))        # only in the false branch
        if lazy:
            a.assign(make(np.ones((2, 3), np.float32)))  # one already holds a lazy value
        x = make(X)

        def on_true():
            a.assign_add(x)
            b.assign_sub(1.5)
            return a * 2.0

        def on_false():
            a.assign(x * 3.0)
            a.assign_sub(tf.ones_like(x))
            c.assign(tf.reduce_sum(x, axis=0))
            return a + 0.0
        out = tf.cond(make(flag), on_true, on_false)
        return out, a, b, c
    lazyx.reset_metrics()
    got = run(ltf.constant, lazy=True)
    _no_read_yet()
    want = run(tf.constant, lazy=False)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g) if isinstance(g, ltf.Tensor) else g.numpy(),
                                   w.numpy(), rtol=1e-6)


@pytest.mark.parametrize("flag", [True, False])
def test_nested_conds_and_keras_ops_cond(flag):
    def run(make):
        v = tf.Variable(np.arange(3, dtype=np.float32))
        x = make(X)
        p = make(flag)

        def outer_true():
            inner = tf.cond(tf.logical_not(p), lambda: x[0] * 10.0,
                            lambda: keras.ops.cond(p, lambda: v.assign_add([1.0, 2.0, 3.0]) * 1.0,
                                                   lambda: x[0]))
            return [inner]

        out = tf.compat.v1.cond(p, outer_true, lambda: [x[1] + v], strict=False)
        return out, v
    lazyx.reset_metrics()
    got, gv = run(ltf.constant)
    _no_read_yet()
    want, wv = run(tf.constant)
    np.testing.assert_allclose(np.asarray(got), want.numpy())
    np.testing.assert_allclose(gv.numpy(), wv.numpy())


def test_branches_of_another_structure_raise_tf_functions_error():
    x = ltf.constant(X)
    with pytest.raises(TypeError, match="same number, type, and overall structure"):
        tf.cond(tf.reduce_sum(x) > 0, lambda: (x, x), lambda: x)


@pytest.mark.parametrize("flag", [True, False])
def test_results_that_cannot_be_selected_read_the_predicate(flag):
    """Other shapes: the predicate is read, and the chosen branch's results and variable
    values are taken as they were recorded (each branch ran once)."""
    runs = []

    def run(make):
        v = tf.Variable(1.0)
        x = make(X)

        def on_true():
            runs.append(True)
            v.assign(7.0)
            return x
        out = tf.cond(make(flag), on_true, lambda: runs.append(False) or x[0])
        return out, v
    got, gv = run(ltf.constant)
    assert runs == [True, False]  # both traced (as tf.function does), neither run twice
    want, wv = run(tf.constant)
    np.testing.assert_allclose(np.asarray(got), want.numpy())
    assert float(gv.numpy()) == float(wv.numpy())


@pytest.mark.parametrize("where", ["true", "false"])
@pytest.mark.parametrize("flag", [True, False])
def test_a_branch_that_reads_a_value_falls_back_before_its_writes(where, flag):
    """A branch that observes a lazy value stops there (before the read), the variables are
    restored, and the predicate is read: the chosen branch's effects only, as in eager TF."""
    def run(make, runs):
        v = tf.Variable(np.zeros(3, np.float32))
        x = make(X[0])

        def branch(name, delta):
            def fn():
                runs.append(name)
                v.assign_add(x * delta)
                if name == where:
                    _ = float(tf.reduce_sum(v))  # an observation inside the branch
                v.assign_add(x)
                return v * 1.0
            return fn
        out = tf.cond(make(flag), branch("true", 2.0), branch("false", -3.0))
        return out, v
    runs = []
    got, gv = run(ltf.constant, runs)
    # traced until the read (tf.function-like), then the chosen branch runs if it was stopped
    assert runs == {("true", True): ["true", "true"], ("true", False): ["true", "false"],
                    ("false", True): ["true", "false"],
                    ("false", False): ["true", "false", "false"]}[where, flag]
    want, wv = run(tf.constant, [])
    np.testing.assert_allclose(np.asarray(got), want.numpy())
    np.testing.assert_allclose(gv.numpy(), wv.numpy())


@pytest.mark.parametrize("threshold", [0.0, 100.0])
def test_gradients_flow_through_the_selected_branch(threshold):
    def run(make, tape_class):
        w = tf.Variable(np.array([[0.5], [-1.0], [2.0]], np.float32))
        x = make(X)
        with tape_class() as tape:
            h = tf.matmul(x, w)
            y = tf.cond(tf.reduce_sum(h) > threshold, lambda: tf.reduce_sum(h ** 2),
                        lambda: tf.reduce_sum(tf.sin(h) * x[:, :1]))
        return y, tape.gradient(y, w)
    lazyx.reset_metrics()
    got = run(ltf.constant, ltf.GradientTape)
    _no_read_yet()
    want = run(tf.constant, tf.GradientTape)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-5)


OPTIMIZERS = {
    # warm-up for 2 steps, then cosine decay: steps 1-2 and 3-5 take the two branches
    "cosine_warmup": lambda: keras.optimizers.SGD(keras.optimizers.schedules.CosineDecay(
        0.01, 4, warmup_target=0.2, warmup_steps=2)),
    # the EMA overwrites the weights every 2nd step
    "adamw_ema": lambda: keras.optimizers.AdamW(0.05, use_ema=True, ema_overwrite_frequency=2),
    # every 2nd step applies the accumulated gradients
    "sgd_accumulation": lambda: keras.optimizers.SGD(0.1, gradient_accumulation_steps=2),
}


def _train(make_opt, mode, steps=5):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    opt = make_opt()
    if mode == "lazy":
        # a step counter holding a lazy value (as under lazyx.compile, which gives all state
        # one): the optimizer's conds get a lazy predicate
        opt.build(model.trainable_variables)
        opt._iterations.assign(ltf.constant(np.int64(0)))  # (`iterations` may be a view)
    tape_class, make = (tf.GradientTape, tf.constant) if mode == "eager" else \
        (ltf.GradientTape, ltf.constant)

    def step(x, y):
        with tape_class() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    fn = lazyx.compile(step) if mode == "compiled" else step
    out = []
    for k in range(steps):
        rng = np.random.default_rng(k)
        loss = fn(make(rng.standard_normal((8, 4)).astype(np.float32)),
                  make(rng.standard_normal((8, 2)).astype(np.float32)))
        if mode == "lazy" and k == 0:
            _no_read_yet()  # the optimizer's conds read nothing
        if mode != "eager":
            ltf.sync()
        out.append((float(np.asarray(loss)), [v.numpy().copy() for v in model.variables],
                    float(np.asarray(opt.iterations))))
    return out


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("mode", ["lazy", "compiled"])
def test_keras_optimizers_that_branch_on_the_step_are_lazy(name, mode):
    lazyx.reset_metrics()
    got = _train(OPTIMIZERS[name], mode)
    m = lazyx.metrics()
    assert m["fallback_ops"] == {}
    if mode == "compiled":
        assert m["replays"] >= 3
    want = _train(OPTIMIZERS[name], "eager")
    for (gl, gw, gi), (wl, ww, wi) in zip(got, want):
        np.testing.assert_allclose(gl, wl, rtol=1e-5)
        assert gi == wi
        for g, w in zip(gw, ww):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_a_compiled_step_with_a_cond_replays_both_outcomes():
    v = tf.Variable(np.zeros(3, np.float32))

    def step(x, t):
        return tf.cond(tf.reduce_sum(x) > t, lambda: v.assign_add(x) * 1.0,
                       lambda: v.assign_sub(x * 2.0) * 1.0)
    f = lazyx.compile(step)
    ve = tf.Variable(np.zeros(3, np.float32))
    lazyx.reset_metrics()
    for k, t in enumerate([0.0, 100.0, 0.0, 100.0, -100.0]):
        x = np.array([1.0, 2.0, 3.0], np.float32) * (k + 1)
        got = f(ltf.constant(x), ltf.constant(np.float32(t)))
        want = ve.assign_add(x) if x.sum() > t else ve.assign_sub(x * 2.0)
        np.testing.assert_allclose(np.asarray(got), want.numpy())
        np.testing.assert_allclose(v.numpy(), ve.numpy())
    assert lazyx.metrics()["replays"] >= 3


@pytest.mark.parametrize("flag", [True, False])
def test_a_branch_with_an_op_run_eagerly_stops_before_it(flag):
    """tf.where(x) (a result shape that depends on values) runs eagerly on TF: the true branch
    stops before it, and only the branch the predicate picks counts, fallbacks included."""
    def run(make):
        v = tf.Variable(np.ones(3, np.float32))
        x = make(X[0])

        def on_true():
            v.assign_add(x)
            return tf.cast(tf.size(tf.where(v > 1.0)), tf.float32)
        out = tf.cond(make(flag), on_true, lambda: v.assign(x * 2.0) * 0.0 + 5.0)
        return out, v
    lazyx.reset_metrics()
    got, gv = run(ltf.constant)
    ops = lazyx.metrics()["fallback_ops"]
    assert sum(ops.values()) == (2 if flag else 1), ops  # the predicate, and tf.where if run
    want, wv = run(tf.constant)
    np.testing.assert_allclose(np.asarray(got), want.numpy())
    np.testing.assert_allclose(gv.numpy(), wv.numpy())
