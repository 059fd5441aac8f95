"""The XLA backend: one table {op: jax.lax lowering}; a Program becomes one jitted function.

Buffers stay on the default JAX device (CPU or GPU). Dispatch is asynchronous -- executing
returns jax.Arrays whose values are still being computed -- so tracing the next step overlaps
the run and only `to_host` waits.

Compiled executables are also kept on disk (`disk_cache.py`, LAZYX_CACHE_DIR), so another
process finds them without tracing, lowering or compiling again.

64-bit types: a program that uses int64/uint64/float64 is traced, compiled and run inside
`jax.enable_x64(True)`, a scoped setting; other JAX code in the process is unaffected.
"""
import hashlib
import os
import platform
import struct
import sys
import time
import weakref

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np
from jax import lax
from jax.experimental.serialize_executable import deserialize_and_load, serialize
from jax.extend.random import threefry_2x32

from . import disk_cache, preload, xla_ctc, xla_inline
from .xla_transfers import ScalarPacks
from ..core import config, ir, metrics
from ..core import dtypes as dt
from ..core.ops import recurrence3_step
from ..core.prng import philox4x32, philox_counters
from ..core.tables import Table

_HIGHEST = lax.Precision.HIGHEST  # fp32 matmuls/convs as the eager frameworks compute them
# A jax array refers to its aval, sharding and device buffers, never back to lazyx's objects:
# data nodes holding one can leave the cyclic GC's sight (core/ir.py INERT_VALUE_TYPES). (Its
# concrete type, which the C node compares exactly; a jaxlib without it only costs speed.)
_ARRAY_TYPE = getattr(getattr(jaxlib, "_jax", None), "ArrayImpl", None)
if _ARRAY_TYPE is not None:
    ir.INERT_VALUE_TYPES.add(_ARRAY_TYPE)


def _initialize_lapack():
    """jax fills its CPU LAPACK kernels' function table when it *lowers* a linalg op; an
    executable loaded from disk skips lowering, and its first cholesky/lu/qr/eigh/svd then
    called a null pointer (a segfault in a fresh process: cholesky, batched float64 LU,
    triangular solve, eigh). jax's own export path makes the same call before running
    deserialized code (checked against jax 0.10.2)."""
    from jax._src.lax import linalg as jax_linalg
    jax_linalg.initialize_lapack()  # idempotent, but the first call costs ~150 ms (measured)


def _calls_lapack(payload):
    """Whether a serialized executable calls jax's CPU LAPACK kernels: their custom-call
    targets are named lapack_* (checked for cholesky, LU, QR, eigh, SVD and triangular
    solve). Only those need _initialize_lapack, whose first call would otherwise be most of
    a warm first step (W1: 160 ms of disk load, 150 of them LAPACK setup)."""
    return b"lapack" in payload


def _jdt(dtype):
    return jnp.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)


def _is_int(x):
    return jnp.issubdtype(x.dtype, jnp.integer)


def _safe_divisor(a, b):
    """b with the divisors that trap in hardware (0, and -1 under MIN) replaced by 1.

    XLA constant-folds integer division (x - x is folded to 0 first) and its CPU folder
    divides natively: x / 0 or MIN / -1 kills the process with SIGFPE. With this guard no
    division XLA sees can trap; the IR's results are then chosen with selects (a / 1 == a
    is already MIN / -1's wrapped answer, a % 1 == 0 its remainder)."""
    bad = b == 0
    if jnp.issubdtype(a.dtype, jnp.signedinteger):
        bad = bad | ((a == jnp.iinfo(a.dtype).min) & (b == -1))
    return jnp.where(bad, jnp.ones((), b.dtype), b)


def _div(a, b):
    if not _is_int(a):
        return lax.div(a, b)
    # the IR's x / 0 is -1 (all bits set), as XLA's own run-time division gives
    return jnp.where(b == 0, jnp.full((), -1).astype(a.dtype), lax.div(a, _safe_divisor(a, b)))


def _rem(a, b):
    if not _is_int(a):
        return lax.rem(a, b)
    return jnp.where(b == 0, a, lax.rem(a, _safe_divisor(a, b)))  # the IR's x % 0 is x


def _mul(a, b):
    # XLA's simplifier takes multiply(y, y) to be non-negative, folding abs(y*y) to y*y and
    # y*y < 0 to false, which is wrong for integers once the product wraps. Hide the
    # sameness behind an optimization barrier (integer squares only; floats are unaffected).
    if a is b and _is_int(a):
        b = lax.optimization_barrier(b)
    return lax.mul(a, b)


def _pow(a, b):
    if not _is_int(a):
        return lax.pow(a, b)
    # exponentiation by squaring with wrap-around (negative exponents: 0 except for +-1)
    e = jnp.where(b < 0, 0, b)
    result, base = jnp.ones_like(a), a
    for _ in range(jnp.iinfo(a.dtype).bits):
        result = jnp.where(e & 1, result * base, result)
        base = _mul(base, base)
        e = lax.shift_right_logical(e, jnp.ones_like(e))
    one = a == 1
    minus_one = (a == -1) if jnp.issubdtype(a.dtype, jnp.signedinteger) else jnp.zeros_like(one)
    neg = jnp.where(one, 1, jnp.where(minus_one, jnp.where(b & 1, -1, 1), 0)).astype(a.dtype)
    return jnp.where(b < 0, neg, result)


def _shift(fn):
    def shift(a, b):
        bits = jnp.iinfo(a.dtype).bits
        return fn(a, jnp.where((b < 0) | (b >= bits), bits, b).astype(a.dtype))
    return shift


def _shift_right_arithmetic(a, b):
    bits = jnp.iinfo(a.dtype).bits  # past the width: sign fill, as the reference does
    return lax.shift_right_arithmetic(a, jnp.where((b < 0) | (b >= bits), bits - 1, b).astype(a.dtype))


def _exp2(x):
    # XLA's half-precision exp2 multiplies by ln 2 rounded to the half type (8 ulps off in
    # bfloat16 near 2**10); compute in float32 and round once, like the other half math
    if x.dtype in (jnp.float16, jnp.bfloat16):
        return _exp2(x.astype(jnp.float32)).astype(x.dtype)
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        return lax.exp2(x)
    # XLA's exp2 is exp(x * ln 2), inexact at integers (exp2(3.0) = 7.999999999999998, so
    # ldexp, which the frontends lower through exp2, and log2's exact-power check were off):
    # 2**x = 2**(x - n) * 2**n with n = round(x), the power of two put in by ldexp (exact)
    n = lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    whole = jnp.clip(n, -2000, 2000).astype(jnp.int32)  # past +-2000 it is inf or 0 anyway
    return jnp.where(jnp.isfinite(x), jnp.ldexp(lax.exp2(x - n), whole), lax.exp2(x))


def _abs(x):
    # lax.abs rejects unsigned integers, for which abs is the identity
    if jnp.issubdtype(x.dtype, jnp.unsignedinteger):
        return x
    if not _is_int(x):
        return lax.abs(x)
    # XLA's simplifier also takes abs(y) >= 0 (so abs(MIN) < 0 folds to false, though abs(MIN)
    # wraps to MIN): (y ^ s) - s with s the sign mask is the same number, opaque to it
    sign = lax.shift_right_arithmetic(x, jnp.full_like(x, jnp.iinfo(x.dtype).bits - 1))
    return lax.sub(lax.bitwise_xor(x, sign), sign)


def _convert(x, *, dtype):
    if dtype == dt.BOOL:
        return x != 0
    if jnp.iscomplexobj(x) and not dt.is_complex(dtype):
        x = lax.real(x)  # the IR's complex -> real keeps the real part
    if x.dtype == jnp.bool_ and dt.is_float(dtype):
        # XLA's simplifier rewrites convert(pred) / y into select(pred, 1/y, 0), which loses
        # 0/0 = NaN; a select from the start is left alone
        return jnp.where(x, jnp.ones((), _jdt(dtype)), jnp.zeros((), _jdt(dtype)))
    if dt.is_int(dtype) and jnp.issubdtype(x.dtype, jnp.floating):
        return _float_to_int(x, _jdt(dtype))
    return lax.convert_element_type(x, _jdt(dtype))


def _float_to_int(x, target):
    """The IR's float -> int rule: truncate, saturate at the integer range, NaN -> 0.

    XLA on CPU converts this way natively (checked on jaxlib 0.10.2); the selects make it the
    rule on every device, and the reference backend spells the same rule in NumPy."""
    info = jnp.iinfo(target)
    wide = x.astype(jnp.float32) if x.dtype in (jnp.float16, jnp.bfloat16) else x
    # the bounds as floats of x's type: MAX rounds up (2**31 in float32), so compare with >=
    hi, lo = jnp.asarray(float(info.max), wide.dtype), jnp.asarray(float(info.min), wide.dtype)
    inside = (wide < hi) & (wide > lo)
    converted = lax.convert_element_type(jnp.where(inside, wide, 0), target)
    result = jnp.where(wide >= hi, jnp.asarray(info.max, target),
                       jnp.where(wide <= lo, jnp.asarray(info.min, target), converted))
    return jnp.where(jnp.isnan(wide), jnp.zeros((), target), result)


def _sign(x):
    # the IR's sign is +0 at either zero, as NumPy's, TF's and the reference backend's;
    # IEEE's (lax.sign) keeps -0.0, and XLA folds a `+ 0.0` that would drop it
    if jnp.issubdtype(x.dtype, jnp.integer):
        return lax.sign(x)
    return lax.select(lax.eq(x, lax.full_like(x, 0)), lax.full_like(x, 0), lax.sign(x))


def _wide_half(fn):
    """fn of a float16/bfloat16 operand computed in float32, then rounded once, as NumPy,
    torch, TF and the reference backend compute it: XLA:CPU sums half values in their own
    precision (30,000 float16 ones summed to 30,016), and expands expm1, asin, acos, asinh,
    acosh and atanh in the half type itself (1-2 ulps off on a fifth of float16 inputs)."""
    def wide(x, *args):
        if x.dtype in (jnp.float16, jnp.bfloat16):
            return fn(x.astype(jnp.float32), *args).astype(x.dtype)
        return fn(x, *args)
    return wide


# Every result is rounded to its own dtype, as eager frameworks round each op's: by default
# XLA may keep a float16/bfloat16 value in float32 across ops and drop the rounding a cast
# back asks for (a bfloat16 matmul cast to float32 kept 0.025 more than TF's eager result).
# No effect on programs without half types.
COMPILER_OPTIONS = {"xla_allow_excess_precision": False}


def _reduce(fn):
    def reduce(x, *, axes):
        return fn(x, axes) if axes else x
    return reduce


def _arg(fn):
    def arg(x, *, axis, index_dtype):
        return fn(x, axis, _jdt(index_dtype))
    return arg


def _dot_general(lhs, rhs, *, contracting_dimensions, batch_dimensions, preferred_element_type):
    pet = _jdt(preferred_element_type) if preferred_element_type else None
    if pet is not None and jnp.issubdtype(lhs.dtype, jnp.integer) and pet != lhs.dtype:
        # Integers widened first: exact (the same wrapping sums) and a plain integer product.
        # jaxlib 0.11.2 on an H100 doubled a batched int8 x int8 -> int32 product
        # (benchmarks/gpu_check.sh, tests/backends/test_contractions.py).
        lhs, rhs = lhs.astype(pet), rhs.astype(pet)
    return lax.dot_general(lhs, rhs, (contracting_dimensions, batch_dimensions),
                           precision=_HIGHEST, preferred_element_type=pet)


def _conv(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
          feature_group_count, batch_group_count):
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        # XLA's CPU compiler was seen to abort on convolutions with negative padding (with
        # batch groups); lax.pad does the same cropping and input dilation explicitly.
        config = [(0, 0, 0), (0, 0, 0)] + [(lo, hi, d - 1) for (lo, hi), d in
                                           zip(padding, lhs_dilation)]
        lhs = lax.pad(lhs, jnp.zeros((), lhs.dtype), config)
        padding = [(0, 0)] * len(padding)
        lhs_dilation = (1,) * len(padding)
    return lax.conv_general_dilated(
        lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
        feature_group_count=feature_group_count, batch_group_count=batch_group_count,
        precision=_HIGHEST)


_WINDOW_REDUCERS = {"sum": lax.add, "max": lax.max, "min": lax.min}


def _reduce_window(x, *, kind, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation):
    if kind == "sum":
        init = jnp.zeros((), x.dtype)
    elif jnp.issubdtype(x.dtype, jnp.floating):
        init = jnp.array(-jnp.inf if kind == "max" else jnp.inf, x.dtype)
    elif x.dtype == jnp.bool_:
        init = jnp.array(kind == "min", x.dtype)
    else:
        info = jnp.iinfo(x.dtype)
        init = jnp.array(info.min if kind == "max" else info.max, x.dtype)
    return lax.reduce_window(x, init, _WINDOW_REDUCERS[kind], window_dimensions, window_strides,
                             padding, base_dilation, window_dilation)


def _gather(operand, indices):
    k = indices.shape[-1]
    batch = indices.ndim - 1
    dnums = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(batch, batch + operand.ndim - k)),
        collapsed_slice_dims=tuple(range(k)), start_index_map=tuple(range(k)))
    return lax.gather(operand, indices, dnums, (1,) * k + operand.shape[k:],
                      mode=lax.GatherScatterMode.CLIP)


_SCATTER = {"set": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul,
            "max": lax.scatter_max, "min": lax.scatter_min}


def _scatter(operand, indices, updates, *, mode):
    k = indices.shape[-1]
    batch = indices.ndim - 1
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(range(batch, batch + operand.ndim - k)),
        inserted_window_dims=tuple(range(k)), scatter_dims_to_operand_dims=tuple(range(k)))
    return _SCATTER[mode](operand, indices, updates, dnums,
                          mode=lax.GatherScatterMode.FILL_OR_DROP)


def _sorted_with_indices(x, axis, descending):
    """(values, indices) of a stable sort, from one variadic sort of (x, iota)."""
    idx = lax.broadcasted_iota(jnp.int64 if x.size > 2**31 - 1 else jnp.int32, x.shape, axis)
    if not descending:
        return lax.sort((x, idx), dimension=axis, num_keys=1, is_stable=True)
    # stable descending: sort the reversed axis ascending, then reverse back
    n = x.shape[axis]
    values, order = lax.sort((lax.rev(x, (axis,)), idx), dimension=axis, num_keys=1,
                             is_stable=True)
    return lax.rev(values, (axis,)), n - 1 - lax.rev(order, (axis,))


def _argsort_impl(x, axis, descending):
    return _sorted_with_indices(x, axis, descending)[1]


def _sort_with_indices(x, *, axis, descending, index_dtype):
    values, order = _sorted_with_indices(x, axis, descending)
    return values, order.astype(_jdt(index_dtype))


def _top_k(x, *, k, index_dtype):
    # XLA's TopK ranks -0.0 below +0.0, while sorting (and NumPy, torch, TF) take them as equal
    # and keep the lower index first: compare with every zero made +0.0
    keys = jnp.where(x == 0, jnp.zeros((), x.dtype), x) \
        if jnp.issubdtype(x.dtype, jnp.floating) else x
    order = lax.top_k(keys, k)[1]
    return jnp.take_along_axis(x, order, axis=-1), order.astype(_jdt(index_dtype))


def _sort(x, *, axis, descending):
    if not descending:
        return lax.sort(x, dimension=axis, is_stable=True)
    return lax.rev(lax.sort(x, dimension=axis, is_stable=True), (axis,))


def _random_bits(key, *, shape):
    n = int(np.prod(shape))
    counts = lax.iota(jnp.uint32, n)
    return threefry_2x32((key[0], key[1]), counts).reshape(shape)


def _philox_bits(key, counter, *, shape, stride=0):
    n = int(np.prod(shape))
    blocks = lax.iota(jnp.uint32, -(-n // 4))
    if stride:  # row g from block g * stride on
        groups, per = shape[0], shape[1] // 4
        blocks = (lax.iota(jnp.uint32, groups)[:, None] * jnp.uint32(stride) +
                  lax.iota(jnp.uint32, per)[None, :]).reshape(-1)
    words = philox4x32(philox_counters(counter, blocks), (key[0], key[1]))
    return jnp.stack(words, axis=1).reshape(-1)[:n].reshape(shape)


def _triangular_solve(a, b, *, lower, transpose_a, unit_diagonal):
    return lax.linalg.triangular_solve(a, b, left_side=True, lower=lower,
                                       transpose_a=transpose_a, unit_diagonal=unit_diagonal)


def _recurrence3(x, n, *, p1, step):
    dtype = x.dtype
    if dtype in (jnp.float16, jnp.bfloat16):  # half types compute in float32, as elsewhere
        return _recurrence3(x.astype(jnp.float32), n, p1=p1, step=step).astype(dtype)
    one = jnp.ones_like(x)
    q = x * jnp.asarray(p1[0], dtype) + jnp.asarray(p1[1], dtype) if p1[0] else one * p1[1]

    def active(k, q):
        return (k < n) & ~jnp.isnan(q)

    def body(carry):
        k, p, q = carry
        new = recurrence3_step(x, k.astype(dtype), p, q, step)
        live = active(k, q)
        return k + 1, jnp.where(live, q, p), jnp.where(live, new, q)

    # the trip count is data: max(n) (or fewer once all are NaN), decided inside the program
    _, _, q = lax.while_loop(lambda c: jnp.any(active(c[0], c[2])), body,
                             (jnp.ones((), n.dtype), one, q))
    return jnp.where(n <= 0, one, q)


def _digamma(x):
    # The IR's digamma is NaN at its poles (0 and the negative integers), as XLA's CPU
    # expansion and TF give; jaxlib 0.11.2 on a GPU gave -inf at 0. Say it, on every platform.
    pole = (x <= 0) & (x == lax.floor(x))
    return jnp.where(pole, jnp.array(np.nan, x.dtype), lax.digamma(x))


def _pad(x, value, *, padding_config):
    return lax.pad(x, value, padding_config)


TABLE = Table("lazyx.backends.xla.TABLE", {
    "exp": lax.exp, "exp2": _exp2, "expm1": _wide_half(lax.expm1), "log": lax.log,
    "log1p": lax.log1p,
    "sqrt": lax.sqrt, "rsqrt": lax.rsqrt, "cbrt": lax.cbrt, "sin": lax.sin, "cos": lax.cos,
    "tan": lax.tan, "asin": _wide_half(lax.asin), "acos": _wide_half(lax.acos),
    "atan": lax.atan, "sinh": _wide_half(lax.sinh), "cosh": lax.cosh, "tanh": lax.tanh,
    "asinh": _wide_half(lax.asinh), "acosh": _wide_half(lax.acosh),
    "atanh": _wide_half(lax.atanh), "erf": lax.erf, "erf_inv": lax.erf_inv,
    "lgamma": lax.lgamma,
    "digamma": _digamma, "logistic": lax.logistic, "floor": lax.floor, "ceil": lax.ceil,
    "round": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
    "neg": lax.neg, "abs": _abs, "sign": _sign, "not": lax.bitwise_not,
    "is_finite": lax.is_finite,
    "add": lax.add, "sub": lax.sub, "mul": _mul, "div": _div, "rem": _rem, "pow": _pow,
    "max": lax.max, "min": lax.min, "atan2": lax.atan2, "nextafter": lax.nextafter,
    "igamma": lax.igamma, "igammac": lax.igammac, "igamma_grad_a": lax.igamma_grad_a,
    "zeta": lax.zeta, "betainc": lax.betainc,
    "and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor,
    "shift_left": _shift(lax.shift_left),
    "shift_right_logical": _shift(lax.shift_right_logical),
    "shift_right_arithmetic": _shift_right_arithmetic,
    "eq": lax.eq, "ne": lax.ne, "lt": lax.lt, "le": lax.le, "gt": lax.gt, "ge": lax.ge,
    "select": lax.select, "clamp": lax.clamp,
    "convert": _convert,
    "bitcast_convert": lambda x, *, dtype: lax.bitcast_convert_type(x, _jdt(dtype)),
    "broadcast_in_dim": lambda x, *, shape, broadcast_dimensions: lax.broadcast_in_dim(
        x, shape, broadcast_dimensions),
    "reshape": lambda x, *, new_sizes: lax.reshape(x, new_sizes),
    "transpose": lambda x, *, permutation: lax.transpose(x, permutation),
    "slice": lambda x, *, start_indices, limit_indices, strides: lax.slice(
        x, start_indices, limit_indices, strides),
    # the IR clamps starts into range (StableHLO); jax would first wrap negative ones
    "dynamic_slice": lambda x, *starts, slice_sizes: lax.dynamic_slice(
        x, starts, slice_sizes, allow_negative_indices=False),
    "dynamic_update_slice": lambda x, u, *starts: lax.dynamic_update_slice(
        x, u, starts, allow_negative_indices=False),
    "pad": _pad,
    "concatenate": lambda *xs, dimension: lax.concatenate(xs, dimension),
    "rev": lambda x, *, dimensions: lax.rev(x, dimensions),
    "iota": lambda *, dtype, shape, dimension: lax.broadcasted_iota(_jdt(dtype), shape,
                                                                    dimension),
    "reduce_sum": _reduce(_wide_half(lax.reduce_sum)),
    "reduce_prod": _reduce(_wide_half(lax.reduce_prod)),
    "reduce_max": _reduce(lax.reduce_max), "reduce_min": _reduce(lax.reduce_min),
    "reduce_and": _reduce(lax.reduce_and), "reduce_or": _reduce(lax.reduce_or),
    "argmax": _arg(lax.argmax), "argmin": _arg(lax.argmin),
    "cumsum": lambda x, *, axis, reverse: lax.cumsum(x, axis, reverse),
    "cumprod": lambda x, *, axis, reverse: lax.cumprod(x, axis, reverse),
    "cummax": lambda x, *, axis, reverse: lax.cummax(x, axis, reverse),
    "cummin": lambda x, *, axis, reverse: lax.cummin(x, axis, reverse),
    "dot_general": _dot_general, "conv": _conv, "reduce_window": _reduce_window,
    "gather": _gather, "scatter": _scatter,
    "sort": _sort,
    "argsort": lambda x, *, axis, descending, index_dtype: _argsort_impl(
        x, axis, descending).astype(_jdt(index_dtype)),
    "sort_with_indices": _sort_with_indices, "top_k": _top_k,
    "result": lambda results, *, index: results[index],
    "cholesky": lambda x: lax.linalg.cholesky(x, symmetrize_input=False),
    "triangular_solve": _triangular_solve,
    "random_bits": _random_bits,
    "philox_bits": _philox_bits,
    "complex": lax.complex, "real": lax.real, "imag": lax.imag, "conj": lax.conj,
    "fft": lambda x, *, fft_type, fft_lengths: lax.fft(x, fft_type.upper(), fft_lengths),
    "recurrence3": _recurrence3,
    "ctc_loss": xla_ctc.ctc_loss, "ctc_loss_backward": xla_ctc.ctc_loss_backward,
    "sharding_constraint": lambda x, *, sharding: lax.with_sharding_constraint(x, named(sharding)),
    "stop_gradient": lambda x: x,  # (lazyx differentiates the IR itself: nothing for jax)
    "custom_vjp": lambda y, *inputs: y,
})

from . import code_maps  # noqa: E402  (the kernel's limit on mappings)
from .xla_linalg import TABLE as _LINALG  # noqa: E402  (matrix factorizations)
TABLE.update(_LINALG)
from .xla_sharding import (memory_per_device, mesh_of, named, place_replicated,  # noqa: E402
                           replicated, shard_buffer, sharding_of)


class _Signature:
    """How leaf values become the jitted function's arguments.

    Scalar parameters (every Python number a program uses: learning rates, `x * 0.5`) are
    packed into one array per dtype: a step with 200 scalars then passes a handful of
    arguments instead of 200, each of which jax would otherwise check and transfer on its own.
    A splat param is such a scalar too, broadcast to its shape inside the program.
    """

    def __init__(self, program, patterns=None):
        scalar = [kind == "splat" or (kind == "param" and shape == ())
                  for kind, shape, _ in program.leaves]
        self.data = [i for i, s in enumerate(scalar) if not s]
        groups = {}
        for i, (kind, shape, dtype) in enumerate(program.leaves):
            if scalar[i]:
                groups.setdefault(dtype, []).append(i)
        self.packs = list(groups.items())  # [(dtype, [leaf index, ...])]
        # per pack: None (each scalar its own element) or, for each scalar, the element it is
        # read from (see merge_fixed: equal scalars a caller never changes share one)
        self.general = (None,) * len(self.packs)
        self.patterns = patterns or self.general
        self.splats = [(i, shape) for i, (kind, shape, _) in enumerate(program.leaves)
                       if kind == "splat"]
        self.n_leaves = len(program.leaves)
        self.n_args = len(self.data) + len(self.packs)
        # A program on a device mesh takes every argument on that mesh: sharded data leaves as
        # they lie, everything else (single-device data, host scalars) replicated; its results
        # come back on the mesh, so the next step's leaves are there already.
        leaf_shardings = getattr(program, "leaf_shardings", None) or (None,) * self.n_leaves
        self.leaf_shardings = leaf_shardings
        self.mesh = mesh_of(program, leaf_shardings)
        self.in_shardings = None
        if self.mesh is not None:
            everywhere = replicated(self.mesh)
            self.in_shardings = tuple(
                [named(leaf_shardings[i]) if leaf_shardings[i] else everywhere
                 for i in self.data] + [everywhere] * len(self.packs))

    def specs(self, program):
        specs = [jax.ShapeDtypeStruct(program.leaves[i][1], _jdt(program.leaves[i][2]))
                 for i in self.data]
        return specs + [jax.ShapeDtypeStruct((len(idx) if inv is None else max(inv) + 1,),
                                             _jdt(dtype))
                        for (dtype, idx), inv in zip(self.packs, self.patterns)]

    def variant(self, program, patterns):
        """This signature for packs laid out by `patterns`."""
        return self if patterns == self.patterns else _Signature(program, patterns)

    def arguments(self, leaf_values):
        """The executable's arguments in the general layout (every scalar its own element)."""
        args = [leaf_values[i] for i in self.data]
        for dtype, idx in self.packs:
            args.append(pack(dtype, idx, leaf_values))
        return args

    def patterns_for(self, fixed):
        """The packs' layout for a caller whose leaves at `fixed` never change."""
        if not merges_equal_scalars():
            return self.general
        return tuple(merge_fixed(dtype, idx, fixed)[0] for dtype, idx in self.packs)

    def to_place(self):
        """Argument positions a mesh program must lay out itself (see _Executable)."""
        if self.in_shardings is None:
            return []
        return [k for k, i in enumerate(self.data) if self.leaf_shardings[i] is None] + \
            list(range(len(self.data), len(self.data) + len(self.packs)))

    def unpack(self, args):
        """Inside the traced function: the leaf values in program order."""
        env = [None] * self.n_leaves
        for i, value in zip(self.data, args):
            env[i] = value
        for (dtype, idx), inv, packed in zip(self.packs, self.patterns, args[len(self.data):]):
            if inv is None:
                for k, i in enumerate(idx):
                    env[i] = packed[k]
                continue
            elements = {}  # each element sliced out once, however many scalars read it
            for k, i in enumerate(idx):
                element = elements.get(inv[k])
                if element is None:
                    element = elements[inv[k]] = packed[inv[k]]
                env[i] = element
        for i, shape in self.splats:
            env[i] = lax.broadcast_in_dim(env[i], shape, ())
        return env


def pack(dtype, idx, leaf_values):
    """The scalars at leaf positions `idx` as one array (an argument of the executable)."""
    return np.array([leaf_values[i] for i in idx], dtype=dt.to_numpy(dtype))


# Scalars a caller never changes (a replayed step's literals) share one element of their pack
# when their values are equal. XLA:CPU fuses a chain of elementwise ops into one library
# (YNNPACK) kernel only while the kernel has fewer than about 20 inputs, and each run-time
# scalar is one: W3's 30 literals (3 distinct values) split its chain into a loop fusion, a
# materialized 1024x1024 broadcast and the library kernel, 1.3x slower than with 3 inputs.
# Values are compared bit for bit (0.0 and -0.0 stay apart, as do NaNs of other payloads), so
# a program reads exactly the values it is given. The lazy path merges nothing: any of its
# scalars may change at the next step, and a change of which ones are equal would recompile.
# Only on a CPU: elsewhere a merged layout is one more compile and a program fused otherwise,
# which need not round as the lazy path's does (an H100 run of tests/core/test_replay.py saw
# a replay 1e-5 apart from the lazy run). None: decide by the platform; tests set it.
MERGE_EQUAL_SCALARS = None


# Whether executables keep scalar packs that repeat on the device (xla_transfers.py). Only off
# a CPU: on a CPU a pack is passed as it lies (a call with a NumPy pack 4.8 us, with a device
# array 3.7), and putting one there costs 18 us. None: decide by the platform; tests set it.
KEEP_PACKS = None


def keeps_packs(device):
    if KEEP_PACKS is not None:
        return KEEP_PACKS
    return device.platform != "cpu"


def merges_equal_scalars():
    """Whether bound packs read equal fixed scalars once (see merge_fixed) in this process."""
    if MERGE_EQUAL_SCALARS is not None:
        return MERGE_EQUAL_SCALARS
    return jax.local_devices()[0].platform == "cpu"


def merge_fixed(dtype, idx, fixed):
    """How one pack (the scalars at leaf positions `idx`) is laid out for a caller whose
    leaves at `fixed` (index -> value) never change: (pattern, the distinct fixed values,
    the leaf positions read at each call). The pattern gives each scalar's element: the
    distinct fixed values first, then the others in order, those `fixed` marks as always equal
    to another (ir.SameAs) sharing its element; it is None (every scalar its own element, the
    general layout) when no two scalars share one."""
    np_dtype = np.dtype(dt.to_numpy(dtype))
    seen, values, dynamic, where, called = {}, [], [], [], {}
    for i in idx:
        value = fixed.get(i)
        if value is None or type(value) is ir.SameAs:
            # read at each call; once per distinct leaf among those always equal (ir.SameAs)
            k = called.setdefault(i if value is None else value.leaf, len(dynamic))
            if k == len(dynamic):
                dynamic.append(i)
            where.append(("call", k))
        else:
            value = np.asarray(value, dtype=np_dtype)
            k = seen.setdefault(value.tobytes(), len(values))
            if k == len(values):
                values.append(value)
            where.append(("fixed", k))
    if len(values) + len(dynamic) == len(idx):
        return None, values, dynamic
    return tuple(k if kind == "fixed" else len(values) + k for kind, k in where), values, dynamic


def expand(packed, inv):
    """A pack laid out by pattern `inv`, in the general layout (each scalar its own element)."""
    return packed if inv is None else packed[np.array(inv, dtype=np.intp)]


# XLA's algebraic simplifier rewrites float divisions into arithmetic that rounds otherwise
# than IEEE division, which NumPy, torch and TF compute: x / broadcast(s) becomes
# x * broadcast(1 / s) (a third of `arange(1, 200) / 10.0` one ulp off, so `floor(0.7 / 0.1)`
# gave 7.0), x / constant a product with its inverse, x / sqrt(y) x * rsqrt(y), x / exp(y)
# x * exp(-y), x / pow(y, z) x * pow(y, -z), (a / b) / c a / (b * c) and a / (b / c)
# (a * c) / b. jaxlib 0.10.2 has no flag that stops them (xla_cpu_enable_fast_math is off
# already). Each pattern is read from the divisor's producer (the dividend's for (a / b) / c),
# so such an operand reaches the division through an optimization barrier, a value XLA may
# not look into: a broadcast divisor is then materialized (measured: 0.72 -> 0.81 ms for
# tanh(x / s) * 2 + 1 on 1024x1024 float32), the price of NumPy's quotient.
_REWRITTEN_DIVISORS = frozenset({"exp", "sqrt", "rsqrt", "pow", "div"})


def _broadcast_like(program):
    """Per env slot (leaves, then instructions): whether XLA may see the value as a broadcast
    (a splat, a constant, a broadcast_in_dim, or any op of only such values, which the
    simplifier sinks below one broadcast)."""
    like = [kind == "splat" for kind, _shape, _dtype in program.leaves]
    for op, _attrs, ins, _shape, _dtype, _const in program.instructions:
        like.append(op in ("constant", "broadcast_in_dim") or all(like[i] for i in ins))
    return like


def _exact_divisions(program):
    """{instruction index: (bar the dividend, bar the divisor)} for the float divisions XLA
    would rewrite (above)."""
    like = _broadcast_like(program)
    n_leaves = len(program.leaves)
    producer = [None] * n_leaves + [op for op, *_ in program.instructions]
    bars = {}
    for k, (op, _attrs, ins, _shape, dtype, _const) in enumerate(program.instructions):
        if op != "div" or dtype not in dt.INEXACT:
            continue
        a, b = ins
        bar = (producer[a] == "div", like[b] or producer[b] in _REWRITTEN_DIVISORS)
        if any(bar):
            bars[k] = bar
    return bars


def _exact_div(bar_a, bar_b):
    def div(a, b):
        return lax.div(lax.optimization_barrier(a) if bar_a else a,
                       lax.optimization_barrier(b) if bar_b else b)
    return div


def _as_function(program, signature):
    exact = _exact_divisions(program)
    steps = [(TABLE[op] if k not in exact else _exact_div(*exact[k]), attrs, ins, const)
             if op != "constant" else (None, attrs, ins, const)
             for k, (op, attrs, ins, _shape, _dtype, const) in enumerate(program.instructions)]
    outputs = program.outputs
    # baked literals (runtime.bake) go behind one optimization barrier: to XLA they are
    # values, not constants it may fold into each other (which rounds otherwise)
    literals = [const for fn, attrs, _, const in steps if fn is None and attrs.get("literal")]

    def run(*args):
        env = signature.unpack(args)
        barred = iter(lax.optimization_barrier(tuple(jnp.asarray(c) for c in literals))
                      if literals else ())
        for fn, attrs, ins, const in steps:
            if fn is None:
                env.append(next(barred) if attrs.get("literal") else jnp.asarray(const))
            else:
                env.append(fn(*[env[i] for i in ins], **attrs))
        return [env[i] for i in outputs]
    return run


# What one compiled program holds beyond XLA's own figures (its code pages, jax's wrapper),
# measured on CPU: about 0.28 MB per small program once only the Compiled object is kept.
_EXECUTABLE_OVERHEAD = 256 << 10


class _Executable:
    """A compiled program. Only jax's Compiled object is kept: the jitted function and its
    Lowered module would hold 5x the memory per cached program (1.5 MB against 0.28 MB,
    measured), and dumps lower again when they need the text.

    One program may have several variants: the general one (every scalar its own element,
    what the lazy path runs) and one per layout of merged fixed scalars that a binding asked
    for (see merge_fixed, bind), up to _MAX_VARIANTS of those; a binding past them runs the
    general one. Variants compute the same math and may fuse it differently: W3's and W4's results
    are bitwise equal across them (measured), but nothing in XLA promises that in general."""

    def __init__(self, compiled, x64, signature, backend=None, program=None):
        self.compiled = compiled  # for a mesh: the partitioned program (dumps show its text)
        self.variants = {signature.patterns: compiled}
        self.x64 = x64
        self.signature = signature
        self.backend, self.program = backend, program
        try:
            stats = compiled.memory_analysis()
            own = stats.generated_code_size_in_bytes + stats.temp_size_in_bytes
        except Exception:  # noqa: BLE001 -- not every platform reports it
            own = 0
        self.nbytes = _EXECUTABLE_OVERHEAD + own
        # On a mesh, the arguments that are not laid out there yet (single-device data leaves,
        # packed scalars) are put there, replicated, before the call: a Compiled object, unlike
        # jit, does not move its inputs. Across processes they go through the host.
        self.place = signature.to_place()
        self.runs = 0
        self._lazy_layout = None  # made at the first lazy-path call
        # per variant (jax's Compiled): its copy on the synchronous CPU client or None where
        # there is none (local_copy), and the copy a run takes, None for the shared client
        # (decided once the program has run xla_inline.RUNS_BEFORE times: only tiny ones)
        self._copies = {}
        self._runs_local = {}
        self._pace = xla_inline.Pace()
        # packs whose values repeat stay on the device (xla_transfers.py), where a pack
        # passed from the host is a copy
        self.scalar_packs = None
        if backend is not None and signature.packs and not self.place and \
                keeps_packs(backend.device):
            first = len(signature.data)
            self.scalar_packs = ScalarPacks(range(first, first + len(signature.packs)),
                                            lambda array: put(array, backend.device))

    def count_run(self):
        """(Only for the first xla_inline.RUNS_BEFORE runs.) At the second, the process is
        steady (preload.settle)."""
        self.runs += 1
        if self.runs == 2:
            preload.settle()

    def __call__(self, leaf_values):
        """A lazy-path call: its scalars laid out by _LazyLayout, equal ones read once."""
        sig = self.signature
        args = sig.arguments(leaf_values)
        patterns = sig.general
        if sig.packs:
            layout = self._lazy_layout
            if layout is None:
                layout = self._lazy_layout = _LazyLayout(sig, merges_equal_scalars())
            patterns = layout.arrange(args, len(sig.data))
        if self.scalar_packs is not None:
            self.scalar_packs.substitute(args)
        return self.run(args, patterns)

    def run(self, args, patterns):
        """Run on the executable's arguments (leaf values already packed, the packs laid out
        by `patterns`)."""
        first = self.runs == 0
        if self.runs < xla_inline.RUNS_BEFORE:
            self.count_run()
        compiled = self.variants.get(patterns)
        if compiled is None:
            compiled, args = self._variant(args, patterns)
        if self.runs >= xla_inline.RUNS_BEFORE:
            local = self._runs_local.get(compiled, _UNDECIDED)
            if local is _UNDECIDED:
                local = self._decide(compiled)
            if local is not None:  # a tiny program: where it runs depends on its caller
                return self._paced(local, compiled, args)
        if self.x64:
            with jax.enable_x64(True):  # (placing int64 scalars must not narrow them)
                outputs = compiled(*self._placed(args))
        else:
            outputs = compiled(*self._placed(args))
        if first:  # the warm-start preloader waits for it before loading more
            preload.note_first_run(outputs)
        return outputs

    def _paced(self, local, compiled, args):
        """Run a tiny program on the calling thread (`local`, its synchronous-client copy) or
        on the shared client (`compiled`), as its caller's pace decides (xla_inline.Pace)."""
        if self._pace.begin():
            if self.x64:  # (NumPy int64 arguments must not narrow)
                with jax.enable_x64(True):
                    return xla_inline.run_local(local, args)
            return xla_inline.run_local(local, args)
        if self.x64:
            with jax.enable_x64(True):
                return compiled(*args)
        return compiled(*args)

    def _decide(self, compiled):
        """The copy of `compiled` its runs take from now on: its synchronous-client copy when
        the program is tiny (xla_inline.py), else None (the shared client)."""
        local = None
        if self.program is not None and self.local_device() is not None:  # (on a CPU only)
            leaves = self.program.leaves
            arg_bytes = sum(int(np.prod(leaves[i][1], dtype=np.int64)) * dt.ITEMSIZE[leaves[i][2]]
                            for i in self.signature.data)
            if xla_inline.is_tiny(compiled, arg_bytes):
                local = self.local_copy(compiled)
        self._runs_local[compiled] = local
        return local

    def local_device(self):
        """The synchronous CPU client's device this executable's copies load on, or None
        (off a CPU, a mesh program, no backend)."""
        if self.backend is None or self.place:
            return None
        return xla_inline.device_for(self.backend.device)

    def local_copy(self, compiled):
        """`compiled` (one of this program's variants) loaded on the synchronous CPU client
        (xla_inline.py), or None where it cannot be: off a CPU, a mesh program, an executable
        XLA cannot serialize."""
        if compiled in self._copies:
            return self._copies[compiled]
        device = self.local_device()
        loaded = None
        if device is not None:
            stored = _FROM_DISK.get(compiled)
            if stored is None:
                loaded = xla_inline.load(compiled, device)
            else:  # (serialized again, a disk-loaded executable would lose its code)
                cache, key = stored
                loaded = xla_inline.load_payload(_deserialize, cache.get(key), device)
        self._copies[compiled] = loaded
        return loaded

    def _variant(self, args, patterns):
        """(the variant for `patterns`, compiled now if need be, and its arguments)."""
        sig = self.signature
        merged = len(self.variants) - (sig.general in self.variants)
        if merged >= _MAX_VARIANTS or self.backend is None:
            # the general variant: every scalar at its own position
            first = len(sig.data)
            args = list(args)
            for k, inv in enumerate(patterns):
                args[first + k] = expand(np.asarray(args[first + k]), inv)
            patterns = sig.general
            compiled = self.variants.get(patterns)
            if compiled is not None:
                return compiled, args
        if config.debug():
            print(f"lazyx: compiling a variant of a cached program that reads equal fixed "
                  f"scalars once ({len(self.variants)} variants compiled already)",
                  file=sys.stderr)
        metrics.count("compiles")
        compiled = self.backend.compile_variant(self.program, sig.variant(self.program, patterns),
                                                self.x64)
        self.variants[patterns] = compiled
        return compiled, args

    def bind(self, fixed):
        """A callable like this executable for a caller whose leaves at `fixed` (leaf index ->
        value) never change (a torch.compile graph's literals): their packed scalars are built
        and put on the device once, not at every call. The cached executable itself is shared
        (the lazy path may run it with other values), so the binding is a separate object."""
        return _Bound(self, fixed)

    def _placed(self, args):
        for i in self.place:
            args[i] = place_replicated(args[i], self.signature.in_shardings[i])
        return args


# Merged layouts compiled for one program; bindings past them share the general program.
_MAX_VARIANTS = 2
_UNDECIDED = object()


class _LazyLayout:
    """How the lazy path lays out one executable's scalar packs: equal values read once.

    Every Python number a step uses is a run-time scalar, and each one XLA slices out of its
    pack is an input of the fusions that read it. A program with many (a gradient-descent
    loop with no barrier: three per iteration, 75 for 25 iterations) compiled 4x slower than
    the same program reading each distinct value once (3.07 against 0.75 s in jax, measured),
    and past about 20 inputs XLA:CPU splits a chain it would fuse (see merge_fixed). Most such
    numbers are literals of the user's code, equal at every step, and many are equal to each
    other (`1`, `0.5`, a learning rate used per parameter).

    So a lazy call's scalars are merged as a bound caller's fixed ones are (merge_fixed, bit
    for bit): the executable is first compiled for its first call's values (runtime passes
    them to compile as `fixed`), and a later call whose values still fit that layout -- every
    merged group still equal, which a learning rate that changes alone keeps -- runs it with
    the distinct values. A call that breaks a group (a scalar that equalled another one at the
    first step and no longer does) gets a layout in which the scalars that changed since the
    previous call are never merged: _Executable.run compiles that variant, at most
    _MAX_VARIANTS per program, then runs the general layout. The layouts compute the same
    math with run-time values, so which one runs moves no number on XLA:CPU (checked on
    random chains, tests/backends/test_equal_scalars.py); elsewhere (`merging` False) the
    lazy path keeps the general layout. Only float and complex packs merge: integer scalars
    are the indices and counters a loop changes (runtime._scalars)."""
    __slots__ = ("signature", "state", "last")

    def __init__(self, signature, merging):
        self.signature = signature
        self.last = None
        self._set(signature.patterns if merging else signature.general)

    @property
    def patterns(self):
        return self.state[0]

    def _set(self, patterns):
        # (patterns, and per pack the position of each element's first scalar and each
        # scalar's element, None for the general layout): one tuple, replaced whole, so a
        # call in another thread reads one layout
        self.state = (patterns,
                      [None if inv is None else _first_positions(inv) for inv in patterns],
                      [None if inv is None else np.array(inv, dtype=np.intp)
                       for inv in patterns])

    def arrange(self, args, first):
        """Lay out the packs in `args` (from position `first`, in the general layout) in place;
        the layout's patterns."""
        packs = args[first:]
        state = self.state
        merged = _merged(packs, state)
        if merged is None:  # a merged group parted: a layout they fit (by construction)
            self._relayout(packs)
            state = self.state
            merged = _merged(packs, state)
        self.last = packs
        for k, pack in enumerate(merged):
            if pack is not None:
                args[first + k] = pack
        return state[0]

    def _relayout(self, packs):
        """A layout for values that broke this one: only scalars unchanged since the previous
        call merge."""
        patterns = []
        for k, (dtype, idx) in enumerate(self.signature.packs):
            now, before = packs[k], (self.last[k] if self.last is not None else None)
            if dtype not in dt.INEXACT:  # (indices and counters: see runtime._scalars)
                patterns.append(None)
                continue
            if before is None:
                fixed = {}
            else:
                same = (now.view(np.uint8).reshape(len(idx), -1) ==
                        before.view(np.uint8).reshape(len(idx), -1)).all(axis=1)
                fixed = {i: now[j] for j, i in enumerate(idx) if same[j]}
            patterns.append(merge_fixed(dtype, idx, fixed)[0])
        self._set(tuple(patterns))


def _merged(packs, state):
    """Per pack, its distinct values as `state`'s layout reads them (None: the general
    layout, the pack as it is); None when some merged group's values are no longer equal."""
    _, firsts, elements = state
    merged = []
    for pack, at, element in zip(packs, firsts, elements):
        if at is None:
            merged.append(None)
            continue
        distinct = pack[at]
        if distinct[element].tobytes() != pack.tobytes():
            return None
        merged.append(distinct)
    return merged


def _first_positions(inv):
    """For a pattern (each scalar's element), the position of each element's first scalar."""
    firsts = {}
    for position, element in enumerate(inv):
        firsts.setdefault(element, position)
    return np.array([firsts[e] for e in range(len(firsts))], dtype=np.intp)


class _Bound:
    """An executable with some leaves' values fixed (see _Executable.bind)."""
    __slots__ = ("exe", "steps", "patterns", "scalar_packs", "_inline")

    def __init__(self, exe, fixed):
        sig = exe.signature
        self.exe = exe
        # per argument: ("leaf", i) read from the call's leaf values, ("pack", NumPy dtype,
        # fixed values, leaf positions) packed at the call, or ("ready", array) built once
        steps = [("leaf", i) for i in sig.data]
        patterns, merging = [], merges_equal_scalars()
        for dtype, idx in sig.packs:
            inv, values, dynamic = merge_fixed(dtype, idx, fixed) if merging else \
                (None, None, [i for i in idx if i not in fixed or
                              type(fixed[i]) is ir.SameAs])
            if inv is None:  # the general layout: each scalar its own element, in order
                if dynamic:
                    values, dynamic = [], list(idx)
                else:
                    values = [fixed[i] for i in idx]
            if dynamic or exe.place:  # (a mesh program places its packs itself)
                steps.append(("pack", np.dtype(dt.to_numpy(dtype)),
                              [np.asarray(v)[()] for v in values], dynamic))
            else:
                steps.append(("ready", put(np.array(values, dtype=dt.to_numpy(dtype)))))
            patterns.append(inv)
        self.steps = steps
        self.patterns = tuple(patterns)
        # packs built at each call keep repeated values on the device, as the lazy path's do
        # (in the general layout only: a merged one may be expanded on the host, _variant)
        built = [k for k, step in enumerate(steps) if step[0] == "pack"]
        self.scalar_packs = None
        if built and exe.scalar_packs is not None and self.patterns == sig.general:
            self.scalar_packs = ScalarPacks(built, exe.scalar_packs.put)
        self._inline = None  # made at the first inline() that can decide

    def __call__(self, leaf_values):
        args = _arguments(self.steps, leaf_values)
        if self.scalar_packs is not None:
            self.scalar_packs.substitute(args)
        return self.exe.run(args, self.patterns)

    @property
    def program(self):
        return self.exe.program

    def inline(self):
        """This binding run on the calling thread (xla_inline.py), for a caller that waits for
        every result at once and passes only host data; the binding itself where it cannot
        be (off a CPU, a mesh program, an executable XLA cannot serialize)."""
        if self._inline is None:
            exe = self.exe
            compiled = exe.variants.get(self.patterns)
            if compiled is None:  # compiled at this binding's first run: decide then
                return self
            loaded = exe.local_copy(compiled)
            self._inline = self
            if loaded is not None:
                device = exe.local_device()
                steps = [("ready", put(np.asarray(step[1]), device)) if step[0] == "ready"
                         else step for step in self.steps]
                self._inline = _Inline(loaded, steps, exe.x64, device)
        return self._inline


class _Inline:
    """A binding's executable loaded on the synchronous CPU client (see _Bound.inline)."""
    __slots__ = ("compiled", "steps", "x64", "device")

    def __init__(self, compiled, steps, x64, device):
        self.compiled, self.steps, self.x64, self.device = compiled, steps, x64, device

    def __call__(self, leaf_values):
        return self.run(_arguments(self.steps, leaf_values))

    def arguments_plan(self, fixed):
        """For a caller whose leaves at `fixed` ({leaf index: value}) never change: per
        argument, the index of the leaf it takes at each call, or its value, placed on the
        synchronous client once. None where a call packs scalars (the caller then passes
        every leaf through __call__)."""
        plan = []
        for step in self.steps:
            if step[0] == "pack":
                return None
            if step[0] == "ready":
                plan.append(step[1])
            elif step[1] in fixed:
                plan.append(put(np.asarray(fixed[step[1]]), self.device))
            else:
                plan.append(step[1])
        return plan

    def run(self, args):
        """The executable on `args` (host arrays, or arrays on the synchronous client)."""
        try:
            return self._run(args)
        except ValueError:
            # an argument on the other client (a buffer an earlier segment of a torch.compile
            # graph left there, around an eagerly run op): its host value instead
            if not any(isinstance(a, jax.Array) for a in args):
                raise
            return self._run([np.asarray(a) if isinstance(a, jax.Array) else a for a in args])

    def _run(self, args):
        if self.x64:
            with jax.enable_x64(True):
                return self.compiled(*args)
        return self.compiled(*args)


def _arguments(steps, leaf_values):
    """A binding's executable arguments: its steps (see _Bound) applied to a call's leaves."""
    args = []
    for step in steps:
        kind = step[0]
        if kind == "leaf":
            args.append(leaf_values[step[1]])
        elif kind == "ready":
            args.append(step[1])
        else:
            _, np_dtype, values, dynamic = step
            args.append(np.array(values + [leaf_values[i] for i in dynamic], dtype=np_dtype))
    return args


def put(array, device=None):
    """jax.device_put, keeping 64-bit dtypes 64-bit (x64 is off outside lazyx's calls)."""
    if (array.dtype.itemsize == 8 and array.dtype.kind in "iuf") or \
            array.dtype == np.complex128:
        with jax.enable_x64(True):
            return jax.device_put(array, device)
    return jax.device_put(array, device)


# Waiting for a result: XLA parks a blocked thread on a futex, and waking it costs about 30 us
# (measured on a 4x4 200-op program: block_until_ready 43 us after the call, a poll of
# is_ready() 14 us; np.asarray of a ready array 0.6 us). So a wait polls for a short while
# first -- most small steps are done by then -- and blocks only after SPIN_SECONDS.
# Polling is not free while XLA computes, though: W3's 2.9 ms program was read 0.08-0.1 ms
# later after a poll than after blocking at once (in-process alternation on the 2-core bench
# machine, docs/bench.md), so once a wait has outlasted the poll, the next one blocks at once,
# and polls again only after a wait that proves short.
SPIN_SECONDS = 100e-6
_waits_are_long = [False]


def await_ready(buffers):
    """Return once every buffer holds its value (polling briefly, then blocking; blocking at
    once while the last wait was longer than the poll)."""
    deadline = None
    for buffer in buffers:
        if type(buffer) is np.ndarray:  # a tiny program's result (xla_inline.run_local)
            continue
        if buffer.is_ready():
            continue
        now = time.perf_counter()
        if _waits_are_long[0]:
            _block(buffers)
            _waits_are_long[0] = time.perf_counter() - now > SPIN_SECONDS
            return
        if deadline is None:
            deadline = now + SPIN_SECONDS
        while not buffer.is_ready():
            if time.perf_counter() > deadline:
                _waits_are_long[0] = True
                _block(buffers)
                return


def _block(buffers):  # (its own name: tests count polls against a stand-in)
    jax.block_until_ready(buffers)


_MAX_ARGS = 1 << 20

# jax's Compiled objects loaded from the disk cache -> (the cache, their key there). Such an
# executable serialized again loses its code (XLA:CPU: "Function ... not found" when the copy
# runs), so a copy of it is loaded from the stored payload instead (_Bound.inline).
_FROM_DISK = weakref.WeakKeyDictionary()


def _deserialize(payload, device):
    """(jax Compiled, its input avals) from a stored payload: the argument and result counts,
    then jax's serialized executable of _as_function's run(*args) -> [outputs]."""
    n_args, n_outputs = struct.unpack("<II", payload[:8])
    if n_args > _MAX_ARGS or n_outputs > _MAX_ARGS:  # not our header: do not build huge trees
        raise ValueError(f"implausible argument/result counts {n_args}/{n_outputs}")
    in_tree = jax.tree_util.tree_structure((tuple(range(n_args)), {}))
    out_tree = jax.tree_util.tree_structure(list(range(n_outputs)))
    if _calls_lapack(payload):
        _initialize_lapack()
    # on `device` alone: jax's default is every device of the process, and the executable
    # then wants one shard per device (8 under --xla_force_host_platform_device_count=8)
    compiled = deserialize_and_load(payload[8:], in_tree, out_tree, backend=device.client,
                                    execution_devices=[device])
    return compiled, jax.tree_util.tree_leaves(compiled.in_avals)


# The parent's pid in a child forked after the backend started (os.fork, multiprocessing's
# default 'fork' start method on Linux): XLA's compiler threads do not survive a fork, and the
# child's first compile hung forever.
_FORKED_FROM = [None]


def _note_fork():
    if _FORKED_FROM[0] is None:
        _FORKED_FROM[0] = _PARENT[0]


_PARENT = [os.getpid()]
_FORK_HOOKED = []


class XlaBackend:
    name = "xla"
    # a call returns before its results exist (core/early_results.py runs a cut's scalar
    # results ahead of the rest on that)
    asynchronous = True

    def __init__(self):
        self.device = jax.local_devices()[0]  # this process's first (jax.devices()[0] may not be)
        self._context = None
        _PARENT[0] = os.getpid()
        if not _FORK_HOOKED:
            _FORK_HOOKED.append(True)
            os.register_at_fork(after_in_child=_note_fork)
        preload.start(lambda payload: _deserialize(payload, self.device), self.device)

    def bakes_bitwise(self):
        """Whether a program with literals baked (runtime.bake) computes what the program with
        them as run-time parameters computes, bit for bit: on XLA:CPU (tests/core/test_bake.py
        checks it); an H100 summed a reduction in another order once they were baked."""
        return self.device.platform == "cpu"

    def from_host(self, array):
        # On CPU, device_put may alias the NumPy buffer instead of copying it, and the caller
        # may mutate its array later (a torch tensor updated in place after .to(lt.device))
        return self.put_owned(np.array(array, copy=True))

    def put_owned(self, array):
        """device_put for an array no one else holds (no defensive copy)."""
        return put(array, self.device)

    @staticmethod
    def borrow(array):
        """The array itself: a jax executable takes host arrays and transfers them in its C++
        call path (a 4x4 argument: 24 us against 140 us through jax.device_put; 784x512: 480
        against 750 us), possibly without a copy: the caller waits before writing it again."""
        return array

    @staticmethod
    def wait(buffers):
        await_ready(buffers)

    def to_host(self, buffer):
        # spread over several processes: gather it (asked only then: the property costs
        # 0.3 us, a fifth of reading a scalar)
        if type(buffer) is np.ndarray:  # a tiny program's result (xla_inline.run_local)
            return buffer
        if jax.process_count() > 1 and not buffer.is_fully_addressable:
            from jax.experimental import multihost_utils
            return np.asarray(multihost_utils.process_allgather(buffer, tiled=True))
        await_ready((buffer,))
        return np.asarray(buffer)

    def lend_to_host(self, buffer):
        """`buffer` itself when its memory is host memory that a caller holding its only
        reference may take over, through DLPack, without a copy: a result on this process's
        CPU device. None otherwise (a GPU buffer, a sharded one, a tiny program's NumPy
        result): the caller copies."""
        if self.device.platform != "cpu" or type(buffer) is np.ndarray or \
                not isinstance(buffer.sharding, jax.sharding.SingleDeviceSharding):
            return None
        return buffer

    sharding_of = staticmethod(sharding_of)
    shard = staticmethod(shard_buffer)

    def _lower(self, program, signature):
        options = {} if signature.in_shardings is None else \
            {"in_shardings": signature.in_shardings}
        jitted = jax.jit(_as_function(program, signature), **options)
        return jitted.lower(*signature.specs(program))

    @staticmethod
    def code_mappings_short():
        return code_maps.short()

    def compile(self, program, fixed=None):
        """An executable for `program`: from the disk cache when an earlier run (or process)
        stored it, else compiled now -- or, with LAZYX_TIERED=1, compiled in the background
        while the reference interpreter runs the first steps. `fixed` (leaf index -> value):
        scalars of its first call -- a binding caller's, which it never changes (see
        merge_fixed), or a lazy cut's (_LazyLayout): the variant compiled first is the one
        that call runs."""
        x64 = program.needs_x64()
        signature = _Signature(program)
        if fixed and not config.tiered():  # (a tiered executable is not bound)
            signature = signature.variant(program, signature.patterns_for(fixed))
        compiled, cache, key = self._from_disk(program, signature, x64)
        if compiled is not None:
            return _Executable(compiled, x64, signature, self, program)
        if config.tiered():
            from .tiered import TieredExecutable
            return TieredExecutable(self, program, signature, x64, cache, key)
        return self.compile_now(program, signature, x64, cache, key)

    def compile_variant(self, program, signature, x64):
        """jax's Compiled for another variant of a cached program (see _Executable)."""
        compiled, cache, key = self._from_disk(program, signature, x64)
        if compiled is not None:
            return compiled
        return self.compile_now(program, signature, x64, cache, key).compiled

    def _from_disk(self, program, signature, x64):
        """(jax's Compiled from the disk cache or None, the cache, the program's key there)."""
        cache = disk_cache.open_cache()
        # a mesh program stays in memory only: its executable depends on the mesh's devices.
        # A forked child skips the disk: loading an executable there hangs like compiling one
        # (XLA's threads do not survive a fork), and compile_now raises the error saying so
        if not cache or signature.mesh is not None or _FORKED_FROM[0] is not None:
            return None, cache, None
        key = self._disk_key(program, signature, x64)
        if key is None:
            return None, cache, None
        compiled = self._load(cache, key, signature, len(program.outputs))
        metrics.count("disk_hits" if compiled is not None else "disk_misses")
        return compiled, cache, key

    def _disk_key(self, program, signature, x64):
        context = self.cache_context(x64)
        if signature.patterns != signature.general:
            context += repr(("equal scalars", signature.patterns)).encode()
        return disk_cache.program_key(program, context)

    def mark_used(self, exe):
        """Refresh the disk entry of `exe` (as compiled first) as the most recently used: a
        split cut's single program, which a new process needs at its first step, before the
        pair it compiles later (the warm-start preloader loads the newest entries first)."""
        cache = disk_cache.open_cache()
        signature = getattr(exe, "signature", None)
        if not cache or signature is None or signature.mesh is not None or \
                _FORKED_FROM[0] is not None:
            return
        key = self._disk_key(exe.program, signature, exe.x64)
        if key is not None:
            disk_cache.flush()  # (the pair's own entries are written by then, not after)
            cache.make_newest(key)

    def compile_now(self, program, signature, x64, cache=None, key=None):
        """Trace, lower and compile with XLA (timed apart), then store the result on disk."""
        if _FORKED_FROM[0] is not None:
            raise RuntimeError(
                f"lazyx: this process was forked (pid {_FORKED_FROM[0]} is its parent) after "
                f"the XLA backend started there, and XLA cannot compile in a forked child: it "
                f"hangs. Start workers with multiprocessing's 'spawn' or 'forkserver' method "
                f"(multiprocessing.get_context('spawn'), DataLoader(multiprocessing_context="
                f"'spawn')), or set LAZYX_BACKEND=reference before the parent starts (a "
                f"process picks its backend once, and a forked child inherits its parent's)")
        start = time.perf_counter()
        with jax.enable_x64(x64):
            lowered = self._lower(program, signature)
            lowered_at = time.perf_counter()
            compiled = lowered.compile(compiler_options=COMPILER_OPTIONS)
        metrics.record_time("lower", lowered_at - start)
        metrics.record_time("xla_compile", time.perf_counter() - lowered_at)
        if key is not None:
            disk_cache.store_later(self._store, cache, key, compiled)
        return _Executable(compiled, x64, signature, self, program)

    def _load(self, cache, key, signature, n_outputs):
        start = time.perf_counter()
        compiled = preload.take(key)  # loaded and run once already by this process's preloader
        if compiled is not None:
            metrics.count("disk_preloaded")
            # a hit like any other (the preloader leaves the folder alone): without this, the
            # entry every run used kept its first mtime and was the first evicted
            cache.touch(key)
        else:
            payload = cache.get(key)
            if payload is None:
                return None
            try:
                compiled, _ = _deserialize(payload, self.device)
            except Exception as err:  # a payload jax cannot read: treat as corrupt
                cache.discard(key, f"jax could not load it ({type(err).__name__}: {err})")
                return None
        metrics.record_time("disk_load", time.perf_counter() - start)
        _FROM_DISK[compiled] = (cache, key)
        return compiled

    @staticmethod
    def _store(cache, key, compiled):
        """On the cache's writer thread: serialize and write (tens of ms for a big program)."""
        try:
            payload, in_tree, out_tree = serialize(compiled)
            payload = struct.pack("<II", in_tree.children()[0].num_leaves,
                                  out_tree.num_leaves) + payload
        except Exception as err:
            # XLA:CPU cannot serialize some executables (a sort's comparator: "`LessThan` is
            # not serializable"); they are compiled again by each process, nothing else is lost
            disk_cache.warn_once(f"lazyx: some executables cannot be kept in the disk cache "
                                 f"and are compiled again in each process "
                                 f"({type(err).__name__}: {err})")
            return
        cache.put(key, payload)

    def cache_context(self, x64):
        """Everything besides the program that changes the executable XLA makes: a disk cache
        key includes it, so an entry from another version, device or flag set never loads."""
        if self._context is None:
            here = os.path.dirname(os.path.abspath(__file__))
            core = os.path.join(os.path.dirname(here), "core")
            lowering = hashlib.blake2b(digest_size=16)
            # lazyx's own lowering code: a changed table entry changes executables even when
            # no version number moved (a development checkout)
            for path in (__file__, os.path.join(here, "xla_linalg.py"),
                         os.path.join(here, "xla_ldl.py"), os.path.join(here, "xla_ctc.py"),
                         os.path.join(core, "ops.py"), os.path.join(core, "dtypes.py")):
                with open(path, "rb") as f:
                    lowering.update(f.read())
            dev = self.device
            self._context = repr((
                "lazyx", lazyx_version(), lowering.hexdigest(), "jax", jax.__version__,
                "jaxlib", jaxlib.__version__, dev.platform, dev.device_kind,
                dev.client.platform_version, platform.machine(), _cpu_flags(),
                os.environ.get("XLA_FLAGS", ""), os.environ.get("LIBTPU_INIT_ARGS", ""),
                # lazyx places every program on this one device: that is its sharding
                "sharding", "single-device", dev.id, jax.device_count(), COMPILER_OPTIONS))
        # (a setting a program may change at run time is read at each compile)
        return repr((self._context, "x64", bool(x64),
                     jax.config.jax_default_matmul_precision)).encode()

    def compiled_text(self, exe):
        """The optimized HLO XLA runs (after SPMD partitioning: with its collectives)."""
        return exe.compiled.as_text()

    def memory_per_device(self):
        """Bytes of live JAX buffers per device (every live jax.Array of the process)."""
        return memory_per_device()

    def lowered_text(self, program):
        with jax.enable_x64(program.needs_x64()):
            return self._lower(program, _Signature(program)).as_text()


def lazyx_version():
    from .. import __version__
    return __version__


def _cpu_flags():
    """The host CPU's feature flags: XLA compiles CPU code for the features it finds, and an
    executable built for another CPU (a cache folder on a shared home) could crash this one."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return hashlib.blake2b(line.encode(), digest_size=8).hexdigest()
    except OSError:
        pass
    return platform.processor()
