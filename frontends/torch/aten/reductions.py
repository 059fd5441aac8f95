"""Reductions, scans and softmax. torch's meta result fixes the output dtype (integer sums
are int64, `dtype=` overrides); lowerings reduce in the computation dtype and restore kept
dims with a reshape."""
import math

from ....core import compose, ops
from ....core import dtypes as dt
from .table import (Unsupported, aten, bcast, compute_dtype, const, dims_of, dim_of, lower,
                    node_of, scalar)


def _input(out, x, dtype=None):
    return node_of(x, dtype or compute_dtype(out.dtype))


def _finish(node, out):
    shape = tuple(out.shape)
    return node if node.shape == shape else ops.reshape(node, new_sizes=shape)


def _reducer(reduce):
    def lowering(out, x, dim=None, keepdim=False, *, dtype=None):
        a = _input(out, x)
        return _finish(reduce(a, axes=dims_of(dim, a.ndim)), out)
    return lowering


lower(aten.sum.dim_IntList)(_reducer(ops.reduce_sum))
lower(aten.amax.default)(_reducer(ops.reduce_max))
lower(aten.amin.default)(_reducer(ops.reduce_min))


@lower(aten.hash_tensor.default)
def _hash_tensor(out, x, dim=(), *, keepdim=False, mode=0):
    """xor of the elements' 64-bit images (floats as float64 bits, integers and bools as
    int64), as uint64: torch's only mode."""
    a = node_of(x)
    if mode != 0 or (a.size == 0 and not dim) or dt.is_complex(a.dtype):
        raise Unsupported("hash_tensor: torch's own errors")
    wide = "float64" if dt.is_float(a.dtype) else \
        "uint64" if dt.is_unsigned(a.dtype) else "int64"
    bits = ops.bitcast_convert(ops.convert(a, dtype=wide), dtype="uint64")
    return _finish(compose.reduce_xor(bits, dims_of(dim, a.ndim)), out)


@lower(aten.sum.default)
def _sum(out, x, *, dtype=None):
    a = _input(out, x)
    return ops.reduce_sum(a, axes=tuple(range(a.ndim)))


@lower(aten.prod.default)
def _prod(out, x, *, dtype=None):
    a = _input(out, x)
    return ops.reduce_prod(a, axes=tuple(range(a.ndim)))


@lower(aten.prod.dim_int)
def _prod_dim(out, x, dim, keepdim=False, *, dtype=None):
    a = _input(out, x)
    return _finish(ops.reduce_prod(a, axes=dims_of(dim, a.ndim)), out)


def _count(a, axes):
    return math.prod(a.shape[i] for i in axes)


@lower(aten.mean.dim)
def _mean_dim(out, x, dim, keepdim=False, *, dtype=None):
    a = _input(out, x)
    axes = dims_of(dim, a.ndim)
    total = ops.reduce_sum(a, axes=axes)
    return _finish(ops.div(total, const(_count(a, axes), a.dtype, total.shape)), out)


@lower(aten.mean.default)
def _mean(out, x, *, dtype=None):
    return _mean_dim(out, x, None, dtype=dtype)


def _check_not_empty(name, a):
    # torch's CPU kernel refuses an empty max()/min() (its meta kernel lets it through)
    if a.size == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                           f"input.numel() == 0. Specify the reduction dim with the 'dim' "
                           f"argument.")


@lower(aten.max.default)
def _max_all(out, x):
    a = node_of(x)
    _check_not_empty("max", a)
    return ops.reduce_max(a, axes=tuple(range(a.ndim)))


@lower(aten.min.default)
def _min_all(out, x):
    a = node_of(x)
    _check_not_empty("min", a)
    return ops.reduce_min(a, axes=tuple(range(a.ndim)))


def _bool_reducer(reduce):
    def lowering(out, x, dim=None, keepdim=False):
        a = node_of(x, "bool")
        return _finish(reduce(a, axes=dims_of(dim, a.ndim)), out)
    return lowering


for _name, _fn in (("any", ops.reduce_or), ("all", ops.reduce_and)):
    _packet = getattr(aten, _name)
    lower(_packet.default, _packet.dim, _packet.dims)(_bool_reducer(_fn))
# what torch._check-style validation reduces to (torch.distributions' argument checks)
lower(aten._is_all_true.default)(_bool_reducer(ops.reduce_and))
lower(aten._is_any_true.default)(_bool_reducer(ops.reduce_or))


def _value_and_index(reduce, arg):
    def lowering(out, x, dim, keepdim=False):
        a = node_of(x)
        if a.ndim == 0:
            return a, const(0, "int64", ())
        axis = dim_of(dim, a.ndim)
        values = reduce(a, axes=(axis,))
        index = arg(a, axis=axis, index_dtype="int64")
        return _finish(values, out[0]), _finish(index, out[1])
    return lowering


lower(aten.max.dim)(_value_and_index(ops.reduce_max, ops.argmax))
lower(aten.min.dim)(_value_and_index(ops.reduce_min, ops.argmin))


def _arg_reducer(arg):
    def lowering(out, x, dim=None, keepdim=False):
        a = node_of(x)
        if dim is None:
            a, axis = compose.flatten(a), 0
        elif a.ndim == 0:
            return const(0, "int64", ())
        else:
            axis = dim_of(dim, a.ndim)
        return _finish(arg(a, axis=axis, index_dtype="int64"), out)
    return lowering


lower(aten.argmax.default)(_arg_reducer(ops.argmax))
lower(aten.argmin.default)(_arg_reducer(ops.argmin))


def _variance(out, x, dim, correction):
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        # torch's CPU kernel check (its meta kernel lacks it)
        raise RuntimeError("std and var only support floating point and complex dtypes")
    real = compute_dtype(out.dtype)
    a = node_of(x) if x.dtype.is_complex else node_of(x, real)
    axes = dims_of(dim, a.ndim)
    keep = tuple(i for i in range(a.ndim) if i not in axes)
    n = _count(a, axes)
    mean = ops.div(ops.reduce_sum(a, axes=axes), ops.convert(
        const(n, real, tuple(a.shape[i] for i in keep)), dtype=a.dtype))
    dev = ops.sub(a, ops.broadcast_in_dim(mean, shape=a.shape, broadcast_dimensions=keep))
    if x.dtype.is_complex:  # |dev|^2: the variances of the two parts add
        squares = ops.add(ops.mul(ops.real(dev), ops.real(dev)),
                          ops.mul(ops.imag(dev), ops.imag(dev)))
    else:
        squares = ops.mul(dev, dev)
    total = ops.reduce_sum(squares, axes=axes)
    c = 1 if correction is None else correction
    # (a count from the shape: a constant, as NumPy's and TF's divisors are -- a run-time
    # param made torch's variance another graph than theirs)
    return ops.div(total, const(max(n - c, 0), real, total.shape))


@lower(aten.var.correction)
def _var(out, x, dim=None, *, correction=None, keepdim=False):
    return _finish(_variance(out, x, dim, correction), out)


@lower(aten.std.correction)
def _std(out, x, dim=None, *, correction=None, keepdim=False):
    return _finish(ops.sqrt(_variance(out, x, dim, correction)), out)


def _scan(scan):
    def lowering(out, x, dim, *, dtype=None):
        a = _input(out, x)
        if a.ndim == 0:
            return a
        return scan(a, axis=dim_of(dim, a.ndim))
    return lowering


lower(aten.cumsum.default)(_scan(ops.cumsum))
lower(aten.cumprod.default)(_scan(ops.cumprod))


def _softmax_like(out, x, dim, shared, of_scalar):
    a = node_of(x, compute_dtype(out.dtype))
    if a.ndim == 0:
        return const(of_scalar, a.dtype, ())
    # the shared decomposition: the same graph as NumPy's hand-written softmax and TF's
    return shared(a, dim_of(dim, a.ndim))


@lower(aten._softmax.default)
def _softmax(out, x, dim, half_to_float):
    return _softmax_like(out, x, dim, compose.softmax, 1)


@lower(aten._log_softmax.default)
def _log_softmax(out, x, dim, half_to_float):
    return _softmax_like(out, x, dim, compose.log_softmax, 0)


def _sum_back(x, axis):
    """sum along axis, broadcast back to x's shape (torch's sum(..., keepdim=True) + bcast)."""
    s = compose.keepdims(ops.reduce_sum(x, axes=(axis,)), x.shape, (axis,))
    return compose.broadcast_to(s, x.shape)


# The backward halves, lowered whole: torch's decompositions would send each of their five
# or six aten calls (and two dtype casts) through the dispatcher once per training step.
@lower(aten._softmax_backward_data.default)
def _softmax_backward(out, grad, output, dim, input_dtype):
    dtype = compute_dtype(out.dtype)
    g, y = node_of(grad, dtype), node_of(output, dtype)
    if g.ndim == 0:
        return const(0, dtype, ())
    gy = ops.mul(g, y)
    return ops.sub(gy, ops.mul(y, _sum_back(gy, dim_of(dim, g.ndim))))


@lower(aten._log_softmax_backward_data.default)
def _log_softmax_backward(out, grad, output, dim, input_dtype):
    dtype = compute_dtype(out.dtype)
    g, y = node_of(grad, dtype), node_of(output, dtype)
    if g.ndim == 0:
        return const(0, dtype, ())
    return ops.sub(g, ops.mul(ops.exp(y), _sum_back(g, dim_of(dim, g.ndim))))


@lower(aten.native_layer_norm.default)
def _native_layer_norm(out, x, normalized_shape, weight, bias, eps):
    dtype = compute_dtype(out[0].dtype)
    a = node_of(x, dtype)
    axes = tuple(range(a.ndim - len(normalized_shape), a.ndim))
    keep = tuple(i for i in range(a.ndim) if i not in axes)
    n = _count(a, axes)
    stat_shape = tuple(out[1].shape)
    mean = ops.div(ops.reduce_sum(a, axes=axes), const(n, dtype, tuple(a.shape[i] for i in keep)))
    centered = ops.sub(a, ops.broadcast_in_dim(mean, shape=a.shape, broadcast_dimensions=keep))
    var = ops.div(ops.reduce_sum(ops.mul(centered, centered), axes=axes),
                  const(n, dtype, mean.shape))
    rstd = ops.rsqrt(ops.add(var, scalar(eps, dtype, var.shape)))
    y = ops.mul(centered, ops.broadcast_in_dim(rstd, shape=a.shape, broadcast_dimensions=keep))
    if weight is not None:
        y = ops.mul(y, bcast(node_of(weight, dtype), a.shape))
    if bias is not None:
        y = ops.add(y, bcast(node_of(bias, dtype), a.shape))
    return (y, ops.reshape(mean, new_sizes=stat_shape), ops.reshape(rstd, new_sizes=stat_shape))


@lower(aten.native_layer_norm_backward.default)
def _native_layer_norm_backward(out, grad, x, normalized_shape, mean, rstd, weight, bias,
                                output_mask):
    """Lowered whole (torch's decomposition dispatches ~20 aten calls and casts per layer);
    the same formulas: x_hat = (x - mean) * rstd, dx = rstd / N * (N g' - sum g' -
    x_hat sum(g' x_hat)) with g' = grad * weight; dweight = sum(grad x_hat), dbias = sum grad
    over the outer axes. An output torch's meta kernel leaves out (None) stays out."""
    dtype = compute_dtype(out[0].dtype if out[0] is not None else x.dtype)
    a, g = node_of(x, dtype), node_of(grad, dtype)
    axes = tuple(range(a.ndim - len(normalized_shape), a.ndim))
    keep = tuple(i for i in range(a.ndim) if i not in axes)
    n = _count(a, axes)
    if a.size == 0:
        raise Unsupported("layer norm backward of an empty input")
    outer = tuple(a.shape[i] for i in keep)

    def per_row(stat):  # (outer..., 1, ...) statistics, broadcast back over the inner axes
        s = ops.reshape(node_of(stat, dtype), new_sizes=outer)
        return ops.broadcast_in_dim(s, shape=a.shape, broadcast_dimensions=keep)

    def row_sum(v):
        return ops.broadcast_in_dim(ops.reduce_sum(v, axes=axes), shape=a.shape,
                                    broadcast_dimensions=keep)

    def outer_sum(v):
        return ops.reduce_sum(v, axes=keep) if keep else v

    rs = per_row(rstd)
    x_hat = ops.mul(ops.sub(a, per_row(mean)), rs)
    gw = ops.mul(g, bcast(node_of(weight, dtype), a.shape)) if weight is not None else g
    results = [None, None, None]
    if out[0] is not None:
        inner = ops.sub(ops.sub(ops.mul(gw, const(n, dtype, a.shape)), row_sum(gw)),
                        ops.mul(x_hat, row_sum(ops.mul(gw, x_hat))))
        results[0] = ops.mul(ops.div(rs, const(n, dtype, a.shape)), inner)
    if out[1] is not None:
        results[1] = outer_sum(ops.mul(g, x_hat))
    if out[2] is not None:
        results[2] = outer_sum(g)
    return tuple(results)


def _sorted(a, axis, descending):
    return ops.sort_with_indices(a, axis=axis, descending=descending, index_dtype="int64")


@lower(aten.sort.default)
def _sort(out, x, dim=-1, descending=False):
    a = node_of(x)
    if a.ndim == 0:
        return a, const(0, "int64", ())
    return _sorted(a, dim_of(dim, a.ndim), descending)


@lower(aten.sort.stable)
def _sort_stable(out, x, *, stable=None, dim=-1, descending=False):
    return _sort(out, x, dim, descending)


@lower(aten.topk.default)
def _topk(out, x, k, dim=-1, largest=True, sorted=True):
    a = node_of(x)
    if a.ndim == 0:
        return a, const(0, "int64", ())
    axis = dim_of(dim, a.ndim)
    values, indices = _sorted(a, axis, descending=largest)
    limit = list(a.shape)
    limit[axis] = k
    take = dict(start_indices=(0,) * a.ndim, limit_indices=tuple(limit))
    return ops.slice_(values, **take), ops.slice_(indices, **take)


@lower(aten._weight_norm_interface_backward.default)
def _weight_norm_backward(out, grad_w, saved_v, saved_g, saved_norms, dim):
    """torch.nn.utils.weight_norm's fused backward (w = g * v / ||v||, the norm over every axis
    but `dim`), as torch's CPU kernel computes it: s = sum(grad_w * v) per slice, then
    grad_v = (g / norm) * grad_w - (g / norm) * s / norm^2 * v and grad_g = s / norm."""
    dtype = compute_dtype(out[0].dtype)
    gw, v = node_of(grad_w, dtype), node_of(saved_v, dtype)
    g, norm = node_of(saved_g, dtype), node_of(saved_norms, dtype)
    dim = dim % v.ndim
    if g.shape != norm.shape or g.size != v.shape[dim]:
        raise Unsupported("weight_norm backward with unexpected saved shapes")
    axes = tuple(i for i in range(v.ndim) if i != dim)
    per_slice = ops.reshape(ops.reduce_sum(ops.mul(gw, v), axes=axes), new_sizes=g.shape)
    a = ops.div(g, norm)
    b = ops.div(ops.mul(a, per_slice), ops.mul(norm, norm))
    grad_v = ops.sub(ops.mul(bcast(a, v.shape), gw), ops.mul(bcast(b, v.shape), v))
    return grad_v, ops.div(per_slice, norm)
