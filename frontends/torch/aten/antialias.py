"""interpolate(mode="bilinear", antialias=True): torch has no decomposition of it. It is
separable and linear in its input, with weights that depend only on the sizes: each axis is
one product with an (out, in) weight matrix built here on the host, as torch's CPU kernel
builds its weights (a triangle filter widened by the scale when downsampling, each row
normalized to sum 1). The backward is that product's VJP, so the two agree by construction."""
import numpy as np

from ....core import autodiff, compose, ir, ops
from .table import aten, compute_dtype, lower, node_of


def _axis_weights(in_size, out_size, align_corners, scale):
    """The (out_size, in_size) matrix of one axis."""
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else in_size / out_size
    # the triangle's half-width is 1 input pixel, stretched by the ratio when downsampling
    support = ratio if ratio >= 1.0 else 1.0
    invscale = 1.0 / ratio if ratio >= 1.0 else 1.0
    widest = int(np.ceil(support)) * 2 + 1
    weights = np.zeros((out_size, in_size))
    for i in range(out_size):
        center = ratio * (i + 0.5)
        # int() truncates toward zero, as the kernel's cast does
        first = max(int(center - support + 0.5), 0)
        count = min(max(min(int(center + support + 0.5), in_size) - first, 0), widest)
        taps = np.maximum(0.0, 1.0 - np.abs((np.arange(count) + first - center + 0.5) * invscale))
        total = taps.sum()
        weights[i, first:first + count] = taps / total if total != 0 else taps
    return weights


def _resize(x, output_size, align_corners, scales_h, scales_w):
    """x: (N, C, H, W) node -> (N, C, out_h, out_w)."""
    (out_h, out_w), (in_h, in_w) = output_size, x.shape[2:]
    wh = ir.constant(_axis_weights(in_h, out_h, align_corners, scales_h), x.dtype)
    ww = ir.constant(_axis_weights(in_w, out_w, align_corners, scales_w), x.dtype)
    y = compose.tensordot(x, ww, (3,), (1,))  # (N, C, H, out_w)
    y = compose.tensordot(y, wh, (2,), (1,))  # (N, C, out_w, out_h)
    return ops.transpose(y, permutation=(0, 1, 3, 2))


@lower(aten._upsample_bilinear2d_aa.default)
def _upsample_bilinear2d_aa(out, x, output_size, align_corners, scales_h=None, scales_w=None):
    return _resize(node_of(x, compute_dtype(out.dtype)), tuple(output_size), align_corners,
                   scales_h, scales_w)


@lower(aten._upsample_bilinear2d_aa_backward.default)
def _upsample_bilinear2d_aa_backward(out, grad_output, output_size, input_size, align_corners,
                                     scales_h=None, scales_w=None):
    return autodiff.linear_transpose(
        lambda x: _resize(x, tuple(output_size), align_corners, scales_h, scales_w),
        tuple(input_size), compute_dtype(out.dtype), node_of(grad_output))
