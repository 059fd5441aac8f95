"""F.ctc_loss on lt.device against CPU torch, values and gradients. ATen's _ctc_loss and
_ctc_loss_backward are lowered (they ran on CPU torch mid-step): no fallback, for 2-D and 1-D
concatenated targets, float32 and float64, every reduction, zero_infinity with impossible
alignments, a blank that is not 0. Lengths as CPU tensors are the usual call (CUDA and cuDNN
take them so): ATen's composite kernel, seeing a tensor subclass, divided the lazy loss by the
CPU lengths and the device check refused it."""
import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

LENGTHS = {
    "cpu": lambda n, m: (n, m),
    "device": lambda n, m: (n.to(lt.device), m.to(lt.device)),
    "mixed": lambda n, m: (n, m.to(lt.device)),
    "int32": lambda n, m: (n.int(), m.int()),
    "lists": lambda n, m: (n.tolist(), m.tolist()),
}


def _loss_and_grad(logits, targets, n, m, **kwargs):
    """(loss, d (w * loss).sum() / d logits) through log_softmax, as a CTC head trains; w
    weighs each row differently (reduction "none")."""
    x = logits.clone().requires_grad_()
    out = torch.nn.functional.ctc_loss(x.log_softmax(-1), targets, n, m, **kwargs)
    w = torch.linspace(0.5, 2, out.numel(), dtype=out.dtype, device=out.device)
    (out * w.reshape(out.shape)).sum().backward()
    return out, x.grad


def _lazy_loss_and_grad(logits, targets, n, m, **kwargs):
    lazyx.reset_metrics()
    out, grad = _loss_and_grad(logits.to(lt.device), targets.to(lt.device), n, m, **kwargs)
    out, grad = out.cpu(), grad.cpu()
    assert lazyx.metrics()["fallback_ops"] == {}
    return out, grad


# each length kind with one reduction: cpu, device and mixed lengths make one program, so
# XLA compiles 3 (every pair would be 9)
@pytest.mark.parametrize("lengths,reduction", [("cpu", "mean"), ("device", "mean"),
                                               ("mixed", "mean"), ("int32", "sum"),
                                               ("lists", "none")])
def test_ctc_loss_matches_cpu_torch(lengths, reduction):
    torch.manual_seed(0)
    logits = torch.randn(7, 3, 5)
    targets = torch.tensor([[1, 2, 3], [1, 1, 0], [4, 2, 2]])
    n, m = torch.tensor([7, 5, 4]), torch.tensor([3, 2, 1])
    want = _loss_and_grad(logits, targets, n, m, reduction=reduction)
    got = _lazy_loss_and_grad(logits, targets, *LENGTHS[lengths](n, m), reduction=reduction)
    torch.testing.assert_close(got, want)


def test_unbatched_call_matches_cpu_torch():
    """log_probs (T, C), targets (S,), 0-d lengths: ATen's composite adds a batch of one."""
    torch.manual_seed(2)
    logits, targets = torch.randn(6, 5), torch.tensor([1, 2, 2])
    want = _loss_and_grad(logits, targets, torch.tensor(6), torch.tensor(3))
    got = _lazy_loss_and_grad(logits, targets, torch.tensor(6), torch.tensor(3))
    torch.testing.assert_close(got, want)


def _batch(dtype, blank):
    """Eight rows of T = 12: different lengths, repeats (a blank between), an empty target,
    no input, and two impossible alignments (a target longer than its input; a repeat
    needing more steps than there are)."""
    torch.manual_seed(1)
    logits = torch.randn(12, 8, 6, dtype=dtype) * 3
    rows = [([1, 2, 3, 4], 12), ([3, 3, 3], 9), ([5], 4), ([], 7), ([2, 4], 0), ([], 0),
            ([1, 2, 3, 4, 5, 1, 2], 5), ([2, 2, 2, 2, 2, 2], 10)]
    labels = [[c if c != blank else 0 for c in row] for row, _ in rows]
    width = max(len(row) for row in labels)
    padded = torch.tensor([row + [blank] * (width - len(row)) for row in labels])
    concatenated = torch.tensor([c for row in labels for c in row])
    return (logits, padded, concatenated, torch.tensor([i for _, i in rows]),
            torch.tensor([len(row) for row in labels]))


# four programs cover both layouts, both blanks, both dtypes and zero_infinity on and off
@pytest.mark.parametrize("layout,blank,zero_infinity,dtype", [
    ("padded", 0, False, torch.float32), ("concatenated", 0, True, torch.float32),
    ("padded", 5, True, torch.float64), ("concatenated", 5, False, torch.float64)])
def test_values_and_gradients_match_cpu_torch(layout, blank, zero_infinity, dtype):
    logits, padded, concatenated, n, m = _batch(dtype, blank)
    targets = padded if layout == "padded" else concatenated
    kwargs = dict(blank=blank, reduction="none", zero_infinity=zero_infinity)
    want = _loss_and_grad(logits, targets, n, m, **kwargs)
    got = _lazy_loss_and_grad(logits, targets, n, m, **kwargs)
    assert want[0].isinf().sum() == (0 if zero_infinity else 3)  # rows 4, 6, 7
    assert want[1].isnan().any() != zero_infinity  # ATen's NaN gradient where impossible
    torch.testing.assert_close(got, want, equal_nan=True)


def test_the_list_overload_gives_torchs_log_alpha():
    """torch._ctc_loss with lengths as lists: log_alpha of torch's shape (2 max(L) + 1) and,
    where the recursion defines it (t < I, s < 2L + 1), torch's values."""
    logits, padded, _, n, m = _batch(torch.float64, 0)
    lp = logits.log_softmax(-1)
    want = torch._ctc_loss(lp, padded, n.tolist(), m.tolist())
    lazyx.reset_metrics()
    got = [t.cpu() for t in torch._ctc_loss(lp.to(lt.device), padded.to(lt.device),
                                            n.tolist(), m.tolist())]
    assert lazyx.metrics()["fallback_ops"] == {}
    torch.testing.assert_close(got[0], want[0])
    assert got[1].shape == want[1].shape
    for b in range(len(n)):
        defined = (slice(b, b + 1), slice(0, int(n[b])), slice(0, 2 * int(m[b]) + 1))
        torch.testing.assert_close(got[1][defined], want[1][defined])


def test_new_lengths_reuse_the_compiled_step():
    logits, padded, _, n, m = _batch(torch.float32, 0)
    _lazy_loss_and_grad(logits, padded, n, m)
    assert lazyx.metrics()["compile_count"] > 0 or lazyx.metrics()["cache_hits"] > 0
    n, m = (n + 3).clamp(max=12), m // 2  # (shorter targets: never a padding blank)
    want = _loss_and_grad(logits, padded, n, m)
    got = _lazy_loss_and_grad(logits, padded, n, m)
    torch.testing.assert_close(got, want, equal_nan=True)
    assert lazyx.metrics()["compile_count"] == 0  # lengths are run-time values


@pytest.mark.parametrize("lengths,message", [
    (([8, 5, 4], [3, 2, 1]), "input_lengths to have value at most 7"),
    (([7, 5, 4], [3, 2, 4]), "size at least 4 at dimension 1"),
    (([7, -1, 4], [3, 2, 1]), "input_lengths to have value at least 0")])
def test_bad_cpu_lengths_get_torchs_error(lengths, message):
    x = torch.randn(7, 3, 5).log_softmax(-1)
    t = torch.tensor([[1, 2, 3], [1, 1, 0], [4, 2, 2]])
    lengths = [torch.tensor(v) for v in lengths]
    with pytest.raises(RuntimeError, match=message):
        torch.nn.functional.ctc_loss(x, t, *lengths)
    with pytest.raises(RuntimeError, match=message):
        torch.nn.functional.ctc_loss(x.to(lt.device), t.to(lt.device), *lengths)


def test_float_lengths_get_torchs_error():
    x = torch.randn(4, 1, 3).log_softmax(-1)
    args = (torch.tensor([[1]]), torch.tensor([4.0]), torch.tensor([1.0]))
    with pytest.raises(RuntimeError, match="input_lengths must be integral"):
        torch.nn.functional.ctc_loss(x, *args)
    with pytest.raises(RuntimeError, match="input_lengths must be integral"):
        torch.nn.functional.ctc_loss(x.to(lt.device), args[0].to(lt.device), *args[1:])
