"""tf.signal's framing: frame, overlap_and_add, stft and inverse_stft (the FFTs themselves:
api_complex.py). Frame lengths and steps must be static; a lazy one is a counted fallback."""
import tensorflow as tf

from ...core import dtypes as dt
from ...core import compose, ir, ops
from .lowering import Reject, axes_of, operand_nodes, static_ints
from .registry import lower
from .tensor import wrap


def _static_length(value):
    """A frame length or step as a Python int >= 1, else Reject (TF's error or a fallback)."""
    n = static_ints(value)
    if not isinstance(n, int) or n < 1:
        raise Reject()
    return n


def _enclosing_power_of_two(n):
    return 1 << (n - 1).bit_length()


def _resize_last(x, size):
    """x's last axis cut or zero-padded to `size`, as TF's stft and inverse_stft fit a frame
    to fft_length and back."""
    n = x.shape[-1]
    if size < n:
        return compose.slice_axis(x, x.ndim - 1, 0, size)
    if size > n:
        config = [(0, 0, 0)] * (x.ndim - 1) + [(0, size - n, 0)]
        return ops.pad(x, ir.constant(0, x.dtype), padding_config=config)
    return x


@lower(tf.signal.frame, "signal")
def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1):
    (x,) = operand_nodes(signal)
    length, step = _static_length(frame_length), _static_length(frame_step)
    if x.ndim == 0 or not isinstance(pad_value, (int, float)):
        raise Reject()
    (a,) = axes_of(axis, x.ndim, allow_none=False)
    n = x.shape[a]
    if pad_end:  # TF pads the end so that every sample starts some frame
        count = -(-n // step)
        extra = max((count - 1) * step + length - n, 0)
        config = [(0, 0, 0)] * x.ndim
        config[a] = (0, extra, 0)
        (value,) = operand_nodes(signal, pad_value)[1:]
        x = ops.pad(x, value, padding_config=config)
    else:
        count = max(0, 1 + (n - length) // step) if n >= length else 0
    shape = x.shape[:a] + (1, length) + x.shape[a + 1:]
    frames = [ops.reshape(compose.slice_axis(x, a, i * step, i * step + length), new_sizes=shape)
              for i in range(count)]
    if not frames:
        raise Reject()
    out = frames[0] if count == 1 else ops.concatenate(*frames, dimension=a)
    return wrap(out, signal)


@lower(tf.signal.stft, "signals")
def stft(signals, frame_length, frame_step, fft_length=None, window_fn=tf.signal.hann_window,
         pad_end=False):
    """TF's body: frames, times the window (a host tensor of static length), the real FFT
    of each, zero-padded (or cut) to fft_length (default: the next power of two)."""
    length = _static_length(frame_length)
    size = _enclosing_power_of_two(length) if fft_length is None else static_ints(fft_length)
    if not isinstance(size, int) or size < 1 or signals.dtype not in (tf.float32, tf.float64):
        raise Reject()
    framed = frame(signals, length, frame_step, pad_end=pad_end)
    if window_fn is not None:
        framed = framed * window_fn(length, dtype=framed.dtype)
    x = _resize_last(framed.node, size)
    return wrap(ops.fft(x, fft_type="rfft", fft_lengths=(size,)), framed)


def _overlap_add(x, step):
    """Sum of x's frames (axis -2), frame i shifted by i * step, along one axis.

    Each frame is cut into `parts` chunks of `step` samples; chunk k of frame i lands on
    output chunk i + k. Laid out as [parts, frames + parts] chunks and read back as rows of
    frames + parts - 1, row k is shifted right by k: summing the rows adds the overlaps,
    in a fixed number of nodes whatever the overlap."""
    *outer, frames, length = x.shape
    outer, lead = tuple(outer), len(outer)
    total = length + step * (frames - 1)
    if step == length:
        return ops.reshape(x, new_sizes=outer + (total,))
    parts = -(-length // step)
    config = [(0, 0, 0)] * lead + [(0, parts, 0), (0, parts * step - length, 0)]
    x = ops.pad(x, ir.constant(0, x.dtype), padding_config=config)
    x = ops.reshape(x, new_sizes=outer + (frames + parts, parts, step))
    x = ops.transpose(x, permutation=tuple(range(lead)) + (lead + 1, lead, lead + 2))
    x = ops.reshape(x, new_sizes=outer + (parts * (frames + parts), step))
    x = compose.slice_axis(x, lead, 0, parts * (frames + parts - 1))
    x = ops.reshape(x, new_sizes=outer + (parts, frames + parts - 1, step))
    x = ops.reduce_sum(x, axes=(lead,))
    x = ops.reshape(x, new_sizes=outer + ((frames + parts - 1) * step,))
    return compose.slice_axis(x, lead, 0, total)


@lower(tf.signal.overlap_and_add, "signal")
def overlap_and_add(signal, frame_step):
    (x,) = operand_nodes(signal)
    step = _static_length(frame_step)
    if x.ndim < 2 or x.shape[-2] < 1 or x.dtype == dt.BOOL:
        raise Reject()
    return wrap(_overlap_add(x, step), signal)


@lower(tf.signal.inverse_stft, "stfts")
def inverse_stft(stfts, frame_length, frame_step, fft_length=None,
                 window_fn=tf.signal.hann_window):
    """TF's body: the inverse real FFT of each frame (of fft_length, default the next power
    of two over frame_length), cut or zero-padded to frame_length, times the window, the
    frames overlapped and added frame_step apart."""
    (x,) = operand_nodes(stfts)
    length, step = _static_length(frame_length), _static_length(frame_step)
    size = _enclosing_power_of_two(length) if fft_length is None else static_ints(fft_length)
    if not isinstance(size, int) or size < 1 or not dt.is_complex(x.dtype) or x.ndim < 2 \
            or x.shape[-2] < 1:
        raise Reject()
    # irfft of fft_length reads that many bins, as TF's does: the rest cut, missing ones 0
    x = _resize_last(x, size // 2 + 1)
    frames = wrap(_resize_last(ops.fft(x, fft_type="irfft", fft_lengths=(size,)), length),
                  stfts)
    if window_fn is not None:
        frames = frames * window_fn(length, dtype=frames.dtype)
    return wrap(_overlap_add(frames.node, step), frames)
