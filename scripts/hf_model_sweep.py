"""Train HuggingFace models from small configs through lazyx and compare with eager torch.

    python scripts/hf_model_sweep.py [--mode lazy|dynamo|replay] [--fused] [--split] [llama ...]

Each model (68 architectures: decoders, encoders, encoder-decoders, vision, speech, state
space, contrastive text+image) is built from a tiny config, copied, and trained for a few AdamW steps twice on the
same batches: the reference run and the run under test. Modes:

  lazy    eager CPU torch against `model.to(lt.device)` with `lt.mark_step()` per step
  dynamo  eager CPU torch against `torch.compile(model, backend="lazyx")` (CPU tensors)
  replay  the lazy run against the same step under `lazyx.compile` (both on lt.device)

Dropout is off (eval mode) so the numbers compare; the losses must agree to 1e-3 relative.
`--fused` uses `AdamW(fused=True)` for both runs; `--split` replays with
`on_observe="split"` (for models that read their inputs on the host, e.g. HF's padding check). Prints one line per model: OK, DIFF or ERR,
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
T5 = dict(d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=4,
          relative_attention_num_buckets=8, decoder_start_token_id=0, pad_token_id=0)
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
    # Added 2026-12-03: code paths the 31 above do not take.
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM",
               dict(num_key_value_heads=2, head_dim=8, sliding_window=4), ()),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(num_key_value_heads=2, pad_token_id=0), ()),
    "starcoder2": ("Starcoder2Config", "Starcoder2ForCausalLM", dict(num_key_value_heads=2), ()),
    "gpt_bigcode": ("GPTBigCodeConfig", "GPTBigCodeForCausalLM",
                    dict(n_embd=32, n_layer=2, n_head=4, n_positions=64, multi_query=True), ()),
    "codegen": ("CodeGenConfig", "CodeGenForCausalLM",
                dict(n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64, n_ctx=64), ()),
    "cohere": ("CohereConfig", "CohereForCausalLM",
               dict(num_key_value_heads=2, pad_token_id=0, bos_token_id=1, eos_token_id=2), ()),
    "granite": ("GraniteConfig", "GraniteForCausalLM",
                dict(num_key_value_heads=2, embedding_multiplier=2.0, residual_multiplier=0.5,
                     attention_multiplier=0.1, logits_scaling=2.0), ()),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", {}, ()),
    "mamba2": ("Mamba2Config", "Mamba2ForCausalLM",
               dict(num_heads=4, head_dim=16, state_size=8, n_groups=1, chunk_size=4,
                    conv_kernel=4, expand=2), ("num_attention_heads",)),
    "pegasus": ("PegasusConfig", "PegasusForConditionalGeneration",
                dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, pad_token_id=0, decoder_start_token_id=0), ()),
    "marian": ("MarianConfig", "MarianMTModel",
               dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, pad_token_id=0, decoder_start_token_id=0, eos_token_id=1), ()),
    "mbart": ("MBartConfig", "MBartForConditionalGeneration", dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64), ()),
    "led": ("LEDConfig", "LEDForConditionalGeneration",
            dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, attention_window=4,
                 max_encoder_position_embeddings=64, max_decoder_position_embeddings=64), ()),
    "funnel": ("FunnelConfig", "FunnelForMaskedLM",
               dict(block_sizes=[1, 1], d_model=32, n_head=4, d_head=8, d_inner=64),
               ("num_hidden_layers",)),
    "longformer": ("LongformerConfig", "LongformerForMaskedLM", dict(attention_window=4), ()),
    "big_bird": ("BigBirdConfig", "BigBirdForMaskedLM",  # block-sparse from 14 tokens
                 dict(attention_type="block_sparse", block_size=2, num_random_blocks=1), ()),
    "perceiver": ("PerceiverConfig", "PerceiverForMaskedLM",
                  dict(d_latents=32, num_latents=8, d_model=32, num_blocks=1,
                       num_self_attends_per_block=1, num_self_attention_heads=4,
                       num_cross_attention_heads=4, max_position_embeddings=16), ()),
    "clip": ("CLIPConfig", "CLIPModel", dict(text_config=dict(SMALL), vision_config=dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        image_size=16, patch_size=4), projection_dim=16), tuple(SMALL)),
    "siglip": ("SiglipConfig", "SiglipModel", dict(text_config=dict(SMALL), vision_config=dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        image_size=16, patch_size=4)), tuple(SMALL)),
    "deit": ("DeiTConfig", "DeiTForImageClassification",
             dict(image_size=16, patch_size=4, num_channels=3), ()),
    "beit": ("BeitConfig", "BeitForImageClassification",
             dict(image_size=16, patch_size=4, use_relative_position_bias=True,
                  use_mean_pooling=True, layer_scale_init_value=0.1), ()),
    "dinov2": ("Dinov2Config", "Dinov2ForImageClassification",
               dict(image_size=16, patch_size=4, layerscale_value=0.1), ()),
    "vit_mae": ("ViTMAEConfig", "ViTMAEForPreTraining",  # noise passed: masks argsort it
                dict(image_size=16, patch_size=4, decoder_hidden_size=16,
                     decoder_num_hidden_layers=1, decoder_num_attention_heads=2,
                     decoder_intermediate_size=32, norm_pix_loss=True), ()),
    "segformer": ("SegformerConfig", "SegformerForSemanticSegmentation",
                  dict(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16],
                       patch_sizes=[3, 3], strides=[2, 2], num_attention_heads=[1, 2],
                       mlp_ratios=[2, 2], decoder_hidden_size=16, num_labels=3), ()),
    "mobilevit": ("MobileViTConfig", "MobileViTForImageClassification",
                  dict(image_size=32, hidden_sizes=[16, 16, 16],
                       neck_hidden_sizes=[8, 8, 8, 8, 8, 8, 16], expand_ratio=2.0,
                       initializer_range=0.3), ()),  # 0.02 vanishes: logits 0
    "regnet": ("RegNetConfig", "RegNetForImageClassification",
               dict(hidden_sizes=[8, 16], depths=[1, 1], embedding_size=8, groups_width=4),
               ("num_hidden_layers",)),
    "mobilenet_v2": ("MobileNetV2Config", "MobileNetV2ForImageClassification",
                     dict(image_size=32, depth_multiplier=0.25, min_depth=4,
                          initializer_range=0.2), ()),
    "hubert": ("HubertConfig", "HubertForCTC",
               dict(conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                    num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                    pad_token_id=0, mask_time_prob=0.0), ("max_position_embeddings",)),
    "sew": ("SEWConfig", "SEWForCTC",
            dict(conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), squeeze_factor=2,
                 num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                 pad_token_id=0, mask_time_prob=0.0), ("max_position_embeddings",)),
    "t5": ("T5Config", "T5ForConditionalGeneration", T5, ()),  # bucketed relative positions
    "longt5": ("LongT5Config", "LongT5ForConditionalGeneration",
               dict(T5, local_radius=2, global_block_size=2,
                    encoder_attention_type="transient-global"), ()),
    "fnet": ("FNetConfig", "FNetForMaskedLM", {}, ()),  # token mixing by a 2-D FFT
    "recurrent_gemma": ("RecurrentGemmaConfig", "RecurrentGemmaForCausalLM",
                        dict(lru_width=32, num_key_value_heads=1, head_dim=8,
                             attention_window_size=4, block_types=["recurrent", "attention"]), ()),
    "jamba": ("JambaConfig", "JambaForCausalLM",  # attention, Mamba and MoE layers
              dict(num_key_value_heads=2, num_experts=2, num_experts_per_tok=1,
                   expert_layer_period=2, expert_layer_offset=1, attn_layer_period=2,
                   attn_layer_offset=1, mamba_d_state=4, mamba_d_conv=4, mamba_expand=2,
                   mamba_dt_rank=4, use_mamba_kernels=False), ()),
    "swinv2": ("Swinv2Config", "Swinv2ForImageClassification",
               dict(image_size=16, patch_size=2, embed_dim=8, depths=[1, 1], num_heads=[2, 2],
                    window_size=2), ("num_attention_heads", "hidden_size")),
    "videomae": ("VideoMAEConfig", "VideoMAEForVideoClassification",  # Conv3d tubelets
                 dict(image_size=16, patch_size=4, num_frames=4, tubelet_size=2), ()),
    "wavlm": ("WavLMConfig", "WavLMForCTC",  # gated relative position bias
              dict(conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_buckets=8,
                   max_bucket_distance=16, num_conv_pos_embeddings=16,
                   num_conv_pos_embedding_groups=4, pad_token_id=0, mask_time_prob=0.0),
              ("max_position_embeddings",)),
}
# name: (input kind, image side or sequence length) for models not fed (2, 9) token ids
INPUTS = {
    **{n: ("image", 16) for n in ("vit", "convnext", "resnet", "swin", "deit", "beit", "dinov2",
                                  "segformer", "regnet", "swinv2")},
    "mobilevit": ("image", 32), "mobilenet_v2": ("image", 32), "vit_mae": ("mae", 16),
    "clip": ("text+image", 16), "siglip": ("text+image", 16),
    "wav2vec2": ("audio", 400), "hubert": ("audio", 400), "sew": ("audio", 400),
    "wavlm": ("audio", 400), "videomae": ("video", 16),
    "whisper": ("features", 16), "big_bird": ("ids", 16), "perceiver": ("inputs", 16),
}


def _batch(name, device, step):
    g = torch.Generator().manual_seed(step)
    kind, size = INPUTS.get(name, ("ids", 9))
    if kind == "image":
        labels = (torch.randint(0, 3, (2, size, size), generator=g) if name == "segformer"
                  else torch.tensor([0, 1]))
        batch = dict(pixel_values=torch.randn(2, 3, size, size, generator=g), labels=labels)
    elif kind == "video":  # 4 frames: 2 tubelets of 2
        batch = dict(pixel_values=torch.randn(2, 4, 3, size, size, generator=g),
                     labels=torch.tensor([0, 1]))
    elif kind == "mae":  # the noise that ranks patches, else drawn inside from the global RNG
        batch = dict(pixel_values=torch.randn(2, 3, size, size, generator=g),
                     noise=torch.rand(2, (size // 4) ** 2, generator=g))
    elif kind == "text+image":  # contrastive loss over the batch
        batch = dict(input_ids=torch.randint(0, 64, (2, 9), generator=g),
                     pixel_values=torch.randn(2, 3, size, size, generator=g), return_loss=True)
    elif kind == "audio":  # raw audio, CTC labels (F.ctc_loss with computed lengths)
        batch = dict(input_values=torch.randn(2, size, generator=g),
                     labels=torch.randint(1, 64, (2, 6), generator=g))
    elif kind == "features":
        batch = dict(input_features=torch.randn(2, size, 32, generator=g),
                     decoder_input_ids=torch.randint(0, 64, (2, 5), generator=g),
                     labels=torch.randint(0, 64, (2, 5), generator=g))
    else:
        ids = torch.randint(0, 64, (2, size), generator=g)
        batch = (dict(input_ids=ids) if name == "clip_text" else
                 dict(inputs=ids, labels=ids) if kind == "inputs" else
                 dict(input_ids=ids, labels=ids))
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def _loss(out):
    if getattr(out, "loss", None) is not None:
        return out.loss
    return out.last_hidden_state.float().square().mean()


def _losses(name, model, device, steps, fused, compiled, split=False):
    model.eval()  # no dropout: the two runs must compute the same numbers
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=fused)

    def train(batch):
        opt.zero_grad()
        loss = _loss(model(**batch))
        loss.backward()
        opt.step()
        return loss
    if compiled:
        train = lazyx.compile(train, on_observe="split" if split else "raise")
    losses = []
    for step in range(steps):
        loss = train(_batch(name, device, step))
        if device != "cpu" and not compiled:
            lt.mark_step()
        losses.append(float(loss))
    return losses


def run(name, mode, fused, split=False, steps=3):
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
        results.append(_losses(name, net, device, steps, fused, compiled, split))
    error = max(abs(a - b) / max(1e-6, abs(a)) for a, b in zip(*results))
    return error, results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models (default: all {len(MODELS)})")
    parser.add_argument("--mode", choices=("lazy", "dynamo", "replay"), default="lazy")
    parser.add_argument("--fused", action="store_true", help="AdamW(fused=True)")
    parser.add_argument("--split", action="store_true", help='replay: on_observe="split"')
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    bad = 0
    for name in args.names or MODELS:
        lazyx.reset_metrics()
        try:
            error, (want, got) = run(name, args.mode, args.fused, args.split)
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
