"""The aten lowering table and the helpers every lowering shares.

A lowering is `fn(out, *args, **kwargs)`: `out` is torch's meta result (shape and dtype already
checked by torch, errors already raised), the rest are the aten call's arguments. It returns an
IR node (or a tuple of them, mirroring `out`); a dtype that differs from torch's is converted
by the dispatcher. Raising Unsupported hands the call to torch._decomp or the CPU fallback.
"""
import torch

from ....core import dtypes as dt
from ....core import compose, ir, ops
from .. import dtypes
from ..tensor import LOWERINGS, LazyTensor, Unsupported  # noqa: F401 (lowerings raise it)

aten = torch.ops.aten


lower = LOWERINGS.register  # @lower(aten.x.default, ...): the lowering of each overload


def ir_dtype(torch_dtype):
    return dtypes.to_ir(torch_dtype)


def _scalar_dtype(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float32" if torch.get_default_dtype() == torch.float32 else "float64"
    raise Unsupported(f"scalar of type {type(value).__name__}")


def host_data(x):
    """A device data leaf holding a CPU tensor's values (a supported dtype)."""
    from ....core import runtime
    return runtime.from_host(dtypes.to_numpy_array(x), dtypes.to_ir(x.dtype))


def node_of(x, dtype=None):
    """An IR node for a lazy tensor, a CPU scalar tensor or a Python number (a run-time param,
    never a constant, so a changing learning rate does not recompile), converted to `dtype`."""
    t = type(x)
    if t is LazyTensor:  # the common cases first: one type test each
        node = x._lazyx_handle.node
    elif t is float or t is bool:
        return ir.param(x, dtype or _scalar_dtype(x))
    elif t is int:
        return ir.param(wrapped_int(x, dtype) if dtype else x, dtype or _scalar_dtype(x))
    elif isinstance(x, LazyTensor):
        node = x._lazyx_handle.node
    elif isinstance(x, torch.Tensor):
        if not dtypes.supported(x.dtype) or x.device.type not in ("cpu",):
            raise Unsupported(f"tensor {x.dtype} on {x.device}")
        if x.dim() == 0 and x.is_complex():
            node = node_of(x.item(), dtypes.to_ir(x.dtype))
        elif x.dim() == 0:
            node = ir.param(x.item(), dtypes.to_ir(x.dtype))
        else:
            node = host_data(x)
    elif isinstance(x, ir.Node):
        node = x
    elif isinstance(x, complex):
        # two float params, so a changing complex scalar does not recompile either
        parts = dt.real_part(dtype) if dtype and dt.is_complex(dtype) else (
            "float32" if torch.get_default_dtype() == torch.float32 else "float64")
        node = ops.complex_(ir.param(x.real, parts), ir.param(x.imag, parts))
    else:
        return ir.param(x, dtype or _scalar_dtype(x))
    if dtype is not None and node.dtype != dtype:
        if dt.is_complex(node.dtype) and not dt.is_complex(dtype):
            # never drop an imaginary part silently: a lowering that means it says so
            raise Unsupported(f"complex {node.dtype} operand where {dtype} is computed")
        node = ops.convert(node, dtype=dtype)
    return node


# NumPy/torch broadcasting to a shape, and a fixed number baked into the program (0, 1, inf):
# the shared rules, under the names every lowering here uses
bcast = compose.broadcast_to
const = compose.const


def scalar(value, dtype, shape=()):
    """A Python number (or CPU scalar tensor, or complex) as a param broadcast to `shape`."""
    return bcast(node_of(value, dtype), shape)


# Half types compute in float32, as torch's CPU kernels do (opmath)
_COMPUTE = {d: "float32" if name in ("float16", "bfloat16") else name
            for d, name in dtypes.IR.items()}


def compute_dtype(torch_dtype):
    """The IR dtype a lowering computes in for a torch result dtype."""
    d = _COMPUTE.get(torch_dtype)
    return d if d is not None else ir_dtype(torch_dtype)  # (ir_dtype raises for the rest)


def operands(out, *xs, dtype=None):
    """Inputs converted to the computation dtype and broadcast to the output's shape."""
    dtype = dtype or compute_dtype(out.dtype)
    shape = tuple(out.shape)
    # a Python number is one param leaf of the output's shape (a splat: core/ir.py)
    return [ir.param(wrapped_int(x, dtype) if type(x) is int else x, dtype, shape)
            if type(x) in _NUMBERS else bcast(node_of(x, dtype), shape) for x in xs]


_NUMBERS = (float, int, bool)

# integer dtypes: (bits, signed)
_INT_BITS = {"int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True),
             "uint8": (8, False), "uint16": (16, False), "uint32": (32, False),
             "uint64": (64, False)}


def wrapped_int(value, dtype):
    """A Python int operand as torch casts it to an integer tensor's dtype: wrapped, two's
    complement (`int8_tensor + 300` adds 44, `uint8_tensor < -1` compares with 255), where
    NumPy refuses. One beyond 64 bits stays as it is (torch's OverflowError, and NumPy's)."""
    bits = _INT_BITS.get(dtype)
    if bits is None or not -(1 << 63) <= value < 1 << 64:
        return value
    value &= (1 << bits[0]) - 1
    return value - (1 << bits[0]) if bits[1] and value >> (bits[0] - 1) else value


def fill_value(value, dtype):
    """A fill value (fill_, full, full_like) checked as torch checks it: an int that does not
    fit an integer dtype is torch's RuntimeError, not a wrapped number."""
    if type(value) is int and wrapped_int(value, dtype) != value:
        raise RuntimeError(f"value cannot be converted to type {_C_NAMES.get(dtype, dtype)} "
                           f"without overflow")
    return value


_C_NAMES = {"int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
            "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t"}


def dim_of(dim, ndim):
    """torch's wrap of a negative dim, and its IndexError for one out of range (some meta
    kernels, softmax's and sort's, do not check it; the CPU kernels do)."""
    wrapped = compose.wrap_axis(dim, ndim)
    if wrapped is None:
        n = max(ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return wrapped


def dims_of(dims, ndim):
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    return tuple(sorted({dim_of(d, ndim) for d in dims})) if ndim else ()


def is_float(node):
    return node.dtype in ("float16", "bfloat16", "float32", "float64")


def is_complex(node):
    return dt.is_complex(node.dtype)
