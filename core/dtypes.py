"""The IR's dtypes: canonical lower-case names shared by every frontend and backend.

Frontends translate their framework's dtype objects to these names and back; backends map
them to their own types. Keeping them as plain strings keeps core free of framework imports.
"""
import numpy as np

BOOL = "bool"
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")  # pairs of float32 / float64, as in NumPy and XLA
REAL = (BOOL,) + SIGNED + UNSIGNED + FLOATS
ALL = REAL + COMPLEX
INEXACT = frozenset(FLOATS + COMPLEX)  # the dtypes whose arithmetic rounds

ITEMSIZE = {BOOL: 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2,
            "uint32": 4, "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
            "complex64": 8, "complex128": 16}
_PARTS = {"complex64": "float32", "complex128": "float64"}


def is_float(dtype):
    return dtype in FLOATS


def is_complex(dtype):
    return dtype in COMPLEX


def real_part(dtype):
    """The float dtype of a complex dtype's real and imaginary parts."""
    return _PARTS[dtype]


def complex_of(dtype):
    """The complex dtype whose parts are `dtype` (float32 or float64)."""
    for c, part in _PARTS.items():
        if part == dtype:
            return c
    raise TypeError(f"lazyx: no complex dtype has {dtype} parts (only float32 and float64)")


def is_int(dtype):
    """Signed or unsigned integer (bool is not an integer here)."""
    return dtype in SIGNED or dtype in UNSIGNED


def is_unsigned(dtype):
    return dtype in UNSIGNED


def check(dtype):
    if dtype not in ITEMSIZE:
        raise TypeError(f"lazyx: unknown dtype {dtype!r}; expected one of {', '.join(ALL)}")
    return dtype


def to_numpy(dtype):
    """The NumPy dtype for an IR dtype; bfloat16 needs ml_dtypes (shipped with jax and TF)."""
    found = _TO_NUMPY.get(dtype)  # (every Python number's param asks: np.dtype(name) is slow)
    if found is None:
        found = _TO_NUMPY[dtype] = _to_numpy(dtype)
    return found


_TO_NUMPY = {}


def _to_numpy(dtype):
    if dtype == "bfloat16":
        try:
            import ml_dtypes
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise TypeError("lazyx: bfloat16 on NumPy needs the ml_dtypes package "
                            "(pip install ml_dtypes)") from err
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def from_numpy(np_dtype):
    """The IR dtype name for a NumPy dtype, or TypeError for one the IR does not have."""
    name = np.dtype(np_dtype).name
    if name not in ITEMSIZE:
        raise TypeError(f"lazyx: NumPy dtype {name} has no lazyx equivalent "
                        f"(supported: {', '.join(ALL)})")
    return name
