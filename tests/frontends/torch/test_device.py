"""The lazyx device: factories, transfers, materialization and its sync causes, mark_step."""
import numpy as np
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


def _causes():
    return dict(lazyx.metrics()["sync_causes"])


@pytest.mark.parametrize("make", [
    lambda d: torch.zeros(2, 3, device=d), lambda d: torch.ones(4, device=d),
    lambda d: torch.full((2, 2), 7.5, device=d), lambda d: torch.arange(2, 11, 3, device=d),
    lambda d: torch.linspace(-1, 1, 7, device=d), lambda d: torch.eye(3, 4, device=d),
    lambda d: torch.empty(2, 2, device=d).fill_(3), lambda d: torch.tensor([1, 2], device=d),
    lambda d: torch.arange(5, dtype=torch.float64, device=d),
])
def test_factories_match_cpu(make):
    lazy = make(lt.device)
    assert lazy.device == lt.device and lt.is_lazy(lazy)
    expected = make("cpu")
    got = lazy.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected)


def test_random_factories_follow_manual_seed():
    torch.manual_seed(3)
    a = torch.randn(5, device=lt.device), torch.rand(5, device=lt.device), \
        torch.randint(0, 10, (5,), device=lt.device)
    torch.manual_seed(3)
    b = torch.randn(5, device=lt.device), torch.rand(5, device=lt.device), \
        torch.randint(0, 10, (5,), device=lt.device)
    for x, y in zip(a, b):
        torch.testing.assert_close(x.cpu(), y.cpu())
    assert a[2].dtype == torch.int64 and 0 <= a[2].cpu().min() and a[2].cpu().max() < 10
    u = torch.rand(20000, device=lt.device).cpu()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    n = torch.randn(20000, device=lt.device).cpu()
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05


def test_random_like_ops_stay_lazy_and_follow_manual_seed():
    x = torch.zeros(20000, device=lt.device)
    lazyx.reset_metrics()
    torch.manual_seed(5)
    first = [torch.rand_like(x), torch.randn_like(x, dtype=torch.float64),
             torch.randint_like(x, 3, 9), torch.randint_like(x, 4)]
    torch.manual_seed(5)
    again = [torch.rand_like(x), torch.randn_like(x, dtype=torch.float64),
             torch.randint_like(x, 3, 9), torch.randint_like(x, 4)]
    for a, b in zip(first, again):
        torch.testing.assert_close(a.cpu(), b.cpu())
    u, n, r, k = (t.cpu() for t in first)
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    assert n.dtype == torch.float64 and abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    assert set(r.unique().tolist()) == set(range(3, 9)) and r.dtype == torch.float32
    assert set(k.unique().tolist()) == set(range(4))
    assert lazyx.metrics()["fallbacks"] == 0


@pytest.mark.parametrize("convert", [lambda t: t.to(torch.long), lambda t: t.float(),
                                     lambda t: t.to(torch.float64), lambda t: t.bool().int()])
def test_dtype_conversions_stay_functional(convert):
    # torch's functionalization kernel for _to_copy re-wraps results only for the XLA and Lazy
    # device types; a raw result escaped, and an in-place op mixing it with a functional
    # tensor (HF T5's relative position buckets) raised an internal assert
    x = torch.tensor([-2.0, 0.0, 3.0])
    lazy = torch.tensor([-2.0, 0.0, 3.0], device=lt.device)
    got, want = convert(lazy > 0), convert(x > 0)
    assert torch._is_functional_tensor(got)
    got += convert(lazy) * 2
    want += convert(x) * 2
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64,
                                   torch.int8, torch.uint8, torch.int32, torch.int64,
                                   torch.bool, torch.complex64, torch.complex128])
def test_item_gives_the_python_number_eager_torch_gives(dtype):
    # .item() reads NumPy's scalar for most dtypes (bfloat16 goes through a torch tensor):
    # the value and its Python type must be eager torch's, pending or already computed
    for value in (-3.7, 0.0, 1.0, 250.5):
        eager = torch.tensor(value).to(dtype)
        for lazy, cpu in ((eager.to(lt.device), eager), (eager.to(lt.device) * 1, eager * 1)):
            got, want = lazy.item(), cpu.item()
            assert type(got) is type(want) and got == want


def test_item_of_several_elements_raises_torchs_error():
    with pytest.raises(RuntimeError) as eager:
        torch.ones(2).item()
    with pytest.raises(RuntimeError) as lazy:
        torch.ones(2).to(lt.device).item()
    assert str(lazy.value) == str(eager.value)


def test_materialization_and_sync_causes():
    x = torch.arange(6.0).reshape(2, 3)
    lazy = x.to(lt.device) * 2
    lazyx.reset_metrics()
    assert lazy.__lazyx_handle__.pending
    np.testing.assert_allclose(lazy.numpy(), (x * 2).numpy())
    assert _causes() == {"convert": 1}
    lazy = x.to(lt.device) + 1
    assert lazy.sum().item() == (x + 1).sum().item()
    assert lazy.tolist() == (x + 1).tolist()
    assert bool((lazy > 0).all())
    if lazy[0, 0] > 100:  # Python control flow on a lazy value
        pytest.fail("wrong branch")
    fresh = x.to(lt.device) + 1
    assert "device='lazyx:0'" in repr(fresh) and "tensor([[1., 2., 3.]" in str(fresh)
    causes = _causes()
    assert causes["item"] >= 3 and causes["print"] >= 1


def test_mark_step_is_the_barrier():
    a = torch.randn(3, 3).to(lt.device)
    b = a @ a + 1
    handle = b.__lazyx_handle__
    assert handle.pending
    lazyx.reset_metrics()
    lt.mark_step()
    assert not b.__lazyx_handle__.pending
    assert lazyx.metrics()["sync_causes"] == {"explicit": 1}


def test_module_to_device_keeps_parameters_and_ties():
    model = torch.nn.Linear(3, 2)
    shared = torch.nn.Sequential(model, torch.nn.ReLU(), torch.nn.Linear(2, 3))
    shared[2].weight = torch.nn.Parameter(model.weight.t().contiguous().t().clone())
    shared[0].bias = shared[0].bias  # same object twice below: ties must survive
    tied = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 2), "b": torch.nn.Linear(2, 2)})
    tied["b"].weight = tied["a"].weight
    tied.to(lt.device)
    assert tied["a"].weight is tied["b"].weight
    assert isinstance(tied["a"].weight, torch.nn.Parameter) and tied["a"].weight.is_leaf
    assert tied["a"].weight.device == lt.device


def test_module_to_leaves_torchs_global_conversion_default_alone():
    # the parameter swap is scoped to conversions onto lt.device: a CPU model elsewhere in
    # the process still gets torch's default (new Parameter objects for a dtype change)
    assert torch.__future__.get_swap_module_params_on_conversion() is False
    model = torch.nn.Linear(2, 2)
    model.to(lt.device, torch.float64)
    assert torch.__future__.get_swap_module_params_on_conversion() is False
    cpu = torch.nn.Linear(2, 2)
    weight = cpu.weight
    cpu.to(torch.float64)
    assert cpu.weight.dtype == torch.float64 and weight.dtype == torch.float64  # set_data path
    assert model.weight.device == lt.device and model.weight.dtype == torch.float64


@pytest.mark.parametrize("kind", ["jit.trace", "export"])
def test_modules_torch_cannot_swap_move_to_the_device_the_default_way(kind):
    """A TorchScript module's (and torch.export's GraphModule's) parameters cannot be swapped:
    Module.to moved them by swapping (to keep ties) and raised "Couldn't swap"."""
    torch.manual_seed(0)
    linear, x = torch.nn.Linear(3, 2), torch.randn(4, 3)
    module = torch.jit.trace(linear, x) if kind == "jit.trace" else \
        torch.export.export(linear, (x,)).module()
    want = module(x)
    module.to(lt.device)
    assert all(p.device == lt.device for p in module.parameters())
    torch.testing.assert_close(module(x.to(lt.device)).cpu(), want)


def test_cpu_tensor_mixed_with_lazy_raises_like_torch():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device=lt.device) + torch.ones(3)
    # a CPU scalar tensor is fine, as in torch
    torch.testing.assert_close((torch.ones(3, device=lt.device) + torch.tensor(2.0)).cpu(),
                               torch.full((3,), 3.0))


def test_gradients_read_one_by_one_run_one_program():
    """Each read computes every gradient sharing its backward (core/observation): reading
    them one by one used to compile and run the whole step once per gradient."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    x = torch.randn(5, 6)
    model(x).pow(2).sum().backward()
    want = [p.grad.clone() for p in model.parameters()]
    lazy_model = model.to(lt.device)
    lazy_model.zero_grad(set_to_none=True)
    lazy_model(x.to(lt.device)).pow(2).sum().backward()
    before = lazyx.metrics()
    got = [p.grad.cpu() for p in lazy_model.parameters()]
    assert lazyx.metrics()["executions"] - before["executions"] == 1
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: torch.arange(12.0).reshape(3, 4),                       # plain
    lambda: torch.arange(12.0).reshape(3, 4).t(),                   # not contiguous
    lambda: torch.arange(12.0).reshape(3, 4).requires_grad_(),      # needs grad
    lambda: torch.complex(torch.arange(4.0), torch.ones(4)).conj(),  # a lazy conjugate bit
    lambda: torch.arange(4.0)._neg_view(),                          # a lazy negation bit
    lambda: torch.arange(4.0).to(torch.bfloat16),                   # no NumPy dtype
])
def test_cpu_tensors_reach_the_device_with_their_values(make):
    """Every kind of CPU tensor (the plain one takes a shortcut) arrives with its values."""
    cpu = make()
    lazy = cpu.to(lt.device)
    assert torch.equal(lazy.cpu(), cpu.detach().resolve_conj().resolve_neg())
    assert lazy.dtype == cpu.dtype


OFF_DEVICE = {
    "zeros_like": lambda x: torch.zeros_like(x, device="cpu"),
    "full_like": lambda x: torch.full_like(x, 2.5, device="cpu"),
    "ones_like int": lambda x: torch.ones_like(x, dtype=torch.int32, device="cpu"),
    "new_zeros": lambda x: x.new_zeros((2, 3), device="cpu"),
    "new_full": lambda x: x.new_full((2,), 7.0, device="cpu"),
    "linspace of lazy bounds": lambda x: torch.linspace(x[1], x[2], 5),
    "logspace of lazy bounds": lambda x: torch.logspace(x[0], x[2], 4),
    "then an op": lambda x: torch.zeros_like(x, device="cpu") + torch.arange(3.0),
}


@pytest.mark.parametrize("name", sorted(OFF_DEVICE))
def test_a_result_asked_for_on_the_cpu_is_a_cpu_tensor_with_its_values(name):
    """eager puts these on the CPU; on lazyx they were left on lt.device (the device= was
    ignored), or came back wrapped by functionalization with numpy() reading garbage"""
    x = torch.tensor([0.5, 1.0, 2.0])
    want = OFF_DEVICE[name](x)
    got = OFF_DEVICE[name](x.to(lt.device))
    assert got.device == want.device and got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6)
    torch.testing.assert_close(got.cpu(), want)


def test_random_like_on_the_cpu_draws_from_the_cpu_generator():
    x = torch.ones(4)
    torch.manual_seed(3)
    want = torch.rand_like(x, device="cpu")
    lazy = x.to(lt.device)
    torch.manual_seed(3)
    got = torch.rand_like(lazy, device="cpu")
    assert got.device.type == "cpu"
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("back", [lambda m: m.cpu(), lambda m: m.to("cpu"),
                                  lambda m: m.to(torch.device("cpu"), torch.float64)],
                         ids=["cpu()", "to(cpu)", "to(cpu, float64)"])
def test_tied_weights_stay_tied_on_the_way_back_to_the_cpu(back):
    """An embedding shared with the output layer (HF's tie_weights) is one Parameter on the
    device and again after moving back (torch re-created one per module: two); reading the
    values back is the user's request, not a fallback."""
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4)
            self.out = torch.nn.Linear(4, 10, bias=False)
            self.out.weight = self.emb.weight

    model = Tied()
    start = model.emb.weight.detach().clone()
    model.to(lt.device)
    assert model.out.weight is model.emb.weight
    lazyx.reset_metrics()
    back(model)
    assert model.out.weight is model.emb.weight and len(list(model.parameters())) == 1
    assert model.emb.weight.device.type == "cpu"
    torch.testing.assert_close(model.emb.weight.detach().float(), start)
    assert lazyx.metrics()["fallbacks"] == 0


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpointed_dropout_recomputes_the_forwards_mask(reentrant):
    """torch.utils.checkpoint saves and restores a device's RNG state only where the device
    module says `_initialized`: without it the recomputation drew a new dropout mask, and the
    gradients were those of another mask (HF gradient checkpointing with dropout)."""
    from torch.utils.checkpoint import checkpoint
    grads = []
    for use_checkpoint in (True, False):
        torch.manual_seed(5)
        w = torch.randn(8, 8).to(lt.device).requires_grad_()
        x = torch.randn(4, 8).to(lt.device).requires_grad_()  # (the reentrant form needs one)

        def f(x):
            return torch.nn.functional.dropout(x @ w, p=0.5, training=True)
        torch.manual_seed(7)
        y = checkpoint(f, x, use_reentrant=reentrant) if use_checkpoint else f(x)
        y.square().sum().backward()
        grads.append(w.grad.cpu())
    torch.testing.assert_close(grads[0], grads[1])


def test_fork_rng_restores_the_lazyx_stream():
    torch.manual_seed(3)
    with torch.random.fork_rng(device_type="lazyx"):
        torch.rand(5, device=lt.device).cpu()
    after_fork = torch.rand(5, device=lt.device).cpu()
    torch.manual_seed(3)
    torch.testing.assert_close(after_fork, torch.rand(5, device=lt.device).cpu())
    state = torch.lazyx.get_rng_state()
    a = torch.rand(3, device=lt.device).cpu()
    torch.lazyx.set_rng_state(state)
    torch.testing.assert_close(torch.rand(3, device=lt.device).cpu(), a)
    with pytest.raises(RuntimeError, match="uint8 tensor of 16 bytes"):
        torch.lazyx.set_rng_state(torch.zeros(3))


def test_a_counter_read_only_by_the_update_is_computed_with_it():
    """Capturable Adam keeps `step` on the device and adds 1 each step; only the parameter
    updates read it, nothing of the loss. Reading the loss cuts the updates (they share the
    backward) and computes step on the way: left pending, its graph grew one node a step and
    every step compiled a new program (what lazyx.compile's lazy fallback hit with AdamW)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1).to(lt.device)
    opt = torch.optim.Adam(model.parameters(), lr=0.1, capturable=True)
    x, y = torch.randn(8, 4).to(lt.device), torch.randn(8, 1).to(lt.device)
    compiles = []
    for _ in range(5):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
        compiles.append(lazyx.metrics()["compiles"])
    assert compiles[-1] == compiles[2], compiles
