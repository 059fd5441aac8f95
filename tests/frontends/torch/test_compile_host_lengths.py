"""lazyx.compile with pack_padded_sequence's lengths as a CPU int64 tensor (torch's documented
form, what a DataLoader collate returns): it used to refuse them with a TypeError telling the
user to move them to lt.device, where they must be read. A small CPU integer tensor argument
is now part of the guard by value (its values shape the packed batch), like a list of ints."""
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence

import lazyx
import lazyx.frontends.torch as lt

LENGTHS = [[5, 3, 2], [5, 3, 2], [4, 4, 1], [5, 3, 2], [4, 4, 1], [5, 3, 2]]


def _train(device, wrap):
    torch.manual_seed(0)
    rnn, head = torch.nn.GRU(4, 5, batch_first=True), torch.nn.Linear(5, 2)
    rnn.to(device), head.to(device)
    opt = torch.optim.SGD([*rnn.parameters(), *head.parameters()], lr=0.1)

    def step(x, lengths, y):
        _, h = rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        loss = torch.nn.functional.cross_entropy(head(h[-1]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    step = wrap(step)
    torch.manual_seed(1)
    losses = []
    for lengths in LENGTHS:
        x, y = torch.randn(3, 5, 4), torch.randint(0, 2, (3,))
        losses.append(step(x.to(device), torch.tensor(lengths), y.to(device)).detach().cpu())
    return losses, [p.detach().cpu() for p in (*rnn.parameters(), *head.parameters())]


def test_packed_rnn_step_with_cpu_lengths_compiles_and_replays_eagers_numbers():
    want = _train("cpu", lambda f: f)
    before = lazyx.metrics()
    got = _train(lt.device, lazyx.compile)
    after = lazyx.metrics()
    for g, w in zip([*got[0], *got[1]], [*want[0], *want[1]]):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    assert after["replays"] > before["replays"]  # repeated lengths replay
    assert after["fallbacks"] == before["fallbacks"], after["fallback_ops"]


def test_cpu_lengths_are_guarded_by_value():
    """A new lengths value traces again rather than replaying another one's batch sizes."""
    step = lazyx.compile(lambda x, lengths: pack_padded_sequence(x, lengths).data.sum(0) * 1)
    x = torch.arange(12.0).reshape(4, 3, 1)
    for lengths in ([4, 2, 1], [4, 2, 1], [3, 3, 1], [4, 4, 4], [3, 3, 1]):
        want = pack_padded_sequence(x, torch.tensor(lengths)).data.sum(0)
        got = step(x.to(lt.device), torch.tensor(lengths)).cpu()
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("value", [torch.ones(2), torch.zeros(5000, dtype=torch.int64)])
def test_cpu_float_or_large_tensors_are_still_refused(value):
    step = lazyx.compile(lambda x, v: x * 2)
    with pytest.raises(TypeError, match="not a lazyx tensor"):
        step(torch.ones(2).to(lt.device), value)
