"""Ordering, segments and layout beyond the basics: tf.sort/argsort/searchsorted,
tf.math.in_top_k/invert_permutation, the (unsorted_)segment reductions, tf.roll, tf.slice,
tf.repeat, tf.reverse_sequence, gather_nd, extract_patches and depth_to_space/space_to_depth
(tf.signal's framing: api_signal.py)."""
import numpy as np
import tensorflow as tf
from tensorflow.compiler.tf2xla.python import xla as _xla  # Keras' slice_update calls it

from ...core import dtypes as dt
from ...core import compose, host_values, ir, ops
from .lowering import Reject, axes_of, const, operand_nodes, static_ints
from .registry import lower, lower_undispatched, raise_for_values, run_eagerly
from .tensor import LazyTensor, ir_dtype, wrap


def _one_axis(axis, ndim):
    (a,) = axes_of(axis, ndim, allow_none=False)
    return a


def _direction(direction):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise Reject()
    return direction == "DESCENDING"


@lower(tf.sort, "values")
def sort(values, axis=-1, direction="ASCENDING"):
    (x,) = operand_nodes(values)
    if x.ndim == 0 or x.dtype == dt.BOOL or dt.is_complex(x.dtype):
        raise Reject()
    return wrap(ops.sort(x, axis=_one_axis(axis, x.ndim), descending=_direction(direction)),
                values)


@lower(tf.argsort, "values")
def argsort(values, axis=-1, direction="ASCENDING", stable=False):
    # the IR's argsort is stable, which is one of the orders TF may return when stable=False
    (x,) = operand_nodes(values)
    if x.ndim == 0 or x.dtype == dt.BOOL or dt.is_complex(x.dtype):
        raise Reject()
    return wrap(ops.argsort(x, axis=_one_axis(axis, x.ndim), descending=_direction(direction),
                            index_dtype="int32"))


@lower(tf.searchsorted, "sorted_sequence", "values")
def searchsorted(sorted_sequence, values, side="left", out_type=tf.int32):
    s, v = operand_nodes(sorted_sequence, values)
    if s.ndim < 1 or v.ndim != s.ndim or s.shape[:-1] != v.shape[:-1] or \
            side not in ("left", "right"):
        raise Reject()
    # position = how many sorted entries lie below the value (or at most the value, "right")
    n, m, lead = s.shape[-1], v.shape[-1], s.ndim - 1
    shape = s.shape[:-1] + (m, n)
    ss = ops.broadcast_in_dim(s, shape=shape, broadcast_dimensions=tuple(range(lead)) + (lead + 1,))
    vv = ops.broadcast_in_dim(v, shape=shape, broadcast_dimensions=tuple(range(lead + 1)))
    below = ops.lt(ss, vv) if side == "left" else ops.le(ss, vv)
    count = ops.reduce_sum(ops.convert(below, dtype=ir_dtype(out_type)), axes=(lead + 1,))
    return wrap(count, sorted_sequence, values)


@lower_undispatched(tf.raw_ops, "Bucketize")
def bucketize(input, boundaries):  # noqa: A002 - TF's name
    """tf.raw_ops.Bucketize (what keras.ops.digitize and the Discretization layer call): how
    many boundaries are <= each value. TF's kernel compares against the boundaries as float32
    (an integer input is converted to it; a float64 input compares with them widened), and a
    NaN lands past the last boundary."""
    (x,) = operand_nodes(input)
    bounds = [float(b) for b in boundaries]
    if x.dtype not in ("int32", "int64", "float32", "float64") or bounds != sorted(bounds):
        raise Reject()  # TF's own error for the types it refuses and for unsorted boundaries
    kind = "float64" if x.dtype == "float64" else "float32"
    v = x if x.dtype == kind else ops.convert(x, dtype=kind)
    # TF's CPU kernels run with subnormals flushed to zero, values and boundaries alike:
    # -1e-41 is not below a boundary of 0.0 there (the reference interpreter would keep it)
    tiny = compose.const_like(np.finfo(kind).tiny, v)
    v = ops.select(ops.lt(ops.abs_(v), tiny), compose.const_like(0, v), v)
    n, axis = len(bounds), x.ndim
    if not n:
        return wrap(compose.const(0, "int32", x.shape))
    shape = x.shape + (n,)
    edges = np.asarray(bounds, np.float32)  # TF holds them as float32, flushed like values
    edges = np.where(np.abs(edges) < np.finfo(np.float32).tiny, np.float32(0), edges)
    edges = ir.constant(edges.astype(kind), kind)
    edges = ops.broadcast_in_dim(edges, shape=shape, broadcast_dimensions=(axis,))
    values = ops.broadcast_in_dim(v, shape=shape, broadcast_dimensions=tuple(range(axis)))
    count = ops.reduce_sum(ops.convert(ops.le(edges, values), dtype="int32"), axes=(axis,))
    nan = ops.ne(v, v)
    return wrap(ops.select(nan, compose.const(n, "int32", x.shape), count))


@lower(tf.math.in_top_k, "targets", "predictions")
def in_top_k(targets, predictions, k):
    (t,), (p,) = operand_nodes(targets), operand_nodes(predictions)
    if p.ndim != 2 or t.shape != p.shape[:1] or not dt.is_int(t.dtype) or \
            not dt.is_float(p.dtype):
        raise Reject()
    k = static_ints(k)
    if not isinstance(k, int):
        raise Reject()
    cols = ops.iota(dtype=t.dtype, shape=p.shape, dimension=1)
    hit = ops.eq(cols, ops.broadcast_in_dim(t, shape=p.shape, broadcast_dimensions=(0,)))
    target = ops.reduce_sum(ops.select(hit, p, const(0, p)), axes=(1,))
    above = ops.gt(p, ops.broadcast_in_dim(target, shape=p.shape, broadcast_dimensions=(0,)))
    count = ops.reduce_sum(ops.convert(above, dtype="int32"), axes=(1,))
    # TF: a target outside [0, classes) or a non-finite prediction is never in the top k
    valid = ops.and_(ops.ge(t, const(0, t)), ops.lt(t, const(p.shape[1], t)))
    ok = ops.and_(ops.and_(valid, ops.is_finite(target)), ops.lt(count, const(k, count)))
    return wrap(ok)


@lower(tf.math.invert_permutation, "x")
def invert_permutation(x):
    (perm,) = operand_nodes(x)
    if perm.ndim != 1 or perm.dtype not in ("int32", "int64"):
        raise Reject()
    n = perm.shape[0]
    # out[perm[i]] = i
    indices = ops.reshape(perm, new_sizes=(n, 1))
    return wrap(ops.scatter(compose.const(0, perm.dtype, (n,)), indices,
                            ops.iota(dtype=perm.dtype, shape=(n,), dimension=0)), x)


# ---------------------------------------------------------------- segment reductions

_INIT = {"add": 0, "mul": 1}


def _segment(data, ids, num, mode):
    """out[s] = combine of data[i] over i with ids[i] == s, for s < num (ids: data's leading
    axes); empty segments hold the combination's identity (TF's lowest/highest for max/min)."""
    if not dt.is_int(ids.dtype) or data.shape[:ids.ndim] != ids.shape or \
            data.dtype == dt.BOOL or dt.is_complex(data.dtype) and mode in ("max", "min"):
        raise Reject()
    rest = data.shape[ids.ndim:]
    if mode in _INIT:
        init = _INIT[mode]
    else:
        info = np.finfo if dt.is_float(data.dtype) else np.iinfo
        limits = info(np.dtype(data.dtype))
        init = limits.min if mode == "max" else limits.max
    base = compose.const(init, data.dtype, (num,) + rest)
    indices = ops.reshape(ids, new_sizes=ids.shape + (1,))
    return ops.scatter(base, indices, data, mode=mode)


def _count(ids, num, dtype):
    ones = compose.const(1, dtype, ids.shape)
    return _segment(ones, ids, num, "add")


def _per_row(count, like):
    return ops.broadcast_in_dim(count, shape=like.shape, broadcast_dimensions=(0,))


def _check_ids(api, arguments, ids, num=None):
    """Ids known at the call that TF's kernel refuses (unsorted or negative for the sorted
    ops, past num_segments for the unsorted ones) raise TF's own error here, at the call."""
    known = host_values.known(ids)
    if known is None or not known.size:
        return
    bad = known.max() >= num if num is not None else \
        (known.min() < 0 or np.any(np.diff(known) < 0))
    if bad:
        raise_for_values(api, arguments, {"segment_ids": known})


def _unsorted(api, mode, post=None):
    @lower(api, "data", "segment_ids")
    def lowering(data, segment_ids, num_segments):
        d, ids = operand_nodes(data)[0], operand_nodes(segment_ids)[0]
        if isinstance(num_segments, LazyTensor):  # Keras passes max(ids) + 1, computed lazily
            known = host_values.known(num_segments.node)
            if known is None:  # the output length is a value: real TF runs it, counted
                return run_eagerly(api, (data, segment_ids, num_segments), {})
            num_segments = known
        num = static_ints(num_segments)
        if not isinstance(num, int) or num < 0:
            raise Reject()
        _check_ids(api, dict(data=data, segment_ids=segment_ids, num_segments=num), ids, num)
        out = _segment(d, ids, num, mode)
        if post is not None:
            out = post(out, d, ids, num)
        return wrap(out, data, segment_ids)
    lowering.__name__ = api.__name__


def _mean(total, d, ids, num):
    count = ops.max_(_count(ids, num, total.dtype), compose.const(1, total.dtype, (num,)))
    return ops.div(total, _per_row(count, total))


def _sqrt_n(total, d, ids, num):
    count = ops.max_(_count(ids, num, total.dtype), compose.const(1, total.dtype, (num,)))
    return ops.div(total, _per_row(ops.sqrt(count), total))


def _empty_to_zero(out, d, ids, num):
    # the sorted segment_max/min give 0 for an empty segment, not the lowest/highest value
    empty = ops.eq(_count(ids, num, "int32"), compose.const(0, "int32", (num,)))
    return ops.select(_per_row(empty, out), compose.const(0, out.dtype, out.shape), out)


for _mode, _name in (("add", "sum"), ("mul", "prod"), ("max", "max"), ("min", "min")):
    _unsorted(getattr(tf.math, "unsorted_segment_" + _name), _mode)
_unsorted(tf.math.unsorted_segment_mean, "add", _mean)
_unsorted(tf.math.unsorted_segment_sqrt_n, "add", _sqrt_n)


def _sorted(api, mode, post=None):
    @lower(api, "data", "segment_ids")
    def lowering(data, segment_ids):
        d, ids = operand_nodes(data)[0], operand_nodes(segment_ids)[0]
        known = host_values.known(ids)  # the output length is max(id) + 1: a value
        if known is None or ids.ndim != 1:
            raise Reject()
        _check_ids(api, dict(data=data, segment_ids=segment_ids), ids)
        num = int(np.max(known)) + 1 if known.size else 0
        out = _segment(d, ids, num, mode)
        if post is not None:
            out = post(out, d, ids, num)
        return wrap(out, data, segment_ids)
    lowering.__name__ = api.__name__


_sorted(tf.math.segment_sum, "add")
_sorted(tf.math.segment_prod, "mul")
_sorted(tf.math.segment_max, "max", _empty_to_zero)
_sorted(tf.math.segment_min, "min", _empty_to_zero)
_sorted(tf.math.segment_mean, "add", _mean)


# ---------------------------------------------------------------- layout


@lower(tf.roll, "input")
def roll(input, shift, axis):  # noqa: A002
    (x,) = operand_nodes(input)
    shifts, axes = static_ints(shift), static_ints(axis)
    shifts = [shifts] if isinstance(shifts, int) else shifts
    axes = [axes] if isinstance(axes, int) else axes
    if len(shifts) != len(axes) or x.ndim == 0:
        raise Reject()
    total = {}
    for s, a in zip(shifts, axes):
        if not -x.ndim <= a < x.ndim:
            raise Reject()
        total[a % x.ndim] = total.get(a % x.ndim, 0) + s  # TF adds repeated axes' shifts
    return wrap(compose.roll(x, total), input)


@lower(tf.slice, "input_")
def slice_(input_, begin, size):
    (x,) = operand_nodes(input_)
    begin, size = static_ints(begin), static_ints(size)
    begin = [begin] if isinstance(begin, int) else begin
    size = [size] if isinstance(size, int) else size
    if len(begin) != x.ndim or len(size) != x.ndim:
        raise Reject()
    limit = [d if n == -1 else b + n for b, n, d in zip(begin, size, x.shape)]
    if any(not 0 <= b <= lim <= d for b, lim, d in zip(begin, limit, x.shape)):
        raise Reject()
    return wrap(ops.slice_(x, start_indices=begin, limit_indices=limit), input_)


def _take_static(x, axis, index):
    """x's entries along `axis` at the host positions `index` (a gather, whose gradient adds
    into repeated positions as TF's does)."""
    rest = tuple(d for d in range(x.ndim) if d != axis)
    back = tuple(np.argsort((axis,) + rest).tolist())
    picked = ops.gather(ops.transpose(x, permutation=(axis,) + rest),
                        ir.constant(np.asarray(index, np.int32).reshape(-1, 1), "int32"))
    return ops.transpose(picked, permutation=back)


@lower(tf.repeat, "input")
def repeat(input, repeats, axis=None):  # noqa: A002
    (x,) = operand_nodes(input)
    n = static_ints(repeats)  # (lazy counts: the output length is their sum, a value: TF)
    if axis is None:
        x, axis = ops.reshape(x, new_sizes=(x.size,)), 0
    a = _one_axis(axis, x.ndim)
    if isinstance(n, list) and len(n) == 1:
        n = n[0]
    if isinstance(n, list):  # one count per element along the axis, known: a static gather
        if len(n) != x.shape[a] or min(n, default=0) < 0 or not sum(n):
            raise Reject()  # (TF's error; or an empty result: TF's own call)
        return wrap(_take_static(x, a, np.repeat(np.arange(len(n)), n)), input)
    if n < 0:
        raise Reject()
    shape = x.shape[:a + 1] + (n,) + x.shape[a + 1:]
    dims = tuple(range(a + 1)) + tuple(range(a + 2, x.ndim + 1))
    spread = ops.broadcast_in_dim(x, shape=shape, broadcast_dimensions=dims)
    out = x.shape[:a] + (x.shape[a] * n,) + x.shape[a + 1:]
    return wrap(ops.reshape(spread, new_sizes=out), input)


@lower(tf.reverse_sequence, "input", "seq_lengths")
def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None):  # noqa: A002
    """Each batch row's first seq_lengths[b] entries along seq_axis reversed: a gather from
    position L-1-j where j < L, else j (lengths may be lazy; known ones are checked)."""
    (x,), (lengths,) = operand_nodes(input), operand_nodes(seq_lengths)
    seq = _one_axis(0 if seq_axis is None else seq_axis, x.ndim)
    batch = _one_axis(0 if batch_axis is None else batch_axis, x.ndim)
    if seq == batch or lengths.ndim != 1 or lengths.shape[0] != x.shape[batch] or \
            not dt.is_int(lengths.dtype):
        raise Reject()
    known = host_values.known(lengths)
    if known is not None and known.size and (known.min() < 0 or known.max() > x.shape[seq]):
        raise_for_values(tf.reverse_sequence, dict(
            input=input, seq_lengths=seq_lengths, seq_axis=seq, batch_axis=batch),
            {"seq_lengths": known})
    n = x.shape[seq]
    shape = tuple(x.shape[d] if d in (seq, batch) else 1 for d in range(x.ndim))
    pos = ops.iota(dtype=lengths.dtype, shape=shape, dimension=seq)
    length = ops.broadcast_in_dim(lengths, shape=shape, broadcast_dimensions=(batch,))
    back = ops.sub(ops.sub(length, compose.const(1, lengths.dtype, shape)), pos)
    index = ops.select(ops.lt(pos, length), back, pos)
    index = ops.broadcast_in_dim(index, shape=x.shape, broadcast_dimensions=tuple(
        range(x.ndim)))
    if n == 0:
        return wrap(x, input)
    return wrap(compose.take_along_axis(x, index, seq), input)


def _blocks(x, block, to_depth):
    n, h, w, c = x.shape
    if to_depth:
        if h % block or w % block:
            raise Reject()
        t = ops.reshape(x, new_sizes=(n, h // block, block, w // block, block, c))
        t = ops.transpose(t, permutation=(0, 1, 3, 2, 4, 5))
        return ops.reshape(t, new_sizes=(n, h // block, w // block, block * block * c))
    if c % (block * block):
        raise Reject()
    t = ops.reshape(x, new_sizes=(n, h, w, block, block, c // (block * block)))
    t = ops.transpose(t, permutation=(0, 1, 3, 2, 4, 5))
    return ops.reshape(t, new_sizes=(n, h * block, w * block, c // (block * block)))


def _block_api(api, to_depth):
    @lower(api, "input")
    def lowering(input, block_size, data_format="NHWC"):  # noqa: A002
        (x,) = operand_nodes(input)
        block = static_ints(block_size)
        if x.ndim != 4 or data_format != "NHWC" or not isinstance(block, int) or block < 2:
            raise Reject()
        return wrap(_blocks(x, block, to_depth), input)
    lowering.__name__ = api.__name__


_block_api(tf.nn.depth_to_space, False)
_block_api(tf.nn.space_to_depth, True)


def _refuse_known_out_of_range(indices, shape, api, arguments):
    """TF (on CPU) refuses an nd index outside the tensor: so do we, where it is known (a
    computed index cannot be checked without a sync: the IR's gather clamps it, its scatter
    drops it)."""
    known = host_values.known(indices)
    if known is not None and any(host_values.out_of_range(known[..., j], 0, shape[j])
                                 for j in range(indices.shape[-1])):
        raise_for_values(api, arguments, {"indices": known})


def _scatter_nd(base, indices, updates, mode, api=None, arguments=None):
    if not dt.is_int(indices.dtype) or indices.ndim < 1 or indices.shape[-1] > base.ndim or \
            updates.shape != indices.shape[:-1] + base.shape[indices.shape[-1]:]:
        raise Reject()
    if api is not None:
        _refuse_known_out_of_range(indices, base.shape, api, arguments)
    return ops.scatter(base, indices, updates, mode=mode)


@lower(tf.gather_nd, "params", "indices")
def gather_nd(params, indices, batch_dims=0, bad_indices_policy=""):
    (x,), (idx,) = operand_nodes(params), operand_nodes(indices)
    bd = static_ints(batch_dims)
    if not isinstance(bd, int) or not 0 <= bd < min(x.ndim, idx.ndim) or \
            bad_indices_policy not in ("", "DEFAULT") or not dt.is_int(idx.dtype) or \
            idx.ndim < 1 or not 0 < idx.shape[-1] <= x.ndim - bd or \
            x.shape[:bd] != idx.shape[:bd]:
        raise Reject()
    _refuse_known_out_of_range(idx, x.shape[bd:], tf.gather_nd, dict(
        params=params, indices=indices, batch_dims=bd))
    if bd:  # batch dims: each index row gets its batch coordinates in front
        where = idx.shape[:-1] + (1,)
        coords = [ops.iota(dtype=idx.dtype, shape=where, dimension=d) for d in range(bd)]
        idx = ops.concatenate(*coords, idx, dimension=idx.ndim - 1)
    return wrap(ops.gather(x, idx), params)


# tf.compat.v1.gather_nd is a function of its own (the TF 1 signature, `name` before
# `batch_dims`): keras-io's CTC label helper calls it, and it was a counted fallback
lower(tf.compat.v1.gather_nd, "params", "indices")(gather_nd)


@lower(tf.scatter_nd, "indices", "updates")
def scatter_nd(indices, updates, shape, bad_indices_policy=""):
    (i,), (u,) = operand_nodes(indices), operand_nodes(updates)
    shape = static_ints(shape)
    if u.dtype == dt.BOOL or not isinstance(shape, list):
        raise Reject()
    # TF sums the updates of repeated indices
    return wrap(_scatter_nd(compose.const(0, u.dtype, tuple(shape)), i, u, "add", tf.scatter_nd,
                            dict(indices=indices, updates=updates, shape=shape)), updates)


def _tensor_scatter(api, mode):
    @lower(api, "tensor", "indices", "updates")
    def lowering(tensor, indices, updates, bad_indices_policy=""):
        (t,), (i,) = operand_nodes(tensor), operand_nodes(indices)
        (u,) = operand_nodes(updates) if not isinstance(updates, (int, float)) else \
            operand_nodes(tensor, updates)[1:]
        if u.dtype != t.dtype or (t.dtype == dt.BOOL and mode != "set"):
            raise Reject()
        how = mode
        if mode == "sub":  # the scatter's add of the negated updates, exact as TF's sub
            if dt.is_unsigned(u.dtype):
                raise Reject()
            u, how = ops.neg(u), "add"
        return wrap(_scatter_nd(t, i, u, how, api, dict(tensor=tensor, indices=indices,
                                                         updates=updates)), tensor, updates)
    lowering.__name__ = api.__name__


_tensor_scatter(tf.tensor_scatter_nd_update, "set")
_tensor_scatter(tf.tensor_scatter_nd_add, "add")
_tensor_scatter(tf.tensor_scatter_nd_sub, "sub")
_tensor_scatter(tf.tensor_scatter_nd_max, "max")
_tensor_scatter(tf.tensor_scatter_nd_min, "min")


# ---------------------------------------------------------------- windows and updates


def _window(x, axis, start, length, step=1):
    begin, limit, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    begin[axis], limit[axis], strides[axis] = start, start + (length - 1) * step + 1, step
    return ops.slice_(x, start_indices=begin, limit_indices=limit, strides=strides)


@lower(tf.image.extract_patches, "images")
def extract_patches(images, sizes, strides, rates, padding):
    (x,) = operand_nodes(images)
    sizes, strides, rates = (static_ints(v) for v in (sizes, strides, rates))
    if x.ndim != 4 or any(len(v) != 4 or v[0] != 1 or v[3] != 1 for v in (sizes, strides,
                                                                             rates)) \
            or padding not in ("VALID", "SAME"):
        raise Reject()
    (kh, kw), (sh, sw), (rh, rw) = sizes[1:3], strides[1:3], rates[1:3]
    spans = [(k - 1) * r + 1 for k, r in ((kh, rh), (kw, rw))]
    config = [(0, 0, 0)] * 4
    outs = []
    for axis, span, s in ((1, spans[0], sh), (2, spans[1], sw)):
        n = x.shape[axis]
        if padding == "VALID":
            outs.append(max(0, (n - span) // s + 1))
        else:  # TF's SAME: ceil(n / s) windows, the padding split low-first
            out = -(-n // s)
            total = max((out - 1) * s + span - n, 0)
            config[axis] = (total // 2, total - total // 2, 0)
            outs.append(out)
    if not all(outs):
        raise Reject()
    x = ops.pad(x, ir.constant(0, x.dtype), padding_config=config)
    # the patch's entries in TF's order: row, column, channel
    parts = []
    for i in range(kh):
        for j in range(kw):
            rows = _window(x, 1, i * rh, outs[0], sh)
            parts.append(_window(rows, 2, j * rw, outs[1], sw))
    return wrap(ops.concatenate(*parts, dimension=3) if len(parts) > 1 else parts[0], images)


def _start_nodes(indices, ndim):
    """Run-time start indices as int32 scalars: static ones as params, lazy ones sliced."""
    if isinstance(indices, LazyTensor):
        (node,) = operand_nodes(indices)
        if node.shape != (ndim,) or not dt.is_int(node.dtype):
            raise Reject()
        return [ops.reshape(ops.slice_(node, start_indices=(i,), limit_indices=(i + 1,)),
                            new_sizes=()) for i in range(ndim)]
    starts = static_ints(indices)
    starts = [starts] if isinstance(starts, int) else starts
    if len(starts) != ndim:
        raise Reject()
    return [ir.param(int(s), "int32") for s in starts]


@lower(_xla.dynamic_update_slice, "input", "update")
def xla_dynamic_update_slice(input, update, indices):  # noqa: A002 - TF's names
    # XLA's DynamicUpdateSlice (Keras' slice_update): starts clamp so the update fits
    x, u = operand_nodes(input, update)
    if u.ndim != x.ndim or any(a > b for a, b in zip(u.shape, x.shape)):
        raise Reject()
    return wrap(ops.dynamic_update_slice(x, u, *_start_nodes(indices, x.ndim)), input, update)
