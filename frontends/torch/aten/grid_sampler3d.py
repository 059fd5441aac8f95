"""grid_sampler_3d (F.grid_sample on 5-D input), which torch has no decomposition for: its
CPU kernel's arithmetic written in torch ops on lazy tensors, after torch's own 2-D
decomposition -- trilinear or nearest sampling, zeros/border/reflection padding -- and its
backward as the IR's VJP of that (as composites.py does for the 2-D sampler)."""
import torch

from ....core import autodiff, ops
from ..tensor import Unsupported, expand, from_node
from .table import aten, lower, node_of


def _unnormalize(coords, size, align_corners):
    """[-1, 1] -> [0, size - 1] (align_corners) or [-0.5, size - 0.5]."""
    scale = (size * 0.5 - 0.5) if align_corners else size * 0.5
    return coords * scale + (size * 0.5 - 0.5)


def _reflect(coords, twice_low, twice_high):
    """Reflect into [low, high] (bounds given doubled, so half-integers are ints)."""
    if twice_low == twice_high:
        return torch.zeros_like(coords)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = (coords - low).abs()
    extra = torch.fmod(distance, span)
    flips = (distance / span).floor().to(torch.int8)
    return torch.where(flips & 1 == 0, extra + low, span + low - extra)


def _source_index(coords, size, padding_mode, align_corners):
    coords = _unnormalize(coords, size, align_corners)
    if padding_mode == 0:  # zeros: out-of-range taps get weight 0 below
        return coords
    if padding_mode == 2:  # reflection
        coords = _reflect(coords, 0, 2 * (size - 1)) if align_corners else \
            _reflect(coords, -1, 2 * size - 1)
    return torch.clamp(coords, 0, size - 1)


def grid_sampler_3d(a, grid, interpolation_mode=0, padding_mode=0, align_corners=False):
    if interpolation_mode not in (0, 1) or padding_mode not in (0, 1, 2) or \
            a.dim() != 5 or grid.dim() != 5 or grid.shape[-1] != 3:
        raise Unsupported("grid_sampler_3d: torch's own checks and errors")
    n, c, depth, height, width = a.shape
    _, out_d, out_h, out_w, _ = grid.shape
    grid = grid.view(n, 1, out_d, out_h, out_w, 3).expand(n, c, out_d, out_h, out_w, 3)
    batch = torch.arange(n, device=a.device).view(n, 1, 1, 1, 1)
    channel = torch.arange(c, device=a.device).view(1, c, 1, 1, 1)
    ix, iy, iz = (_source_index(grid[..., k], size, padding_mode, align_corners)
                  for k, size in enumerate((width, height, depth)))

    def tap(x, y, z, weight):
        inside = (x >= 0) & (x < width) & (y >= 0) & (y < height) & (z >= 0) & (z < depth)
        x, y, z = (torch.where(inside, t, 0).to(torch.int64) for t in (x, y, z))
        return a[batch, channel, z, y, x] * torch.where(inside, weight, 0)

    if interpolation_mode == 1:  # nearest: half to even, as the CPU kernel's nearbyint
        return tap(ix.round(), iy.round(), iz.round(), 1)
    x0, y0, z0 = ix.floor(), iy.floor(), iz.floor()
    x1, y1, z1 = x0 + 1, y0 + 1, z0 + 1
    out = None
    # the CPU kernel's order: top (z0) then bottom (z1); north-west, north-east, south-west,
    # south-east in each
    for z, wz in ((z0, z1 - iz), (z1, iz - z0)):
        for y, wy in ((y0, y1 - iy), (y1, iy - y0)):
            for x, wx in ((x0, x1 - ix), (x1, ix - x0)):
                term = tap(x, y, z, wx * wy * wz)
                out = term if out is None else out + term
    return out


@lower(aten.grid_sampler_3d.default)
def _grid_sampler_3d(out, a, grid, interpolation_mode, padding_mode, align_corners):
    return expand(grid_sampler_3d, a, grid, interpolation_mode, padding_mode, align_corners)


@lower(aten.grid_sampler_3d_backward.default)
def _grid_sampler_3d_backward(out, grad_output, a, grid, interpolation_mode, padding_mode,
                              align_corners, output_mask):
    """The IR's VJP of the forward above at stop_gradient stand-ins of its inputs (an input
    computed from the other must not pass one's gradient on into the other)."""
    stand_ins = [ops.stop_gradient(node_of(t)) for t in (a, grid)]
    y = node_of(expand(grid_sampler_3d, *(from_node(s, t.dtype) for s, t in
                                          zip(stand_ins, (a, grid))),
                       interpolation_mode, padding_mode, align_corners))
    wanted = [s for s, keep in zip(stand_ins, output_mask) if keep]
    grads = iter(autodiff.vjp([y], [node_of(grad_output, y.dtype)], wanted) if wanted else [])
    return tuple(next(grads) if keep else None for keep in output_mask)
