"""Complex numbers in the TF frontend: tf.complex, tf.math.real/imag/conj/angle and the
tf.signal FFT family, lowered to the IR's complex64/complex128 ops.

TF never promotes implicitly: complex64 + float32 raises (operand_nodes rejects mixed dtypes
and the registry replays the call for TF's own InvalidArgumentError), and a Python number
next to a complex tensor takes the tensor's dtype, as in eager TF.
"""
import math

import numpy as np

import tensorflow as tf

from ...core import dtypes as dt
from ...core import ops
from .lowering import Reject, broadcast_all, const, operand_nodes
from .registry import lower, lower_undispatched
from .tensor import ir_dtype, wrap


@lower(tf.dtypes.complex, "real", "imag")
def complex_(real, imag):
    re, im = broadcast_all(*operand_nodes(real, imag))
    if re.dtype not in ("float32", "float64"):
        raise Reject()
    return wrap(ops.complex_(re, im), real, imag)


def _part(api, on_complex, on_real):
    @lower(api, "input")
    def lowering(input, Tout=None):  # noqa: A002,N803 - TF's names
        (x,) = operand_nodes(input)
        if dt.is_complex(x.dtype):
            out = on_complex(x)
        elif dt.is_float(x.dtype) or (on_real is _itself and x.dtype != dt.BOOL):
            out = on_real(x)
        else:
            raise Reject()
        if Tout is not None and ir_dtype(Tout) != out.dtype:
            raise Reject()
        return wrap(out, input)
    lowering.__name__ = api.__name__
    return lowering


def _itself(x):
    return x


def _zeros(x):
    return const(0, x)


def _angle_real(x):
    # TF: pi where the real input is negative, else 0
    return ops.select(ops.lt(x, const(0, x)), const(math.pi, x), const(0, x))


_part(tf.math.real, ops.real, _itself)
_part(tf.math.imag, ops.imag, _zeros)
_part(tf.math.angle, lambda x: ops.atan2(ops.imag(x), ops.real(x)), _angle_real)


@lower(tf.math.conj, "x")
def conj(x):
    (node,) = operand_nodes(x)
    if dt.is_complex(node.dtype):
        return wrap(ops.conj(node), x)
    if node.dtype == dt.BOOL:
        raise Reject()
    return wrap(node, x)  # TF: conj of a real tensor is the tensor


# ---------------------------------------------------------------- tf.signal


def _complex_fft(api, kind, rank):
    @lower(api, "input")
    def lowering(input):  # noqa: A002
        (x,) = operand_nodes(input)
        if not dt.is_complex(x.dtype) or x.ndim < rank:
            raise Reject()
        return wrap(ops.fft(x, fft_type=kind, fft_lengths=x.shape[-rank:]), input)
    lowering.__name__ = api.__name__


for _rank, _suffix in ((1, ""), (2, "2d"), (3, "3d")):
    _complex_fft(getattr(tf.signal, "fft" + _suffix), "fft", _rank)
    _complex_fft(getattr(tf.signal, "ifft" + _suffix), "ifft", _rank)



# tf.signal.rfft/irfft (and their 2d/3d forms) convert their input with TF's internal
# convert_to_tensor before any dispatch could reach a lowering: hooks.py wraps them
# (registry.lower_undispatched). An fft_length other than the input's own sizes (TF pads or
# crops first) is left to TF, a counted fallback.

def _real_fft(name, kind, rank):
    @lower_undispatched(tf.signal, name)
    def lowering(input_tensor, fft_length=None):
        (x,) = operand_nodes(input_tensor)
        if x.ndim < rank:
            raise Reject()
        if kind == "rfft":
            if x.dtype not in ("float32", "float64"):
                raise Reject()
            lengths = tuple(x.shape[-rank:])
        else:
            if x.dtype not in ("complex64", "complex128"):
                raise Reject()
            lengths = tuple(x.shape[-rank:-1]) + (2 * (x.shape[-1] - 1),)
        if fft_length is not None:
            asked = tuple(int(n) for n in np.asarray(fft_length).reshape(-1))
            if asked != lengths and not (kind == "irfft" and asked[:-1] == lengths[:-1] and
                                         asked[-1] // 2 + 1 == x.shape[-1]):
                raise Reject()
            lengths = asked
        if min(lengths) < 1:
            raise Reject()
        return wrap(ops.fft(x, fft_type=kind, fft_lengths=lengths), input_tensor)
    lowering.__name__ = name


for _rank, _suffix in ((1, ""), (2, "2d"), (3, "3d")):
    _real_fft("rfft" + _suffix, "rfft", _rank)
    _real_fft("irfft" + _suffix, "irfft", _rank)
