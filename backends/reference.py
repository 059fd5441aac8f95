"""The reference backend: a NumPy interpreter, one table entry per primitive.

It is the oracle the XLA backend is tested against, so each entry spells out the IR's
semantics (XLA's, where NumPy differs: integer division by zero, shifts past the bit width,
reductions over empty axes, clamped gather indices) rather than NumPy's conveniences.
Half-precision element-wise math is computed in float32 and rounded, as XLA does on CPU.
"""
import math

import numpy as np

from ..core import dtypes as dt
from ..core import host_values
from ..core.ops import recurrence3_step
from ..core.prng import philox4x32, philox_counters, threefry2x32
from ..core.tables import Table
from . import reference_ctc  # CTC's alpha and beta recursions
from . import reference_gamma  # the incomplete gamma functions
from .reference_linalg import RUNS  # multi-result kernel runs (tests read them)

HALF = ("float16", "bfloat16")


def _f32_for_half(fn):
    """Run fn in float32 for float16/bfloat16 operands; the interpreter rounds the result."""
    def wrapped(*args, **attrs):
        if any(a.dtype.name in HALF for a in args):
            args = [a.astype(np.float32) if a.dtype.name in HALF else a for a in args]
        return fn(*args, **attrs)
    return wrapped


_erf = np.vectorize(math.erf, otypes=[np.float64])
def _lgamma_scalar(v):
    """math.lgamma, with XLA's answers where it raises: +inf at poles and +-inf, NaN for NaN."""
    if math.isnan(v):
        return v
    if math.isinf(v) or (v <= 0 and v == math.floor(v)):
        return math.inf
    return math.lgamma(v)


_lgamma = np.vectorize(_lgamma_scalar, otypes=[np.float64])


def _erf_inv(y):
    """Inverse error function: Giles' single-precision start, then Newton steps on math.erf."""
    y = y.astype(np.float64)
    w = -np.log((1.0 - y) * (1.0 + y))
    small = w < 5.0
    ws = w - 2.5
    p_small = np.polyval([2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                          0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                          1.50140941], ws)
    wl = np.sqrt(np.maximum(w, 0.0)) - 3.0
    p_large = np.polyval([-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                          0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                          2.83297682], wl)
    x = np.where(small, p_small, p_large) * y
    for _ in range(3):
        err = _erf(x) - y
        x = x - err / (2.0 / math.sqrt(math.pi) * np.exp(-x * x))
    x = np.where(np.abs(y) == 1.0, np.copysign(np.inf, y), x)
    return np.where(np.abs(y) > 1.0, np.nan, x)


def _digamma(x):
    x = x.astype(np.float64)
    result = np.zeros_like(x)
    reflect = x < 0.5
    xr = np.where(reflect, 1.0 - x, x)
    for _ in range(6):  # recurrence psi(x) = psi(x+1) - 1/x until the series is accurate
        result -= 1.0 / xr
        xr = xr + 1.0
    inv2 = 1.0 / (xr * xr)
    series = np.log(xr) - 0.5 / xr - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 / 132))))
    result += series
    with np.errstate(all="ignore"):
        result = np.where(reflect, result - np.pi / np.tan(np.pi * x), result)
    return np.where((x <= 0) & (x == np.floor(x)), np.nan, result)


def _logistic(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _int_div(a, b):
    """Truncating integer division; x / 0 gives -1 (all bits set) and MIN / -1 wraps to MIN,
    as XLA does. (Not via abs(): abs(MIN) overflows.)"""
    by_zero = b == 0
    overflow = (b == -1) & (a == np.iinfo(a.dtype).min) if not dt.is_unsigned(a.dtype.name) \
        else np.zeros(a.shape, bool)
    safe = np.where(by_zero | overflow, np.ones_like(b), b)
    q = np.floor_divide(a, safe)
    q = np.where((q * safe != a) & ((a < 0) != (safe < 0)), q + 1, q)  # floor -> truncate
    q = np.where(overflow, a, q)
    return np.where(by_zero, np.array(-1).astype(a.dtype), q).astype(a.dtype)


def _div(a, b):
    return _int_div(a, b) if dt.is_int(a.dtype.name) else np.divide(a, b)


def _rem(a, b):
    if dt.is_int(a.dtype.name):
        safe = np.where(b == 0, 1, b)  # x % 0 is x, as XLA gives; MIN % -1 is 0 (no trap)
        if not dt.is_unsigned(a.dtype.name):
            safe = np.where((a == np.iinfo(a.dtype).min) & (b == -1), 1, safe)
        return np.where(b == 0, a, np.fmod(a, safe.astype(a.dtype)))
    return np.fmod(a, b)


def _int_pow(base, exp):
    """Exponentiation by squaring with wrap-around; negative exponents give 0 except for +-1."""
    result = np.ones_like(base)
    b, e = base.copy(), np.where(exp < 0, 0, exp).astype(base.dtype)
    while np.any(e > 0):
        result = np.where(e & 1, result * b, result)
        b = b * b
        e = e >> 1
    neg = exp < 0
    one = base == 1
    minus_one = base == -1 if not dt.is_unsigned(base.dtype.name) else np.zeros_like(one)
    neg_result = np.where(one, 1, np.where(minus_one, np.where(exp & 1, -1, 1), 0))
    return np.where(neg, neg_result.astype(base.dtype), result)


def _pow(a, b):
    if dt.is_int(a.dtype.name):
        return _int_pow(a, b)
    out = np.power(a, b)
    if a.dtype.kind == "f":
        # (-inf) ** y, y > 0 not an odd integer, is +inf (C99, XLA); NumPy's scalar loop says
        # NaN while its vector loop says inf, so the answer would depend on the shape
        even = (a == -np.inf) & (b > 0) & (np.fmod(b, 2) != 1)
        out = np.where(even, np.inf, out)
    return out


def _bits(a):
    return np.dtype(a.dtype).itemsize * 8


def _shift_left(a, b):
    over = (b < 0) | (b >= _bits(a))
    return np.where(over, 0, np.left_shift(a, np.where(over, 0, b))).astype(a.dtype)


def _shift_right_logical(a, b):
    unsigned = a.view(np.dtype(f"uint{_bits(a)}"))
    over = (b < 0) | (b >= _bits(a))
    shifted = np.right_shift(unsigned, np.where(over, 0, b).astype(unsigned.dtype))
    return np.where(over, 0, shifted).astype(unsigned.dtype).view(a.dtype)


def _shift_right_arithmetic(a, b):
    """Sign-filling shift of the bit pattern, unsigned types included (XLA treats their top
    bit as the sign: uint8 128 >> 1 == 192); past the width every bit is the sign bit."""
    signed = a.view(np.dtype(f"int{_bits(a)}"))
    over = (b < 0) | (b >= _bits(a))
    fill = np.where(signed < 0, -1, 0)
    shifted = np.right_shift(signed, np.where(over, 0, b).astype(signed.dtype))
    return np.where(over, fill, shifted).astype(signed.dtype).view(a.dtype)


def _convert(x, *, dtype):
    target = dt.to_numpy(dtype)
    if dtype == dt.BOOL:
        return x != 0
    if x.dtype.kind == "c" and not dt.is_complex(dtype):
        x = np.real(x)  # the IR's complex -> real keeps the real part (NumPy would warn)
    if dt.is_int(dtype) and (x.dtype.kind == "f" or x.dtype.name == "bfloat16"):
        return _float_to_int(x, target)
    return x.astype(target)


def _float_to_int(x, target):
    """The IR's float -> int rule (docs/errors.md): truncate toward zero, saturate at the
    integer range (+-inf too), NaN -> 0 -- what XLA's CPU convert gives. NumPy's own cast is
    undefined there (INT_MIN on x86, with a warning)."""
    wide = np.trunc(x.astype(np.float64))
    info = np.iinfo(target)
    hi, lo = float(info.max), float(info.min)  # exact powers of two once rounded to float64
    inside = (wide < hi) & (wide > lo)
    out = np.where(inside, wide, 0).astype(target)
    out = np.where(wide >= hi, info.max, np.where(wide <= lo, info.min, out)).astype(target)
    return np.where(np.isnan(wide), 0, out).astype(target)


def _broadcast_in_dim(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


def _slice(x, *, start_indices, limit_indices, strides):
    return x[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


def _dynamic_update_slice(x, update, *starts):
    out = x.copy()
    starts = host_values.clamped_starts(x.shape, update.shape, starts)
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return out


_pad = host_values.pad_array  # (core reads known pads and windows on the host with the same code)
_dynamic_slice = host_values.dynamic_slice_array


def _iota(*, dtype, shape, dimension):
    counts = np.arange(shape[dimension]).astype(dt.to_numpy(dtype))
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return np.broadcast_to(counts.reshape(expanded), shape)


def _identity(kind, dtype):
    if kind == "max":
        return -np.inf if dtype.kind == "f" else (False if dtype.kind == "b" else np.iinfo(dtype).min)
    return np.inf if dtype.kind == "f" else (True if dtype.kind == "b" else np.iinfo(dtype).max)


def _reduction(fn, kind=None):
    @_f32_for_half
    def reduce(x, *, axes):
        if kind and any(x.shape[a] == 0 for a in axes):
            shape = [d for i, d in enumerate(x.shape) if i not in axes]
            return np.full(shape, _identity(kind, x.dtype), dtype=x.dtype)
        return fn(x, axis=axes, dtype=x.dtype) if kind is None else fn(x, axis=axes)
    return reduce


def _arg(fn):
    def arg(x, *, axis, index_dtype):
        return fn(x, axis=axis).astype(dt.to_numpy(index_dtype))
    return arg


def _scan(fn):
    @_f32_for_half
    def scan(x, *, axis, reverse):
        if reverse:
            return np.flip(fn(np.flip(x, axis), axis=axis), axis)
        return fn(x, axis=axis)
    return scan


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _dot_general(lhs, rhs, *, contracting_dimensions, batch_dimensions, preferred_element_type):
    """As (batch, free, contracted) @ (batch, contracted, free) through np.matmul, i.e. BLAS
    (LAZYX_TIERED runs whole training steps on this interpreter): the result's axes are
    batch, lhs free, rhs free, as dot_general defines them."""
    (lc, rc), (lb, rb) = contracting_dimensions, batch_dimensions
    compute = dt.to_numpy(preferred_element_type) if preferred_element_type else lhs.dtype
    if compute.name in HALF:
        compute = np.dtype(np.float32)
    lhs, rhs = lhs.astype(compute, copy=False), rhs.astype(compute, copy=False)
    lf = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rf = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    batch = [lhs.shape[i] for i in lb]
    size = lambda x, axes: int(np.prod([x.shape[i] for i in axes], dtype=np.int64))  # noqa: E731
    a = lhs.transpose(list(lb) + lf + list(lc)).reshape(batch + [size(lhs, lf), size(lhs, lc)])
    b = rhs.transpose(list(rb) + list(rc) + rf).reshape(batch + [size(rhs, rc), size(rhs, rf)])
    out = np.matmul(a, b)
    return out.reshape(batch + [lhs.shape[i] for i in lf] + [rhs.shape[i] for i in rf])


def _dilate(x, factors, first_axis):
    if all(f == 1 for f in factors):
        return x
    shape = list(x.shape)
    for k, f in enumerate(factors):
        d = shape[first_axis + k]
        shape[first_axis + k] = (d - 1) * f + 1 if d else 0
    out = np.zeros(shape, x.dtype)
    out[(slice(None),) * first_axis + tuple(slice(None, None, f) for f in factors)] = x
    return out


@_f32_for_half
def _conv(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
          feature_group_count, batch_group_count):
    nsp = lhs.ndim - 2
    lhs = _dilate(lhs, lhs_dilation, 2)
    lhs = _pad(lhs, np.zeros((), lhs.dtype),
               padding_config=((0, 0, 0), (0, 0, 0)) + tuple((lo, hi, 0) for lo, hi in padding))
    rhs = _dilate(rhs, rhs_dilation, 2)
    windows = np.lib.stride_tricks.sliding_window_view(lhs, rhs.shape[2:], axis=tuple(range(2, lhs.ndim)))
    windows = windows[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in window_strides)]
    n, c = lhs.shape[:2]
    o, i = rhs.shape[:2]
    g, bg = feature_group_count, batch_group_count
    out_sp = windows.shape[2:2 + nsp]
    windows = windows.reshape((bg, n // bg, g, c // g) + windows.shape[2:])
    kernel = rhs.reshape((bg, g, o // (g * bg), i) + rhs.shape[2:])
    sp = _LETTERS[:nsp]
    ks = _LETTERS[nsp:2 * nsp]
    spec = f"Bngi{sp}{ks},Bgoi{ks}->nBgo{sp}"
    out = np.einsum(spec.replace("B", "z"), windows, kernel)
    return out.reshape((n // bg, o) + out_sp)


_WINDOW_REDUCERS = {"sum": np.sum, "max": np.max, "min": np.min}


@_f32_for_half
def _reduce_window(x, *, kind, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation):
    # base dilation and padding both fill with the kind's identity, so one _pad does both
    identity = np.zeros((), x.dtype) if kind == "sum" else np.asarray(_identity(kind, x.dtype),
                                                                      x.dtype)
    config = tuple((lo, hi, a - 1) for (lo, hi), a in zip(padding, base_dilation))
    x = _pad(x, identity, padding_config=config)
    spans = tuple((k - 1) * d + 1 for k, d in zip(window_dimensions, window_dilation))
    if 0 in x.shape:  # an empty axis has no windows (sliding_window_view would refuse it)
        shape = [(n - w) // s + 1 if n else 0 for n, w, s in zip(x.shape, spans, window_strides)]
        return np.zeros(shape, x.dtype)
    axes = tuple(range(x.ndim))
    windows = np.lib.stride_tricks.sliding_window_view(x, spans, axis=axes)
    # keep every stride-th window, and within a window every dilation-th tap
    windows = windows[tuple(slice(None, None, s) for s in window_strides)
                      + tuple(slice(None, None, d) for d in window_dilation)]
    reduce_axes = tuple(range(x.ndim, 2 * x.ndim))
    if kind == "sum":
        return np.sum(windows, axis=reduce_axes, dtype=x.dtype)
    return _WINDOW_REDUCERS[kind](windows, axis=reduce_axes)


def _index_tuple(operand, indices):
    k = indices.shape[-1]
    comps = [np.clip(indices[..., j], 0, operand.shape[j] - 1) for j in range(k)]
    return tuple(comps)


def _gather(operand, indices):
    if operand.size == 0:
        return np.zeros(indices.shape[:-1] + operand.shape[indices.shape[-1]:], operand.dtype)
    return operand[_index_tuple(operand, indices)]


_SCATTER = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter(operand, indices, updates, *, mode):
    out = operand.copy()
    k = indices.shape[-1]
    flat_idx = indices.reshape(-1, k)
    flat_upd = updates.reshape((-1,) + operand.shape[k:])
    inside = np.all((flat_idx >= 0) & (flat_idx < np.array(operand.shape[:k])), axis=1)
    flat_idx, flat_upd = flat_idx[inside], flat_upd[inside]
    where = tuple(flat_idx[:, j] for j in range(k))
    if mode == "set":
        out[where] = flat_upd
    else:
        _SCATTER[mode].at(out, where, flat_upd)
    return out


def _argsort_impl(x, axis, descending):
    if x.dtype.name == "bfloat16":
        x = x.astype(np.float32)  # exact; ml_dtypes' own sort does not order NaN last
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)


def _sort(x, *, axis, descending):
    return np.take_along_axis(x, _argsort_impl(x, axis, descending), axis)


def _argsort(x, *, axis, descending, index_dtype):
    return _argsort_impl(x, axis, descending).astype(dt.to_numpy(index_dtype))


def _sort_with_indices(x, *, axis, descending, index_dtype):
    RUNS["sort_with_indices"] += 1
    order = _argsort_impl(x, axis, descending)
    return np.take_along_axis(x, order, axis), order.astype(dt.to_numpy(index_dtype))


def _top_k(x, *, k, index_dtype):
    RUNS["top_k"] += 1
    order = _argsort_impl(x, x.ndim - 1, True)[..., :k]
    return np.take_along_axis(x, order, x.ndim - 1), order.astype(dt.to_numpy(index_dtype))


def _cholesky(x):
    try:
        return np.linalg.cholesky(x)
    except np.linalg.LinAlgError:
        return np.full_like(x, np.nan)  # XLA reports failure with NaNs, not an exception


def _triangular_solve(a, b, *, lower, transpose_a, unit_diagonal):
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        n = a.shape[-1]
        tri = tri * (1 - np.eye(n, dtype=a.dtype)) + np.eye(n, dtype=a.dtype)
    if transpose_a:
        tri, lower = np.swapaxes(tri, -1, -2), not lower
    # substitution, row by row (what XLA does): a zero on the diagonal divides by zero (inf,
    # nan) where np.linalg.solve raised -- torch's singular-matrix error comes from `info`
    n = tri.shape[-1]
    shape = np.broadcast_shapes(tri.shape[:-2], b.shape[:-2]) + b.shape[-2:]
    x = np.zeros(shape, np.result_type(tri, b))
    with np.errstate(all="ignore"):
        for i in range(n) if lower else range(n - 1, -1, -1):
            done = slice(0, i) if lower else slice(i + 1, n)
            partial = np.einsum("...j,...jk->...k", tri[..., i, done], x[..., done, :])
            x[..., i, :] = (b[..., i, :] - partial) / tri[..., i, i][..., None]
    return x


def _random_bits(key, *, shape):
    n = math.prod(shape)
    counts = np.arange(n + (n % 2), dtype=np.uint32)
    if n % 2:
        counts[-1] = 0
    half = len(counts) // 2
    y0, y1 = threefry2x32(key[0], key[1], counts[:half], counts[half:])
    return np.concatenate([y0, y1])[:n].reshape(shape)


def _philox_bits(key, counter, *, shape, stride=0):
    n = math.prod(shape)
    blocks = np.arange(-(-n // 4), dtype=np.uint32)
    if stride:  # row g from block g * stride on
        groups, per = shape[0], shape[1] // 4
        blocks = (np.arange(groups, dtype=np.uint32)[:, None] * np.uint32(stride) +
                  np.arange(per, dtype=np.uint32)[None, :]).reshape(-1)
    with np.errstate(over="ignore"):
        words = philox4x32(philox_counters(counter, blocks), (key[0], key[1]))
    return np.stack(words, axis=1).reshape(-1)[:n].reshape(shape)


_NUMPY_FFT = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn,
              "irfft": np.fft.irfftn}


def _complex(re, im):
    # parts written in place: re + 1j * im would turn an infinite or NaN imaginary part into
    # NaN in both parts (1j * inf is nan + inf j)
    out = np.empty(re.shape, np.result_type(re.dtype, np.complex64))
    out.real, out.imag = re, im
    return out


def _fft(x, *, fft_type, fft_lengths):
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    return _NUMPY_FFT[fft_type](x, s=fft_lengths, axes=axes)


def _float(fn):
    return _f32_for_half(fn)


def _recurrence3(x, n, *, p1, step):
    one = np.ones_like(x)
    p, q = one, x * x.dtype.type(p1[0]) + x.dtype.type(p1[1]) if p1[0] else one * p1[1]
    k = 1
    while True:  # until every element reached its own n (or went NaN), as the loop in XLA
        active = (k < n) & ~np.isnan(q)
        if not active.any():
            break
        new = recurrence3_step(x, x.dtype.type(k), p, q, step)
        p, q = np.where(active, q, p), np.where(active, new, q)
        k += 1
    return np.where(n <= 0, one, q)


TABLE = Table("lazyx.backends.reference.TABLE", {
    "exp": _float(np.exp), "exp2": _float(np.exp2), "expm1": _float(np.expm1),
    "log": _float(np.log), "log1p": _float(np.log1p), "sqrt": _float(np.sqrt),
    "rsqrt": _float(lambda x: 1 / np.sqrt(x)), "cbrt": _float(np.cbrt),
    "sin": _float(np.sin), "cos": _float(np.cos), "tan": _float(np.tan),
    "asin": _float(np.arcsin), "acos": _float(np.arccos), "atan": _float(np.arctan),
    "sinh": _float(np.sinh), "cosh": _float(np.cosh), "tanh": _float(np.tanh),
    "asinh": _float(np.arcsinh), "acosh": _float(np.arccosh), "atanh": _float(np.arctanh),
    "erf": _float(_erf), "erf_inv": _float(_erf_inv), "lgamma": _float(_lgamma),
    "digamma": _float(_digamma), "logistic": _float(_logistic),
    "floor": np.floor, "ceil": np.ceil, "round": np.rint,
    "neg": np.negative, "abs": np.abs, "sign": np.sign,
    "not": lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
    "is_finite": np.isfinite,
    "add": _float(np.add), "sub": _float(np.subtract), "mul": _float(np.multiply),
    "div": _float(_div), "rem": _float(_rem), "pow": _float(_pow),
    "max": np.maximum, "min": np.minimum, "atan2": _float(np.arctan2),
    "nextafter": np.nextafter, "igamma": _float(reference_gamma.igamma),
    "igammac": _float(reference_gamma.igammac),
    "igamma_grad_a": _float(reference_gamma.igamma_grad_a),
    "zeta": _float(reference_gamma.zeta), "betainc": _float(reference_gamma.betainc),
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "shift_left": _shift_left, "shift_right_logical": _shift_right_logical,
    "shift_right_arithmetic": _shift_right_arithmetic,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "select": np.where,
    "clamp": lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
    "convert": _convert,
    "bitcast_convert": lambda x, *, dtype: x.view(dt.to_numpy(dtype)),
    "broadcast_in_dim": _broadcast_in_dim,
    "reshape": lambda x, *, new_sizes: x.reshape(new_sizes),
    "transpose": lambda x, *, permutation: np.transpose(x, permutation),
    "slice": _slice, "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice, "pad": _pad,
    "concatenate": lambda *xs, dimension: np.concatenate(xs, axis=dimension),
    "rev": lambda x, *, dimensions: np.flip(x, dimensions) if dimensions else x,
    "iota": _iota,
    "reduce_sum": _reduction(np.sum), "reduce_prod": _reduction(np.prod),
    "reduce_max": _reduction(np.max, "max"), "reduce_min": _reduction(np.min, "min"),
    "reduce_and": lambda x, *, axes: np.all(x, axis=axes),
    "reduce_or": lambda x, *, axes: np.any(x, axis=axes),
    "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "cumsum": _scan(np.cumsum), "cumprod": _scan(np.cumprod),
    "cummax": _scan(np.maximum.accumulate), "cummin": _scan(np.minimum.accumulate),
    "dot_general": _dot_general, "conv": _conv, "reduce_window": _reduce_window,
    "gather": _gather, "scatter": _scatter,
    "sort": _sort, "argsort": _argsort, "sort_with_indices": _sort_with_indices,
    "top_k": _top_k, "result": lambda results, *, index: results[index],
    "cholesky": _cholesky, "triangular_solve": _triangular_solve,
    "random_bits": _random_bits,
    "philox_bits": _philox_bits,
    "complex": _complex,
    "real": np.real, "imag": np.imag, "conj": np.conj, "fft": _fft,
    "recurrence3": _float(_recurrence3),
    "ctc_loss": reference_ctc.ctc_loss, "ctc_loss_backward": reference_ctc.ctc_loss_backward,
    # one device holds every value whole: a layout changes nothing here
    "sharding_constraint": lambda x, *, sharding: x,
    "stop_gradient": lambda x: x,
    "custom_vjp": lambda y, *inputs: y,
})

from .reference_linalg import TABLE as _LINALG  # noqa: E402  (matrix factorizations)
TABLE.update(_LINALG)


class ReferenceBackend:
    name = "reference"

    @staticmethod
    def code_mappings_short():
        return False  # the interpreter compiles no code

    def from_host(self, array):
        return np.array(array, copy=True)  # the caller may mutate its array later

    def to_host(self, buffer):
        return np.array(buffer, copy=True)

    # the interpreter may hand an input back as a result (or a view of one): never share
    borrow = from_host

    def wait(self, buffers):
        pass  # the interpreter computes synchronously

    def shard(self, buffer, sharding):
        return buffer  # one device holds every value whole (lazyx.shard is accepted as is)

    def compile(self, program):
        return _Interpreter(program)

    def lowered_text(self, program):
        return "\n".join(f"%{len(program.leaves) + k} = {op}{list(ins)} {attrs}"
                         for k, (op, attrs, ins, *_rest) in enumerate(program.instructions))


class _Interpreter:
    """Runs a Program op by op; every result is cast to the dtype the IR declared."""

    def __init__(self, program):
        self.program = program
        self.splats = [(i, shape) for i, (kind, shape, _) in enumerate(program.leaves)
                       if kind == "splat"]  # a scalar value standing for this whole shape
        # a multi node's value is a tuple (dtype None: its projections are cast instead)
        self.steps = [(TABLE[op] if op != "constant" else None, attrs, ins,
                       None if type(dtype) is tuple else dt.to_numpy(dtype), const)
                      for op, attrs, ins, _shape, dtype, const in program.instructions]
        # what the cache's byte bound counts: the step list and its baked-in constants
        self.nbytes = 4096 + 200 * len(self.steps) + sum(
            c.nbytes for *_, c in self.steps if c is not None)
        # Each step's inputs that no later step (nor the outputs) reads, dropped after it: the
        # live set, not every intermediate, stays allocated, so a first step reuses memory it
        # freed instead of faulting in fresh pages for each value (tiered first steps).
        n_leaves, last = len(program.leaves), {}
        for k, (_, _, ins, _, _) in enumerate(self.steps):
            for i in ins:
                last[i] = k
        for i in program.outputs:
            last.pop(i, None)
        self.dead_after = [[] for _ in self.steps]
        for i, k in last.items():
            if i >= n_leaves:  # (leaves are the caller's arrays)
                self.dead_after[k].append(i)

    def __call__(self, leaf_values):
        env = [np.asarray(v) for v in leaf_values]
        for i, shape in self.splats:  # a full array: results may be (views of) leaves
            env[i] = np.full(shape, env[i], dtype=env[i].dtype)
        with np.errstate(all="ignore"):
            for (fn, attrs, ins, np_dtype, const), dead in zip(self.steps, self.dead_after):
                out = const if fn is None else fn(*[env[i] for i in ins], **attrs)
                if np_dtype is not None:
                    out = np.asarray(out)
                    if out.dtype != np_dtype:
                        out = out.astype(np_dtype)
                env.append(out)
                for i in dead:
                    env[i] = None
        return [env[i] for i in self.program.outputs]
