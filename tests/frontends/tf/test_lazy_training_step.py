"""The whole Keras training step -- forward, backward, optimizer update, variable assigns --
recorded lazily and run as one program per step (ltf.GradientTape + lazy variable shadows)."""
import numpy as np
import pytest
import tensorflow as tf

import lazyx
import lazyx.frontends.tf as ltf

keras = pytest.importorskip("keras")


def _model(norm):
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                             norm(), keras.layers.Dense(8, activation="tanh"),
                             keras.layers.Dense(1)])


def _stored(variable):
    """What the tf.Variable's buffer holds, read by the raw op (no lazyx hook on the way)."""
    var = variable.value if isinstance(variable, keras.Variable) else variable
    return tf.raw_ops.ReadVariableOp(resource=var.handle, dtype=var.dtype).numpy()


def _train(lazy, optimizer, norm, barrier, steps=20):
    keras.utils.set_random_seed(0)
    model, opt = _model(norm), optimizer()
    loss_fn = keras.losses.MeanSquaredError()
    rng = np.random.default_rng(5)
    losses, per_step = [], []
    make = ltf.constant if lazy else tf.constant
    for _ in range(steps):
        xb = rng.standard_normal((32, 8)).astype(np.float32)
        yb = (xb[:, :1] * 2 - xb[:, 1:2]).astype(np.float32)
        before = lazyx.metrics()
        with (ltf.GradientTape if lazy else tf.GradientTape)() as tape:
            loss = loss_fn(make(yb), model(make(xb), training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        if lazy and barrier:
            ltf.sync()
        losses.append(float(loss))
        after = lazyx.metrics()
        per_step.append({k: after[k] - before[k] for k in ("syncs", "compiles", "executions")})
    if lazy:
        ltf.sync()
    return np.array(losses), model.variables + opt.variables, per_step


CASES = [
    (lambda: keras.optimizers.SGD(0.05, momentum=0.9), keras.layers.LayerNormalization, False),
    (lambda: keras.optimizers.Adam(0.01), keras.layers.BatchNormalization, True),
    # Muon multiplies its momentum variable by a number (`momentum * m`: tf.multiply, a
    # generated op) and orthogonalizes with matmuls; Lamb takes norms (tf.norm, no dispatch
    # hook) of the variables; Ftrl and Lion read them through tf.math.maximum / sign
    (lambda: keras.optimizers.Muon(0.01), keras.layers.LayerNormalization, True),
    (lambda: keras.optimizers.Lamb(0.01), keras.layers.LayerNormalization, True),
    (lambda: keras.optimizers.Ftrl(0.05, l1_regularization_strength=0.01),
     keras.layers.LayerNormalization, True),
    (lambda: keras.optimizers.Lion(0.001), keras.layers.LayerNormalization, True),
]


@pytest.mark.parametrize("optimizer,norm,barrier", CASES,
                         ids=["sgd-momentum", "adam-bn", "muon", "lamb", "ftrl", "lion"])
def test_training_step_is_one_program_and_matches_eager(optimizer, norm, barrier):
    lazyx.reset_metrics()  # fallbacks an earlier test on this worker counted are not ours
    eager_losses, eager_vars, _ = _train(False, optimizer, norm, barrier)
    lazy_losses, lazy_vars, per_step = _train(True, optimizer, norm, barrier)
    np.testing.assert_allclose(lazy_losses, eager_losses, rtol=1e-4)
    if any(optimizer is case[0] for case in CASES[:2]):
        # (the other optimizers are here for how they read variables, at rates that do not
        # suit this model: their loss rises in eager TF as well)
        assert lazy_losses[-1] < lazy_losses[0]
    # after ltf.sync() every tf.Variable (weights, optimizer slots, BN moving statistics,
    # the step counter) holds in its own buffer what eager training left there
    assert len(lazy_vars) == len(eager_vars)
    for got, want in zip(lazy_vars, eager_vars):
        np.testing.assert_allclose(_stored(got), _stored(want), rtol=1e-4, atol=1e-5,
                                   err_msg=got.path)
    # each step is one sync running one program; the repeated step never recompiles
    assert all(s["syncs"] == 1 and s["executions"] == 1 for s in per_step), per_step
    assert sum(s["compiles"] for s in per_step[2:]) == 0, per_step
    assert not lazyx.metrics()["fallback_ops"]


def test_lazy_assigns_record_and_eager_reads_see_them():
    v = tf.Variable([1.0, 2.0, 3.0])
    before = lazyx.metrics()["syncs"]
    v.assign_add(ltf.constant([1.0, 1.0, 1.0]) * 2)
    v.assign_sub(tf.math.square(ltf.constant([1.0, 2.0, 0.0])))
    v.assign(v * 10)                       # reads the lazy value: stays lazy
    assert lazyx.metrics()["syncs"] == before
    np.testing.assert_allclose(_stored(v), [1.0, 2.0, 3.0])   # nothing ran yet
    want = (np.array([1.0, 2.0, 3.0]) + 2 - [1.0, 4.0, 0.0]) * 10
    np.testing.assert_allclose(v.numpy(), want)               # an eager read writes it back
    assert lazyx.metrics()["syncs"] == before + 1
    np.testing.assert_allclose(_stored(v), want)
    v.assign([0.0, 0.0, 1.0])              # an eager assign replaces any lazy value
    np.testing.assert_allclose((tf.convert_to_tensor(v) + 1).numpy(), [1.0, 1.0, 2.0])


def test_lazy_assign_errors_are_tf_errors_at_the_call():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError) as lazy_err:
        v.assign(ltf.constant([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError) as eager_err:
        tf.Variable([1.0, 2.0]).assign(tf.constant([1.0, 2.0, 3.0]))
    assert type(lazy_err.value) is type(eager_err.value)
    with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError)):
        v.assign_add(ltf.constant([1, 2]))
    np.testing.assert_allclose(v.numpy(), [1.0, 2.0])


def test_lazy_tape_gradients_match_eager_and_stay_lazy():
    keras.utils.set_random_seed(3)
    layer = keras.layers.Dense(3, activation="tanh")
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    with tf.GradientTape() as tape:
        eager = tf.reduce_sum(layer(tf.constant(x)) ** 2)
    want = tape.gradient(eager, layer.trainable_variables)
    unused = tf.Variable([1.0])
    with ltf.GradientTape() as tape:
        lazy = tf.reduce_sum(layer(ltf.constant(x)) ** 2)
    got = tape.gradient(lazy, layer.trainable_variables + [unused])
    assert got[-1] is None                 # unconnected, as TF says it
    for g, w in zip(got, want):
        assert isinstance(g, ltf.Tensor)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-6)
    ltf.sync()


def test_lazy_tape_gradients_flow_through_ops_run_eagerly():
    # bessel_j0 and bessel_j1 have no lowering: they run on real TF (a fallback). The lazy tape must
    # still carry the gradient through them (TF's tape for that part), not drop it silently.
    w = tf.Variable([0.5, 1.5, 2.0])
    b = tf.Variable([0.25, -0.5, 1.0])
    x = np.array([1.0, 2.0, 3.0], np.float32)

    def loss_of(t):
        h = t * w + b
        return tf.reduce_sum(tf.math.special.bessel_j0(h * h) * tf.math.special.bessel_j1(h)
                             + h * b)

    with tf.GradientTape() as tape:
        eager = loss_of(tf.constant(x))
    want = tape.gradient(eager, [w, b])
    lazyx.reset_metrics()
    with ltf.GradientTape() as tape:
        lazy = loss_of(ltf.constant(x))
    got = tape.gradient(lazy, [w, b])
    assert set(lazyx.metrics()["fallback_ops"]) >= {"tf.math.special.bessel_j0",
                                                     "tf.math.special.bessel_j1"}
    for g, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), v.numpy(), rtol=1e-5, atol=1e-6)


def _fallback_steps(tape_type, make, observe, steps=3):
    """A few SGD steps whose loss goes through an op run eagerly on TF (bessel_j1); with
    `observe`, the value handed to it was printed (realized) first."""
    w = tf.Variable([0.5, 1.5, 2.0])
    b = tf.Variable([0.25, -0.5, 1.0])
    x = np.array([1.0, 2.0, 3.0], np.float32)
    out = []
    for _ in range(steps):
        with tape_type() as tape:
            h = make(x) * w + b
            if observe:
                str(h)
            loss = tf.reduce_sum(tf.math.special.bessel_j1(h) * 2.0 + h * b)
        gw, gb = tape.gradient(loss, [w, b])
        out.append((np.asarray(gw), np.asarray(gb)))
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
    return out


@pytest.mark.parametrize("observe", [False, True], ids=["plain", "printed-first"])
def test_gradients_through_ops_run_eagerly_stay_right_every_step(observe):
    # From the second step on the variables' shadows already exist, so no real TF read
    # tells TF's tape to watch them: the fallback's part of the gradient used to vanish
    # silently. A printed value is a data leaf: its gradient must reach its computation.
    want = _fallback_steps(tf.GradientTape, tf.constant, observe)
    got = _fallback_steps(ltf.GradientTape, ltf.constant, observe)
    for step, (g, e) in enumerate(zip(got, want)):
        for lazy, eager in zip(g, e):
            np.testing.assert_allclose(lazy, eager, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")


def test_lazy_tape_gradients_flow_through_values_observed_mid_step():
    # looking at an intermediate (here its numpy value) realizes it; later uses must still
    # carry the gradient back through the computation it came from
    w = tf.Variable([0.5, -1.5, 2.0])
    x = np.array([1.0, 2.0, 3.0], np.float32)

    def loss_of(t, observe):
        h = tf.tanh(t * w)
        if observe:
            assert np.isfinite(h.numpy()).all()
        return tf.reduce_sum(h * h * w)

    with tf.GradientTape() as tape:
        eager = loss_of(tf.constant(x), observe=True)
    want = tape.gradient(eager, w)
    with ltf.GradientTape() as tape:
        lazy = loss_of(ltf.constant(x), observe=True)
    np.testing.assert_allclose(np.asarray(tape.gradient(lazy, w)), want.numpy(), rtol=1e-5)


def test_a_value_read_mid_step_and_kept_leaves_later_steps_on_the_usual_path(monkeypatch):
    """A loss read under the tape and kept (a history list) is a realized value while it
    lives (runtime.ORIGINS); a later step's gradient, whose graph does not hold it, takes the
    usual one-walk path (it took the long one, ~2 % more Python calls a step), with eager
    TF's numbers."""
    from lazyx.core import origins, runtime
    w = tf.Variable([0.5, -1.5, 2.0])
    x = np.array([1.0, 2.0, 3.0], np.float32)

    def step(make, tape_type, observe=False):
        with tape_type() as tape:
            loss = tf.reduce_sum(tf.tanh(make(x) * w) * w)
            if observe:
                float(loss)
        return loss, np.asarray(tape.gradient(loss, w))

    want = step(tf.constant, tf.GradientTape)[1]
    kept, _ = step(ltf.constant, ltf.GradientTape, observe=True)
    assert kept.node in runtime.ORIGINS
    walks, walk = [], origins.order_through
    monkeypatch.setattr(origins, "order_through", lambda node: walks.append(node) or walk(node))
    _, got = step(ltf.constant, ltf.GradientTape)
    assert walks == []
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_plain_tape_after_lazy_assign_sees_the_variable():
    w = tf.Variable([1.0, 2.0])
    w.assign_add(ltf.constant([0.5, 0.5]))         # lazy: a shadow
    x = ltf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:                # plain tape: real gradients
        loss = tf.reduce_sum(x * w * w)
    g = tape.gradient(loss, w)
    np.testing.assert_allclose(g.numpy(), 2 * np.array([3.0, 4.0]) * [1.5, 2.5], rtol=1e-6)
    np.testing.assert_allclose(float(loss), 3 * 1.5 ** 2 + 4 * 2.5 ** 2, rtol=1e-6)


@pytest.fixture
def mixed_float16():
    keras.mixed_precision.set_global_policy("mixed_float16")
    yield
    keras.mixed_precision.set_global_policy("float32")


def test_mixed_precision_steps_match_eager(mixed_float16):
    # a mixed-precision layer reads its float32 kernel as float16 inside its call (Keras'
    # autocast scope): lazyx's variable reads must cast the same way, eagerly and lazily
    def train(tape_type, make):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(2, dtype="float32")])
        opt = keras.optimizers.SGD(0.1)
        rng = np.random.default_rng(0)
        losses = []
        for _ in range(3):
            x = rng.standard_normal((6, 4)).astype(np.float32)
            y = rng.standard_normal((6, 2)).astype(np.float32)
            with tape_type() as tape:
                loss = tf.reduce_mean((model(make(x)) - make(y)) ** 2)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            losses.append(float(loss))
        return losses, [v.numpy() for v in model.weights]

    want_losses, want_weights = train(tf.GradientTape, tf.constant)
    got_losses, got_weights = train(ltf.GradientTape, ltf.constant)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-3)
    for g, w in zip(got_weights, want_weights):
        assert g.dtype == w.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3)


def test_gradients_read_one_by_one_run_one_program():
    """Each read computes every gradient sharing its forward and backward (core/observation):
    reading them one by one used to compile and run the whole step once per gradient."""
    keras.utils.set_random_seed(0)
    model = _model(keras.layers.LayerNormalization)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)

    def grads(make, tape_type):
        with tape_type() as tape:
            loss = tf.reduce_sum(model(make(x)) ** 2)
        return tape.gradient(loss, model.trainable_variables)

    want = [g.numpy() for g in grads(tf.constant, tf.GradientTape)]
    lazy = grads(ltf.constant, ltf.GradientTape)
    before = lazyx.metrics()
    got = [g.numpy() for g in lazy]
    assert lazyx.metrics()["executions"] - before["executions"] == 1
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


_REALIZE = {
    "tf.cond on a lazy predicate": lambda h: tf.cond(tf.reduce_mean(h) > -10.0,
                                                     lambda: h * 2.0, lambda: h),
    "bool() (a NaN check)": lambda h: h * 2.0 if bool(tf.reduce_all(tf.math.is_finite(h)))
    else h,
    "lazyx.sync()": lambda h: (lazyx.sync(), h * 2.0)[1],
}


@pytest.mark.parametrize("name", list(_REALIZE))
@pytest.mark.parametrize("tape_type", [tf.GradientTape, ltf.GradientTape],
                         ids=["tf.GradientTape", "ltf.GradientTape"])
def test_a_value_realized_under_a_tape_keeps_the_gradient_behind_it(name, tape_type):
    """An activation realized inside the tape (a cond on it, a NaN check, a barrier) and used
    further: under the plain tf.GradientTape the layers before it got all-zero gradients,
    silently (only ltf.GradientTape kept the realized value's graph)."""
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)

    def grads(tape, make):
        keras.utils.set_random_seed(0)
        first, second = keras.layers.Dense(5, activation="tanh"), keras.layers.Dense(1)
        first.build((None, 4))
        second.build((None, 5))
        with tape() as t:
            h = _REALIZE[name](first(make(x)))
            loss = tf.reduce_mean(second(h) ** 2)
        return [np.asarray(g) for g in t.gradient(loss, [first.kernel, second.kernel])]
    want = grads(tf.GradientTape, tf.constant)
    got = grads(tape_type, ltf.constant)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
