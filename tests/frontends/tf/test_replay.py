"""lazyx.compile with TensorFlow: a step updating tf.Variables under ltf.GradientTape
replays with the uncompiled lazy run's numbers (and eager TF's within tolerance), the
variables are written back, and a Keras model with a Keras optimizer (whose `iterations`
counter is read through a tf.Variable operand) is replayed and trains like eager Keras."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import lazyx  # noqa: E402
import lazyx.frontends.tf as ltf  # noqa: E402


def _data(steps):
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((8, 4)).astype(np.float32),
             rng.standard_normal((8, 3)).astype(np.float32)) for _ in range(steps)]


def _variables():
    rng = np.random.default_rng(1)
    return (tf.Variable(rng.standard_normal((4, 3)).astype(np.float32)),
            tf.Variable(np.zeros(3, np.float32)))


def _sgd_step(w, b, tape_cls):
    def step(x, y, lr):
        with tape_cls() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(lr * gw)
        b.assign_sub(lr * gb)
        return loss
    return step


def test_variable_updates_replay_like_the_uncompiled_run():
    data = _data(5)
    eager_w, eager_b = _variables()
    plain_w, plain_b = _variables()
    comp_w, comp_b = _variables()
    eager = _sgd_step(eager_w, eager_b, tf.GradientTape)
    plain = _sgd_step(plain_w, plain_b, ltf.GradientTape)
    comp = lazyx.compile(_sgd_step(comp_w, comp_b, ltf.GradientTape))
    lazyx.reset_metrics()
    for k, (x, y) in enumerate(data):
        lr = 0.1 / (k + 1)
        want = float(eager(tf.constant(x), tf.constant(y), lr))
        a = plain(ltf.constant(x), ltf.constant(y), lr)
        ltf.sync()
        b = comp(ltf.constant(x), ltf.constant(y), lr)
        assert float(np.asarray(b)) == float(np.asarray(a))
        np.testing.assert_allclose(float(np.asarray(b)), want, rtol=1e-5)
    assert lazyx.metrics()["replays"] >= 3
    np.testing.assert_array_equal(comp_w.numpy(), plain_w.numpy())  # written back
    np.testing.assert_allclose(comp_w.numpy(), eager_w.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(comp_b.numpy(), plain_b.numpy())


@pytest.mark.parametrize("as_arguments", [False, True], ids=["referred", "arguments"])
def test_keras_model_with_keras_optimizer_is_replayed_and_trains_like_eager(as_arguments):
    """Keras' Adam reads its `iterations` variable through tf.add(variable, tensor), which TF's
    type-based dispatch never hands to lazyx: the variable's conversion must refuse (while it
    holds a lazy value) so the read stays in the step and the step is replayed. The model and
    optimizer may also be the step's arguments: their variables are state all the same."""
    data = _data(5)
    losses, weights, replays = {}, {}, {}
    for mode in ("eager", "lazy", "compiled"):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(3)])
        opt = keras.optimizers.Adam(0.01)
        tape_cls = tf.GradientTape if mode == "eager" else ltf.GradientTape
        make = tf.constant if mode == "eager" else ltf.constant

        def step(m, o, x, y):
            with tape_cls() as tape:
                loss = tf.reduce_mean(tf.square(m(x) - y))
            grads = tape.gradient(loss, m.trainable_variables)
            o.apply_gradients(zip(grads, m.trainable_variables))
            return loss

        if as_arguments:
            run = lazyx.compile(step) if mode == "compiled" else step
        else:
            def referring(x, y):  # refers to model and opt through its closure
                return step(model, opt, x, y)
            run = lazyx.compile(referring) if mode == "compiled" else referring
        lazyx.reset_metrics()
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no "runs lazily instead" warning
            for x, y in data:
                loss = run(model, opt, make(x), make(y)) if as_arguments else \
                    run(make(x), make(y))
                ltf.sync()
                out.append(float(np.asarray(loss)))
        losses[mode], replays[mode] = out, lazyx.metrics()["replays"]
        weights[mode] = [v.numpy() for v in model.variables + opt.variables]
    # the first call builds Adam's slots (new state the guard did not know), so the second
    # call traces again; every later call is replayed
    assert replays["compiled"] == len(data) - 2, replays
    assert lazyx.metrics()["fallback_ops"] == {}
    for mode in ("lazy", "compiled"):
        np.testing.assert_allclose(losses[mode], losses["eager"], rtol=1e-5)
        for got, want in zip(weights[mode], weights["eager"]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert float(opt.iterations.numpy()) == len(data)  # the counter, written back


def test_eager_tensors_are_refused():
    step = lazyx.compile(lambda x: x * 2)
    with pytest.raises(TypeError, match="lazy"):
        step(tf.ones(2))


def test_variables_passed_as_arguments_are_assigned_in_each_call():
    # tf.Variables in the step's arguments (here in a list, two of them in turn): the
    # replays never assigned them, so every call after the trace read the same stale value
    lazy = [tf.Variable(np.ones(3, np.float32)), tf.Variable(np.full(3, 5.0, np.float32))]
    eager = [tf.Variable(np.ones(3, np.float32)), tf.Variable(np.full(3, 5.0, np.float32))]
    x = np.full(3, 2.0, np.float32)

    def make(tape_cls):
        def step(vs, x):
            with tape_cls() as tape:
                loss = tf.reduce_sum(vs[0] * vs[0] * x)
            vs[0].assign_sub(0.1 * tape.gradient(loss, vs[0]))
            return loss
        return step

    compiled, plain = lazyx.compile(make(ltf.GradientTape)), make(tf.GradientTape)
    lazyx.reset_metrics()
    for i in range(6):
        got = compiled([lazy[i % 2]], ltf.constant(x))
        want = plain([eager[i % 2]], tf.constant(x))
        ltf.sync()
        np.testing.assert_allclose(float(np.asarray(got)), float(want), rtol=1e-6)
        for a, b in zip(lazy, eager):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    assert lazyx.metrics()["replays"] >= 4


def test_a_split_step_branching_on_a_bool_it_reads_replays_like_the_uncompiled_run():
    """A bool read inside the step (`if tf.reduce_all(...)`) and a print: with
    on_observe="split" the step replays piece by piece, and a call whose bool differs
    traces its own variant, with the uncompiled lazy run's numbers."""
    data = _data(8)
    plain_w, plain_b = _variables()
    comp_w, comp_b = _variables()

    def make(w, b):
        def step(x, y, lr):
            with ltf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            gw, gb = tape.gradient(loss, [w, b])
            print("loss", loss)
            if tf.reduce_all(tf.abs(gw) < 1.0):  # a bool read: guarded by value
                lr = lr * 2
            w.assign_sub(lr * gw)
            b.assign_sub(lr * gb)
            return loss
        return step

    plain = make(plain_w, plain_b)
    comp = lazyx.compile(make(comp_w, comp_b), on_observe="split")
    lazyx.reset_metrics()
    for k, (x, y) in enumerate(data):
        a = plain(ltf.constant(x), ltf.constant(y * (k % 3)), 0.05)
        b = comp(ltf.constant(x), ltf.constant(y * (k % 3)), 0.05)
        np.testing.assert_allclose(float(np.asarray(b)), float(np.asarray(a)), rtol=1e-6)
    np.testing.assert_allclose(comp_w.numpy(), plain_w.numpy(), rtol=1e-6)
    np.testing.assert_allclose(comp_b.numpy(), plain_b.numpy(), rtol=1e-6)
    assert lazyx.metrics()["replays"] >= 2


_CHANGES = {
    "layer.trainable = False": (lambda: keras.optimizers.SGD(0.1),
                                lambda m, o: setattr(m.layers[0], "trainable", False)),
    "optimizer weight_decay": (lambda: keras.optimizers.AdamW(0.05, weight_decay=0.0),
                               lambda m, o: setattr(o, "weight_decay", 0.5)),
    "optimizer momentum": (lambda: keras.optimizers.SGD(0.1, momentum=0.9),
                           lambda m, o: setattr(o, "momentum", 0.0)),
    "optimizer clipnorm": (lambda: keras.optimizers.SGD(0.5, clipnorm=10.0),
                           lambda m, o: setattr(o, "clipnorm", 0.01)),
    "activation swapped": (lambda: keras.optimizers.SGD(0.1),
                           lambda m, o: setattr(m.layers[0], "activation",
                                                keras.activations.relu)),
}


@pytest.mark.parametrize("name", list(_CHANGES))
def test_keras_settings_changed_between_calls_trace_again(name):
    """Freezing a layer (fine-tuning), an optimizer's weight decay, momentum or clipnorm, a
    layer's activation, changed between calls: the replay kept the traced call's update (the
    frozen layer kept training), with no miss."""
    make_opt, change = _CHANGES[name]

    def run(compiled):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(6, activation="tanh"),
                                  keras.layers.Dense(3)])
        opt = make_opt()
        tape = ltf.GradientTape if compiled else tf.GradientTape
        make = ltf.constant if compiled else tf.constant

        def step(x, y):
            with tape() as t:
                loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
            grads = t.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        fn = lazyx.compile(step) if compiled else step
        losses = []
        for k, (x, y) in enumerate(_data(6)):
            if k == 3:
                change(model, opt)
            losses.append(float(np.asarray(fn(make(x), make(y)))))
        ltf.sync()
        return losses, [v.numpy() for v in model.weights]
    want, want_weights = run(False)
    got, got_weights = run(True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_weights, want_weights):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_keras_dropout_draws_the_uncompiled_runs_masks():
    """Keras draws a dropout mask from a SeedGenerator whose state is a variable: a plain value
    in the uncompiled run, a lazy one (captured state) while lazyx.compile traces. Both must
    make the same key from it (issue 13: a replay draws exactly the uncompiled run's numbers);
    the lazy seed made a key of its own, so even the traced call drew another mask."""
    rng = np.random.default_rng(3)
    data = [(rng.standard_normal((6, 5)).astype(np.float32),
             rng.standard_normal((6, 2)).astype(np.float32)) for _ in range(5)]
    results = {}
    for mode in ("lazy", "compiled"):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(16, activation="relu"),
                                  keras.layers.Dropout(0.5, seed=7), keras.layers.Dense(2)])
        opt = keras.optimizers.SGD(0.1)

        def step(x, y):
            with ltf.GradientTape() as tape:
                hidden = model(x, training=True)
                loss = tf.reduce_mean(tf.square(hidden - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        run = lazyx.compile(step) if mode == "compiled" else step
        lazyx.reset_metrics()
        losses = [float(np.asarray(run(ltf.constant(x), ltf.constant(y)))) for x, y in data]
        results[mode] = (losses, [v.numpy() for v in model.trainable_variables],
                         lazyx.metrics()["replays"])
    lazy, compiled = results["lazy"], results["compiled"]
    assert compiled[2] >= len(data) - 2  # replayed, not run lazily
    assert len(set(lazy[0])) == len(data)  # (each step drew another mask)
    np.testing.assert_allclose(compiled[0], lazy[0], rtol=1e-6)
    for got, want in zip(compiled[1], lazy[1]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("draw", ["tf.random.normal", "tf.random.Generator", "tf.nn.dropout",
                                  "keras.random"])
def test_random_draws_in_a_compiled_step_are_fresh_at_every_call(draw):
    """TF's own random ops run eagerly (their shapes are known): under lazyx.compile their
    result entered the program as a constant, and every replay reused the traced call's
    noise (a VAE's eps), silently. Each draw here is now lazy and replayed, with the numbers
    of the uncompiled run: keras.random with a SeedGenerator, a tf.random.Generator (its
    state captured), and since 2026-12-03 tf.random.normal and tf.nn.dropout without an op
    seed (the seeds TF's context hands out are run-time parameters, api_random.py)."""
    def run(compiled):
        keras.utils.set_random_seed(0)
        tf.random.set_seed(0)
        gen = tf.random.Generator.from_seed(1)
        seeds = keras.random.SeedGenerator(3)
        w = tf.Variable(np.ones((2, 3), np.float32))

        def step(x):
            with ltf.GradientTape() as tape:  # (a training step's: Keras' seed is lazy there)
                noise = {"tf.random.normal": lambda: tf.random.normal((2, 3)),
                         "tf.random.Generator": lambda: gen.normal((2, 3)),
                         "tf.nn.dropout": lambda: tf.nn.dropout(tf.ones((2, 3)), 0.5),
                         "keras.random": lambda: keras.random.normal((2, 3), seed=seeds),
                         }[draw]()
                loss = tf.reduce_sum(w * noise * x)
            w.assign_sub(0.1 * tape.gradient(loss, w))
            return loss
        f = lazyx.compile(step) if compiled else step
        x = np.full((2, 3), 0.1, np.float32)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # (a first call, then w reset: Keras' SeedGenerator state is still a plain value
            # at a plain run's first draw -- TF's own numbers -- and lazy from then on)
            f(ltf.constant(x))
            w.assign(np.ones((2, 3), np.float32))
            lazyx.reset_metrics()
            out = [float(np.asarray(f(ltf.constant(x)))) for _ in range(4)]
        warned = any("random numbers" in str(c.message) for c in caught)
        return out, w.numpy(), lazyx.metrics()["replays"], warned
    plain, compiled = run(False), run(True)
    assert len(set(plain[0])) == 4  # (fresh noise at each call)
    np.testing.assert_allclose(compiled[0], plain[0], rtol=1e-6)
    np.testing.assert_allclose(compiled[1], plain[1], rtol=1e-6)
    assert compiled[2] >= 3 and not compiled[3]


@pytest.mark.parametrize("draw", ["categorical", "shuffle"])
def test_a_draw_of_a_lazy_tensor_keeps_the_step_lazy_with_a_warning(draw):
    """TF's kernel reads a lazy input (a categorical's logits, a shuffled tensor) that lazyx
    does not draw from: the step runs lazily (TF's numbers), never replaying the traced
    call's noise. (An op seed, a truncated normal and other draws of host inputs replay:
    test_tf_random_replay_more.py.)"""
    def step(x):
        if draw == "categorical":  # (no lowering: TF's op reads the logits, a split)
            return tf.random.categorical(x[None] * 0.1, 8)
        return tf.random.shuffle(x)
    f = lazyx.compile(step, on_observe="split")
    lazyx.reset_metrics()
    with pytest.warns(RuntimeWarning, match="observes a value"):
        out = [np.asarray(f(ltf.constant(np.arange(16, dtype=np.float32)))).tobytes()
               for _ in range(3)]
    assert len(set(out)) == 3 and lazyx.metrics()["replays"] == 0


@pytest.mark.parametrize("noise", ["GaussianNoise", "GaussianDropout", "AlphaDropout"])
def test_keras_noise_layers_stay_lazy_and_replay(noise):
    """They draw with tf.random.stateless_normal/uniform from a lazy seed (Keras'
    SeedGenerator state inside a training step): that was a fallback and a sync per step, and
    a CompileError under lazyx.compile. Now lowered (keyed Threefry, as Dropout)."""
    layer_of = {"GaussianNoise": lambda: keras.layers.GaussianNoise(0.3, seed=2),
                "GaussianDropout": lambda: keras.layers.GaussianDropout(0.3, seed=2),
                "AlphaDropout": lambda: keras.layers.AlphaDropout(0.3, seed=2)}[noise]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    y = rng.standard_normal((8, 1)).astype(np.float32)
    results = {}
    for mode in ("lazy", "compiled"):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(6), layer_of(),
                                  keras.layers.Dense(1)])
        opt = keras.optimizers.SGD(0.05)

        def step(a, b):
            with ltf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(a, training=True) - b))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        f = lazyx.compile(step) if mode == "compiled" else step
        before = model.get_weights()
        f(ltf.constant(x), ltf.constant(y))  # (Keras' seed is a plain value at a first draw)
        model.set_weights(before)
        lazyx.reset_metrics()
        losses = [float(np.asarray(f(ltf.constant(x), ltf.constant(y)))) for _ in range(4)]
        results[mode] = (losses, lazyx.metrics())
    lazy, compiled = results["lazy"], results["compiled"]
    assert lazy[1]["fallback_ops"] == {} and compiled[1]["fallback_ops"] == {}
    assert compiled[1]["replays"] >= 3
    assert len(set(lazy[0])) == 4
    np.testing.assert_allclose(compiled[0], lazy[0], rtol=1e-5)


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "BidirectionalGRU"])
def test_a_stateful_rnns_state_is_replayed_state(kind):
    """Keras keeps a stateful RNN's state variables out of `layer.variables`: a replay baked
    the traced call's state and dropped its updates, so outputs drifted from eager from the
    second call, silently. They are state now (also reset_states() between calls)."""
    def make():
        keras.utils.set_random_seed(0)
        rnn = {"SimpleRNN": lambda: keras.layers.SimpleRNN(3, stateful=True),
               "LSTM": lambda: keras.layers.LSTM(3, stateful=True),
               "BidirectionalGRU": lambda: keras.layers.Bidirectional(
                   keras.layers.GRU(2, stateful=True))}[kind]()
        return keras.Sequential([keras.Input((3, 2), batch_size=2), rnn])
    xs = [np.random.default_rng(k).standard_normal((2, 3, 2)).astype(np.float32)
          for k in range(5)]
    runs = {}
    for mode in ("eager", "compiled"):
        model = make()
        f = lazyx.compile(lambda x: model(x)) if mode == "compiled" else model
        make_input = ltf.constant if mode == "compiled" else tf.constant
        lazyx.reset_metrics()
        outs = []
        for k, x in enumerate(xs):
            if k == 3:
                for layer in model._flatten_layers():
                    if getattr(layer, "stateful", False):
                        layer.reset_state()
            outs.append(np.asarray(f(make_input(x))))
        states = [v.numpy() for layer in model.layers for v in
                  tf.nest.flatten([getattr(sub, "states", None) or []
                                   for sub in [layer] + list(getattr(layer, "_layers", []))])]
        runs[mode] = (outs, states, lazyx.metrics()["replays"])
    assert runs["compiled"][2] >= 3
    for got, want in zip(runs["compiled"][0], runs["eager"][0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert len(runs["eager"][1]) > 0
    for got, want in zip(runs["compiled"][1], runs["eager"][1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class _Tempered(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.temperature = 1.0

    def call(self, v):
        return tf.nn.softmax(v / self.temperature)


@pytest.mark.parametrize("what", ["layer attribute", "callable learning rate"])
def test_numbers_the_caller_changes_each_call_are_not_the_traced_ones(what):
    """A custom layer's own float (an annealed softmax temperature) and a Keras optimizer
    whose learning rate is a callable, changed before each call: the replays kept the
    traced call's value, with no miss and no warning."""
    def run(compiled):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), _Tempered()])
        lr = [0.1]
        opt = keras.optimizers.SGD(learning_rate=lambda: lr[0])
        tape = ltf.GradientTape if compiled else tf.GradientTape
        make = ltf.constant if compiled else tf.constant

        def step(x, y):
            with tape() as t:
                loss = tf.reduce_mean((model(x) - y) ** 2)
            grads = t.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        fn = lazyx.compile(step) if compiled else step
        losses = []
        for k, (x, y) in enumerate(_data(5)):
            if what == "layer attribute":
                model.layers[-1].temperature = 1.0 / (k + 1)
            else:
                lr[0] = 0.1 * (k + 1)
            losses.append(float(np.asarray(fn(make(x), make(y)))))
        ltf.sync()
        return losses, [v.numpy() for v in model.weights]
    want, want_weights = run(False)
    lazyx.reset_metrics()
    got, got_weights = run(True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_weights, want_weights):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    if what == "callable learning rate":  # (a run-time parameter: not a trace per value)
        assert lazyx.metrics()["replays"] >= 2


def test_a_step_filling_a_fresh_metrics_dict_and_log_is_replayed():
    # `step(x, y, lr, logs, metrics)` appending its loss and setting new keys of a dict each
    # call: the caller's fresh containers get eager TF's values at every call, replays included
    def step_of(w, b, tape_cls):
        def step(x, y, lr, logs, metrics):
            with tape_cls() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(lr * gw)
            b.assign_sub(lr * gb)
            logs.append(loss)
            metrics["grad_norm"] = tf.norm(gw)
            metrics["lr"] = lr
            return loss
        return step

    eager_w, eager_b = _variables()
    comp_w, comp_b = _variables()
    eager = step_of(eager_w, eager_b, tf.GradientTape)
    comp = lazyx.compile(step_of(comp_w, comp_b, ltf.GradientTape))
    lazyx.reset_metrics()
    for k, (x, y) in enumerate(_data(5)):
        lr = 0.1 / (k + 1)
        want_logs, want_metrics, logs, metrics = [], {}, [], {}
        eager(tf.constant(x), tf.constant(y), lr, want_logs, want_metrics)
        comp(ltf.constant(x), ltf.constant(y), lr, logs, metrics)
        assert len(logs) == 1 and sorted(metrics) == ["grad_norm", "lr"]
        np.testing.assert_allclose(float(np.asarray(logs[0])), float(want_logs[0]), rtol=1e-5)
        np.testing.assert_allclose(float(np.asarray(metrics["grad_norm"])),
                                   float(want_metrics["grad_norm"]), rtol=1e-5)
        assert metrics["lr"] == lr and type(metrics["lr"]) is float
    assert lazyx.metrics()["replays"] >= 3
    np.testing.assert_allclose(comp_w.numpy(), eager_w.numpy(), rtol=1e-5, atol=1e-6)
