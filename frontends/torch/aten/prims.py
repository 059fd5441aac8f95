"""torch.prims: what torch._refs-based decompositions bottom out in. The element-wise prims
share their aten twin's lowering; the structural ones map straight onto IR primitives."""
import torch

from ....core import ops
from ....core.tables import caller
from . import elementwise  # the aten twins below: imported here, so no import order matters
from .table import aten, bcast, compute_dtype, ir_dtype, lower, node_of, operands
from ..tensor import LOWERINGS

prims = torch.ops.prims

# prims.X(a, b) is aten.X.default / aten.X.Tensor on already-broadcast, already-promoted inputs
for _name in ("abs", "neg", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt",
              "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
              "asinh", "acosh", "atanh", "erf", "erfc", "erf_inv", "lgamma", "sign",
              "floor", "ceil", "round", "trunc", "reciprocal", "atan2", "maximum", "minimum",
              "nextafter", "fmod", "remainder", "eq", "ne", "lt", "le", "gt", "ge",
              "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "add", "sub", "mul",
              "div", "isfinite", "igamma", "igammac"):
    prim = getattr(prims, _name, None)
    twin = getattr(aten, {"erf_inv": "erfinv"}.get(_name, _name), None)
    if prim is None or twin is None:
        continue  # not in this torch version
    found = [getattr(twin, o) for o in ("Tensor", "default")
             if hasattr(twin, o) and getattr(twin, o) in LOWERINGS]
    if not found or LOWERINGS[found[0]].__module__ != elementwise.__name__:
        # a twin lowered elsewhere would make this table depend on which module came first
        raise ImportError(f"lazyx: prims.{_name}'s aten twin must be lowered in "
                          f"{elementwise.__name__}")
    LOWERINGS.add(prim.default, LOWERINGS[found[0]], caller(0))


@lower(prims.broadcast_in_dim.default)
def _broadcast_in_dim(out, x, shape, broadcast_dimensions):
    return ops.broadcast_in_dim(node_of(x), shape=tuple(shape),
                                broadcast_dimensions=tuple(broadcast_dimensions))


@lower(prims.convert_element_type.default)
def _convert(out, x, dtype):
    # the explicit conversion: complex -> real keeps the real part, as torch's .to() does
    return ops.convert(node_of(x), dtype=ir_dtype(dtype))


def _prim_reduce(reduce):
    def lowering(out, x, dims, *, output_dtype=None):
        a = node_of(x, compute_dtype(out.dtype))
        return reduce(a, axes=tuple(dims))
    return lowering


lower(prims.sum.default)(_prim_reduce(ops.reduce_sum))
lower(prims.prod.default)(_prim_reduce(ops.reduce_prod))
lower(prims.amax.default)(_prim_reduce(ops.reduce_max))
lower(prims.amin.default)(_prim_reduce(ops.reduce_min))


@lower(prims.var.default)
def _var(out, x, dims, correction=1, *, output_dtype=None):
    from .reductions import _variance
    return _variance(out, x, list(dims), correction)


@lower(prims.where.default)
def _where(out, pred, a, b):
    x, y = operands(out, a, b)
    return ops.select(bcast(node_of(pred, "bool"), out.shape), x, y)


@lower(prims.squeeze.default, prims.reshape.default, prims.collapse_view.default,
       prims.view_of.default)
def _reshape(out, x, *args, **kwargs):
    return ops.reshape(node_of(x), new_sizes=tuple(out.shape))


@lower(prims.transpose.default)
def _transpose(out, x, permutation):
    return ops.transpose(node_of(x), permutation=tuple(permutation))




def _fma(out, a, b, c):
    x, y, z = operands(out, a, b, c)
    return ops.add(ops.mul(x, y), z)


# Lowerings only torch.compile graphs meet, of ops that exist only once Dynamo imported
# torch._inductor (3 s: not at lazyx's import). Kept out of LOWERINGS: an entry added there
# late changed the lazy dispatcher's fast routes mid-process (its table size is their key),
# and other tests' numbers with them.
GRAPH_ONLY = {}


def lower_inductor_prims():
    """prims.fma(a, b, c) = a * b + c: Dynamo writes `p.addcmul_(g, g, value=v)` (Adam, AdamW,
    RMSprop) as it. The backend registers it at each graph it gets (Dynamo imported the op
    before it traced such a call)."""
    fma = getattr(prims, "fma", None)
    if fma is not None:
        GRAPH_ONLY.setdefault(fma.default, _fma)
