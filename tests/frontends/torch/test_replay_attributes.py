"""lazyx.compile and tensors a module keeps as plain attributes (not parameters or buffers),
against eager torch. Before, a replay rebound the tensor a forward stored (`self.last = y`)
in place, so a tensor kept from an earlier call changed; a table kept as an attribute made
every call trace again. (A returned plain object holding tensors: test_compiled_rebinding.py
in the NumPy tests; a returned module, which holds state, still replays: below.)"""
import warnings

import torch

import lazyx
import lazyx.frontends.torch as lt


class _Keeps(torch.nn.Module):
    """Stores what its forward computed, as models do for inspection."""
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x) * 2
        self.lin.last = y  # (on a submodule: found by name through the module tree)
        self.total = y.sum()
        return y.mean()


def _inputs(n=5):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(4, 3, generator=g) for _ in range(n)]


def test_tensors_a_forward_stores_keep_each_calls_value():
    torch.manual_seed(0)
    eager = _Keeps()
    lazy = _Keeps()
    lazy.load_state_dict(eager.state_dict())
    lazy.to(lt.device)
    step = lazyx.compile(lazy)
    lazyx.reset_metrics()
    kept_eager, kept_lazy = [], []
    for x in _inputs():
        eager(x)
        kept_eager.append((eager.lin.last, eager.total))
        step(x.to(lt.device))
        kept_lazy.append((lazy.lin.last, lazy.total))
    assert lazyx.metrics()["replays"] >= 3
    for (ye, te), (yl, tl) in zip(kept_eager, kept_lazy):
        torch.testing.assert_close(yl.cpu(), ye.detach())
        torch.testing.assert_close(tl.cpu(), te.detach())
    assert len({id(y) for y, _ in kept_lazy}) == len(kept_lazy)


class _Table(torch.nn.Module):
    """A positional table kept as a plain attribute (never registered as a buffer)."""
    def __init__(self, device):
        super().__init__()
        self.pe = torch.arange(3.0).to(device)

    def forward(self, x):
        return (x + self.pe).sum()


def test_a_table_kept_as_an_attribute_replays_and_follows_a_rebinding():
    module = _Table(lt.device)
    step = lazyx.compile(module)
    lazyx.reset_metrics()
    x = torch.ones(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (it warned that calls are not replayed)
        results = [step(x.to(lt.device)).item() for _ in range(3)]
        module.pe = torch.full((3,), 5.0).to(lt.device)
        results += [step(x.to(lt.device)).item() for _ in range(2)]
    assert results == [12.0] * 3 + [36.0] * 2
    assert lazyx.metrics()["replays"] >= 3


def test_a_returned_module_still_replays():
    """A module returned as it is holds state, which replays update as the step does."""
    model = torch.nn.Linear(3, 1).to(lt.device)

    @lazyx.compile
    def step(x):
        return model(x).sum(), model
    lazyx.reset_metrics()
    for x in _inputs(4):
        loss, same = step(x.to(lt.device))
        assert same is model
    assert lazyx.metrics()["replays"] >= 2


class _Tables(torch.nn.Module):
    """Tables in a plain list attribute, and a submodule kept in a plain list (unregistered):
    state found through them, so calls replay and see a table rebound between calls."""
    def __init__(self, device):
        super().__init__()
        self.tables = [torch.ones(3).to(device), torch.full((3,), 2.0).to(device)]
        self.heads = [torch.nn.Linear(3, 1).to(device)]

    def forward(self, x):
        return (x * self.tables[0] + self.tables[1]).sum() + self.heads[0](x).sum()


def test_tables_in_a_list_attribute_replay_and_follow_a_rebinding():
    torch.manual_seed(0)
    eager = _Tables("cpu")
    lazy = _Tables(lt.device)
    lazy.heads[0].load_state_dict(eager.heads[0].state_dict())
    step = lazyx.compile(lazy)
    lazyx.reset_metrics()
    for k, x in enumerate(_inputs(5)):
        if k == 3:
            eager.tables[1] = torch.full((3,), 5.0)
            lazy.tables[1] = torch.full((3,), 5.0).to(lt.device)
        torch.testing.assert_close(step(x.to(lt.device)).cpu(), eager(x).detach())
    assert lazyx.metrics()["replays"] >= 3


class _Helper:
    pass


class _KeepsInHelper(torch.nn.Module):
    """Stores its result on a plain object it holds, one level below the module."""
    def __init__(self):
        super().__init__()
        self.helper = _Helper()

    def forward(self, x):
        y = x * 2
        self.helper.last = y
        return y.sum()


def test_a_tensor_stored_on_a_plain_object_a_module_holds_keeps_each_calls_value():
    module = _KeepsInHelper()
    step = lazyx.compile(module)
    lazyx.reset_metrics()
    kept = []
    for x in _inputs():
        step(x.to(lt.device))
        kept.append(module.helper.last)
    assert lazyx.metrics()["replays"] >= 2
    for y, x in zip(kept, _inputs()):
        torch.testing.assert_close(y.cpu(), x * 2)
