"""Mixture-of-experts on lt.device: histc of integers (as CUDA counts them; transformers'
MoE passes int32 off cpu/mps), torch._grouped_mm in all its layouts, forward and backward,
and tiny HuggingFace Mixtral / Qwen2-MoE models (transformers 5's default grouped_mm experts)
training with eager's numbers, no fallback, and replaying under lazyx.compile."""
import copy
import os
import warnings

import pytest
import torch

import lazyx
import lazyx.frontends.torch as lt

I32 = torch.int32


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int16, torch.int8,
                                   torch.uint8])
def test_histc_of_integers_counts_like_the_float_histogram(dtype):
    # CUDA bins integers in exact integer arithmetic; on these small integers that is CPU
    # torch's float histogram, in the input's dtype (CPU torch refuses integer histc)
    gen = torch.Generator().manual_seed(0)
    low = 0 if dtype == torch.uint8 else -25
    lazyx.reset_metrics()
    # (bins, min, max): edges hit exactly, values outside, min == max (the data's range),
    # one bin, and a fractional range (truncated to integers, as CUDA converts it)
    for bins, lo, hi in [(4, 0, 3), (5, -3, 7), (7, 0, 0), (10, -20, 20), (1, 0, 5),
                         (6, 1.7, 8.9), (3, 2, 2)]:
        x = torch.randint(low, 25, (37,), generator=gen).to(dtype)
        if (lo, hi) == (2, 2):  # every value equal: the range is widened by 1 each way
            x = torch.full((5,), 2, dtype=dtype)
        want = torch.histc(x.float(), bins=bins, min=int(lo), max=int(hi)).to(dtype)
        got = torch.histc(x.to(lt.device), bins=bins, min=lo, max=hi)
        assert got.dtype == dtype
        assert torch.equal(got.cpu(), want), (bins, lo, hi)
    assert lazyx.metrics()["fallbacks"] == 0, lazyx.metrics()["fallback_ops"]


def _uninitialized(shape_a, shape_b, offs, out, grad_a, grad_b):
    """Masks of what torch leaves uninitialized past offs[-1] (output, grad_a, grad_b):
    lazyx writes 0 there."""
    out_m, a_m, b_m = (torch.zeros(t.shape, dtype=torch.bool) for t in (out, grad_a, grad_b))
    if offs is not None:
        end = offs[-1]
        if len(shape_a) == 2 and len(shape_b) == 3:
            out_m[end:], a_m[end:] = True, True
        elif len(shape_a) == 3:
            out_m[:, end:], b_m[:, end:] = True, True
        else:
            a_m[:, end:], b_m[end:] = True, True
    return out_m, a_m, b_m


_LAYOUTS = [  # (mat_a, mat_b, offs); CPU torch needs 16-byte strides, so sizes are even
    ((7, 4), (3, 4, 8), [2, 2, 5]),  # 2d x 3d, an empty group, rows past the last end
    ((6, 8), (2, 8, 4), [9, 9]),  # ends past the rows
    ((3, 2, 4), (4, 8), [0, 3, 6]),  # 3d x 2d: mat_b's columns in groups
    ((4, 8), (8, 4), [1, 3, 6]),  # 2d x 2d: the contraction in groups, (G, M, N)
    ((3, 2, 4), (3, 4, 4), None),  # 3d x 3d: a bmm
]


@pytest.mark.parametrize("shape_a,shape_b,offs", _LAYOUTS)
def test_grouped_mm_matches_torch_forward_and_backward(shape_a, shape_b, offs):
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(shape_a, generator=gen, requires_grad=True)
    b = torch.randn(shape_b, generator=gen, requires_grad=True)
    o = None if offs is None else torch.tensor(offs, dtype=I32)
    want = torch._grouped_mm(a, b, offs=o)
    grad = torch.randn(want.shape, generator=gen)
    want.backward(grad)
    la, lb = (t.detach().to(lt.device).requires_grad_() for t in (a, b))
    lazyx.reset_metrics()
    got = torch.nn.functional.grouped_mm(la, lb, offs=None if o is None else o.to(lt.device))
    got.backward(grad.to(lt.device))
    masks = _uninitialized(shape_a, shape_b, offs, want, a.grad, b.grad)
    for lazy, eager, mask in zip((got.detach(), la.grad, lb.grad),
                                 (want.detach(), a.grad, b.grad), masks):
        lazy = lazy.cpu()
        torch.testing.assert_close(lazy, torch.where(mask, 0.0, eager), rtol=1e-5, atol=1e-5)
        assert (lazy[mask] == 0).all()
    assert lazyx.metrics()["fallbacks"] == 0, lazyx.metrics()["fallback_ops"]


def test_grouped_mm_keeps_another_groups_inf_out():
    # every group's product is computed here: an empty group's inf weights (or a NaN row past
    # the last end) must be selected away, not multiplied by a 0 mask (0 * inf = NaN)
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(7, 4, generator=gen), torch.randn(3, 4, 8, generator=gen)
    b[1], a[6] = float("inf"), float("nan")
    o = torch.tensor([2, 2, 5], dtype=I32)
    got = torch._grouped_mm(a.to(lt.device), b.to(lt.device), offs=o.to(lt.device)).cpu()
    torch.testing.assert_close(got[:5], torch._grouped_mm(a, b, offs=o)[:5])
    assert (got[5:] == 0).all()


def test_grouped_mm_bfloat16_rounds_once_like_torch():
    gen = torch.Generator().manual_seed(2)
    a = torch.randn(8, 16, generator=gen).bfloat16()
    b = torch.randn(3, 16, 8, generator=gen).bfloat16()
    o = torch.tensor([3, 3, 8], dtype=I32)
    got = torch._grouped_mm(a.to(lt.device), b.to(lt.device), offs=o.to(lt.device))
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.cpu(), torch._grouped_mm(a, b, offs=o), rtol=0, atol=0)


@pytest.mark.parametrize("call,message", [
    (lambda d: (torch.ones(2, 8, dtype=torch.float64, device=d),
                torch.ones(1, 8, 8, dtype=torch.float64, device=d), [2]),
     "Expected mat_a to be Float32, BFloat16 or Float16 matrix, got Double"),
    (lambda d: (torch.ones(2, 4, device=d), torch.ones(1, 4, 4, device=d), None),
     "Have to provide offsets"),
    (lambda d: (torch.ones(2, 4, device=d), torch.ones(2, 4, 4, device=d), [2]),
     "matrix batch sizes have to match"),
    (lambda d: (torch.ones(2, 4, device=d), torch.ones(1, 8, 4, device=d), [2]),
     "contraction dimension of mat_a and mat_b must match"),
    (lambda d: (torch.ones(2, 4, 4, device=d), torch.ones(3, 4, 4, device=d), None),
     "batched dimension has to match"),
])
def test_grouped_mm_refuses_what_torch_refuses(call, message):
    for device in ("cpu", lt.device):
        a, b, offs = call(device)
        offs = None if offs is None else torch.tensor(offs, dtype=I32, device=device)
        with pytest.raises(RuntimeError, match=message):
            torch._grouped_mm(a, b, offs=offs)
    with pytest.raises(RuntimeError, match="Offsets have to be int32"):
        torch._grouped_mm(torch.ones(2, 4, device=lt.device), torch.ones(1, 4, 4,
                          device=lt.device), offs=torch.tensor([2], device=lt.device))


# ---------------------------------------------------------------- HuggingFace models
# Heavy on XLA: a training step is a ~2000-op program that takes XLA 10-20 s to compile on a
# loaded 2-core machine (two programs per run: the first step also creates Adam's state),
# while the reference backend runs a test in about a second. Both backends get the same IR,
# so CI runs these on the reference backend only; LAZYX_HEAVY_TESTS=1 runs them on XLA too.
heavy = pytest.mark.skipif(
    os.environ.get("CI") and os.environ.get("LAZYX_BACKEND", "xla") == "xla"
    and not os.environ.get("LAZYX_HEAVY_TESTS"),
    reason="XLA compiles of whole MoE training steps: LAZYX_HEAVY_TESTS=1 runs them")

transformers = pytest.importorskip("transformers")

_DECODER = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=64, max_position_embeddings=32,
                pad_token_id=0, bos_token_id=1, eos_token_id=2)


def _tiny(name):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "mixtral":
            config = transformers.MixtralConfig(**_DECODER, num_local_experts=4,
                                                num_experts_per_tok=2)
            model = transformers.MixtralForCausalLM(config)
        else:
            config = transformers.Qwen2MoeConfig(**_DECODER, num_experts=4, num_experts_per_tok=2,
                                                 moe_intermediate_size=32,
                                                 shared_expert_intermediate_size=32)
            model = transformers.Qwen2MoeForCausalLM(config)
    ids = torch.randint(3, 100, (2, 8), generator=torch.Generator().manual_seed(1))
    return model, {"input_ids": ids, "labels": ids}


def _train(model, batch, device, steps, compiled=False):
    # Adam's eps raised: with the default 1e-8, weights whose gradient is ~1e-8 move by
    # float32 rounding noise (a real difference of ~1e-4 of lr between two correct runs)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, eps=1e-5)
    inputs = {k: v.to(device) for k, v in batch.items()}

    def step():
        opt.zero_grad()
        loss = model(**inputs).loss
        loss.backward()
        opt.step()
        return loss

    run = lazyx.compile(step) if compiled else step
    losses = []
    for _ in range(steps):
        loss = run()
        if device != "cpu" and not compiled:
            lt.mark_step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in model.parameters()]


@heavy
@pytest.mark.parametrize("name", ["mixtral", "qwen2_moe"])
def test_moe_model_trains_like_eager_without_fallbacks(name):
    # (the first step's loss is the forward's: a separate forward would be one more compile)
    model, batch = _tiny(name)
    lazy = copy.deepcopy(model).to(lt.device)
    want_losses, want_weights = _train(model, batch, "cpu", 3)
    lazyx.reset_metrics()
    losses, weights = _train(lazy, batch, lt.device, 3)
    torch.testing.assert_close(losses, want_losses, rtol=1e-5, atol=0)
    for w, v in zip(weights, want_weights):
        torch.testing.assert_close(w, v, rtol=1e-4, atol=1e-4)
    m = lazyx.metrics()
    assert m["fallbacks"] == 0, m["fallback_ops"]
    assert m["syncs"] == 3, m  # the loss read of each step: routing reads nothing
    assert m["compiles"] <= 2, m


@heavy
@pytest.mark.parametrize("name", ["mixtral", "qwen2_moe"])
def test_moe_training_step_replays_under_lazyx_compile(name):
    model, batch = _tiny(name)
    lazy = copy.deepcopy(model).to(lt.device)
    want_losses, want_weights = _train(model, batch, "cpu", 4)
    lazyx.reset_metrics()
    losses, weights = _train(lazy, batch, lt.device, 4, compiled=True)
    m = lazyx.metrics()
    assert m["replays"] >= 2, m  # call 1 warms up (Adam's state), call 2 traces, 3-4 replay
    assert m["fallbacks"] == 0, m["fallback_ops"]
    torch.testing.assert_close(losses, want_losses, rtol=1e-5, atol=0)
    for w, v in zip(weights, want_weights):
        torch.testing.assert_close(w, v, rtol=1e-4, atol=1e-4)


@heavy
def test_a_moe_step_traced_by_lazyx_compile_is_not_loop_cut(monkeypatch):
    """The expert loops pass LAZYX_LOOP_CUT while lazyx.compile traces the steps. They are left
    whole there: a cut turned values the trace proves fixed into data it could not follow,
    and Qwen2-MoE's step (after Mixtral's, as the parametrized test runs them) failed with
    CompileError ('observes a value')."""
    monkeypatch.setenv("LAZYX_LOOP_CUT", "2000")
    lazyx.sync()  # (the mark is read at each cut)
    for name in ("mixtral", "qwen2_moe"):
        test_moe_training_step_replays_under_lazyx_compile(name)
