"""Train HuggingFace models from small configs through lazyx and compare with eager torch.

    python scripts/hf_model_sweep.py [--mode lazy|dynamo|replay] [--fused] [llama bart ...]

Each model (31 architectures: decoders, encoders, encoder-decoders, vision, speech, state
space) is built from a tiny config, copied, and trained for a few AdamW steps twice on the
same batches: the reference run and the run under test. Modes:

  lazy    eager CPU torch against `model.to(lt.device)` with `lt.mark_step()` per step
  dynamo  eager CPU torch against `torch.compile(model, backend="lazyx")` (CPU tensors)
  replay  the lazy run against the same step under `lazyx.compile` (both on lt.device)

Dropout is off (eval mode) so the numbers compare; the losses must agree to 1e-3 relative.
`--fused` uses `AdamW(fused=True)` for both runs. Prints one line per model: OK, DIFF or ERR,
with the losses, lazyx's fallbacks and compiles. Exits non-zero if any model is not OK.
"""
import argparse
import copy
import sys
import traceback
import warnings

import torch
import transformers

import lazyx
import lazyx.frontends.torch as lt

SMALL = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=64, max_position_embeddings=64)
# name: (config class, model class, config changes, SMALL keys the config does not take)
MODELS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(num_key_value_heads=2), ()),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(num_key_value_heads=2), ()),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(num_key_value_heads=2), ()),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(num_key_value_heads=2, head_dim=8), ()),
    "phi": ("PhiConfig", "PhiForCausalLM", {}, ()),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", dict(num_key_value_heads=2, head_dim=8), ()),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(num_key_value_heads=2, head_dim=8), ()),
    "olmo": ("OlmoConfig", "OlmoForCausalLM", {}, ()),
    "stablelm": ("StableLmConfig", "StableLmForCausalLM", dict(num_key_value_heads=2), ()),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {}, ()),
    "opt": ("OPTConfig", "OPTForCausalLM", dict(ffn_dim=64, word_embed_proj_dim=32), ()),
    "bloom": ("BloomConfig", "BloomForCausalLM", dict(n_layer=2, n_head=4), ()),
    "falcon": ("FalconConfig", "FalconForCausalLM", {}, ()),
    "gptj": ("GPTJConfig", "GPTJForCausalLM",
             dict(n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64), ()),
    "mpt": ("MptConfig", "MptForCausalLM", dict(d_model=32, n_heads=4, n_layers=2), ()),
    "mamba": ("MambaConfig", "MambaForCausalLM", dict(state_size=4, expand=2, conv_kernel=4), ()),
    "roberta": ("RobertaConfig", "RobertaForMaskedLM", {}, ()),
    "distilbert": ("DistilBertConfig", "DistilBertForMaskedLM",
                   dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64), ()),
    "albert": ("AlbertConfig", "AlbertForMaskedLM", dict(embedding_size=16), ()),
    "electra": ("ElectraConfig", "ElectraForMaskedLM", dict(embedding_size=16), ()),
    "deberta_v2": ("DebertaV2Config", "DebertaV2ForMaskedLM", {}, ()),
    "mobilebert": ("MobileBertConfig", "MobileBertForMaskedLM",
                   dict(embedding_size=16, intra_bottleneck_size=16, true_hidden_size=16), ()),
    "xlnet": ("XLNetConfig", "XLNetLMHeadModel", dict(d_model=32, n_layer=2, n_head=4, d_inner=64),
              ("max_position_embeddings",)),
    "bart": ("BartConfig", "BartForConditionalGeneration",
             dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64), ()),
    "whisper": ("WhisperConfig", "WhisperForConditionalGeneration",
                dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                     num_mel_bins=16, max_source_positions=16, max_target_positions=16,
                     pad_token_id=0, decoder_start_token_id=1, bos_token_id=1, eos_token_id=2),
                ()),
    "wav2vec2": ("Wav2Vec2Config", "Wav2Vec2ForCTC",
                 dict(conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                      num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                      pad_token_id=0, mask_time_prob=0.0), ("max_position_embeddings",)),
    "clip_text": ("CLIPTextConfig", "CLIPTextModel", {}, ()),
    "vit": ("ViTConfig", "ViTForImageClassification",
            dict(image_size=16, patch_size=4, num_channels=3), ()),
    "convnext": ("ConvNextConfig", "ConvNextForImageClassification",
                 dict(hidden_sizes=[8, 16], depths=[1, 1], num_stages=2), ()),
    "resnet": ("ResNetConfig", "ResNetForImageClassification",
               dict(hidden_sizes=[8, 16], depths=[1, 1], embedding_size=8), ()),
    "swin": ("SwinConfig", "SwinForImageClassification",
             dict(image_size=16, patch_size=2, embed_dim=8, depths=[1, 1], num_heads=[2, 2],
                  window_size=2), ("num_attention_heads", "hidden_size")),
}
VISION = {"vit", "convnext", "resnet", "swin"}


def _batch(name, device, step):
    g = torch.Generator().manual_seed(step)
    if name in VISION:
        batch = dict(pixel_values=torch.randn(2, 3, 16, 16, generator=g),
                     labels=torch.tensor([0, 1]))
    elif name == "wav2vec2":  # raw audio, CTC labels (F.ctc_loss with computed lengths)
        batch = dict(input_values=torch.randn(2, 400, generator=g),
                     labels=torch.randint(1, 64, (2, 6), generator=g))
    elif name == "whisper":
        batch = dict(input_features=torch.randn(2, 16, 32, generator=g),
                     decoder_input_ids=torch.randint(0, 64, (2, 5), generator=g),
                     labels=torch.randint(0, 64, (2, 5), generator=g))
    else:
        ids = torch.randint(0, 64, (2, 9), generator=g)
        batch = dict(input_ids=ids) if name == "clip_text" else dict(input_ids=ids, labels=ids)
    return {k: v.to(device) for k, v in batch.items()}


def _loss(out):
    if getattr(out, "loss", None) is not None:
        return out.loss
    return out.last_hidden_state.float().square().mean()


def _losses(name, model, device, steps, fused, compiled):
    model.eval()  # no dropout: the two runs must compute the same numbers
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=fused)

    def train(batch):
        opt.zero_grad()
        loss = _loss(model(**batch))
        loss.backward()
        opt.step()
        return loss
    if compiled:
        train = lazyx.compile(train)
    losses = []
    for step in range(steps):
        loss = train(_batch(name, device, step))
        if device != "cpu" and not compiled:
            lt.mark_step()
        losses.append(float(loss))
    return losses


def run(name, mode, fused, steps=3):
    config_cls, model_cls, changes, dropped = MODELS[name]
    options = {k: v for k, v in SMALL.items() if k not in dropped}
    options.update(changes)
    config = getattr(transformers, config_cls)(**options)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = getattr(transformers, model_cls)(config)
    twin = copy.deepcopy(model)
    if mode == "lazy":
        runs = [(model, "cpu", False), (twin.to(lt.device), lt.device, False)]
    elif mode == "dynamo":
        torch._dynamo.reset()  # Dynamo gives up after 8 recompiles of HF's shared wrappers
        runs = [(model, "cpu", False),
                (torch.compile(twin, backend=lt.dynamo_backend, dynamic=False), "cpu", False)]
    else:
        runs = [(model.to(lt.device), lt.device, False), (twin.to(lt.device), lt.device, True)]
    results = []
    for net, device, compiled in runs:
        results.append(_losses(name, net, device, steps, fused, compiled))
    error = max(abs(a - b) / max(1e-6, abs(a)) for a, b in zip(*results))
    return error, results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models (default: all {len(MODELS)})")
    parser.add_argument("--mode", choices=("lazy", "dynamo", "replay"), default="lazy")
    parser.add_argument("--fused", action="store_true", help="AdamW(fused=True)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    bad = 0
    for name in args.names or MODELS:
        lazyx.reset_metrics()
        try:
            error, (want, got) = run(name, args.mode, args.fused)
        except Exception as err:  # noqa: BLE001 -- a report line per model
            bad += 1
            where = traceback.extract_tb(err.__traceback__)[-1]
            print(f"ERR  {name:11s} {type(err).__name__}: {str(err)[:200]} "
                  f"({where.filename}:{where.lineno})", flush=True)
            continue
        m = lazyx.metrics()
        ok = error < 1e-3
        bad += not ok
        print(f"{'OK  ' if ok else 'DIFF'} {name:11s} rel err {error:.1e} "
              f"losses {[round(v, 5) for v in want]} vs {[round(v, 5) for v in got]} "
              f"fallbacks {m['fallbacks']} {dict(m['fallback_ops'])} compiles {m['compiles']}",
              flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
