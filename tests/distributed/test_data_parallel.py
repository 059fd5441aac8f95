"""Data parallel training, batch split on the "data" axis of an 8-device mesh: the losses and
weights of one device (eager), from each frontend; parameters and optimizer state stay on the
mesh between steps, and the repeated step is one cached program."""
import copy
import warnings

import numpy as np
import pytest

import lazyx
from mesh_checks import assert_laid_out, mlp_data, numpy_mlp_steps


def _cached(m, steps, first=2):
    assert m["fallbacks"] == 0, m["fallback_ops"]
    assert m["compiles"] <= first and m["cache_hits"] >= steps - first, m


# ---------------------------------------------------------------- torch

def _torch_train(model, batch, loss_of, steps, mesh, rules=None):
    import torch
    import lazyx.frontends.torch as lt
    lazy = copy.deepcopy(model).to(lt.device)
    lt.shard_parameters(lazy, mesh, rules or {})
    lazy_batch = {k: lt.mark_sharding(v.to(lt.device), mesh, ("data",)) for k, v in batch.items()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lazy_opt = torch.optim.AdamW(lazy.parameters(), lr=1e-3)
    lazyx.reset_metrics()
    for _ in range(steps):
        for net, optimizer, inputs in ((model, opt, batch), (lazy, lazy_opt, lazy_batch)):
            optimizer.zero_grad()
            loss = loss_of(net, inputs)
            loss.backward()
            optimizer.step()
            if net is lazy:
                lt.mark_step()
                torch.testing.assert_close(loss.item(), eager_loss, rtol=1e-4, atol=1e-6)
            else:
                eager_loss = loss.item()
    # AdamW's first steps move each weight by about lr * sign(gradient): a gradient that is
    # ~0 in both runs may round to opposite signs (2 * lr apart), so weights are compared to
    # that scale; the losses above carry the tight claim
    for (name, p), q in zip(model.named_parameters(), lazy.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-3, atol=2e-3 * steps,
                                   msg=name)
    return lazy, lazy_opt, lazyx.metrics()


def test_torch_mlp_adamw():
    torch = pytest.importorskip("torch")
    mesh = lazyx.distributed.mesh((8,), ("data",))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    batch = {"x": torch.randn(16, 8), "y": torch.randint(0, 4, (16,))}
    lazy, opt, m = _torch_train(
        model, batch, lambda net, b: torch.nn.functional.cross_entropy(net(b["x"]), b["y"]),
        steps=6, mesh=mesh)
    _cached(m, 6)
    for p in lazy.parameters():                         # replicated weights, on every device
        assert_laid_out(p, (), mesh)
        assert_laid_out(opt.state[p]["exp_avg_sq"], (), mesh)


def test_huggingface_gpt2_adamw():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    mesh = lazyx.distributed.mesh((4, 2), ("data", "model"))
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2,
                                     n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     bos_token_id=0, eos_token_id=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.GPT2LMHeadModel(config)
    ids = torch.randint(0, 64, (4, 12))
    # data parallel on "data"; the MLP's Conv1D weights (in, out) also split on "model"
    rules = {"*.mlp.c_fc.weight": (None, "model"), "*.mlp.c_proj.weight": ("model", None)}
    lazy, opt, m = _torch_train(model, {"input_ids": ids, "labels": ids},
                                lambda net, b: net(**b).loss, steps=3, mesh=mesh, rules=rules)
    _cached(m, 3)
    assert lazy.lm_head.weight is lazy.transformer.wte.weight  # still tied
    fc = lazy.transformer.h[0].mlp.c_fc.weight
    assert_laid_out(fc, (None, "model"), mesh)
    assert_laid_out(opt.state[fc]["exp_avg"], (None, "model"), mesh)


# ---------------------------------------------------------------- NumPy

def test_numpy_mlp_sgd():
    import lazyx.frontends.numpy as lnp
    mesh = lazyx.distributed.mesh((8,), ("data",))
    x, y, w1, w2 = mlp_data()
    want = numpy_mlp_steps(np, x, y, w1, w2, steps=8)
    lx, ly = lnp.asarray(x), lnp.asarray(y)
    lazyx.shard(lx, mesh, ("data", None))
    lazyx.shard(ly, mesh, ("data",))
    lw1, lw2 = lnp.asarray(w1), lnp.asarray(w2)
    for w in (lw1, lw2):
        lazyx.shard(w, mesh, ())
    lazyx.reset_metrics()
    got = numpy_mlp_steps(lnp, lx, ly, lw1, lw2, steps=8, sync=True)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10)
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)
        assert_laid_out(g, (), mesh)
    m = lazyx.metrics()
    # a step is two graphs (the loss read mid-step, then the update); the first step's inputs
    # are the laid-out originals, later ones the previous step's results (the reference
    # backend's results are plain single-device data): one more compile each, at most
    assert m["compiles"] <= 4 and m["cache_hits"] >= 12, m


# ---------------------------------------------------------------- Keras

def _keras_train(lazy, mesh, steps=6):
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    import lazyx.frontends.tf as ltf
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.LayerNormalization(), keras.layers.Dense(1)])
    opt, loss_fn = keras.optimizers.Adam(0.01), keras.losses.MeanSquaredError()
    rng = np.random.default_rng(5)
    losses = []
    for _ in range(steps):
        xb = rng.standard_normal((32, 8)).astype(np.float32)
        yb = (xb[:, :1] * 2 - xb[:, 1:2]).astype(np.float32)
        if lazy:
            xb, yb = ltf.constant(xb), ltf.constant(yb)
            lazyx.shard(xb, mesh, ("data", None))
            lazyx.shard(yb, mesh, ("data",))
        with (ltf.GradientTape if lazy else tf.GradientTape)() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        if lazy:
            ltf.sync()
        losses.append(float(loss))
    return np.array(losses), [np.asarray(v.numpy()) for v in model.variables]


def test_keras_dense_adam():
    mesh = lazyx.distributed.mesh((8,), ("data",))
    want_losses, want_vars = _keras_train(False, mesh)
    lazyx.reset_metrics()
    got_losses, got_vars = _keras_train(True, mesh)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4)
    for g, w in zip(got_vars, want_vars):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    assert not lazyx.metrics()["fallback_ops"]


# ---------------------------------------------------------------- with lazyx.compile

def test_torch_data_parallel_step_under_lazyx_compile():
    torch = pytest.importorskip("torch")
    import lazyx.frontends.torch as lt
    mesh = lazyx.distributed.mesh((8,), ("data",))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    lazy = copy.deepcopy(model).to(lt.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    lazy_opt = torch.optim.SGD(lazy.parameters(), lr=0.1)
    lx = lt.mark_sharding(x.to(lt.device), mesh, ("data",))
    ly = lt.mark_sharding(y.to(lt.device), mesh, ("data",))

    @lazyx.compile
    def step(xb, yb):
        lazy_opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(lazy(xb), yb)
        loss.backward()
        lazy_opt.step()
        return loss

    lazyx.reset_metrics()
    for _ in range(6):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        got = step(lx, ly)
        torch.testing.assert_close(got.item(), loss.item(), rtol=1e-4, atol=1e-6)
    assert lazyx.metrics()["replays"] >= 3     # the sharded step replays its program
    for p, q in zip(model.parameters(), lazy.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-4, atol=1e-5)


def test_numpy_data_parallel_step_under_lazyx_compile():
    import lazyx.frontends.numpy as lnp
    mesh = lazyx.distributed.mesh((8,), ("data",))
    x, y, w1, w2 = mlp_data()
    want, want_w1, want_w2 = numpy_mlp_steps(np, x, y, w1, w2, steps=5)

    @lazyx.compile
    def step(xb, yb, a, b):
        h = np.tanh(xb @ a)
        err = h @ b - yb
        g_out = 2 * err / err.size
        g_h = (g_out @ b.T) * (1 - h * h)
        return (err ** 2).mean(), a - 0.1 * (xb.T @ g_h), b - 0.1 * (h.T @ g_out)

    lx, ly = lazyx.shard(lnp.asarray(x), mesh, ("data", None)), \
        lazyx.shard(lnp.asarray(y), mesh, ("data", None))
    a, b = lnp.asarray(w1), lnp.asarray(w2)
    lazyx.reset_metrics()
    losses = []
    for _ in range(5):
        loss, a, b = step(lx, ly, a, b)
        losses.append(float(loss))
    np.testing.assert_allclose(losses, want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(a), want_w1, rtol=1e-4, atol=1e-6)
    assert lazyx.metrics()["replays"] >= 3
