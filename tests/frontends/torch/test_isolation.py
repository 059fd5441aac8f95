"""Importing lazyx's torch frontend changes nothing for code that does not use it (issue 18):
the same plain-torch program prints the same thing with and without the import, in fresh
processes. The frontend's hooks (hooks.py: Tensor.__repr__, Tensor.numpy, Module.to, ...)
must each act only on lazyx tensors, and hooks.py must hold all of them."""
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import shared  # noqa: E402  (tests/shared.py)

PROGRAM = textwrap.dedent("""
    import torch
    torch.manual_seed(0)
    x = torch.randn(3, 4, requires_grad=True)
    print(repr(x)); print(str(x * 2)); print(repr(torch.zeros(2, dtype=torch.int64)))
    print(x.detach().numpy().round(4).tolist())
    print(repr(torch.tensor([1.5, float("nan")], dtype=torch.float64)))
    m = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU())
    w = m[0].weight
    m2 = m.to(torch.float64)
    print(m2 is m, m[0].weight is w, m[0].weight.dtype, type(m[0].weight).__name__)
    m.to("cpu"); print(m[0].weight.device, torch.__future__.get_swap_module_params_on_conversion())
    y = m(x.double()).sum(); y.backward(); print(x.grad is None, m[0].weight.grad.shape)
    opt = torch.optim.SGD(m.parameters(), lr=0.1); opt.step()
    print(m[0].weight.sum().item().__round__(6))
    print(hasattr(x, "__lazyx_handle__"))
    try:
        torch.ones(2, 3) @ torch.ones(2, 3)
    except RuntimeError as e:
        print("RuntimeError", str(e).splitlines()[0])
    print([d for d in ("cpu", "meta") if torch.empty(1, device=d).device.type == d])
    import warnings
    with warnings.catch_warnings(record=True) as caught:  # pinning asks torch's accelerator
        warnings.simplefilter("always")
        data = torch.utils.data.TensorDataset(torch.arange(6.0).reshape(3, 2))
        print([b[0].tolist() for b in torch.utils.data.DataLoader(data, batch_size=2,
                                                                  pin_memory=True)])
    print(sorted(str(w.message)[:60] for w in caught), torch.accelerator.is_available())
    z = torch.zeros(2, 3); z.copy_(torch.ones(2, 3)); z[0] = torch.arange(3.0); z[1, 1] = 7
    print(z.tolist())

    def written(a, b):  # the copy_ and item-assignment hooks must not break a graph
        out = torch.zeros_like(a)
        out.copy_(a * 2)
        out[0] = b
        return torch.nn.functional.relu(out)
    compiled = torch.compile(written, backend="eager", fullgraph=True)
    print(compiled(torch.ones(2, 3), torch.arange(3.0)).tolist())
""")


def test_plain_torch_code_behaves_the_same_after_importing_the_frontend():
    without = shared.program_output(PROGRAM)
    with_frontend = shared.program_output("import lazyx.frontends.torch\n" + PROGRAM)
    assert len(without) > 10
    # the frontend's class-level hooks are the only visible difference: a lazy-handle
    # property exists on torch.Tensor (raising AttributeError, so hasattr is False) and
    # __repr__ is wrapped; everything a plain program prints is the same
    assert with_frontend == without


def test_every_change_to_framework_globals_is_in_hooks_py():
    import lazyx.frontends.torch.hooks as hooks
    with open(hooks.__file__) as f:
        assert len(shared.GLOBAL_HOOK.findall(f.read())) >= 3  # the scan sees the real ones
    assert shared.hooks_outside("torch") == []
