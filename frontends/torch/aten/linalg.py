"""Matrix products and convolutions (forward and backward) as dot_general / conv."""
from ....core import autodiff, ops
from .table import Unsupported, aten, bcast, compute_dtype, lower, node_of, scalar


def _matmul(a, b, contract, batch=((), ())):
    wide = a.dtype in ("float16", "bfloat16")
    return ops.dot_general(a, b, contracting_dimensions=contract, batch_dimensions=batch,
                           preferred_element_type="float32" if wide else None)


@lower(aten.mm.default)
def _mm(out, x, y):
    return _matmul(node_of(x), node_of(y), ((1,), (0,)))


@lower(aten.bmm.default)
def _bmm(out, x, y):
    return _matmul(node_of(x), node_of(y), ((2,), (1,)), ((0,), (0,)))


def _scaled_sum(out, bias, product, beta, alpha):
    """beta * bias + alpha * product, as torch's addmm family computes it."""
    shape = tuple(out.shape)
    dtype = compute_dtype(out.dtype)
    product = ops.convert(product, dtype=dtype) if product.dtype != dtype else product
    if alpha != 1:
        product = ops.mul(product, scalar(alpha, dtype, shape))
    if beta == 0:
        return product  # torch ignores bias (even NaN) when beta is 0
    b = bcast(node_of(bias, dtype), shape)
    if beta != 1:
        b = ops.mul(b, scalar(beta, dtype, shape))
    return ops.add(b, product)


@lower(aten.addmm.default)
def _addmm(out, bias, x, y, *, beta=1, alpha=1):
    return _scaled_sum(out, bias, _matmul(node_of(x), node_of(y), ((1,), (0,))), beta, alpha)


@lower(aten.addbmm.default)
def _addbmm(out, bias, x, y, *, beta=1, alpha=1):
    # the sum over the batch of x[b] @ y[b] is one contraction over (batch, inner)
    product = _matmul(node_of(x), node_of(y), ((0, 2), (0, 1)))
    return _scaled_sum(out, bias, product, beta, alpha)


@lower(aten._trilinear.default)
def _trilinear(out, i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """sum over sumdim of i1 * i2 * i3, each unsqueezed at its expand dims: an einsum, which
    torch decomposes into the products and permutes we lower (no full outer product)."""
    import torch
    full = len(expand1) + node_of(i1).ndim
    letters = "abcdefghijklmnopqrstuvwxyz"[:full]
    terms = ["".join(c for d, c in enumerate(letters) if d not in expand)
             for expand in (expand1, expand2, expand3)]
    result = "".join(c for d, c in enumerate(letters) if d not in sumdim)
    return torch.einsum(f"{','.join(terms)}->{result}", i1, i2, i3)


@lower(aten.dot.default)
def _dot(out, x, y):
    return _matmul(node_of(x), node_of(y), ((0,), (0,)))


@lower(aten.mv.default)
def _mv(out, x, y):
    return _matmul(node_of(x), node_of(y), ((1,), (0,)))


# ---------------------------------------------------------------- convolution

def _transposed_kernel(w, groups):
    """A transposed conv's (I, O/g, *K) weight as the forward kernel (O, I/g, *K), flipped."""
    i, og = w.shape[:2]
    k = w.shape[2:]
    g = groups
    w = ops.reshape(w, new_sizes=(g, i // g, og, *k))
    w = ops.transpose(w, permutation=(0, 2, 1, *range(3, 3 + len(k))))
    w = ops.reshape(w, new_sizes=(g * og, i // g, *k))
    return ops.rev(w, dimensions=tuple(range(2, 2 + len(k))))


def _conv_forward(x, w, stride, padding, dilation, transposed, output_padding, groups):
    nsp = x.ndim - 2
    stride, padding, dilation = (tuple(v) * (nsp if len(v) == 1 else 1) for v in
                                 (stride, padding, dilation))
    if not transposed:
        return ops.conv(x, w, window_strides=stride, padding=tuple((p, p) for p in padding),
                        rhs_dilation=dilation, feature_group_count=groups)
    output_padding = tuple(output_padding) * (nsp if len(output_padding) == 1 else 1)
    k = w.shape[2:]
    pads = tuple((d * (kk - 1) - p, d * (kk - 1) - p + op)
                 for kk, d, p, op in zip(k, dilation, padding, output_padding))
    return ops.conv(x, _transposed_kernel(w, groups), window_strides=(1,) * nsp, padding=pads,
                    lhs_dilation=stride, rhs_dilation=dilation, feature_group_count=groups)


@lower(aten.convolution.default)
def _convolution(out, x, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    dtype = compute_dtype(out.dtype)
    a, w = node_of(x, dtype), node_of(weight, dtype)
    if isinstance(padding, str):
        raise Unsupported("string padding")
    y = _conv_forward(a, w, stride, padding, dilation, transposed, output_padding, groups)
    if bias is not None:
        y = ops.add(y, ops.broadcast_in_dim(node_of(bias, dtype), shape=y.shape,
                                            broadcast_dimensions=(1,)))
    return y


@lower(aten.convolution_backward.default)
def _convolution_backward(out, grad, x, weight, bias_sizes, stride, padding, dilation,
                          transposed, output_padding, groups, output_mask):
    """The IR's conv gradient (core/autodiff) through the same forward the lowering above
    builds, so grouped and transposed convolutions (and their kernel reshuffles) are covered."""
    g, a, w = node_of(grad), node_of(x), node_of(weight)
    if isinstance(padding, str):
        raise Unsupported("string padding")
    y = _conv_forward(a, w, stride, padding, dilation, transposed, output_padding, groups)
    wanted = [node for node, keep in zip((a, w), output_mask[:2]) if keep]
    grads = iter(autodiff.vjp([y], [ops.convert(g, dtype=y.dtype)], wanted) if wanted else [])
    results = [next(grads) if keep else None for keep in output_mask[:2]]
    bias = ops.reduce_sum(g, axes=(0, *range(2, g.ndim))) if output_mask[2] else None
    return (*results, bias)
