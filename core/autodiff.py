"""Reverse-mode autodiff on the IR: one table {op: vjp rule}, every rule emits IR.

Because the gradient is itself IR, it stays lazy and lands in the same compiled program as the
forward pass; any frontend can use it (the TF frontend hands the result to tf.GradientTape).

A rule is `rule(node, g) -> tuple of cotangents, one per input (None = no gradient)`, where
`node` is the forward node (its inputs are `node.inputs`) and `g` its cotangent (same shape and
dtype as `node`). Only floating-point and complex values carry cotangents (complex ones as in
JAX: the linear transpose, no conjugation; core/autodiff_math.py). A node with several results
(core/ir.py) gets `g` as a tuple, one cotangent per result: what its projections (`result`
nodes) collected, zeros for an unused floating result, None for an integer one (indices).

Conventions at non-differentiable points follow TensorFlow's gradients (the frontend this was
written for): max(x, y) sends the gradient to x when x >= y; a reduce_max tie shares it equally.
"""
import itertools
import math
import weakref

from . import dtypes as dt
from . import compose, ir, ops, source
from .tables import Table


def _scalar(value, like):
    return ir.constant(value, like.dtype)


def _full(value, like):
    return compose.const(value, like.dtype, like.shape)


def zeros_like(node):
    return _full(0, node)


def _carries(dtype):
    """Whether values of `dtype` take cotangents (integers and bools do not)."""
    return dt.is_float(dtype) or dt.is_complex(dtype)


def _restore_reduced(g, x, axes):
    """Broadcast a cotangent of a reduction (axes removed) back to x's shape."""
    kept = tuple(i for i in range(x.ndim) if i not in axes)
    return ops.broadcast_in_dim(g, shape=x.shape, broadcast_dimensions=kept)


VJP = Table("lazyx.core.autodiff.VJP (gradient rules)")


rule = VJP.register  # @rule("add", ...) makes the function the VJP of each op named


# ---------------------------------------------------------------- element-wise

@rule("add")
def _add(n, g):
    return g, g


@rule("sub")
def _sub(n, g):
    return g, ops.neg(g)


@rule("mul")
def _mul(n, g):
    x, y = n.inputs
    return ops.mul(g, y), ops.mul(g, x)


@rule("div")
def _div(n, g):
    x, y = n.inputs
    return ops.div(g, y), ops.neg(ops.div(ops.mul(g, n), y))


@rule("neg")
def _neg(n, g):
    return (ops.neg(g),)


@rule("exp")
def _exp(n, g):
    return (ops.mul(g, n),)


@rule("expm1")
def _expm1(n, g):
    return (ops.mul(g, ops.add(n, _full(1, n))),)


@rule("log")
def _log(n, g):
    return (ops.div(g, n.inputs[0]),)


@rule("log1p")
def _log1p(n, g):
    x = n.inputs[0]
    return (ops.div(g, ops.add(x, _full(1, x))),)


@rule("sqrt")
def _sqrt(n, g):
    return (ops.div(ops.mul(g, _full(0.5, n)), n),)


@rule("rsqrt")
def _rsqrt(n, g):
    x = n.inputs[0]
    return (ops.mul(ops.mul(g, _full(-0.5, n)), ops.div(n, x)),)


@rule("tanh")
def _tanh(n, g):
    return (ops.mul(g, ops.sub(_full(1, n), ops.mul(n, n))),)


@rule("logistic")
def _logistic(n, g):
    return (ops.mul(g, ops.mul(n, ops.sub(_full(1, n), n))),)


@rule("sin")
def _sin(n, g):
    return (ops.mul(g, ops.cos(n.inputs[0])),)


@rule("cos")
def _cos(n, g):
    return (ops.neg(ops.mul(g, ops.sin(n.inputs[0]))),)


@rule("erf")
def _erf(n, g):
    x = n.inputs[0]
    return (ops.mul(g, ops.mul(_full(2 / math.sqrt(math.pi), x), ops.exp(ops.neg(ops.mul(x, x))))),)


@rule("pow")
def _pow(n, g):
    x, y = n.inputs
    gx = ops.mul(g, ops.mul(y, ops.pow_(x, ops.sub(y, _full(1, y)))))
    positive = (ops.ne if dt.is_complex(x.dtype) else ops.gt)(x, zeros_like(x))
    safe_x = ops.select(positive, x, _full(1, x))
    gy = ops.select(positive, ops.mul(g, ops.mul(n, ops.log(safe_x))), zeros_like(g))
    return gx, gy


@rule("max", "min")
def _max_min(n, g):
    """At a tie the gradient goes to a number's operand when one is a number and the other
    not: relu is max(x, 0), relu6 min(relu(x), 6), and TF's, torch's and JAX's relu have
    the gradient 0 at 0 (6). Otherwise to the first operand. (The operands' order is the
    canonical one (ops.py), not the user's, so "first" alone made relu'(0) 1 or 0 by which op
    produced x: wrong gradients in a conv net on zero patches, found in TF's CVAE tutorial.)"""
    x, y = n.inputs
    strict, tie = (ops.gt, ops.ge) if n.op == "max" else (ops.lt, ops.le)
    to_x = (strict if _number(y) and not _number(x) else tie)(x, y)
    zero = zeros_like(g)
    return ops.select(to_x, g, zero), ops.select(to_x, zero, g)


def _number(node):
    """Whether `node` holds a Python number: a param or constant, broadcast or not."""
    if node.op == "broadcast_in_dim":
        node = node.inputs[0]
    return node.op == "param" or node.op == "constant"


@rule("select")
def _select(n, g):
    pred = n.inputs[0]
    zero = zeros_like(g)
    return None, ops.select(pred, g, zero), ops.select(pred, zero, g)


@rule("clamp")
def _clamp(n, g):
    lo, x, hi = n.inputs
    lo_b = lo if lo.shape == x.shape else ops.broadcast_in_dim(lo, shape=x.shape,
                                                                broadcast_dimensions=())
    hi_b = hi if hi.shape == x.shape else ops.broadcast_in_dim(hi, shape=x.shape,
                                                                broadcast_dimensions=())
    inside = ops.and_(ops.ge(x, lo_b), ops.le(x, hi_b))
    return None, ops.select(inside, g, zeros_like(g)), None


@rule("sign", "floor", "ceil", "round", "stop_gradient")
def _zero_gradient(n, g):
    return (None,)


# node -> its gradient function: the cotangent of the node -> one cotangent (or None) per input
# after the first, in those inputs' dtypes. A weak table: the function lives as its node does.
CUSTOM_VJPS = weakref.WeakKeyDictionary()


@rule("custom_vjp")
def _custom_vjp(n, g):
    backward = CUSTOM_VJPS.get(n)
    if backward is None:
        raise RuntimeError("lazyx: a custom_vjp node whose gradient function is gone "
                           "(the node was copied): it cannot be differentiated")
    return (None, *backward(g))


@rule("convert")
def _convert(n, g):
    x = n.inputs[0]
    return (ops.convert(g, dtype=x.dtype) if _carries(x.dtype) else None,)


# ---------------------------------------------------------------- shapes and layout

@rule("broadcast_in_dim")
def _broadcast_in_dim(n, g):
    x = n.inputs[0]
    dims = n.attrs["broadcast_dimensions"]
    new_axes = [i for i in range(n.ndim) if i not in dims]
    stretched = [d for i, d in enumerate(dims) if x.shape[i] == 1 and n.shape[d] != 1]
    summed = ops.reduce_sum(g, axes=sorted(new_axes + stretched)) if new_axes or stretched else g
    return (ops.reshape(summed, new_sizes=x.shape),)


@rule("sharding_constraint")
def _sharding_constraint(n, g):
    # the cotangent of a laid-out value is laid out the same way (as jax transposes it)
    return (ops.sharding_constraint(g, sharding=n.attrs["sharding"]),)


@rule("reshape")
def _reshape(n, g):
    return (ops.reshape(g, new_sizes=n.inputs[0].shape),)


@rule("transpose")
def _transpose(n, g):
    perm = n.attrs["permutation"]
    inverse = tuple(perm.index(i) for i in range(len(perm)))
    return (ops.transpose(g, permutation=inverse),)


@rule("slice")
def _slice(n, g):
    x = n.inputs[0]
    config = []
    for d, s, st, size in zip(x.shape, n.attrs["start_indices"], n.attrs["strides"], n.shape):
        if size == 0:
            return (zeros_like(x),)
        end = s + (size - 1) * st + 1
        config.append((s, d - end, st - 1))
    return (ops.pad(g, _scalar(0, g), padding_config=config),)


@rule("pad")
def _pad(n, g):
    x = n.inputs[0]
    config = n.attrs["padding_config"]
    # Undo cropping (negative low/high) by padding the cotangent back with zeros first.
    grow = [(max(-lo, 0), max(-hi, 0), 0) for lo, hi, _ in config]
    if any(a or b for a, b, _ in grow):
        g = ops.pad(g, _scalar(0, g), padding_config=grow)
    starts = [max(lo, 0) for lo, _, _ in config]
    strides = [interior + 1 for _, _, interior in config]
    limits = [s + (d - 1) * st + 1 if d else s for s, st, d in zip(starts, strides, x.shape)]
    return ops.slice_(g, start_indices=starts, limit_indices=limits, strides=strides), None


@rule("concatenate")
def _concatenate(n, g):
    axis = n.attrs["dimension"]
    out, offset = [], 0
    for x in n.inputs:
        start = [0] * g.ndim
        limit = list(g.shape)
        start[axis], limit[axis] = offset, offset + x.shape[axis]
        out.append(ops.slice_(g, start_indices=start, limit_indices=limit))
        offset += x.shape[axis]
    return tuple(out)


@rule("rev")
def _rev(n, g):
    return (ops.rev(g, dimensions=n.attrs["dimensions"]),)


@rule("dynamic_slice")
def _dynamic_slice(n, g):
    x, *starts = n.inputs
    return (ops.dynamic_update_slice(zeros_like(x), g, *starts),) + (None,) * len(starts)


@rule("dynamic_update_slice")
def _dynamic_update_slice(n, g):
    x, update, *starts = n.inputs
    g_x = ops.dynamic_update_slice(g, zeros_like(update), *starts)
    g_update = ops.dynamic_slice(g, *starts, slice_sizes=update.shape)
    return (g_x, g_update) + (None,) * len(starts)


@rule("gather")
def _gather(n, g):
    operand, indices = n.inputs
    # gather clamps its indices; clamp them here too so scatter does not drop the same rows.
    k = indices.shape[-1]
    bounds = [operand.shape[i] - 1 for i in range(k)]
    hi = ops.broadcast_in_dim(ir.constant(bounds, indices.dtype), shape=indices.shape,
                              broadcast_dimensions=(indices.ndim - 1,))
    clamped = ops.clamp(_scalar(0, indices), indices, hi) if operand.size else indices
    return ops.scatter(zeros_like(operand), clamped, g, mode="add"), None


@rule("scatter")
def _scatter(n, g):
    operand, indices, updates = n.inputs
    mode = n.attrs["mode"]
    if mode == "add":
        return g, None, ops.gather(g, indices)
    if mode == "set":
        return ops.scatter(g, indices, zeros_like(updates), mode="set"), None, \
            ops.gather(g, indices)
    if mode in ("max", "min"):
        return _scatter_extremal(n, g)
    if mode == "mul":
        return _scatter_product(n, g)
    raise NotImplementedError(f"lazyx autodiff: no gradient for scatter mode {mode!r}")


def _scatter_product(n, g):
    """scatter mul (TF's segment_prod): each factor's partial is the product of the others in
    its group (the operand's element and the updates sent there). TF's rule, which stays
    finite where factors are zero: a factor's partial is result / factor, but for a zero
    factor the product of the group's non-zero factors; a group with two zeros or more has
    zero partials throughout."""
    operand, indices, updates = n.inputs
    zero_operand, zero_updates = ops.eq(operand, zeros_like(operand)), \
        ops.eq(updates, zeros_like(updates))
    zeros = ops.scatter(ops.convert(zero_operand, dtype=g.dtype), indices,
                        ops.convert(zero_updates, dtype=g.dtype), mode="add")
    g = ops.select(ops.gt(zeros, _full(1, zeros)), zeros_like(g), g)
    one_operand, one_updates = _full(1, operand), _full(1, updates)
    nonzero = ops.scatter(ops.select(zero_operand, one_operand, operand), indices,
                          ops.select(zero_updates, one_updates, updates), mode="mul")

    def partial(factor, is_zero, product, nonzero_product, one):
        safe = ops.select(is_zero, one, factor)
        return ops.select(is_zero, nonzero_product, ops.div(product, safe))
    g_operand = ops.mul(g, partial(operand, zero_operand, n, nonzero, one_operand))
    g_updates = ops.mul(ops.gather(g, indices), partial(
        updates, zero_updates, ops.gather(n, indices), ops.gather(nonzero, indices),
        one_updates))
    return g_operand, None, g_updates


def _scatter_extremal(n, g):
    """scatter max/min (TF's segment_max, torch's scatter_reduce amax): each result's
    cotangent goes to the values equal to it, shared evenly among ties -- the operand's
    element and every update sent there (TF's segment rule, whose operand is the lowest
    value and so never ties)."""
    operand, indices, updates = n.inputs
    chosen_operand = ops.eq(operand, n)
    chosen_updates = ops.eq(updates, ops.gather(n, indices))
    count = ops.scatter(ops.convert(chosen_operand, dtype=g.dtype), indices,
                        ops.convert(chosen_updates, dtype=g.dtype), mode="add")
    share = ops.div(g, count)
    return (ops.select(chosen_operand, share, zeros_like(g)), None,
            ops.select(chosen_updates, ops.gather(share, indices), zeros_like(updates)))


def _along_axis_indices(order, axis):
    """gather/scatter index vectors (shape order.shape + (rank,)) that pick, at each position,
    the element `order` names along `axis` and the same position along the other axes."""
    shape = order.shape + (1,)
    coords = [ops.reshape(ops.convert(order, dtype="int64") if d == axis else
                          ops.iota(dtype="int64", shape=order.shape, dimension=d),
                          new_sizes=shape) for d in range(order.ndim)]
    return ops.concatenate(*coords, dimension=order.ndim) if len(coords) > 1 else coords[0]


@rule("sort_with_indices", "top_k")
def _sorted(n, gs):
    # the values are a permutation (or a part) of x: send each cotangent back where it came from
    x = n.inputs[0]
    axis = n.attrs.get("axis", x.ndim - 1)
    order = ops.result(n, index=1)
    return (ops.scatter(zeros_like(x), _along_axis_indices(order, axis), gs[0], mode="add"),)


# ---------------------------------------------------------------- reductions and scans

@rule("reduce_sum")
def _reduce_sum(n, g):
    return (_restore_reduced(g, n.inputs[0], n.attrs["axes"]),)


@rule("reduce_max", "reduce_min")
def _reduce_extreme(n, g):
    x = n.inputs[0]
    axes = n.attrs["axes"]
    hit = ops.convert(ops.eq(x, _restore_reduced(n, x, axes)), dtype=x.dtype)
    count = ops.reduce_sum(hit, axes=axes)
    share = ops.div(g, count)
    return (ops.mul(hit, _restore_reduced(share, x, axes)),)


@rule("reduce_prod")
def _reduce_prod(n, g):
    """The product of every other element, from exclusive products on both sides (no division:
    exact with zeros among the elements, as TF's ProdGrad)."""
    x = n.inputs[0]
    axes = tuple(sorted(n.attrs["axes"]))
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = ops.transpose(x, permutation=kept + list(axes)) if axes != tuple(
        range(x.ndim - len(axes), x.ndim)) else x
    rest = tuple(x.shape[i] for i in kept)
    flat = ops.reshape(moved, new_sizes=rest + (math.prod(x.shape[i] for i in axes),))
    last = flat.ndim - 1
    ones = _full(1, ops.slice_(flat, start_indices=(0,) * flat.ndim,
                               limit_indices=rest + (1,)))

    def exclusive(reverse):
        inclusive = ops.cumprod(flat, axis=last, reverse=reverse)
        size = flat.shape[-1]
        cut = ops.slice_(inclusive, start_indices=(0,) * last + ((1,) if reverse else (0,)),
                         limit_indices=rest + ((size,) if reverse else (size - 1,)))
        parts = (cut, ones) if reverse else (ones, cut)
        return ops.concatenate(*parts, dimension=last)
    others = ops.mul(exclusive(False), exclusive(True))
    others = ops.reshape(others, new_sizes=moved.shape)
    if moved is not x:
        order = kept + list(axes)
        others = ops.transpose(others, permutation=[order.index(i) for i in range(x.ndim)])
    return (ops.mul(_restore_reduced(g, x, axes), others),)


@rule("cumsum")
def _cumsum(n, g):
    return (ops.cumsum(g, axis=n.attrs["axis"], reverse=not n.attrs["reverse"]),)


# ---------------------------------------------------------------- contractions

@rule("dot_general")
def _dot_general(n, g):
    lhs, rhs = n.inputs
    (lc, rc), (lb, rb) = n.attrs["contracting_dimensions"], n.attrs["batch_dimensions"]
    g = ops.convert(g, dtype=lhs.dtype) if g.dtype != lhs.dtype else g
    nb = len(lb)
    lhs_free = [i for i in range(lhs.ndim) if i not in lc + lb]
    rhs_free = [i for i in range(rhs.ndim) if i not in rc + rb]
    g_lhs_free = tuple(range(nb, nb + len(lhs_free)))
    g_rhs_free = tuple(range(nb + len(lhs_free), g.ndim))
    batch_g = tuple(range(nb))

    d_lhs = ops.dot_general(g, rhs, contracting_dimensions=(g_rhs_free, tuple(rhs_free)),
                            batch_dimensions=(batch_g, rb))
    src = list(lb) + lhs_free + [lc[rc.index(r)] for r in sorted(rc)]
    d_lhs = ops.transpose(d_lhs, permutation=[src.index(i) for i in range(lhs.ndim)])

    d_rhs = ops.dot_general(g, lhs, contracting_dimensions=(g_lhs_free, tuple(lhs_free)),
                            batch_dimensions=(batch_g, lb))
    src = list(rb) + rhs_free + [rc[lc.index(a)] for a in sorted(lc)]
    d_rhs = ops.transpose(d_rhs, permutation=[src.index(i) for i in range(rhs.ndim)])
    return d_lhs, d_rhs


def _dilated(size, dilation):
    return (size - 1) * dilation + 1 if size else 0


@rule("conv")
def _conv(n, g):
    """Both cotangents are convolutions again (the derivation jax.lax uses): d lhs convolves g
    with the flipped kernel, its groups regrouped, striding by the forward's lhs dilation; d rhs
    correlates the input (channels as batch, in batch groups) with g (batch as features)."""
    lhs, rhs = n.inputs
    a = n.attrs
    if a["batch_group_count"] != 1:
        raise NotImplementedError("lazyx autodiff: conv gradient needs batch_group_count 1")
    groups, nsp = a["feature_group_count"], lhs.ndim - 2
    strides, ld, rd, padding = (a["window_strides"], a["lhs_dilation"], a["rhs_dilation"],
                                a["padding"])
    spatial = tuple(range(2, lhs.ndim))
    swap = (1, 0) + spatial
    out, per_group = rhs.shape[:2]
    kernel = rhs.shape[2:]
    in_d = [_dilated(size, d) for size, d in zip(lhs.shape[2:], ld)]
    k_d = [_dilated(k, d) for k, d in zip(kernel, rd)]
    g_d = [_dilated(size, s) for size, s in zip(g.shape[2:], strides)]
    # d lhs: kernel (O, I, K) -> flipped (G*I, O/G, K)
    flipped = ops.reshape(ops.rev(rhs, dimensions=spatial),
                          new_sizes=(groups, out // groups, per_group, *kernel))
    flipped = ops.transpose(flipped, permutation=(0, 2, 1) + tuple(range(3, 3 + nsp)))
    flipped = ops.reshape(flipped, new_sizes=(groups * per_group, out // groups, *kernel))
    before = [kd - 1 - lo for kd, (lo, _) in zip(k_d, padding)]
    after = [i + kd - 1 - gd - b for i, kd, gd, b in zip(in_d, k_d, g_d, before)]
    d_lhs = ops.conv(g, flipped, window_strides=ld, padding=tuple(zip(before, after)),
                     lhs_dilation=strides, rhs_dilation=rd, feature_group_count=groups)
    # d rhs: (C, N, S) against (O, N, S'), the C/G channels of group j meeting its O/G outputs
    high = [gd - i + kd - 1 - lo for gd, i, kd, (lo, _) in zip(g_d, in_d, k_d, padding)]
    d_rhs = ops.conv(ops.transpose(lhs, permutation=swap), ops.transpose(g, permutation=swap),
                     window_strides=rd, padding=tuple((lo, h) for (lo, _), h in zip(padding, high)),
                     lhs_dilation=ld, rhs_dilation=strides, batch_group_count=groups)
    return d_lhs, ops.transpose(d_rhs, permutation=swap)


@rule("reduce_window")
def _reduce_window(n, g):
    (x,) = n.inputs
    a = n.attrs
    if any(d != 1 for d in a["base_dilation"]):
        raise NotImplementedError(f"lazyx autodiff: reduce_window gradient needs no base "
                                  f"dilation (got {a['base_dilation']})")
    if a["kind"] != "sum":
        return (_window_extremum_gradient(n, g),)
    if all(k == s and p == (0, 0) and wd == 1 for k, s, p, wd in
           zip(a["window_dimensions"], a["window_strides"], a["padding"], a["window_dilation"])):
        return (_tiled_windows_gradient(x, g, a["window_dimensions"]),)
    # each input element receives the cotangent of every window that covers it: a window sum
    # of the stride-dilated cotangent, padded so that window q ends where the first one
    # covering element q begins (the same padding as conv's input gradient)
    config = []
    for size, k, s, (lo, _), wd, out in zip(x.shape, a["window_dimensions"], a["window_strides"],
                                            a["padding"], a["window_dilation"], g.shape):
        span = (k - 1) * wd + 1
        low = span - 1 - lo
        dilated = (out - 1) * s + 1 if out else 0
        config.append((low, size + span - 1 - dilated - low, s - 1))
    spread = ops.pad(g, ir.constant(0, g.dtype), padding_config=config)
    return (ops.reduce_window(spread, kind="sum", window_dimensions=a["window_dimensions"],
                              window_strides=(1,) * x.ndim, padding=((0, 0),) * x.ndim,
                              window_dilation=a["window_dilation"]),)


def _tiled_windows_gradient(x, g, window):
    """A sum pooling whose windows tile x (stride = window, no padding: avg_pool2d(k),
    adaptive pooling that divides evenly): each element is in exactly one window and gets its
    cotangent, repeated by one broadcast (the general rule's interior pad and window sum of
    zeros cost 1.5x jax's program for the same pooling); elements past the last window, 0."""
    spread = compose.repeat_elements(g, window)
    tail = [(0, size - out * k, 0) for size, out, k in zip(x.shape, g.shape, window)]
    if any(hi for _, hi, _ in tail):
        spread = ops.pad(spread, ir.constant(0, g.dtype), padding_config=tail)
    return spread


def _window_extremum_gradient(n, g):
    """Max/min pooling: each window's cotangent goes to the first tap (in row-major window
    order) holding the window's result, as XLA's select_and_scatter and TF's MaxPoolGrad do.
    One strided slice per window tap picks that tap for every window at once; the cotangents
    it wins are spread back to the taps' places by an interior-padded pad."""
    (x,) = n.inputs
    a = n.attrs
    identity = ir.constant(-math.inf if a["kind"] == "max" else math.inf, x.dtype) \
        if dt.is_float(x.dtype) else None
    if identity is None or not g.size:  # integers take no gradient; no windows, none either
        return ops.broadcast_in_dim(ir.constant(0, g.dtype), shape=x.shape,
                                    broadcast_dimensions=())
    padded = ops.pad(x, identity, padding_config=[(lo, hi, 0) for lo, hi in a["padding"]])
    zero = ops.broadcast_in_dim(ir.constant(0, g.dtype), shape=g.shape, broadcast_dimensions=())
    taken = ops.broadcast_in_dim(ir.constant(False, "bool"), shape=g.shape,
                                 broadcast_dimensions=())
    total = None
    for tap in itertools.product(*[range(k) for k in a["window_dimensions"]]):
        starts = [t * d for t, d in zip(tap, a["window_dilation"])]
        limits = [st + (o - 1) * s + 1 for st, o, s in zip(starts, g.shape, a["window_strides"])]
        values = ops.slice_(padded, start_indices=starts, limit_indices=limits,
                            strides=a["window_strides"])
        wins = ops.and_(ops.eq(values, n), ops.not_(taken))
        taken = ops.or_(taken, wins)
        config = [(st, size - lim, s - 1) for st, lim, size, s in
                  zip(starts, limits, padded.shape, a["window_strides"])]
        spread = ops.pad(ops.select(wins, g, zero), ir.constant(0, g.dtype),
                         padding_config=config)
        total = spread if total is None else ops.add(total, spread)
    return ops.slice_(total, start_indices=[lo for lo, _ in a["padding"]],
                      limit_indices=[lo + size for (lo, _), size in zip(a["padding"], x.shape)])


# ---------------------------------------------------------------- the reverse pass

def _needs_gradient(order, wrt_ids):
    """ids of nodes that depend on some wrt node (only those get cotangents)."""
    needs = set(wrt_ids)
    for node in order:
        if id(node) not in needs and any(id(i) in needs for i in node.inputs):
            needs.add(id(node))
    return needs


def _accumulate(parts, node, g):
    """Add `g` to the node's cotangent contributions (summed when the node is reached)."""
    if g is None:
        return
    if g.shape != node.shape:
        raise AssertionError(f"vjp produced shape {g.shape} for {node}")  # a rule bug
    if g.dtype != node.dtype:
        g = ops.convert(g, dtype=node.dtype)
    parts.setdefault(id(node), []).append(g)


def _total(parts, node):
    """The node's cotangent: the sum of its contributions (None when it has none), stored
    back so that it is built once.

    The slices of a split (a Keras LSTM's four gates, a fused qkv projection, an unrolled
    loop's time steps) each send back their cotangent zero-padded to the full shape. Summed,
    those pads made XLA:CPU fuse one branchy loop per element that it does not vectorize (a
    Keras LSTM step's program 12.0 ms against 3.8 with a concatenate, measured). So the pads
    of disjoint ranges along one axis become one concatenate, zeros between them, at the first
    one's place; the other contributions are added to it in their order. Each element of the
    concatenate is the one contribution that covers it, which the sum added to zeros (a -0.0
    there stays -0.0, where the sum gave +0.0); where two or more other contributions came
    before that one, the element's sum is taken in another order (an ulp, as any reordering:
    a Keras LSTM's loss moved in its last float32 bit at one step of four)."""
    gs = parts.get(id(node))
    if not gs:
        return None
    if len(gs) > 1:
        total = None
        for g in _merge_bands(gs, node.shape):
            total = g if total is None else ops.add(total, g)
        gs = parts[id(node)] = [total]
    return gs[0]


def _band(g):
    """(axis, start, stop, the padded value) when g is a zero pad along one axis, else None."""
    if g.op != "pad":
        return None
    fill = g.inputs[1]
    if fill.op != "constant" or fill.value != 0:
        return None
    axis = None
    for k, (lo, hi, interior) in enumerate(g.attrs["padding_config"]):
        if interior or lo < 0 or hi < 0:
            return None
        if lo or hi:
            if axis is not None:
                return None
            axis = k
    if axis is None:
        return None
    lo, hi, _ = g.attrs["padding_config"][axis]
    return axis, lo, g.shape[axis] - hi, g.inputs[0]


def _merge_bands(gs, shape):
    """`gs` with the zero pads of disjoint ranges along one axis as one concatenate each (at
    the first one's place); pads that overlap a range already taken stay as they are."""
    taken = {}  # axis -> [(start, stop, value, position in gs)]
    for k, g in enumerate(gs):
        band = _band(g)
        if band is None:
            continue
        axis, lo, hi, inner = band
        chosen = taken.setdefault(axis, [])
        if all(hi <= a or lo >= b for a, b, _, _ in chosen):
            chosen.append((lo, hi, inner, k))
    merged, skip = {}, set()
    for axis, chosen in taken.items():
        if len(chosen) < 2:
            continue
        pieces, at = [], 0
        for lo, hi, inner, _ in sorted(chosen, key=lambda c: c[0]):
            if lo > at:
                pieces.append(_zeros(compose.with_size(shape, axis, lo - at), inner.dtype))
            pieces.append(inner)
            at = hi
        if at < shape[axis]:
            pieces.append(_zeros(compose.with_size(shape, axis, shape[axis] - at),
                                 pieces[0].dtype))
        first = min(k for *_, k in chosen)
        merged[first] = ops.concatenate(*pieces, dimension=axis)
        skip.update(k for *_, k in chosen)
    return [merged[k] if k in merged else g for k, g in enumerate(gs)
            if k in merged or k not in skip]


def _zeros(shape, dtype):
    return ops.broadcast_in_dim(ir.constant(0, dtype), shape=shape, broadcast_dimensions=())


def _collect(acc, projection, g):
    """A projection's cotangent goes to its slot of the multi node's tuple of cotangents."""
    multi = projection.inputs[0]
    slots = acc.get(id(multi))
    if slots is None:
        slots = acc[id(multi)] = [None] * len(multi.dtype)
    i = projection.attrs["index"]
    slots[i] = g if slots[i] is None else ops.add(slots[i], g)


def vjp(outputs, cotangents, wrt, order=None):
    """Cotangents of `wrt` nodes given cotangents of `outputs` (lists of IR nodes).

    Returns one node per wrt entry: the gradient, or zeros where no path leads from it to an
    output. Raises NotImplementedError naming the op when a needed rule is missing.
    Every node it makes has the user's line that asked for the gradient (tape.gradient,
    lnp.grad), found once: each node used to walk the same frames again (W1 through TF: 53
    walks a step). A gradient of a structure seen before is stamped from its recipe
    (core/autodiff_memo.py) instead of running the rules again. `order`: the outputs'
    ir.topo_order, where the caller has it already.
    """
    if order is None:
        order = ir.topo_order(list(outputs))
    with source.OP_LINE:
        return autodiff_memo.vjp(outputs, cotangents, wrt, order,
                                 lambda order: _vjp(outputs, cotangents, wrt, order))


def linear_transpose(forward, shape, dtype, cotangent):
    """The input cotangent of `forward`, a map linear in its one input (node -> node), for an
    input of `shape` and `dtype`: its VJP, taken at zeros (a linear map's is the same at any
    input). The backward of an upsampling, a padding or an embedding bag is this."""
    x = compose.const(0, dtype, shape)
    y = forward(x)
    if cotangent.dtype != y.dtype:
        cotangent = ops.convert(cotangent, dtype=y.dtype)
    (dx,) = vjp([y], [cotangent], [x])
    return dx


def _vjp(outputs, cotangents, wrt, order):
    needs = _needs_gradient(order, {id(w) for w in wrt})
    acc = {}  # id(node) -> its cotangent contributions (_total sums them)
    multi = {}  # id(multi node) -> one cotangent per result (_collect)
    for out, g in zip(outputs, cotangents):
        if id(out) in needs and _carries(out.dtype):
            _accumulate(acc, out, g)
    wrt_ids = {id(w) for w in wrt}
    is_held = compose.is_held
    for node in reversed(order):
        if node.is_leaf or node.op == "constant" or is_held(node):
            continue
        g = multi.get(id(node)) if node.is_multi else _total(acc, node)
        if g is None:
            continue
        if id(node) in wrt_ids and not any(id(i) in needs for i in node.inputs):
            continue
        if node.op == "result":  # (a multi node comes before its projections in `order`)
            _collect(multi, node, g)
            continue
        if node.is_multi:
            g = tuple(gi if gi is not None else _zeros(s, d) if _carries(d) else None
                      for gi, s, d in zip(g, node.shape, node.dtype))
        fn = VJP.get(node.op)
        if fn is None:
            raise NotImplementedError(f"lazyx autodiff: no gradient rule for op {node.op!r} "
                                      f"(add one to core/autodiff.py VJP)")
        for inp, gi in zip(node.inputs, fn(node, g)):
            if gi is not None and id(inp) in needs and _carries(inp.dtype):
                _accumulate(acc, inp, gi)
    return [g if g is not None else zeros_like(w) for w in wrt
            for g in (_total(acc, w),)]


from . import autodiff_linalg  # noqa: E402,F401  (registers the factorizations' rules)
from . import autodiff_math  # noqa: E402,F401  (the math functions', sort's and complex rules)
from . import autodiff_memo  # noqa: E402
