"""Fractional max pooling (nn.FractionalMaxPool2d/3d) given its random samples: torch's CPU
kernels, as torch ops run on lazy tensors (composites.py's way). Each output row's window starts
at int((i + u) * alpha) - int(u * alpha), alpha = (in - k) / (out - 1) in the input's dtype, the
last at in - k, with u the sample of that (batch, channel) and axis; the window's maximum is
picked in row-major order (the first of equal values), its flat index returned. The backward
adds each output's grad at its index."""
import torch

from ..tensor import expand
from .table import aten, lower

_AXIS_SAMPLE = {2: (1, 0), 3: (0, 1, 2)}  # torch reads sample 0 for W in 2-D, for T in 3-D


def _starts(u, size_in, size_out, k):
    """(N, C, size_out) window starts along one axis, from u (N, C)."""
    last = torch.full((*u.shape, 1), size_in - k, dtype=torch.int64, device=u.device)
    if size_out == 1:
        return last
    # alpha in the input's dtype, as torch computes it (a Python float of that exact value)
    alpha = (torch.tensor(size_in - k, dtype=u.dtype) / (size_out - 1)).item()
    i = torch.arange(size_out - 1, dtype=u.dtype, device=u.device)
    starts = ((i + u.unsqueeze(-1)) * alpha).long() - (u * alpha).long().unsqueeze(-1)
    return torch.cat([starts, last], -1)


def _pool(x, kernel_size, output_size, samples):
    d = len(kernel_size)
    batched = x.dim() == d + 2
    # (an unbatched input reads the first row of samples, which may have more)
    x, samples = (x, samples) if batched else (x.unsqueeze(0), samples[:1])
    n, c, sizes = x.shape[0], x.shape[1], x.shape[2:]
    # flat index of every (output position, window offset) pair: (N, C, *out, *kernel)
    index = torch.zeros((), dtype=torch.int64, device=x.device)
    stride = 1
    for axis in reversed(range(d)):
        rows = _starts(samples[..., _AXIS_SAMPLE[d][axis]], sizes[axis], output_size[axis],
                       kernel_size[axis]).unsqueeze(-1) + torch.arange(kernel_size[axis],
                                                                        device=x.device)
        # (N, C, out, k) placed on axis `axis` of the output block and of the kernel block
        shape = [n, c] + [1] * (2 * d)
        shape[2 + axis], shape[2 + d + axis] = output_size[axis], kernel_size[axis]
        index = index + rows.reshape(shape) * stride
        stride *= sizes[axis]
    index = index.reshape(n, c, *output_size, -1)
    values = x.reshape(n, c, -1).gather(-1, index.reshape(n, c, -1)).reshape(index.shape)
    out, pick = values.max(-1, keepdim=True)
    out, pick = out.squeeze(-1), index.gather(-1, pick).squeeze(-1)
    return (out, pick) if batched else (out.squeeze(0), pick.squeeze(0))


def _pool_backward(grad, x, kernel_size, output_size, indices):
    d = len(kernel_size)
    lead = x.shape[:-d]
    flat = grad.new_zeros((*lead, x.shape[-d:].numel()))
    return flat.scatter_add(-1, indices.reshape(*lead, -1), grad.reshape(*lead, -1)) \
        .reshape(x.shape)


@lower(aten.fractional_max_pool2d.default, aten.fractional_max_pool3d.default)
def _fractional_max_pool(out, x, kernel_size, output_size, samples):
    return tuple(expand(_pool, x, tuple(kernel_size), tuple(output_size), samples))


@lower(aten.fractional_max_pool2d_backward.default, aten.fractional_max_pool3d_backward.default)
def _fractional_max_pool_backward(out, grad, x, kernel_size, output_size, indices):
    return expand(_pool_backward, grad, x, tuple(kernel_size), tuple(output_size), indices)
