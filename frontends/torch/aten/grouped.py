"""torch._grouped_mm (torch.nn.functional.grouped_mm; transformers' default MoE experts path)
with static shapes.

`offs` (G,) int32 holds cumulative ends: position j of the jagged dimension is in group g when
start <= j < offs[g], start = offs[g-1] (0 for g = 0); positions at or past the last end are in
none (torch leaves those outputs uninitialized; here they are 0). The jagged dimension is
mat_a's rows for 2d x 3d, mat_b's columns for 3d x 2d, and the contraction for 2d x 2d (one
product per group); 3d x 3d is a bmm. The group sizes are data, so every layout computes all G
products and keeps each position's own with a select (not a multiply by a mask: another
group's inf or NaN must not leak in): G times the FLOPs of the useful product and a G-times
larger intermediate, no sync.
The backward is torch's own formula, _grouped_mm of transposes, so it lowers here too.

It is a tensor.SPECIAL entry that checks the arguments itself: torch's meta kernel accepts
only bfloat16 (CUDA's rule), and the dispatcher's stand-in, CPU torch on contiguous zeros,
refuses the transposed operands the backward passes (CPU's 16-byte stride rule holds for the
real strided views, not for contiguous copies of odd row counts).
"""
import torch

from ....core import ops
from .linalg import _matmul
from .table import aten, const, ir_dtype, node_of


def _members(offs, n):
    """(G, n) bool: position j (0 <= j < n) is in group g. A position's group is the number
    of ends at or below it (ends are non-decreasing, as torch requires)."""
    ends = node_of(offs)
    g = ends.shape[0]
    position = ops.iota(dtype=ends.dtype, shape=(g, n), dimension=1)
    passed = ops.le(ops.broadcast_in_dim(ends, shape=(g, n), broadcast_dimensions=(0,)), position)
    group = ops.reduce_sum(ops.convert(passed, dtype="int32"), axes=(0,))
    return ops.eq(ops.broadcast_in_dim(group, shape=(g, n), broadcast_dimensions=(1,)),
                  ops.iota(dtype="int32", shape=(g, n), dimension=0))


def _keep(member, values, dims):
    """values where member (broadcast along `dims` of values' shape), else 0."""
    shape = values.shape
    mask = ops.broadcast_in_dim(member, shape=shape, broadcast_dimensions=dims)
    return ops.select(mask, values, const(0, values.dtype, shape))


_NAMES = {torch.float64: "Double", torch.int64: "Long", torch.int32: "Int", torch.int16: "Short",
          torch.int8: "Char", torch.uint8: "Byte", torch.bool: "Bool", torch.complex64:
          "ComplexFloat", torch.complex128: "ComplexDouble"}
_CPP = {torch.float32: "float", torch.bfloat16: "c10::BFloat16", torch.float16: "c10::Half"}


def _shape(mat_a, mat_b, offs, bias, out_dtype):
    """The result's shape, after CPU torch's checks in its words and order."""
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if m.dim() not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if m.dtype not in _CPP:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, "
                               f"got {_NAMES.get(m.dtype, m.dtype)}")
    if mat_a.dtype != mat_b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_CPP[mat_a.dtype]} != {_CPP[mat_b.dtype]}")
    a2, b2 = mat_a.dim() == 2, mat_b.dim() == 2
    if (offs is not None) != (a2 or b2):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if offs is not None:
        if offs.dim() != 1:
            raise RuntimeError("offs has to be 1D")
        if offs.dtype != torch.int32:
            raise RuntimeError("Offsets have to be int32")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if out_dtype is not None and out_dtype != mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if mat_a.shape[-1] != mat_b.shape[-2]:  # (CPU torch slices a 2d x 2d mismatch silently)
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if a2 and b2:
        return (offs.shape[0], mat_a.shape[0], mat_b.shape[1])
    if a2 or b2:
        if offs.shape[0] != (mat_b if a2 else mat_a).shape[0]:
            raise RuntimeError("matrix batch sizes have to match")
        return (mat_a.shape[0], mat_b.shape[-1]) if a2 else (mat_a.shape[1], mat_b.shape[1])
    if mat_a.shape[0] != mat_b.shape[0]:
        raise RuntimeError("batched dimension has to match")
    return (mat_a.shape[0], mat_a.shape[1], mat_b.shape[2])


def _grouped_mm_call(mat_a, mat_b, offs=None, bias=None, out_dtype=None):
    from ..tensor import from_node
    shape = tuple(int(n) for n in _shape(mat_a, mat_b, offs, bias, out_dtype))
    result = _grouped_mm(mat_a, mat_b, offs)
    assert result.shape == shape, (result.shape, shape)
    want = ir_dtype(mat_a.dtype)
    if result.dtype != want:  # halves accumulate in float32, rounded once at the end
        result = ops.convert(result, dtype=want)
    return from_node(result, mat_a.dtype)


def _grouped_mm(mat_a, mat_b, offs):
    a, b = node_of(mat_a), node_of(mat_b)
    if a.ndim == 3 and b.ndim == 3:
        return _matmul(a, b, ((2,), (1,)), ((0,), (0,)))
    if a.ndim == 2 and b.ndim == 3:  # (T, K) rows in groups @ (G, K, N) -> (T, N)
        g, k, n = b.shape  # plain matmul shapes: XLA's CPU dot refuses bf16 -> f32 otherwise
        wide = ops.reshape(ops.transpose(b, permutation=(1, 0, 2)), new_sizes=(k, g * n))
        every = ops.reshape(_matmul(a, wide, ((1,), (0,))), new_sizes=(a.shape[0], g, n))
        member = ops.transpose(_members(offs, a.shape[0]), permutation=(1, 0))  # (T, G)
        return ops.reduce_sum(_keep(member, every, (0, 1)), axes=(1,))
    if a.ndim == 3 and b.ndim == 2:  # (G, M, K) @ (K, N) columns in groups -> (M, N)
        g, m, k = a.shape
        every = ops.reshape(_matmul(ops.reshape(a, new_sizes=(g * m, k)), b, ((1,), (0,))),
                            new_sizes=(g, m, b.shape[1]))
        member = _members(offs, b.shape[1])  # (G, N)
        return ops.reduce_sum(_keep(member, every, (0, 2)), axes=(0,))
    # (M, K) @ (K, N), K in groups -> (G, M, N): both sides masked, so 0 * inf never appears
    member = _members(offs, a.shape[1])  # (G, K)
    g = member.shape[0]
    wide_a = ops.broadcast_in_dim(a, shape=(g,) + a.shape, broadcast_dimensions=(1, 2))
    wide_b = ops.broadcast_in_dim(b, shape=(g,) + b.shape, broadcast_dimensions=(1, 2))
    return _matmul(_keep(member, wide_a, (0, 2)), _keep(member, wide_b, (0, 1)),
                   ((2,), (1,)), ((0,), (0,)))


def _register():
    from ..tensor import SPECIAL
    SPECIAL[aten._grouped_mm.default] = _grouped_mm_call


_register()
