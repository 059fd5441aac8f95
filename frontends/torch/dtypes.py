"""torch dtypes <-> IR dtype names, and CPU tensors <-> NumPy arrays (bfloat16 included)."""
import numpy as np
import torch

from ...core import dtypes as dt

_TO_IR = {torch.bool: "bool", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
          torch.int64: "int64", torch.uint8: "uint8", torch.uint16: "uint16",
          torch.uint32: "uint32", torch.uint64: "uint64", torch.float16: "float16",
          torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64",
          torch.complex64: "complex64", torch.complex128: "complex128"}
_TO_TORCH = {v: k for k, v in _TO_IR.items()}
IR = _TO_IR  # read-only use: dispatch's per-op path looks dtypes up without a call
# torch's C++ names of dtypes, which its error messages spell
C_NAMES = {torch.bool: "Bool", torch.uint8: "Byte", torch.int8: "Char", torch.int16: "Short",
           torch.int32: "Int", torch.int64: "Long", torch.float16: "Half",
           torch.bfloat16: "BFloat16", torch.float32: "Float", torch.float64: "Double",
           torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble"}


def cast_error(result, wanted):
    """Eager's error for a result of dtype `result` written into a tensor of dtype `wanted`."""
    return RuntimeError(f"result type {C_NAMES.get(result, result)} can't be cast to the "
                        f"desired output type {C_NAMES.get(wanted, wanted)}")


def supported(torch_dtype):
    return torch_dtype in _TO_IR


def to_ir(torch_dtype):
    try:
        return _TO_IR[torch_dtype]
    except KeyError:
        raise TypeError(f"lazyx: torch dtype {torch_dtype} has no lazyx equivalent") from None


def to_torch(ir_dtype):
    return _TO_TORCH[ir_dtype]


def to_numpy_array(tensor):
    # the common case, a plain contiguous tensor, without the four new tensor objects below
    # (1.3 against 2.3 us: every CPU input of a torch.compile'd call comes through here)
    if not tensor.requires_grad and tensor.dtype is not torch.bfloat16 and \
            tensor.is_contiguous() and not tensor.is_conj() and not tensor.is_neg():
        return tensor.numpy()
    tensor = tensor.detach().resolve_conj().resolve_neg().contiguous()
    if tensor.dtype == torch.bfloat16:  # NumPy has no bfloat16: move the bits
        return tensor.view(torch.int16).numpy().view(dt.to_numpy("bfloat16"))
    return tensor.numpy()


def from_numpy_array(array, torch_dtype):
    if torch_dtype == torch.bfloat16:
        # np.ascontiguousarray would turn a 0-d array into shape (1,): copy instead
        bits = np.array(array, copy=True).view(np.int16)
        return torch.from_numpy(bits).view(torch.bfloat16)
    # C order: the reference backend's values may be strided NumPy views (a transpose), and
    # a CPU kernel given one by a torch.compile graph's eager step (mkldnn_rnn_layer) read
    # its memory as if it were contiguous
    return torch.from_numpy(np.array(array, copy=True, order="C"))
