"""The primitive op set: each op is a builder whose shape-and-dtype rule runs at construction.

Semantics follow StableHLO / jax.lax: no implicit broadcasting and no implicit type
promotion -- frontends apply their framework's rules and emit explicit `convert` and
`broadcast_in_dim`. A rule rejects a bad call right away with ValueError (shapes, axes) or
TypeError (dtypes), naming the op and the shapes, so the error points at the line that made it.

Adding an op: write its rule here with @primitive, then one entry in each backend's table.
"""
import math
import weakref

from . import config, dtypes as dt, ir
from .ir import TRACE, Node, new_node
from .tables import Table, caller

OPS = Table("lazyx.core.ops.OPS (the op set)")  # op name -> builder; backends cover every key


# Canonical forms, so that the same math built by different frontends (or written in a
# different order) is the same graph: operands of commutative ops are ordered by their op
# structure (Node.order; ties keep the caller's order), and
# no-op layout ops fold away at construction.
COMMUTATIVE = frozenset(("add", "mul", "max", "min", "and", "or", "xor", "eq", "ne"))


def _fold_identity(inputs, attrs, shape, dtype):
    x = inputs[0]
    return x if x.shape == shape and x.dtype == dtype else None


def _fold_transpose(inputs, attrs, shape, dtype):
    x, perm = inputs[0], attrs["permutation"]
    if perm == tuple(range(len(perm))):
        return x
    if x.op == "transpose":  # a transpose of a transpose is one (or none): x.T.T is x, and
        inner = x.attrs["permutation"]  # torch's F.linear(x, w.T) is NumPy's x @ w
        return OPS["transpose"](x.inputs[0], permutation=tuple(inner[p] for p in perm))
    moved = [p for p in perm if x.shape[p] != 1]
    if moved == sorted(moved):  # only unit axes move (NHWC<->NCHW with C=1): a reshape
        return OPS["reshape"](x, new_sizes=shape)
    return None


def _fold_reshape(inputs, attrs, shape, dtype):
    x = inputs[0]
    if x.shape == shape:
        return x
    if x.op == "reshape":  # reshape of a reshape: one reshape of the original
        return OPS["reshape"](x.inputs[0], new_sizes=shape)
    if x.op == "dot_general" and (x.inputs[0].op == "reshape" or x.inputs[1].op == "reshape"):
        return _fold_unit_free_axis(x, shape)
    if x.op == "iota" and x.shape[x.attrs["dimension"]] != 1 \
            and [d for d in x.shape if d != 1] == [d for d in shape if d != 1]:
        # an iota with unit axes added or removed is an iota of the new shape
        rank = sum(1 for d in x.shape[:x.attrs["dimension"]] if d != 1)
        dim = [i for i, d in enumerate(shape) if d != 1][rank]
        return OPS["iota"](dtype=x.dtype, shape=shape, dimension=dim)
    return None


def _scalar_param(x):
    """A param holding one scalar: rank 0, or a splat (core/ir.py)."""
    return x.op == "param" and (not x.shape or "splat" in x.attrs)


def _fold_broadcast(inputs, attrs, shape, dtype):
    x = inputs[0]
    if x.shape == shape:
        return x
    if x.op == "param":
        if _scalar_param(x):  # a Python number broadcast to its partner: one splat leaf
            return ir.splat(x, shape)
    elif x.op in _PUSHED:
        # a unary op of a number (convert(p), neg(p)) is applied after the broadcast, to the
        # splat: the form unary(broadcast(p)) already takes, so both orders are one graph
        inner = x.inputs[0]
        while inner.op in _PUSHED:
            inner = inner.inputs[0]
        if _scalar_param(inner):
            return OPS[x.op](OPS["broadcast_in_dim"](x.inputs[0], **attrs), **x.attrs)
    if x.op == "reshape":
        # broadcasting a reshape that only inserted unit axes (keepdims-style) is the same as
        # broadcasting the reshape's input directly; emit that single canonical form
        src = x.inputs[0]
        if 1 not in src.shape and [d for d in x.shape if d != 1] == list(src.shape):
            kept = [i for i, d in enumerate(x.shape) if d != 1]
            dims = tuple(attrs["broadcast_dimensions"][i] for i in kept)
            return OPS["broadcast_in_dim"](src, shape=shape, broadcast_dimensions=dims)
    return None


def _fold_slice(inputs, attrs, shape, dtype):
    x = inputs[0]
    start, strides = attrs["start_indices"], attrs["strides"]
    if shape == x.shape and not any(start):
        return x
    if x.op == "slice":  # a slice of a slice (torch indexes one axis at a time): one slice
        inner_start, inner_strides = x.attrs["start_indices"], x.attrs["strides"]
        new_start = tuple(a + b * c for a, b, c in zip(inner_start, start, inner_strides))
        new_strides = tuple(a * b for a, b in zip(inner_strides, strides))
        limit = tuple(s + (n - 1) * st + 1 if n else s
                      for s, st, n in zip(new_start, new_strides, shape))
        return OPS["slice"](x.inputs[0], start_indices=new_start, limit_indices=limit,
                            strides=new_strides)
    return None


def _fold_unit_free_axis(dot, shape):
    """A product whose operand had a unit axis added for it, dropped again from the result --
    NumPy's and TF's matrix @ vector (v as a (k, 1) matrix) -- is the product with the operand
    itself: torch's mv, one graph for the three."""
    lhs, rhs = dot.inputs
    for side, operand in enumerate(dot.inputs):
        # (most products of a reshape are of a flattened batch: one test turns those away)
        if operand.op != "reshape" or len(operand.inputs[0].shape) != len(operand.shape) - 1:
            continue
        inner = operand.inputs[0]
        (lc, rc), (lb, rb) = dot.attrs["contracting_dimensions"], dot.attrs["batch_dimensions"]
        n_lhs_free = len(lhs.shape) - len(lc) - len(lb)
        used = (lc + lb) if side == 0 else (rc + rb)
        free = [i for i in range(operand.ndim) if i not in used]
        for position, axis in enumerate(free):
            if operand.shape[axis] != 1 or \
                    operand.shape[:axis] + operand.shape[axis + 1:] != inner.shape:
                continue
            out_axis = len(lb) + position + (n_lhs_free if side else 0)
            if dot.shape[:out_axis] + dot.shape[out_axis + 1:] != shape:
                continue
            moved = lambda dims: tuple(d - (d > axis) for d in dims)  # noqa: E731
            contracting = (moved(lc), rc) if side == 0 else (lc, moved(rc))
            batch = (moved(lb), rb) if side == 0 else (lb, moved(rb))
            operands = (inner, rhs) if side == 0 else (lhs, inner)
            return OPS["dot_general"](*operands, contracting_dimensions=contracting,
                                      batch_dimensions=batch,
                                      preferred_element_type=dot.attrs["preferred_element_type"])
    return _fold_unit_batch_axis(dot, shape)


def _fold_unit_batch_axis(dot, shape):
    """A product with a unit batch axis added to both operands for it, dropped again from the
    result -- torch's einsum('ij,jk->ik') is a bmm of (1, i, j) and (1, j, k) -- is the plain
    product: NumPy's and TF's einsum."""
    lhs, rhs = dot.inputs
    if lhs.op != "reshape" or rhs.op != "reshape":
        return None
    (lc, rc), (lb, rb) = dot.attrs["contracting_dimensions"], dot.attrs["batch_dimensions"]
    a, b = lhs.inputs[0], rhs.inputs[0]
    for j, (la, ra) in enumerate(zip(lb, rb)):
        if lhs.shape[la] != 1 or lhs.shape[:la] + lhs.shape[la + 1:] != a.shape or \
                rhs.shape[:ra] + rhs.shape[ra + 1:] != b.shape or \
                dot.shape[:j] + dot.shape[j + 1:] != shape:
            continue
        left = lambda dims: tuple(d - (d > la) for d in dims)  # noqa: E731
        right = lambda dims: tuple(d - (d > ra) for d in dims)  # noqa: E731
        return OPS["dot_general"](
            a, b, contracting_dimensions=(left(lc), right(rc)),
            batch_dimensions=(left(lb[:j] + lb[j + 1:]), right(rb[:j] + rb[j + 1:])),
            preferred_element_type=dot.attrs["preferred_element_type"])
    return None


def _fold_dynamic_slice(inputs, attrs, shape, dtype):
    """Windows of windows are one window, whichever order a frontend took the axes in (torch
    indexes one axis at a time, NumPy and TF all at once). Each rewrite holds for every value
    of the run-time starts: an axis a window keeps whole clamps its start to 0."""
    x, starts = inputs[0], inputs[1:]
    if shape == x.shape:  # a window of everything
        return x
    if len({s.dtype for s in starts}) != 1:
        return None
    if x.op == "dynamic_slice":
        return _window_of_window(x, starts, shape)
    if x.op == "slice":
        return _window_of_strided(x, starts, shape)
    if x.op == "reshape" and x.inputs[0].op == "dynamic_slice":
        return _window_of_squeezed(x, starts, shape)
    return None


def _window_of_window(x, starts, shape):
    # per axis one of the two windows keeps it whole; the other's start and size are the axis'
    inner, inner_starts = x.inputs[0], x.inputs[1:]
    if inner_starts[0].dtype != starts[0].dtype or any(
            a != d and n != a for n, a, d in zip(shape, x.shape, inner.shape)):
        return None
    merged = [q if a == d else p for p, q, a, d in zip(inner_starts, starts, x.shape, inner.shape)]
    return OPS["dynamic_slice"](inner, *merged, slice_sizes=shape)


def _window_of_strided(x, starts, shape):
    # a window over axes a static slice keeps whole is taken first: slice(window), the form
    # a frontend that indexes all axes at once records (x[::2, 1:3] in torch is two ops)
    src = x.inputs[0]
    start, limit, strides = x.attrs["start_indices"], x.attrs["limit_indices"], x.attrs["strides"]
    whole = [s == 0 and l == d and t == 1 for s, l, t, d in zip(start, limit, strides, src.shape)]
    if any(not w and n != m for w, n, m in zip(whole, shape, x.shape)):
        return None
    window = OPS["dynamic_slice"](
        src, *starts, slice_sizes=tuple(n if w else d for w, n, d in zip(whole, shape, src.shape)))
    return OPS["slice"](window, start_indices=tuple(0 if w else s for w, s in zip(whole, start)),
                        limit_indices=tuple(n if w else l for w, n, l in zip(whole, shape, limit)),
                        strides=tuple(1 if w else t for w, t in zip(whole, strides)))


def _window_of_squeezed(x, starts, shape):
    # a window of a window whose unit axes were dropped (torch's x[1][2]: select is a window
    # and a reshape): one window of the original, then the reshape
    inner = x.inputs[0]
    axes, k = [], 0  # inner's axis -> x's axis, None for a dropped unit axis
    for d in inner.shape:
        if k < x.ndim and d == x.shape[k]:
            axes.append(k)
            k += 1
        elif d == 1:
            axes.append(None)
        else:
            return None
    if k != x.ndim:
        return None
    sizes = tuple(1 if a is None else shape[a] for a in axes)
    source = inner.inputs[0]
    if inner.inputs[1].dtype != starts[0].dtype or any(
            a != d and n != a for n, a, d in zip(sizes, inner.shape, source.shape)):
        return None  # the two windows would not merge: leave the graph as it was built
    zero = ir.param(0, starts[0].dtype)  # (a unit axis: any start clamps to 0)
    window = OPS["dynamic_slice"](inner, *[zero if a is None else starts[a] for a in axes],
                                  slice_sizes=sizes)
    return OPS["reshape"](window, new_sizes=shape)


def _fold_constraint(inputs, attrs, shape, dtype):
    x = inputs[0]
    if x.op == "sharding_constraint":  # the outer layout wins: one constraint
        return OPS["sharding_constraint"](x.inputs[0], **attrs)
    if x.op == "data" and x.attrs.get("sharding") == attrs["sharding"]:
        return x  # the data is already laid out so
    return None


_PUSHED = set()  # the element-wise unary ops _push_unary folds
_PUSHED_THROUGH = ("broadcast_in_dim", "reshape")  # the operands' ops it looks through


def _push_unary(name, first=None):
    """Element-wise unary ops commute with broadcast and reshape: apply them before (on fewer
    elements, and one canonical form however a frontend ordered the two)."""
    _PUSHED.add(name)
    def fold(inputs, attrs, shape, dtype):
        if first is not None:
            simpler = first(inputs, attrs, shape, dtype)
            if simpler is not None:
                return simpler
        x = inputs[0]
        if x.op in _PUSHED_THROUGH:
            return OPS[x.op](OPS[name](x.inputs[0], **attrs), **x.attrs)
        return None
    if first is None:  # (the C builder calls `fold` only for an operand made by one of these)
        fold.looks_through = _PUSHED_THROUGH
    return fold


SIMPLIFY = {"convert": _push_unary("convert", first=_fold_identity),
            "transpose": _fold_transpose, "slice": _fold_slice,
            "dynamic_slice": _fold_dynamic_slice,
            "reshape": _fold_reshape, "broadcast_in_dim": _fold_broadcast,
            "rev": lambda inputs, attrs, shape, dtype: None if attrs["dimensions"] else inputs[0],
            "sharding_constraint": _fold_constraint}


class TooLarge(MemoryError, RuntimeError):
    """A value bigger than LAZYX_MAX_BYTES. Both a MemoryError (what NumPy raises for such a
    request) and a RuntimeError (what torch raises); the TF frontend re-raises it as
    ResourceExhaustedError."""


MAX_BYTES = config.max_bytes()  # read once: this check runs for every node built
_SMALL = MAX_BYTES // 16  # fewer elements than this fit whatever the dtype: no more to check


def check_size(name, shape, dtype):
    """Refuse a value over MAX_BYTES at the call, before it is recorded: a lazy graph would
    otherwise fail only at the sync, with the backend's own out-of-memory error."""
    nbytes = math.prod(shape) * dt.ITEMSIZE[dtype]
    if MAX_BYTES and nbytes > MAX_BYTES:
        raise TooLarge(f"{name}: a {dtype}{list(shape)} value needs {nbytes:,} bytes, more than "
                       f"the limit of {MAX_BYTES:,} (LAZYX_MAX_BYTES; default: physical memory)")


class _Type:
    """A node's type alone: what a rule gets on a memo miss. A rule that reads anything else
    of its inputs (op, value, ...) raises AttributeError here, and its op is then never
    memoized, so a memo can only ever replay a function of types and attributes."""
    __slots__ = ("shape", "dtype")

    def __init__(self, node):
        self.shape, self.dtype = node.shape, node.dtype

    ndim, size, is_multi = Node.ndim, Node.size, Node.is_multi


# core/_native.c's Builder runs `build`'s memo-hit path in C (LAZYX_NATIVE=0: Python only)
_NATIVE = ir._NATIVE
_MEMO_LIMIT = 1 << 12  # signatures memoized per op (a memo that fills up is emptied)
_GENERATION = ir.LOCALS_GENERATION


def _check_input(name, x):
    if not isinstance(x, Node):
        raise TypeError(f"{name}: inputs must be lazyx IR nodes, got {type(x).__name__}")
    if type(x.dtype) is tuple and name != "result":
        raise TypeError(f"{name}: {x.op} has several results; take one with "
                        f"ops.result(node, index=i) first")


def primitive(rule, where=None):
    """Register `rule` (inputs, **attrs) -> (shape, dtype[, normalized attrs]) as an op builder.

    The rule runs once per signature (input shapes and dtypes, attributes): its answer, the
    size check and the node's interned structure id are memoized per op, so a repeated step
    pays a dict lookup per node for them.
    """
    where = where or caller()
    name = rule.__name__.rstrip("_")

    commutative = name in COMMUTATIVE
    simplify = SIMPLIFY.get(name)
    memo = {}  # (input types, attrs) -> (shape, dtype, attrs, local entry)
    state = [True, _GENERATION[0]]  # [the rule reads types only, interning generation]

    def build(*inputs, **attrs):
        types = []
        for x in inputs:
            if type(x) is not Node or type(x.dtype) is tuple:
                _check_input(name, x)
            types.append((x.shape, x.dtype))
        if state[1] != _GENERATION[0]:  # the interning table was emptied: so are the memos
            memo.clear()
            state[1] = _GENERATION[0]
        try:
            key = (tuple(types), tuple(attrs.items()))
            known = memo.get(key)
        except TypeError:  # an unhashable attribute (a list): no memo for this call
            key = known = None
        if known is None:
            known = _infer(inputs, attrs)
            if key is not None and state[0]:
                if len(memo) >= _MEMO_LIMIT:
                    memo.clear()
                memo[key] = known
        shape, dtype, attrs, entry = known
        if commutative and inputs[0].order > inputs[1].order:
            inputs = (inputs[1], inputs[0])
        if simplify is not None:
            simpler = simplify(inputs, attrs, shape, dtype)
            if simpler is not None:
                return simpler
        return new_node(name, inputs, attrs, shape, dtype, None, 0, False, entry)

    def _infer(inputs, attrs):
        if state[0]:
            try:
                out = rule(*[_Type(x) for x in inputs], **attrs)
            except AttributeError:
                out = rule(*inputs, **attrs)  # raises if the inputs are really wrong
                state[0] = False  # the rule read more than types: never memoize it
        else:
            out = rule(*inputs, **attrs)
        if len(out) == 3:
            shape, dtype, attrs = out
        else:
            shape, dtype = out
        shape = tuple(shape)
        if MAX_BYTES and len(shape) > 0 and math.prod(shape) > _SMALL:
            check_size(name, shape, dtype)
        return shape, dtype, attrs, ir.local_entry(name, attrs, shape, dtype)

    build.__name__ = name
    build.__doc__ = rule.__doc__
    if _NATIVE is not None:
        # the same builder in C for a memo hit (most calls); it calls `build` for the rest
        build = _NATIVE.Builder(name, build, memo, state, _GENERATION, Node, new_node,
                                simplify, commutative)
    OPS.add(name, build, where)
    return build


# A multi-result node's builder, per (op, attrs, inputs): the same factorization asked for
# twice in one trace (torch's solve asks for LU's factors and its pivots in separate places) is
# one node, so it runs once. Weak: an entry lives as long as some projection of its node does,
# and the node holds its inputs, so their ids cannot be reused while the entry exists.
_MULTI = weakref.WeakValueDictionary()


def multi_primitive(rule):
    """Register `rule` (*inputs, **attrs) -> ((shape, dtype) per result, normalized attrs) as
    an op with several results. The builder returns one projection (op `result`) per result;
    the multi node itself is only ever an input of those projections (see core/ir.py)."""
    name = rule.__name__.rstrip("_")

    def build(*inputs, **attrs):
        for x in inputs:
            _check_input(name, x)
        types, attrs = rule(*inputs, **attrs)
        shapes = tuple(tuple(shape) for shape, _ in types)
        dtypes = tuple(dtype for _, dtype in types)
        for shape, dtype in zip(shapes, dtypes):
            if MAX_BYTES and len(shape) > 0 and math.prod(shape) > _SMALL:
                check_size(name, shape, dtype)
        key = (name, tuple(attrs.items()), tuple(id(x) for x in inputs))
        node = _MULTI.get(key)
        # reused only within the trace that made it: an older trace's node has no exact eid here
        if node is None or node.epoch not in (0, TRACE.serial, -1):
            node = _MULTI[key] = Node(name, inputs, attrs, shapes, dtypes)
        return tuple(result(node, index=i) for i in range(len(dtypes)))

    build.__name__ = name
    build.__doc__ = rule.__doc__
    OPS[name] = build
    return build


# ---------------------------------------------------------------- checking helpers

def _shapes(nodes):
    return ", ".join(str(n.shape) for n in nodes)


def _fail_shape(op, msg, *nodes):
    raise ValueError(f"{op}: {msg} (got shapes {_shapes(nodes)})")


def _fail_dtype(op, msg, *nodes):
    got = ", ".join(n.dtype for n in nodes)
    raise TypeError(f"{op}: {msg} (got dtypes {got}, shapes {_shapes(nodes)})")


def _axis(op, axis, ndim, *nodes):
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{op}: axis must be an int, got {axis!r}")
    if not 0 <= axis < max(ndim, 1) or (ndim == 0 and axis != 0):
        _fail_shape(op, f"axis {axis} is out of range for rank {ndim} (axes are non-negative)",
                    *nodes)
    return axis


def _axes(op, axes, ndim, *nodes):
    axes = tuple(axes)
    for a in axes:
        _axis(op, a, ndim, *nodes)
        if ndim == 0:
            _fail_shape(op, "a rank-0 operand has no axes", *nodes)
    if len(set(axes)) != len(axes):
        _fail_shape(op, f"repeated axis in {axes}", *nodes)
    return tuple(sorted(axes))


def _ints(op, what, values, n=None):
    values = tuple(values)
    if any(not isinstance(v, int) or isinstance(v, bool) for v in values):
        raise TypeError(f"{op}: {what} must be ints, got {values!r}")
    if n is not None and len(values) != n:
        raise ValueError(f"{op}: {what} needs {n} entries, got {len(values)}: {values}")
    return values


def _same(op, *nodes, dtype=True):
    first = nodes[0]
    for n in nodes[1:]:
        if n.shape != first.shape:
            _fail_shape(op, "operands must have equal shapes (the IR never broadcasts "
                            "implicitly; use broadcast_in_dim)", *nodes)
        if dtype and n.dtype != first.dtype:
            _fail_dtype(op, "operands must have equal dtypes (the IR never promotes "
                            "implicitly; use convert)", *nodes)


def _kinds(op, allowed, *nodes):
    """allowed: a string of kinds: f float, i signed/unsigned int, b bool, c complex."""
    for n in nodes:
        kind = ("f" if dt.is_float(n.dtype) else "i" if dt.is_int(n.dtype)
                else "c" if dt.is_complex(n.dtype) else "b")
        if kind not in allowed:
            names = {"f": "floating", "i": "integer", "b": "bool", "c": "complex"}
            want = " or ".join(names[k] for k in allowed)
            _fail_dtype(op, f"needs {want} operands", *nodes)


# ---------------------------------------------------------------- element-wise

UNARY_KINDS = {}  # unary op -> the operand kinds it takes (read below and by frontends)


def _unary(name, kinds, result=None):
    UNARY_KINDS[name] = kinds

    def rule(x):
        _kinds(name, kinds, x)
        return x.shape, (result(x.dtype) if callable(result) else result) or x.dtype
    rule.__name__ = name
    rule.__doc__ = f"Element-wise {name.rstrip('_')}."
    SIMPLIFY.setdefault(name.rstrip("_"), _push_unary(name.rstrip("_")))
    return primitive(rule, where=caller())


# One line per op, so `grep "^exp ="` finds it. Kinds: f float, c complex, i integer, b bool;
# the complex ones take principal branches, as NumPy and XLA define them.
exp = _unary("exp", "fc")
exp2 = _unary("exp2", "f")
expm1 = _unary("expm1", "fc")
log = _unary("log", "fc")
log1p = _unary("log1p", "fc")
sqrt = _unary("sqrt", "fc")
rsqrt = _unary("rsqrt", "fc")
cbrt = _unary("cbrt", "f")
sin = _unary("sin", "fc")
cos = _unary("cos", "fc")
tan = _unary("tan", "fc")
asin = _unary("asin", "fc")
acos = _unary("acos", "fc")
atan = _unary("atan", "fc")
sinh = _unary("sinh", "fc")
cosh = _unary("cosh", "fc")
tanh = _unary("tanh", "fc")
asinh = _unary("asinh", "fc")
acosh = _unary("acosh", "fc")
atanh = _unary("atanh", "fc")
erf = _unary("erf", "f")
erf_inv = _unary("erf_inv", "f")
lgamma = _unary("lgamma", "f")
digamma = _unary("digamma", "f")
logistic = _unary("logistic", "f")
floor = _unary("floor", "f")
ceil = _unary("ceil", "f")
round = _unary("round", "f")  # noqa: A001 - half to even, as NumPy, torch and TF round
neg = _unary("neg", "fic")
abs_ = _unary("abs", "fic", result=lambda d: dt.real_part(d) if dt.is_complex(d) else d)
sign = _unary("sign", "fic")  # +0 at either zero, NaN at NaN; complex: x / |x| (0 at 0)
real = _unary("real", "c", result=dt.real_part)
imag = _unary("imag", "c", result=dt.real_part)
conj = _unary("conj", "c")
not_ = _unary("not_", "ib")
is_finite = _unary("is_finite", "f", result=dt.BOOL)


def _binary(name, kinds, result=None):
    def rule(x, y):
        _same(name, x, y)
        _kinds(name, kinds, x, y)
        return x.shape, result or x.dtype
    rule.__name__ = name
    rule.__doc__ = f"Element-wise {name.rstrip('_')} of equal shapes and dtypes."
    return primitive(rule, where=caller())


add = _binary("add", "fic")
sub = _binary("sub", "fic")
mul = _binary("mul", "fic")
div = _binary("div", "fic")   # integers: truncates toward zero; x / 0 is unspecified for ints
rem = _binary("rem", "fi")   # C fmod: the result takes the dividend's sign
pow_ = _binary("pow", "fic")
max_ = _binary("max", "fib")  # NaN-propagating, like numpy.maximum
min_ = _binary("min", "fib")
atan2 = _binary("atan2", "f")
nextafter = _binary("nextafter", "f")
# the regularized incomplete gamma functions P(a, x), Q(a, x) = 1 - P(a, x) and dP/da, for
# a > 0, x >= 0 (NaN elsewhere: each frontend adds its framework's edge values, compose.py)
igamma = _binary("igamma", "f")
igammac = _binary("igammac", "f")
igamma_grad_a = _binary("igamma_grad_a", "f")
# the Hurwitz zeta function zeta(x, q) = sum_k (k + q)**-x, for x > 1, q > 0 (other values:
# each frontend sets its framework's, as for igamma)
zeta = _binary("zeta", "f")
and_ = _binary("and_", "ib")
or_ = _binary("or_", "ib")
xor = _binary("xor", "ib")
shift_left = _binary("shift_left", "i")
shift_right_arithmetic = _binary("shift_right_arithmetic", "i")
shift_right_logical = _binary("shift_right_logical", "i")
eq = _binary("eq", "fibc", result=dt.BOOL)
ne = _binary("ne", "fibc", result=dt.BOOL)
lt = _binary("lt", "fib", result=dt.BOOL)
le = _binary("le", "fib", result=dt.BOOL)
gt = _binary("gt", "fib", result=dt.BOOL)
ge = _binary("ge", "fib", result=dt.BOOL)
# the element-wise groups the backends' tests walk (each name is an op above)
FLOAT_UNARY = ("exp", "exp2", "expm1", "log", "log1p", "sqrt", "rsqrt", "cbrt", "sin", "cos",
               "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
               "erf", "erf_inv", "lgamma", "digamma", "logistic", "floor", "ceil", "round")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
COMPLEX_UNARY = tuple(n for n in FLOAT_UNARY if "c" in UNARY_KINDS[n])  # with a complex form


@primitive
def select(pred, on_true, on_false):
    """pred ? on_true : on_false, element-wise; all three of one shape."""
    _same("select", pred, on_true, on_false, dtype=False)
    if pred.dtype != dt.BOOL:
        _fail_dtype("select", "predicate must be bool", pred)
    _same("select", on_true, on_false)
    return on_true.shape, on_true.dtype


@primitive
def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b), element-wise, for a, b > 0 finite
    and 0 <= x <= 1 (other values: each frontend sets its framework's)."""
    _same("betainc", a, b, x)
    _kinds("betainc", "f", a, b, x)
    return x.shape, x.dtype


@primitive
def clamp(lo, x, hi):
    """min(max(x, lo), hi); lo and hi are scalars or x's shape."""
    for bound in (lo, hi):
        if bound.shape not in ((), x.shape):
            _fail_shape("clamp", "bounds must be scalars or match the operand", lo, x, hi)
        if bound.dtype != x.dtype:
            _fail_dtype("clamp", "bounds must have the operand's dtype", lo, x, hi)
    return x.shape, x.dtype


@primitive
def convert(x, *, dtype):
    """Value conversion (float->int truncates toward zero; ->bool is x != 0; complex->real
    keeps the real part, as XLA and NumPy do)."""
    return x.shape, dt.check(dtype), {"dtype": dtype}


@primitive
def complex_(re, im):
    """The complex number re + i*im from two float32 (or float64) operands of one shape."""
    _same("complex", re, im)
    _kinds("complex", "f", re)
    return re.shape, dt.complex_of(re.dtype)


@primitive
def bitcast_convert(x, *, dtype):
    """Reinterpret the bits as another dtype of the same width."""
    if dt.ITEMSIZE[dt.check(dtype)] != dt.ITEMSIZE[x.dtype]:
        _fail_dtype("bitcast_convert", f"{dtype} differs in width from the operand", x)
    return x.shape, dtype, {"dtype": dtype}


# ---------------------------------------------------------------- shapes and layout

@primitive
def broadcast_in_dim(x, *, shape, broadcast_dimensions):
    """Operand axis i becomes output axis broadcast_dimensions[i]; size-1 axes stretch."""
    op = "broadcast_in_dim"
    shape = _ints(op, "shape", shape)
    dims = _ints(op, "broadcast_dimensions", broadcast_dimensions, x.ndim)
    if any(d < 0 for d in shape):
        raise ValueError(f"{op}: negative size in target shape {shape}")
    if any(b <= a for a, b in zip(dims, dims[1:])) or any(not 0 <= d < len(shape) for d in dims):
        _fail_shape(op, f"broadcast_dimensions {dims} must increase within rank {len(shape)}", x)
    for i, d in enumerate(dims):
        if x.shape[i] not in (1, shape[d]):
            _fail_shape(op, f"cannot broadcast axis {i} (size {x.shape[i]}) to size "
                            f"{shape[d]} of target shape {shape}", x)
    return shape, x.dtype, {"shape": shape, "broadcast_dimensions": dims}


@primitive
def reshape(x, *, new_sizes):
    new_sizes = _ints("reshape", "new_sizes", new_sizes)
    if any(d < 0 for d in new_sizes) or math.prod(new_sizes) != x.size:
        _fail_shape("reshape", f"cannot reshape {x.size} elements into {new_sizes}", x)
    return new_sizes, x.dtype, {"new_sizes": new_sizes}


@primitive
def transpose(x, *, permutation):
    perm = _ints("transpose", "permutation", permutation, x.ndim)
    if sorted(perm) != list(range(x.ndim)):
        _fail_shape("transpose", f"{perm} is not a permutation of {x.ndim} axes", x)
    return tuple(x.shape[p] for p in perm), x.dtype, {"permutation": perm}


@primitive
def slice_(x, *, start_indices, limit_indices, strides=None):
    """Static strided slice x[start:limit:stride] per axis (strides positive)."""
    op = "slice"
    start = _ints(op, "start_indices", start_indices, x.ndim)
    limit = _ints(op, "limit_indices", limit_indices, x.ndim)
    strides = _ints(op, "strides", strides or (1,) * x.ndim, x.ndim)
    for s, l, st, d in zip(start, limit, strides, x.shape):
        if not (0 <= s <= l <= d) or st < 1:
            _fail_shape(op, f"bad bounds start={start} limit={limit} strides={strides}", x)
    shape = tuple(-(-(l - s) // st) for s, l, st in zip(start, limit, strides))
    # canonical bounds: x[0:6:2] and x[0:5:2] are one slice, and so are strides over <= 1 item
    strides = tuple(st if n > 1 else 1 for st, n in zip(strides, shape))
    limit = tuple(s + (n - 1) * st + 1 if n else s for s, st, n in zip(start, strides, shape))
    return shape, x.dtype, {"start_indices": start, "limit_indices": limit, "strides": strides}


def _dynamic_starts(op, x, starts):
    if len(starts) != x.ndim:
        _fail_shape(op, f"needs {x.ndim} start indices, got {len(starts)}", x, *starts)
    for s in starts:
        if s.shape != () or not dt.is_int(s.dtype):
            _fail_dtype(op, "start indices must be integer scalars", s)


@primitive
def dynamic_slice(x, *starts, slice_sizes):
    """x[s0:s0+n0, ...] with run-time starts, clamped so the window stays in bounds."""
    _dynamic_starts("dynamic_slice", x, starts)
    sizes = _ints("dynamic_slice", "slice_sizes", slice_sizes, x.ndim)
    if any(not 0 <= n <= d for n, d in zip(sizes, x.shape)):
        _fail_shape("dynamic_slice", f"slice_sizes {sizes} exceed the operand", x)
    return sizes, x.dtype, {"slice_sizes": sizes}


@primitive
def dynamic_update_slice(x, update, *starts):
    """x with `update` written at run-time starts (clamped so it fits)."""
    _dynamic_starts("dynamic_update_slice", x, starts)
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape)):
        _fail_shape("dynamic_update_slice", "update must fit inside the operand", x, update)
    if update.dtype != x.dtype:
        _fail_dtype("dynamic_update_slice", "update must have the operand's dtype", x, update)
    return x.shape, x.dtype


@primitive
def pad(x, padding_value, *, padding_config):
    """Per axis (low, high, interior) padding; low/high may be negative (cropping)."""
    config = tuple(tuple(_ints("pad", "padding_config entry", c, 3)) for c in padding_config)
    if len(config) != x.ndim:
        _fail_shape("pad", f"padding_config has {len(config)} entries for rank {x.ndim}", x)
    if padding_value.shape != () or padding_value.dtype != x.dtype:
        _fail_dtype("pad", "padding value must be a scalar of the operand's dtype", x,
                    padding_value)
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, config):
        if interior < 0:
            _fail_shape("pad", f"negative interior padding in {config}", x)
        n = lo + hi + d + max(d - 1, 0) * interior
        if n < 0:
            _fail_shape("pad", f"padding {config} leaves a negative size", x)
        shape.append(n)
    return shape, x.dtype, {"padding_config": config}


@primitive
def concatenate(*xs, dimension):
    if not xs:
        raise ValueError("concatenate: needs at least one operand")
    first = xs[0]
    _axis("concatenate", dimension, first.ndim, *xs)
    for x in xs[1:]:
        if x.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, first.shape))
                                       if i != dimension):
            _fail_shape("concatenate", f"shapes must match except along axis {dimension}", *xs)
        if x.dtype != first.dtype:
            _fail_dtype("concatenate", "operands must share one dtype", *xs)
    shape = list(first.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return shape, first.dtype, {"dimension": dimension}


@primitive
def rev(x, *, dimensions):
    return x.shape, x.dtype, {"dimensions": _axes("rev", dimensions, x.ndim, x)}


@primitive
def iota(*, dtype, shape, dimension):
    """Counts 0, 1, ... along `dimension` of a new array."""
    shape = _ints("iota", "shape", shape)
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota: dimension {dimension} out of range for shape {shape}")
    if dt.check(dtype) == dt.BOOL:
        raise TypeError("iota: dtype must be numeric, got bool")
    return shape, dtype, {"dtype": dtype, "shape": shape, "dimension": dimension}


@primitive
def stop_gradient(x):
    """The identity, whose gradient is zero: core/autodiff.py differentiates through every
    other node, so a value a frontend's code holds constant for differentiation
    (tf.stop_gradient) must be a node of its own."""
    return x.shape, x.dtype


@primitive
def custom_vjp(y, *inputs):
    """y, whose gradient with respect to `inputs` is a function a frontend registered for
    this node (core/autodiff.CUSTOM_VJPS: tf.custom_gradient), not y's own graph's."""
    return y.shape, y.dtype


@primitive
def sharding_constraint(x, *, sharding):
    """The identity, laid out as `sharding` (a core.sharding.Sharding) across devices: XLA's
    partitioner inserts the collectives that get it there; one device computes x itself."""
    from .sharding import Sharding, make_sharding
    if not isinstance(sharding, Sharding):
        raise TypeError(f"sharding_constraint: sharding must be a lazyx Sharding, got "
                        f"{type(sharding).__name__}")
    make_sharding(sharding.mesh, sharding.spec, x.shape, what="sharding_constraint")
    return x.shape, x.dtype


# ---------------------------------------------------------------- reductions and scans

def _reduction(name, kinds):
    def rule(x, *, axes):
        _kinds(name, kinds, x)
        axes = _axes(name, axes, x.ndim, x)
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return shape, x.dtype, {"axes": axes}
    rule.__name__ = name
    rule.__doc__ = f"{name} over the given axes (removed from the result)."
    return primitive(rule, where=caller())


reduce_sum = _reduction("reduce_sum", "fic")
reduce_prod = _reduction("reduce_prod", "fic")
reduce_max = _reduction("reduce_max", "fib")
reduce_min = _reduction("reduce_min", "fib")
reduce_and = _reduction("reduce_and", "b")
reduce_or = _reduction("reduce_or", "b")


def _arg_reduction(name):
    def rule(x, *, axis, index_dtype="int64"):
        _axis(name, axis, x.ndim, x)
        if x.ndim == 0 or x.shape[axis] == 0:
            _fail_shape(name, "cannot take an index over an empty or rank-0 axis", x)
        if not dt.is_int(dt.check(index_dtype)):
            raise TypeError(f"{name}: index_dtype must be an integer dtype, got {index_dtype}")
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
        return shape, index_dtype, {"axis": axis, "index_dtype": index_dtype}
    rule.__name__ = name
    rule.__doc__ = f"Index of the {name[3:]} along axis (first on ties; NaN counts as extreme)."
    return primitive(rule, where=caller())


argmax = _arg_reduction("argmax")
argmin = _arg_reduction("argmin")


def _scan(name, kinds):
    def rule(x, *, axis, reverse=False):
        _kinds(name, kinds, x)
        _axis(name, axis, x.ndim, x)
        return x.shape, x.dtype, {"axis": axis, "reverse": bool(reverse)}
    rule.__name__ = name
    rule.__doc__ = f"Inclusive {name} along axis (from the end when reverse)."
    return primitive(rule, where=caller())


cumsum = _scan("cumsum", "fic")
cumprod = _scan("cumprod", "fic")
cummax = _scan("cummax", "fi")
cummin = _scan("cummin", "fi")


# ---------------------------------------------------------------- contractions

@primitive
def dot_general(lhs, rhs, *, contracting_dimensions, batch_dimensions=((), ()),
                preferred_element_type=None):
    """Batched contraction; result axes: batch, lhs free, rhs free (as jax.lax.dot_general)."""
    op = "dot_general"
    (lc, rc), (lb, rb) = contracting_dimensions, batch_dimensions
    lc, rc, lb, rb = (tuple(_ints(op, "dimensions", d)) for d in (lc, rc, lb, rb))
    if len(lc) != len(rc) or len(lb) != len(rb):
        _fail_shape(op, f"contracting {lc}/{rc} or batch {lb}/{rb} dimensions differ in count",
                    lhs, rhs)
    _axes(op, lc + lb, lhs.ndim, lhs, rhs)
    _axes(op, rc + rb, rhs.ndim, lhs, rhs)
    for a, b in zip(lc + lb, rc + rb):
        if lhs.shape[a] != rhs.shape[b]:
            _fail_shape(op, f"lhs axis {a} (size {lhs.shape[a]}) does not match rhs axis {b} "
                            f"(size {rhs.shape[b]})", lhs, rhs)
    if lhs.dtype != rhs.dtype:
        _fail_dtype(op, "operands must share one dtype", lhs, rhs)
    _kinds(op, "fic", lhs)
    out_dtype = dt.check(preferred_element_type) if preferred_element_type else lhs.dtype
    shape = ([lhs.shape[a] for a in lb]
             + [d for i, d in enumerate(lhs.shape) if i not in lc + lb]
             + [d for i, d in enumerate(rhs.shape) if i not in rc + rb])
    return shape, out_dtype, {"contracting_dimensions": (lc, rc),
                              "batch_dimensions": (lb, rb),
                              "preferred_element_type": preferred_element_type}


@primitive
def conv(lhs, rhs, *, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
         feature_group_count=1, batch_group_count=1):
    """N-d convolution (cross-correlation), layouts lhs N,C,*S  rhs O,I,*K  out N,O,*S'.

    padding is ((low, high), ...) per spatial axis; lhs_dilation is transposed-conv
    dilation. Frontends with channels-last layouts transpose in and out.
    """
    op = "conv"
    if lhs.ndim < 3 or rhs.ndim != lhs.ndim:
        _fail_shape(op, "needs lhs (N, C, *spatial) and rhs (O, I, *kernel) of equal rank >= 3",
                    lhs, rhs)
    nsp = lhs.ndim - 2
    strides = _ints(op, "window_strides", window_strides, nsp)
    padding = tuple(tuple(_ints(op, "padding entry", p, 2)) for p in padding)
    if len(padding) != nsp:
        _fail_shape(op, f"padding needs {nsp} (low, high) pairs, got {padding}", lhs, rhs)
    ld = _ints(op, "lhs_dilation", lhs_dilation or (1,) * nsp, nsp)
    rd = _ints(op, "rhs_dilation", rhs_dilation or (1,) * nsp, nsp)
    if lhs.dtype != rhs.dtype:
        _fail_dtype(op, "input and kernel must share one dtype", lhs, rhs)
    _kinds(op, "fi", lhs)
    n, c = lhs.shape[:2]
    o, i = rhs.shape[:2]
    g, bg = feature_group_count, batch_group_count
    if g < 1 or bg < 1 or c != i * g or o % g or n % bg or o % bg:
        _fail_shape(op, f"channels do not fit: input channels {c} must equal kernel input "
                        f"channels {i} x feature_group_count {g}; out channels {o} must "
                        f"divide by the group counts", lhs, rhs)
    spatial = []
    for size, k, s, (lo, hi), a, b in zip(lhs.shape[2:], rhs.shape[2:], strides, padding, ld, rd):
        dilated_in = (size - 1) * a + 1 if size else 0
        dilated_k = (k - 1) * b + 1
        span = dilated_in + lo + hi - dilated_k
        if s < 1 or span < 0:
            _fail_shape(op, f"kernel {rhs.shape[2:]} (dilation {rd}) is larger than the padded "
                            f"input {lhs.shape[2:]} or stride {s} < 1", lhs, rhs)
        spatial.append(span // s + 1)
    return (n // bg, o, *spatial), lhs.dtype, {
        "window_strides": strides, "padding": padding, "lhs_dilation": ld, "rhs_dilation": rd,
        "feature_group_count": g, "batch_group_count": bg}


WINDOW_KINDS = ("sum", "max", "min")  # padding and base-dilation holes hold the kind's identity


@primitive
def reduce_window(x, *, kind, window_dimensions, window_strides, padding, base_dilation=None,
                  window_dilation=None):
    """Reduce each window (one per output element, over every axis) by sum, max or min.

    As jax.lax.reduce_window with the kind's identity as init value: padding is
    ((low, high), ...) per axis (non-negative), base_dilation spreads the operand's elements
    apart (the holes hold the identity), window_dilation spreads the window's taps apart.
    """
    op = "reduce_window"
    if kind not in WINDOW_KINDS:
        raise ValueError(f"{op}: kind must be one of {WINDOW_KINDS}, got {kind!r}")
    _kinds(op, "fi" if kind == "sum" else "fib", x)
    n = x.ndim
    window = _ints(op, "window_dimensions", window_dimensions, n)
    strides = _ints(op, "window_strides", window_strides, n)
    padding = tuple(tuple(_ints(op, "padding entry", p, 2)) for p in padding)
    if len(padding) != n:
        _fail_shape(op, f"padding needs {n} (low, high) pairs, got {padding}", x)
    bd = _ints(op, "base_dilation", base_dilation or (1,) * n, n)
    wd = _ints(op, "window_dilation", window_dilation or (1,) * n, n)
    if any(v < 1 for v in window + strides + bd + wd) or any(v < 0 for p in padding for v in p):
        _fail_shape(op, f"window {window}, strides {strides}, dilations {bd}/{wd} must be >= 1 "
                        f"and padding {padding} >= 0", x)
    shape = []
    for size, k, s, (lo, hi), a, b in zip(x.shape, window, strides, padding, bd, wd):
        padded = ((size - 1) * a + 1 if size else 0) + lo + hi
        span = padded - ((k - 1) * b + 1)
        if span < 0 and padded:  # an empty axis has no windows, whatever their size (as XLA)
            _fail_shape(op, f"window {window} (dilation {wd}) is larger than the padded "
                            f"operand (padding {padding}, base dilation {bd})", x)
        shape.append(span // s + 1 if padded else 0)
    return shape, x.dtype, {"kind": kind, "window_dimensions": window, "window_strides": strides,
                            "padding": padding, "base_dilation": bd, "window_dilation": wd}


# ---------------------------------------------------------------- indexing

def _check_indices(op, operand, indices):
    if not dt.is_int(indices.dtype):
        _fail_dtype(op, "indices must be integers", indices)
    if indices.ndim < 1 or indices.shape[-1] > operand.ndim:
        _fail_shape(op, "indices need shape (*batch, k) with k <= operand rank", operand, indices)
    return indices.shape[:-1], operand.shape[indices.shape[-1]:]


@primitive
def gather(operand, indices):
    """out[b] = operand[indices[b, 0], ..., indices[b, k-1], ...]; indices clamp into range."""
    batch, rest = _check_indices("gather", operand, indices)
    return batch + rest, operand.dtype


SCATTER_MODES = ("set", "add", "mul", "max", "min")


@primitive
def scatter(operand, indices, updates, *, mode="set"):
    """operand with updates[b] combined into operand[indices[b]] (out-of-range updates dropped).

    With mode "set" and repeated indices, which update wins is unspecified.
    """
    batch, rest = _check_indices("scatter", operand, indices)
    if updates.shape != batch + rest:
        _fail_shape("scatter", f"updates must have shape {batch + rest}", operand, indices,
                    updates)
    if updates.dtype != operand.dtype:
        _fail_dtype("scatter", "updates must have the operand's dtype", operand, updates)
    if mode not in SCATTER_MODES:
        raise ValueError(f"scatter: mode must be one of {SCATTER_MODES}, got {mode!r}")
    return operand.shape, operand.dtype, {"mode": mode}


# ---------------------------------------------------------------- several results

@primitive
def result(t, *, index):
    """Result `index` of a node with several results (made by a @multi_primitive builder)."""
    if type(t.dtype) is not tuple:
        raise TypeError(f"result: {t.op} has one result; only a node with several results is "
                        f"projected")
    if not isinstance(index, int) or not 0 <= index < len(t.dtype):
        raise ValueError(f"result: index {index!r} out of range for {t.op}'s "
                         f"{len(t.dtype)} results")
    return t.shape[index], t.dtype[index], {"index": index}


# ---------------------------------------------------------------- sorting

@primitive
def sort(x, *, axis, descending=False):
    """Stable sort along axis; NaN sorts above +inf."""
    _axis("sort", axis, x.ndim, x)
    return x.shape, x.dtype, {"axis": axis, "descending": bool(descending)}


@primitive
def argsort(x, *, axis, descending=False, index_dtype="int64"):
    """Stable: equal elements keep their order (also when descending)."""
    _axis("argsort", axis, x.ndim, x)
    if not dt.is_int(dt.check(index_dtype)):
        raise TypeError(f"argsort: index_dtype must be an integer dtype, got {index_dtype}")
    return x.shape, index_dtype, {"axis": axis, "descending": bool(descending),
                                  "index_dtype": index_dtype}


@multi_primitive
def sort_with_indices(x, *, axis, descending=False, index_dtype="int64"):
    """(sort(x), argsort(x)) from one stable sort: for callers that use both."""
    _axis("sort_with_indices", axis, x.ndim, x)
    if not dt.is_int(dt.check(index_dtype)):
        raise TypeError(f"sort_with_indices: index_dtype must be an integer dtype, "
                        f"got {index_dtype}")
    return ((x.shape, x.dtype), (x.shape, index_dtype)), {
        "axis": axis, "descending": bool(descending), "index_dtype": index_dtype}


@multi_primitive
def top_k(x, *, k, index_dtype="int64"):
    """(values, indices): the k largest along the last axis, largest first (lower index first
    on ties)."""
    if x.ndim == 0:
        _fail_shape("top_k", "needs rank >= 1", x)
    if not isinstance(k, int) or not 0 <= k <= x.shape[-1]:
        _fail_shape("top_k", f"k={k} must be in [0, {x.shape[-1]}] (the last axis)", x)
    shape = x.shape[:-1] + (k,)
    return ((shape, x.dtype), (shape, dt.check(index_dtype))), {"k": k,
                                                                "index_dtype": index_dtype}


# ---------------------------------------------------------------- linear algebra

@primitive
def cholesky(x):
    """Lower Cholesky factor of symmetric positive-definite matrices (..., n, n)."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        _fail_shape("cholesky", "needs square matrices (..., n, n)", x)
    _kinds("cholesky", "f", x)
    return x.shape, x.dtype


@primitive
def triangular_solve(a, b, *, lower=True, transpose_a=False, unit_diagonal=False):
    """Solves op(a) @ x = b for x, a triangular (..., n, n), b (..., n, m)."""
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or b.ndim != a.ndim \
            or b.shape[-2] != a.shape[-1] or b.shape[:-2] != a.shape[:-2]:
        _fail_shape("triangular_solve", "needs a (..., n, n) and b (..., n, m)", a, b)
    if a.dtype != b.dtype:
        _fail_dtype("triangular_solve", "operands must share one dtype", a, b)
    _kinds("triangular_solve", "f", a)
    return b.shape, b.dtype, {"lower": bool(lower), "transpose_a": bool(transpose_a),
                              "unit_diagonal": bool(unit_diagonal)}


# ---------------------------------------------------------------- randomness

@primitive
def random_bits(key, *, shape):
    """uint32 bits from Threefry-2x32 (20 rounds) of a uint32[2] key over counters 0..n-1.

    Counters are split in halves (x0 = first half, x1 = second half, odd n padded with one
    zero) and the two output words are concatenated -- the same stream jax.random's
    threefry_2x32 gives, so both backends agree bit for bit.
    """
    if key.shape != (2,) or key.dtype != "uint32":
        _fail_dtype("random_bits", "key must be uint32 of shape (2,)", key)
    shape = _ints("random_bits", "shape", shape)
    return shape, "uint32", {"shape": shape}


@primitive
def philox_bits(key, counter, *, shape, stride=0):
    """uint32 words of Philox-4x32-10 (core/prng.py) under a uint32[2] key, from a uint32[4]
    128-bit counter on: block j (counter + j) gives words 4j .. 4j + 3. TF's stateless ops'
    stream (frontends/tf/philox.py); both backends compute it with prng.philox4x32. With a
    `stride`, shape is (groups, words), words a multiple of 4, and row g's words come from
    block g * stride on (TF's draws that take a varying number of words per group)."""
    if key.shape != (2,) or key.dtype != "uint32":
        _fail_dtype("philox_bits", "key must be uint32 of shape (2,)", key)
    if counter.shape != (4,) or counter.dtype != "uint32":
        _fail_dtype("philox_bits", "counter must be uint32 of shape (4,)", counter)
    shape = _ints("philox_bits", "shape", shape)
    if not stride:
        return shape, "uint32", {"shape": shape}
    if len(shape) != 2 or shape[1] % 4 or not shape[1] // 4 <= stride or \
            shape[0] * stride >= 2**32:
        _fail_shape("philox_bits", f"a stride {stride} needs (groups, words) of at most "
                    f"4 * stride words and fewer than 2**32 blocks, got {shape}", key)
    return shape, "uint32", {"shape": shape, "stride": int(stride)}


# ---------------------------------------------------------------- matrix factorizations
# One node per factorization, with one result per factor (see core/ir.py): both backends call
# LAPACK-style routines (numpy.linalg / jax.lax.linalg), so the factors' signs agree with eager
# frameworks.

def _matrices(op, x, square=False):
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        _fail_shape(op, "needs " + ("square matrices (..., n, n)" if square
                                    else "matrices (..., m, n)"), x)
    _kinds(op, "f", x)
    return x.shape[:-2], x.shape[-2], x.shape[-1]


def _orthogonal_factor(op, x, full_matrices):
    """qr's and svd's shared shape rule: batch, m, n, and k, the columns of the left
    orthonormal factor (Q or U): m if full_matrices else min(m, n)."""
    batch, m, n = _matrices(op, x)
    return batch, m, n, m if full_matrices else min(m, n)


@multi_primitive
def lu(x):
    """(lu, pivots, permutation) of P @ x = L @ U with partial pivoting: lu packs the factors
    (unit-diagonal L below); at step i row i was swapped with row pivots[i] (0-based); row i
    of P @ x is row permutation[i] of x. pivots and permutation are int32."""
    batch, m, n = _matrices("lu", x)
    return ((x.shape, x.dtype), (batch + (min(m, n),), "int32"), (batch + (m,), "int32")), {}


@multi_primitive
def qr(x, *, full_matrices=False):
    """(q, r) of Householder QR: q (..., m, k), r (..., k, n), k = m if full_matrices else
    min(m, n)."""
    batch, m, n, k = _orthogonal_factor("qr", x, full_matrices)
    return ((batch + (m, k), x.dtype), (batch + (k, n), x.dtype)), {
        "full_matrices": bool(full_matrices)}


@multi_primitive
def geqrf(x):
    """(a, tau) of LAPACK geqrf's compact Householder QR: a holds R on and above the diagonal
    and reflector i's vector v_i (with an implicit 1 at row i) below it in column i; tau
    (..., min(m, n)) holds the scales of H_i = I - tau_i v_i v_i^T, Q = H_1 ... H_k. A column
    with nothing to reflect (zero below its diagonal) gets tau 0."""
    batch, m, n = _matrices("geqrf", x)
    return ((x.shape, x.dtype), (batch + (min(m, n),), x.dtype)), {}


@multi_primitive
def ldl(x):
    """(ld, pivots, info) of LAPACK sytrf's Bunch-Kaufman factorization P A P^T = L D L^T of
    symmetric matrices, reading the lower triangle: ld holds L's unit-lower columns below the
    diagonal and D's 1x1 and 2x2 blocks on and beside it, zeros above; pivots (..., n) int32
    are LAPACK's, 1-based (p_k > 0: a 1x1 block, rows k and p_k swapped; p_k = p_k+1 < 0: a
    2x2 block, rows k+1 and -p_k swapped); info (...) int32 is LAPACK's, the 1-based step of
    the first zero (or NaN) pivot, else 0. Both backends follow LAPACK's dsytf2 step by step
    (its pivot choices are comparisons of computed values, so this fixes its results)."""
    batch, n, _ = _matrices("ldl", x, square=True)
    return ((x.shape, x.dtype), (batch + (n,), "int32"), (batch, "int32")), {}


@primitive
def ldl_solve(ld, pivots, b):
    """x with A x = b from ldl's ld (..., n, n) and pivots (..., n) (LAPACK sytrs), b
    (..., n, m) of ld's batch and dtype."""
    op = "ldl_solve"
    _matrices(op, ld, square=True)
    if pivots.shape != ld.shape[:-1] or pivots.dtype != "int32":
        _fail_dtype(op, "pivots must be int32 of shape ld.shape[:-1]", ld, pivots)
    if b.ndim != ld.ndim or b.shape[:-1] != ld.shape[:-1]:
        _fail_shape(op, "needs b (..., n, m) with ld's batch", ld, b)
    if b.dtype != ld.dtype:
        _fail_dtype(op, "ld and b must share one dtype", ld, b)
    return b.shape, b.dtype


@multi_primitive
def eigh(x, *, lower=True):
    """(values, vectors) of symmetric matrices: eigenvalues ascending, eigenvectors as columns
    in that order; reads the lower (or upper) triangle."""
    batch, n, _ = _matrices("eigh", x, square=True)
    return ((batch + (n,), x.dtype), (x.shape, x.dtype)), {"lower": bool(lower)}


@multi_primitive
def svd(x, *, full_matrices=False, compute_uv=True):
    """(u, s, vh) with s descending; u (..., m, k), vh (..., k or n, n) as qr's factors. With
    compute_uv=False the one result is s (the cheaper routine)."""
    batch, m, n, k = _orthogonal_factor("svd", x, full_matrices)
    s = (batch + (min(m, n),), x.dtype)
    if not compute_uv:
        return (s,), {"full_matrices": False, "compute_uv": False}
    return ((batch + (m, k), x.dtype), s, (batch + (n if full_matrices else k, n), x.dtype)), {
        "full_matrices": bool(full_matrices), "compute_uv": True}


# ---------------------------------------------------------------- Fourier transforms

FFT_TYPES = ("fft", "ifft", "rfft", "irfft")


@primitive
def fft(x, *, fft_type, fft_lengths):
    """Discrete Fourier transform over the trailing len(fft_lengths) axes (1 to 3), as
    jax.lax.fft: fft/ifft map complex to complex; rfft maps float to the n//2+1 non-negative
    frequencies of the last axis; irfft maps those back to float with last axis n. The inverse
    transforms scale by 1/prod(fft_lengths) (NumPy's default "backward" norm)."""
    op = "fft"
    if fft_type not in FFT_TYPES:
        raise ValueError(f"{op}: fft_type must be one of {FFT_TYPES}, got {fft_type!r}")
    lengths = _ints(op, "fft_lengths", fft_lengths)
    if not 1 <= len(lengths) <= 3 or len(lengths) > x.ndim or any(n < 1 for n in lengths):
        _fail_shape(op, f"fft_lengths {lengths} must name 1 to 3 positive trailing axes", x)
    lead, tail = x.shape[:x.ndim - len(lengths)], x.shape[x.ndim - len(lengths):]
    if fft_type == "rfft":
        _kinds(op, "f", x)
        if x.dtype not in ("float32", "float64"):
            _fail_dtype(op, "rfft needs float32 or float64", x)
        want, out = lengths, lengths[:-1] + (lengths[-1] // 2 + 1,)
        dtype = dt.complex_of(x.dtype)
    else:
        _kinds(op, "c", x)
        if fft_type == "irfft":
            want, out = lengths[:-1] + (lengths[-1] // 2 + 1,), lengths
            dtype = dt.real_part(x.dtype)
        else:
            want, out, dtype = lengths, lengths, x.dtype
    if tail != want:
        _fail_shape(op, f"{fft_type} of lengths {lengths} needs trailing axes {want}", x)
    return lead + out, dtype, {"fft_type": fft_type, "fft_lengths": lengths}


# ---------------------------------------------------------------- CTC
# Connectionist temporal classification (Graves et al. 2006), as ATen's CPU kernels compute it:
# the alpha (and, for the gradient, beta) recursion in log space over the 2S+1 extended labels
# (a blank before, between and after the S targets). Lengths are run-time values (masks inside
# the recursion), so a batch with new lengths runs the same program.

def _ctc_operands(op, log_probs, targets, input_lengths, target_lengths, blank):
    if log_probs.ndim != 3:
        _fail_shape(op, "needs log_probs (T, N, C)", log_probs)
    _kinds(op, "f", log_probs)
    t, n, c = log_probs.shape
    if targets.shape[:1] != (n,) or targets.ndim != 2 or input_lengths.shape != (n,) or \
            target_lengths.shape != (n,):
        _fail_shape(op, "needs targets (N, S) and input_lengths, target_lengths (N,) for "
                        "log_probs (T, N, C)", log_probs, targets, input_lengths, target_lengths)
    for x in (targets, input_lengths, target_lengths):
        if not dt.is_int(x.dtype):
            _fail_dtype(op, "targets and lengths must be integer arrays", targets,
                        input_lengths, target_lengths)
    if not isinstance(blank, int) or isinstance(blank, bool) or not 0 <= blank < c:
        raise ValueError(f"{op}: blank must be an int in [0, {c}), got {blank!r}")
    return t, n, targets.shape[1]


@multi_primitive
def ctc_loss(log_probs, targets, input_lengths, target_lengths, *, blank):
    """(nll (N,), log_alpha (N, T, 2S+1)) of CTC for log_probs (T, N, C) and padded targets
    (N, S): nll[n] = -log p(targets[n, :L] | log_probs[:I, n]), L = target_lengths[n], I =
    input_lengths[n] (clipped to [0, T]); log_alpha[n, t, s] is the forward variable for t < I
    and s < 2L + 1, -inf elsewhere. A target longer than S (or than its input can hold) is
    impossible: nll inf. A label outside [0, C) reads class 0 or C - 1 (frontends check)."""
    t, n, s = _ctc_operands("ctc_loss", log_probs, targets, input_lengths, target_lengths, blank)
    dtype = log_probs.dtype
    return (((n,), dtype), ((n, t, 2 * s + 1), dtype)), {"blank": blank}


@primitive
def ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha,
                      *, blank, zero_infinity=False):
    """d(sum_n grad[n] * nll[n]) / d log_probs, (T, N, C), from ctc_loss's nll and log_alpha:
    ATen's formula, (exp(lp) - exp(log sum_{s: label s = c} alpha beta + nll - lp)) * grad for
    t < I, 0 after. A row whose nll is inf gets NaN there (0 with zero_infinity)."""
    op = "ctc_loss_backward"
    t, n, s = _ctc_operands(op, log_probs, targets, input_lengths, target_lengths, blank)
    if grad.shape != (n,) or nll.shape != (n,) or log_alpha.shape != (n, t, 2 * s + 1):
        _fail_shape(op, "needs grad, nll (N,) and log_alpha (N, T, 2S+1)", log_probs, grad,
                    nll, log_alpha)
    if not grad.dtype == nll.dtype == log_alpha.dtype == log_probs.dtype:
        _fail_dtype(op, "grad, log_probs, nll and log_alpha must share one dtype", grad,
                    log_probs, nll, log_alpha)
    return log_probs.shape, log_probs.dtype, {"blank": blank,
                                              "zero_infinity": bool(zero_infinity)}


# ---------------------------------------------------------------- recurrences

@primitive
def recurrence3(x, n, *, p1, step):
    """p_n(x) of a three-term recurrence, each element to its own (data-dependent) n.

    p_0 = 1, p_1 = p1[0]*x + p1[1], and for k >= 1 with step = (a1, a0, b1, b0, c1, c0, d1, d0):
      p_{k+1} = (((a1*k + a0)*x + (b1*k + b0)) * p_k - (c1*k + c0) * p_{k-1}) / (d1*k + d0).
    n is an integer array of x's shape; n <= 0 gives p_0. An element stops at its own n (or
    once its value is NaN), so the trip count is max(n) computed at run time: one program
    serves every n, and the classical orthogonal polynomials are all this one op.
    """
    op = "recurrence3"
    _kinds(op, "f", x)
    if not dt.is_int(n.dtype):
        _fail_dtype(op, "n must be an integer array", x, n)
    if n.shape != x.shape:
        _fail_shape(op, "n must have x's shape", x, n)
    p1 = tuple(float(v) for v in p1)
    step = tuple(float(v) for v in step)
    if len(p1) != 2 or len(step) != 8:
        raise ValueError(f"{op}: p1 needs 2 and step 8 coefficients, got {p1}, {step}")
    return x.shape, x.dtype, {"p1": p1, "step": step}


def recurrence3_step(x, k, p, q, step):
    """p_{k+1} from p = p_{k-1}, q = p_k: the formula both backends evaluate (plain arithmetic
    on NumPy or jax arrays; k has x's dtype). Zero coefficients are skipped, not multiplied,
    so 0 * inf never makes a NaN that the recurrence itself does not have."""
    a1, a0, b1, b0, c1, c0, d1, d0 = step
    factor = b1 * k + b0
    if a1 or a0:
        factor = x * (a1 * k + a0) + factor
    new = factor * q
    if c1 or c0:
        new = new - (c1 * k + c0) * p
    if (d1, d0) != (0.0, 1.0):
        new = new / (d1 * k + d0)
    return new
