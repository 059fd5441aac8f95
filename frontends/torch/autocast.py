"""torch.autocast(device_type="lazyx"): mixed precision on the lazy device.

torch 2.13 registers autocast kernels for CPU and CUDA, but for a PrivateUse1 backend it
registers none -- not even the fallthrough every other op needs -- so under
`torch.autocast("lazyx")` every op failed ("Could not run 'aten::matmul' ... from the
'Autocastlazyx' backend"). These registrations give the lazy device torch's CUDA policy
for the ops that matter in training (by name, checked against torch 2.13's
autocast_mode.cpp lists):

  * LOWER_PRECISION run in the autocast dtype (bfloat16 by default, float16 on request):
    matrix products, linear, convolutions, attention;
  * FLOAT32 run in float32 whatever their inputs (softmax, norms, losses, reductions that
    overflow in half precision);
  * everything else falls through: it runs in the dtypes it is given.

A cast is recorded like any op (autograd sees it, so gradients reach float32 parameters in
float32), and lowered like any convert.
"""
import torch

from . import tensor

LOWER_PRECISION = (
    "mm", "bmm", "mv", "matmul", "linear", "addmm", "addmv", "addr", "addbmm", "baddbmm",
    "einsum", "chain_matmul", "linalg_multi_dot", "linalg_vecdot", "conv1d", "conv2d",
    "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "_convolution", "prelu", "scaled_dot_product_attention")
FLOAT32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
    "reciprocal", "rsqrt", "sinh", "tan", "softplus", "layer_norm", "group_norm",
    "frobenius_norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss",
    "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "kl_div",
    "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
    "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
    "prod", "cumprod", "cumsum", "softmax", "log_softmax", "cross_entropy_loss", "norm")

_KEY = "AutocastPrivateUse1"
_HALVES = (torch.float16, torch.bfloat16)


def _cast(value, to, casts_from):
    if isinstance(value, torch.Tensor):
        if value.dtype in casts_from and value.dtype != to and tensor.on_device(value):
            return value.to(to)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, to, casts_from) for v in value)
    return value


def _kernel(op, lower):
    exclude = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)

    def run(*args, **kwargs):
        if lower:
            to, casts_from = torch.get_autocast_dtype("lazyx"), (torch.float32, *_HALVES)
        else:
            to, casts_from = torch.float32, _HALVES
        args = _cast(args, to, casts_from)
        kwargs = {k: _cast(v, to, casts_from) for k, v in kwargs.items()}
        with torch._C._ExcludeDispatchKeyGuard(exclude):
            return op(*args, **kwargs)
    return run


def register(lib):
    """Per-op kernels on `lib` (an aten IMPL library) and the fallthrough for the rest."""
    for names, lower in ((LOWER_PRECISION, True), (FLOAT32, False)):
        for name in names:
            packet = getattr(torch.ops.aten, name, None)
            if packet is None:
                continue
            for overload in packet.overloads():
                op = getattr(packet, overload)
                lib.impl(name if overload == "default" else f"{name}.{overload}",
                         _kernel(op, lower), _KEY)
    everything = torch.library.Library("_", "IMPL")  # noqa: TOR901 - a fallback needs "_"
    everything.fallback(torch.library.fallthrough_kernel, _KEY)
    return everything
