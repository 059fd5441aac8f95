"""torch.multinomial on lt.device: lowered (Gumbel-max, keyed like every draw) instead of a
fallback that synced once per call -- once per token in HF's generate(do_sample=True). Its
numbers are not CPU torch's (no random op's are), so the tests check the distribution, the
contract (no repeats without replacement, zero weights never drawn) and torch's errors."""
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt


def test_draws_with_replacement_follow_the_weights():
    torch.manual_seed(0)
    weights = torch.tensor([[1.0, 0.0, 6.0, 3.0], [5.0, 5.0, 0.0, 0.0]])
    lazyx.reset_metrics()
    drawn = torch.multinomial(weights.to(lt.device), 20000, replacement=True)
    assert lazyx.metrics()["fallback_ops"] == {}
    drawn = drawn.cpu()
    assert drawn.dtype == torch.int64 and drawn.shape == (2, 20000)
    for row, w in zip(drawn, weights):
        freq = torch.bincount(row, minlength=4).double() / row.numel()
        torch.testing.assert_close(freq, (w / w.sum()).double(), atol=0.015, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_draws_without_replacement_are_distinct_and_skip_zero_weights(dtype):
    torch.manual_seed(1)
    weights = torch.tensor([0.1, 0.0, 0.6, 0.3, 0.0, 1.0], dtype=dtype)
    firsts = []
    for _ in range(300):
        drawn = torch.multinomial(weights.to(lt.device), 4).cpu().tolist()
        assert len(set(drawn)) == 4 and 1 not in drawn and 4 not in drawn
        firsts.append(drawn[0])
    # the first draw alone follows the weights (5 of 10 for the last index)
    assert 0.38 < firsts.count(5) / 300 < 0.62


def test_each_call_draws_new_numbers_and_a_seed_repeats_them():
    weights = torch.ones(50).to(lt.device)
    torch.manual_seed(3)
    a, b = (torch.multinomial(weights, 10).cpu() for _ in range(2))
    torch.manual_seed(3)
    assert not torch.equal(a, b)
    torch.testing.assert_close(torch.multinomial(weights, 10).cpu(), a)


@pytest.mark.parametrize("weights,n,kwargs", [
    (torch.ones(3), 5, {}), (torch.ones(3), 0, {}), (torch.ones(2, 2, 2), 1, {}),
    (torch.ones(3, dtype=torch.int64), 1, {})])
def test_torchs_errors(weights, n, kwargs):
    with pytest.raises(RuntimeError) as want:
        torch.multinomial(weights, n, **kwargs)
    with pytest.raises(RuntimeError) as got:
        torch.multinomial(weights.to(lt.device), n, **kwargs)
    assert str(got.value) == str(want.value)
