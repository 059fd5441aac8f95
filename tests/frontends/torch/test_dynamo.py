"""torch.compile(fn, backend="lazyx"): Dynamo + AOTAutograd graphs lowered into lazyx's IR,
compared with eager torch on real inputs."""
import copy
import importlib.metadata
import os
import tomllib
import warnings

import pytest
import torch
from hypothesis import given, settings, strategies as st

import lazyx
import lazyx.frontends.torch as lt
from lazyx.core import runtime
from lazyx.frontends.torch import dynamic_shapes, dynamo

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")


pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # (conftest.py)


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))


def _compile(fn):
    return torch.compile(fn, backend=lt.dynamo_backend, dynamic=False)


def test_backend_is_declared_for_torch_to_find():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        eps = tomllib.load(f)["project"]["entry-points"]["torch_dynamo_backends"]
    module, name = eps["lazyx"].split(":")
    assert module == "lazyx.frontends.torch.dynamo" and getattr(dynamo, name) is lt.dynamo_backend
    installed = [ep for ep in importlib.metadata.entry_points(group="torch_dynamo_backends")
                 if ep.name == "lazyx"]
    if installed:  # the tox environments install the wheel: torch resolves the name itself
        from torch._dynamo.backends.registry import lookup_backend
        assert lookup_backend("lazyx") is lt.dynamo_backend


def test_inference_on_cpu_inputs_compiles_once_and_matches_eager():
    model = _mlp()
    compiled = _compile(model)
    with torch.no_grad():
        for seed in range(3):
            x = torch.randn(5, 6, generator=torch.Generator().manual_seed(seed))
            got = compiled(x)
            assert got.device.type == "cpu"
            torch.testing.assert_close(got, model(x), rtol=1e-5, atol=1e-6)
    m = lazyx.metrics()
    assert m["compiles"] == 1 and m["executions"] == 3, m
    assert m["fallbacks"] == 0 and m["syncs"] == 0, m


def test_training_through_aot_autograd_matches_eager():
    model = _mlp()
    twin = copy.deepcopy(model)
    compiled = _compile(twin)
    opt, twin_opt = (torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
                     for m in (model, twin))
    x, y = torch.randn(8, 6), torch.randint(0, 4, (8,))
    for _ in range(3):
        for net, optimizer in ((model, opt), (compiled, twin_opt)):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
            if net is model:
                expected = loss.item()
            else:
                torch.testing.assert_close(loss.item(), expected, rtol=1e-5, atol=0)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)
    m = lazyx.metrics()
    assert m["compiles"] == 2, m  # one forward, one backward program
    assert m["executions"] == 6 and m["fallbacks"] == 0, m


def test_cpu_inputs_written_right_after_the_call_do_not_change_its_results():
    """CPU inputs are lent to XLA without a copy (backends' borrow): each call must be done
    reading them before it returns."""
    model = _mlp()
    compiled = _compile(copy.deepcopy(model))
    x = torch.randn(256, 6)
    with torch.no_grad():
        want = [model(x * k) for k in range(1, 4)]
        inputs = [x * k for k in range(1, 4)]
        got = [compiled(t) for t in inputs]
        for t in inputs:  # overwrite each input as soon as every call has returned
            t.fill_(float("nan"))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def _spy_lending(monkeypatch):
    """The shapes of results handed to a CPU caller without a copy (XLA on CPU only)."""
    lent = []
    backend = runtime.get_backend()
    if hasattr(backend, "lend_to_host"):
        lend = backend.lend_to_host

        def spy(buffer):
            view = lend(buffer)
            if view is not None:
                lent.append(tuple(buffer.shape))
            return view
        monkeypatch.setattr(backend, "lend_to_host", spy)
    return lent


def _lends():
    backend = runtime.get_backend()
    return getattr(backend, "device", None) is not None and backend.device.platform == "cpu"


def test_large_results_become_the_callers_tensors_and_stay_its_own(monkeypatch):
    """A large result that no other output shares is handed over without a copy: the caller
    may write it, and no later call (nor its gradient) sees that."""
    lent = _spy_lending(monkeypatch)
    w = torch.randn(256, 256)  # 256 KiB: above the size where lending beats a copy
    x = torch.randn(256, 256, requires_grad=True)
    compiled = _compile(lambda a: torch.tanh(a @ w) * 2)
    first = compiled(x)
    with torch.no_grad():
        first.fill_(float("nan"))
    second = compiled(x)
    second.sum().backward()
    want = torch.tanh(x.detach() @ w) * 2
    torch.testing.assert_close(second.detach(), want, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(x.grad, ((1 - (want / 2) ** 2) * 2) @ w.T, rtol=1e-4, atol=1e-4)
    # the forward results (twice) and the gradient were handed over
    assert lent == ([(256, 256)] * 3 if _lends() else []), lent


def test_a_result_also_saved_for_the_backward_graph_is_copied(monkeypatch):
    """exp saves its own result for the backward graph: the CPU result must be a copy, or
    writing it would change the gradient."""
    lent = _spy_lending(monkeypatch)
    x = torch.randn(256, 256, requires_grad=True)
    y = _compile(torch.exp)(x)
    with torch.no_grad():
        y.add_(1)
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.exp(x.detach()), rtol=1e-5, atol=1e-5)
    assert lent == ([(256, 256)] if _lends() else []), lent  # the gradient alone


def _spy_inline(monkeypatch):
    """How many programs ran on the calling thread (backends/xla_inline.py; XLA:CPU only)."""
    calls = [0]
    xla = pytest.importorskip("lazyx.backends.xla")
    run = xla._Inline.run  # (its __call__ and a host plan's call both come through here)

    def spy(self, args):
        calls[0] += 1
        return run(self, args)
    monkeypatch.setattr(xla._Inline, "run", spy)
    return calls


@settings(max_examples=12, deadline=None)
@given(dtype=st.sampled_from([torch.float32, torch.float64, torch.int32, torch.int64]),
       shape=st.lists(st.integers(1, 5), min_size=0, max_size=3), seed=st.integers(0, 2**16))
def test_cpu_only_calls_run_on_the_calling_thread_and_match_eager(dtype, shape, seed):
    """A graph called with CPU tensors whose results all go back to the CPU runs its program
    inline (no worker thread to wake); 64-bit dtypes keep their width there."""
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=gen, dtype=dtype)
    else:
        x = torch.randint(-2**20, 2**20, shape, generator=gen, dtype=dtype) * 4099

    def fn(t):
        return (t * 3 + 7) // 2 - t.abs(), (t - 1).sum()
    compiled = _compile(fn)
    # (float32: the sum of up to 125 elements adds in XLA's order, not torch's: 2.4e-6
    # relative apart at seed 8937)
    tol = 1e-5 if dtype == torch.float32 else 1e-6
    with pytest.MonkeyPatch.context() as mp:
        calls = _spy_inline(mp)
        for k in range(3):  # (a new program's first call runs the shared executable)
            got, want = compiled(x + k), fn(x + k)
            for g, w in zip(got, want):
                assert g.device.type == "cpu" and g.dtype == w.dtype
                torch.testing.assert_close(g, w, rtol=tol, atol=tol)
    assert calls[0] >= 2 if _lends() else calls[0] == 0


def test_a_forward_that_saves_for_backward_keeps_the_shared_executable(monkeypatch):
    """Saved activations stay lazy tensors for the backward graph, and the synchronous
    client's buffers must not reach the lazy path: training graphs run on the shared client
    (the inference form of the same model runs inline)."""
    calls = _spy_inline(monkeypatch)
    model = _mlp()
    compiled = _compile(copy.deepcopy(model))
    x = torch.randn(8, 6)
    for _ in range(3):
        compiled(x).sum().backward()
    assert calls[0] == 0
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    assert calls[0] >= 2 if _lends() else calls[0] == 0


def test_lazy_inputs_give_lazy_results_that_compose_with_lazy_code():
    model = _mlp()
    lazy_model = copy.deepcopy(model).to(lt.device)
    compiled = _compile(lazy_model)
    x = torch.randn(5, 6)
    out = compiled(x.to(lt.device) * 2)  # a pending input: the call syncs it first
    lt.mark_step()  # nothing left pending by the lowering (its leaves have no values)
    assert out.device == lt.device
    total = (out * out).sum()  # lazy code after the compiled graph
    total.backward()
    eager = (model(x * 2) ** 2).sum()
    eager.backward()
    torch.testing.assert_close(total.item(), eager.item(), rtol=1e-5, atol=0)
    for p, q in zip(model.parameters(), lazy_model.parameters()):
        assert q.grad.device == lt.device
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-5, atol=1e-6)


def test_lazy_and_cpu_inputs_together_give_lazy_results_and_gradients():
    # a CPU tensor beside lt.device ones (a scalar the model makes, lifted into the graph, as
    # in HF's Falcon): results and gradients stay on the device, where autograd wants them
    w = torch.randn(3, requires_grad=True)
    lazy_w = w.detach().to(lt.device).requires_grad_()
    compiled = torch.compile(lambda w, s: (w.sin() * s).sum(), backend="lazyx")
    out = compiled(lazy_w, torch.tensor(0.5))
    assert out.device == lt.device
    out.backward()
    (w.sin() * 0.5).sum().backward()
    assert lazy_w.grad.device == lt.device
    torch.testing.assert_close(lazy_w.grad.cpu(), w.grad)
    torch.testing.assert_close(out.item(), (w.sin() * 0.5).sum().item())


@torch.library.custom_op("lazyx_test::cube", mutates_args=())
def _cube(x: torch.Tensor) -> torch.Tensor:
    return x * x * x


@_cube.register_fake
def _(x):
    return torch.empty_like(x)


def test_unlowered_node_runs_eagerly_each_call_and_is_counted():
    def fn(x):
        return torch.ops.lazyx_test.cube(torch.sin(x) + 1).sum(dim=0) * 2

    compiled = _compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            x = torch.randn(4, 3)
            torch.testing.assert_close(compiled(x), fn(x), rtol=1e-5, atol=1e-6)
    m = lazyx.metrics()
    assert m["fallback_ops"] == {"lazyx_test.cube.default": 2}, m["fallback_ops"]
    assert m["compiles"] == 2, m  # the IR before the node, and after it


def test_graph_breaks_are_counted_and_explained():
    import io
    said = io.StringIO()

    def fn(x):
        y = torch.tanh(x) * 2
        torch._dynamo.graph_break()
        return y.sum() + 1

    x = torch.randn(3, 3)
    with lazyx.explain(said):  # what LAZYX_DEBUG=1 installs
        torch.testing.assert_close(_compile(fn)(x), fn(x))
    m = lazyx.metrics()
    assert m["graph_breaks"] == 1, m
    assert m["compiles"] == 2, m
    text = said.getvalue()
    assert "lazyx: graph break at" in text and "test_dynamo.py" in text, text
    assert "graph breaks: torch.compile split the code 1 time" in lazyx.analysis()
    # each graph's compile is named at the compiled function's call, not "<unknown>"
    compiles = [line for line in text.splitlines()
                if line.startswith(("lazyx: compile at", "lazyx: recompile at"))]
    assert len(compiles) == 2 and all("test_dynamo.py:" in line for line in compiles), text


def test_lazyx_code_reached_in_a_graph_breaks_eager_region_runs_uncompiled():
    """torch.ctc_loss is not traceable: Dynamo runs it eagerly, and on lt.device tensors that
    reaches lazyx's own Python (a kernel registered for the device, its dispatcher, jax).
    Dynamo compiled those frames as if they were the user's, and failed inside them."""
    torch.manual_seed(0)
    logits = torch.randn(6, 2, 5)
    targets, lengths, target_lengths = torch.tensor([[1, 2], [3, 3]]), \
        torch.tensor([6, 4]), torch.tensor([2, 1])

    def fn(x, t, n, m):
        return torch.nn.functional.ctc_loss(x.log_softmax(-1) * 1.0, t, n, m) * 2

    want = fn(logits, targets, lengths, target_lengths)
    got = _compile(fn)(logits.to(lt.device), targets.to(lt.device), lengths, target_lengths)
    assert lt.is_lazy(got)
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("dynamic", [None, True])
def test_dynamic_shapes_compile_once_per_shape_and_train_like_eager(dynamic, monkeypatch):
    """torch.compile's default (Dynamo makes the batch dimension dynamic at the second shape)
    and dynamic=True: each concrete shape gets its own static lazyx compile, kept; forward and
    gradients match eager torch; nothing falls back."""
    specialized = []
    static_compile = dynamic_shapes._static_compile
    monkeypatch.setattr(dynamic_shapes, "_static_compile",
                        lambda gm, args, *rest: specialized.append(args) or
                        static_compile(gm, args, *rest))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend=lt.dynamo_backend, dynamic=dynamic)
    compiles = []
    for _ in range(2):  # the second pass meets only shapes compiled already
        for n in (5, 7, 9, 7, 5):
            x = torch.randn(n, 4)
            got, want = compiled(x).square().mean(), eager(x).square().mean()
            got.backward()
            want.backward()
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
            for p, q in zip(model.parameters(), eager.parameters()):
                torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
            for p in list(model.parameters()) + list(eager.parameters()):
                p.grad = None
        compiles.append((lazyx.metrics()["compiles"], len(specialized)))
    # the dynamic graph met 5, 7 and 9 (by default its first shape, 5, was Dynamo's static
    # graph, and 5 came back under the dynamic one); nothing new in the second pass
    assert compiles[1] == compiles[0] and compiles[0][1] == 3
    assert lazyx.metrics()["fallback_ops"] == {}


@pytest.mark.parametrize("layer", ["batchnorm", "transformer"])
def test_dynamic_true_compiles_layers_whose_floats_dynamo_passes_as_tensors(layer):
    """dynamic=True makes a module's float attributes (BatchNorm's momentum and eps) 0-d CPU
    tensor inputs read by .item(): each value is baked like a shape, so the graph compiles
    (it ran uncompiled every call) and its running statistics follow eager's."""
    torch.manual_seed(0)
    if layer == "batchnorm":
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8),
                                    torch.nn.ReLU())
        shapes = [(2, 8), (3, 8), (5, 8), (3, 8)]
    else:
        model = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                 batch_first=True)
        shapes = [(2, 3, 8), (2, 5, 8), (3, 4, 8), (2, 5, 8)]
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend=lt.dynamo_backend, dynamic=True)
    for shape in shapes:
        x = torch.randn(*shape)
        got, want = compiled(x), eager(x)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        got.square().mean().backward()
        want.square().mean().backward()
    for (name, a), b in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5, msg=name)
    for a, b in zip(model.buffers(), eager.buffers()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert lazyx.metrics()["fallback_ops"] == {}
    assert lazyx.metrics()["compiles"] > 0


def test_a_dynamic_graph_of_lazy_inputs_gives_lazy_results_per_shape():
    fn = torch.compile(lambda x: torch.tanh(x) * 2 + x.sum(0), backend=lt.dynamo_backend,
                       dynamic=True)
    for n in (3, 5, 3):
        x = torch.randn(n, 4)
        y = fn(x.to(lt.device))
        assert y.device.type == "lazyx"
        torch.testing.assert_close(y.cpu(), torch.tanh(x) * 2 + x.sum(0))
    assert lazyx.metrics()["fallback_ops"] == {}


def test_specializations_kept_per_dynamic_graph_are_bounded(monkeypatch):
    monkeypatch.setattr(dynamic_shapes, "_SHAPES_KEPT", 2)
    made = []
    static_compile = dynamic_shapes._static_compile
    monkeypatch.setattr(dynamic_shapes, "_static_compile",
                        lambda gm, args, *rest: made.append(args[-1].shape[0]) or
                        static_compile(gm, args, *rest))
    fn = torch.compile(lambda x: x * 2, backend=lt.dynamo_backend, dynamic=True)
    for n in (2, 3, 4, 2, 4):
        torch.testing.assert_close(fn(torch.ones(n)), torch.full((n,), 2.0))
    assert made == [2, 3, 4, 2]  # 2 was dropped for 4, so it comes back; 4 was still kept


def test_a_dynamic_graph_that_cannot_be_specialized_runs_uncompiled_counted(monkeypatch):
    from lazyx.frontends.torch import dynamo

    def refuse(gm, inputs, fake_mode):
        raise NotImplementedError("not today")
    monkeypatch.setattr(dynamo, "_compile_static", refuse)
    fn = torch.compile(lambda x: torch.relu(x) * 3, backend=lt.dynamo_backend, dynamic=True)
    x = torch.randn(5, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(fn(x), torch.relu(x) * 3)
    (name,) = lazyx.metrics()["fallback_ops"]
    assert "dynamic shapes" in name and "NotImplementedError" in name


def _installed():
    return any(ep.name == "lazyx"
               for ep in importlib.metadata.entry_points(group="torch_dynamo_backends"))


def test_dropout_draws_new_numbers_each_call():
    torch.manual_seed(0)
    compiled = _compile(lambda x: torch.nn.functional.dropout(x, 0.5, training=True))
    x = torch.ones(64)
    a, b = compiled(x), compiled(x)
    assert not torch.equal(a, b)
    assert set(a.unique().tolist()) <= {0.0, 2.0}
    assert lazyx.metrics()["fallbacks"] == 0


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_dynamo_forward_hashes_like_the_lazy_forward(name):
    """One IR, two capture mechanisms (scripts/dynamo_graph_hash.py runs five models)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "dynamo_graph_hash", os.path.join(ROOT, "scripts", "dynamo_graph_hash.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    torch.manual_seed(0)
    if name == "mlp":
        model, inputs = _mlp(), (torch.randn(8, 6),)
    else:
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
                                    torch.nn.MaxPool2d(2), torch.nn.BatchNorm2d(4),
                                    torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 3))
        inputs = (torch.randn(2, 3, 8, 8),)
    _, lazy_hash, dynamo_hash, why = script.compare(name, model, inputs, lambda out: out)
    assert lazy_hash == dynamo_hash, why


def test_a_graphs_literals_are_constants_of_its_executable():
    before = dynamo.COMPILED[0]
    compiled = _compile(lambda x: torch.tanh(x * 0.9 + 0.1) - 0.25)
    x = torch.randn(4, 5)
    for _ in range(2):
        torch.testing.assert_close(compiled(x), torch.tanh(x * 0.9 + 0.1) - 0.25)
    (graph,) = dynamo.compiled_since(before)
    (segment,) = graph.steps
    executed = segment.exe.program  # (no fixed leaf is left to bind)
    # the IR as lowered keeps them as leaves (its graph_hash is the lazy path's) ...
    assert sum(1 for kind, _, _ in segment.program.leaves if kind != "data") == 3
    # ... the program XLA runs has them as constants: only the input is fed
    assert [kind for kind, _, _ in executed.leaves] == ["data"]
    assert sum(1 for ins in executed.instructions if ins[0] == "constant") == 3


@pytest.mark.parametrize("opt_name,device", [("SGD", lt.device), ("Adam", lt.device),
                                             ("Adam", "cpu"), ("RMSprop", "cpu")])
def test_a_compiled_train_step_updates_lazy_parameters_like_eager(opt_name, device):
    """Dynamo installs the parameters an optimizer updates on the graph module; on lt.device
    they are functional tensors, which AOTAutograd refused to fake ("x must not already be a
    functional tensor"): they are the graph's inputs instead."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    data = [(torch.randn(5, 4), torch.randint(0, 3, (5,))) for _ in range(4)]

    def train(device, compiled):
        model = copy.deepcopy(base).to(device)
        opt = getattr(torch.optim, opt_name)(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()
        run = torch.compile(step, backend="lazyx") if compiled else step
        losses = [float(run(x.to(device), y.to(device))) for x, y in data]
        return losses, [p.detach().cpu() for p in model.parameters()]
    want_losses, want = train("cpu", False)
    lazyx.reset_metrics()
    got_losses, got = train(device, True)
    # (Dynamo writes Adam's addcmul_ as inductor's prims.fma: lowered, not run eagerly)
    assert not lazyx.metrics()["fallback_ops"]
    torch.testing.assert_close(torch.tensor(got_losses), torch.tensor(want_losses),
                               rtol=1e-5, atol=1e-6)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_masked_and_indexed_assignment_on_cpu_inputs_match_eager():
    """A boolean-mask write runs eagerly between two compiled segments; the second segment
    ran on the calling thread's XLA client and refused the first's buffers (xla: "compiled
    for input shardings that disagree")."""
    torch._dynamo.reset()

    def clamp_negative(x):
        y = x.clone()
        y[y < 0] = 0
        return y * 2.0

    def bump(x):
        x[torch.tensor([0, 2])] += 1
        return x.sum(0)
    for fn in (clamp_negative, bump):
        compiled = torch.compile(fn, backend="lazyx")
        for seed in range(3):
            x = torch.randn(4, 5, generator=torch.Generator().manual_seed(seed))
            torch.testing.assert_close(compiled(x.clone()), fn(x.clone()))


@pytest.mark.parametrize("on_device", [False, True])
def test_a_clone_of_an_input_is_a_new_tensor(on_device):
    # x.clone() is no op in the IR: the graph's output was the caller's input itself, and
    # the resize_ Dynamo runs eagerly after the graph resized the caller's tensor
    def g(x):
        return x.clone().resize_(2, 3).sum()

    x = torch.arange(20.).view(4, 5)
    if on_device:
        x = x.to(lt.device)
    before = x.cpu().clone()
    out = _compile(g)(x)
    assert out.item() == 15.0
    assert x.shape == (4, 5)
    torch.testing.assert_close(x.cpu(), before)

    def h(x):
        y = x.clone()
        return y, x

    y, same = _compile(h)(x)
    assert same is x or on_device  # (AOT hands an input back as itself on the CPU)
    y.add_(1)
    torch.testing.assert_close(x.cpu(), before)


@pytest.mark.parametrize("name", ["solve", "inv", "cholesky"])
def test_linalg_ops_with_an_effect_token_compile(name):
    """torch.linalg.solve, inv and cholesky check their `info` through an effectful op, which
    AOTAutograd threads a token through: the token came back as an output with no value
    (`'NoneType' object has no attribute 'is_ready'`; the parametrizations tutorial's Cayley
    map). It is the input handed back; the check runs, and raises torch's error."""
    torch._dynamo.reset()
    a = torch.eye(4) * 2 + torch.linspace(-0.3, 0.3, 16).reshape(4, 4)
    a = a @ a.T
    b = torch.linspace(1, 2, 8).reshape(4, 2)
    fns = {"solve": lambda a, b: torch.linalg.solve(a, b),
           "inv": lambda a, b: torch.linalg.inv(a) @ b,
           "cholesky": lambda a, b: torch.linalg.cholesky(a).sum() + b}
    fn = fns[name]
    compiled = torch.compile(fn, backend="lazyx")
    for _ in range(2):
        torch.testing.assert_close(compiled(a, b), fn(a, b))
    if name != "cholesky":
        with pytest.raises(torch.linalg.LinAlgError):
            compiled(torch.zeros(4, 4), b)
