"""torch's inference fast paths of nn.MultiheadAttention and nn.TransformerEncoder(Layer) on
the lazyx device, as plain ops.

In eval mode without gradients those modules call fused kernels when their tensors are on
"cpu", "cuda" or the PrivateUse1 device -- lazyx's: `aten::_native_multi_head_attention` and
`aten::_transformer_encoder_layer_fwd` have CPU and CUDA kernels only, so each call ran on
CPU torch (a sync and a counted fallback per layer), and a lazyx.compile step refused them.
An encoder given a `src_key_padding_mask` first asked `_nested_tensor_from_mask_left_aligned`
(a read of the mask) and then ran on nested tensors, which lazyx cannot hold: it crashed
("NestedTensorImpl doesn't support sizes"; the pytorch/tutorials helper).

The kernels here, registered for the device's autograd key as fused_optim.py's are (these
paths run only without gradients), follow ATen's (aten/src/ATen/native/transformers/
attention.cpp and transformer.cpp): the packed projection, q scaled by 1 / sqrt(head size),
a softmax in which masked positions count for nothing and a fully masked row is zeros, the
output projection, and for the layer its residuals, layer norms (before or after) and
feed-forward block. The encoder's nested-tensor path is answered "not left-aligned", a
question of speed only: its layers then run on the padded batch with the mask, as they do in
training mode and under torch.compile, so positions the mask pads out hold the layer's values
where eager's nested path leaves zeros.
"""
import math

import torch
import torch.nn.functional as F


def _masked_softmax(scores, mask, mask_type):
    """ATen's _masked_softmax over the last axis: True (or non-zero) in `mask` excludes a
    position; a row with every position excluded is zeros. mask_type 1: a key padding mask
    (batch, keys); otherwise a mask broadcast against (batch, heads, queries, keys)."""
    if mask is None:
        return torch.softmax(scores, -1)
    excluded = mask if mask.dtype == torch.bool else mask != 0
    if mask_type == 1 and excluded.dim() == 2:
        excluded = excluded[:, None, None, :]
    weights = torch.softmax(scores.masked_fill(excluded, float("-inf")), -1)
    return weights.masked_fill(excluded.all(-1, keepdim=True), 0.0)


def native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
                                proj_weight, proj_bias, mask=None, need_weights=True,
                                average_attn_weights=True, mask_type=None):
    batch, length, _ = query.shape
    head_size = embed_dim // num_head
    weights, biases = qkv_weight.chunk(3), qkv_bias.chunk(3)

    def heads(x, k):  # (batch, length, embed) -> (batch, heads, length, head size)
        projected = F.linear(x, weights[k], biases[k])
        return projected.view(x.shape[0], x.shape[1], num_head, head_size).transpose(1, 2)
    q = heads(query, 0) * (1.0 / math.sqrt(head_size))
    k, v = heads(key, 1), heads(value, 2)
    attention = _masked_softmax(q @ k.transpose(-2, -1), mask, mask_type)
    context = (attention @ v).transpose(1, 2).reshape(batch, length, embed_dim)
    out = F.linear(context, proj_weight, proj_bias)
    if not need_weights:
        return out, None
    if average_attn_weights:
        attention = attention.sum(1) / num_head
    return out, attention


def transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                  proj_bias, use_gelu, norm_first, eps, norm_weight_1,
                                  norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
                                  ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None,
                                  mask_type=None):
    def norm(x, weight, bias):
        return F.layer_norm(x, (embed_dim,), weight, bias, eps)
    x = norm(src, norm_weight_1, norm_bias_1) if norm_first else src
    x, _ = native_multi_head_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias,
                                       proj_weight, proj_bias, mask, False, True, mask_type)
    x = x + src
    if not norm_first:
        x = norm(x, norm_weight_1, norm_bias_1)
    residual = x
    if norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    hidden = F.linear(x, ffn_weight_1, ffn_bias_1)
    hidden = F.gelu(hidden) if use_gelu else F.relu(hidden)
    x = F.linear(hidden, ffn_weight_2, ffn_bias_2) + residual
    if not norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    return x


def nested_tensor_from_mask_left_aligned(padded, mask):
    """No: the encoder then keeps its padded batch (module doc)."""
    return False


def register(lib):
    """Register on `lib` (a torch.library.Library for aten IMPL, kept alive by the caller)."""
    for name, kernel in (("_native_multi_head_attention", native_multi_head_attention),
                         ("_transformer_encoder_layer_fwd", transformer_encoder_layer_fwd),
                         ("_nested_tensor_from_mask_left_aligned",
                          nested_tensor_from_mask_left_aligned)):
        lib.impl(name, kernel, "AutogradPrivateUse1")
