"""Gradients that flow through values realized mid-step.

While a frontend's lazy gradient tape records (runtime.KEEP_ORIGINS), every data leaf a sync
makes remembers the node it was computed as (runtime.ORIGINS). A value printed, observed, or
cut along with an observed one is a data leaf in every graph built after that, and its
computation in the graphs built before: these walks continue through the leaf to its
computation, so gradients still reach what it came from. A node we want the gradient of
(a variable's shadow, say) may be realized mid-step too: its leaf and its computation are
then two names of one value (`aliases`), and its gradient is the sum over both.
"""
from . import autodiff, ir, ops, runtime
from . import dtypes as dt


def aliases(node):
    """`node`, and when it is a leaf realized under a tape, what it was computed as (chained)."""
    out = [node]
    origin = runtime.ORIGINS.get(node) if runtime.ORIGINS else None
    while origin is not None:
        out.append(origin)
        origin = runtime.ORIGINS.get(origin)
    return out


def order_through(node):
    """The graph behind `node`, continued through realized values' computations."""
    order, seen, todo = [], set(), [node]
    while todo:
        for n in ir.topo_order([todo.pop()]):
            if id(n) not in seen:
                seen.add(id(n))
                order.append(n)
                origin = runtime.ORIGINS.get(n)
                if origin is not None:
                    todo.append(origin)
    return order


def vjp(node, seed, wanted):
    """One cotangent per `wanted` node -- the sum over its aliases, zeros where no path leads
    to it -- the IR's vjp carried on through realized values to their computations."""
    if not runtime.ORIGINS:
        return autodiff.vjp([node], [seed], wanted)
    names = [aliases(w) for w in wanted]
    acc = _vjp_through(node, seed, {id(a) for a in sum(names, [])})
    out = []
    for w, group in zip(wanted, names):
        parts = [acc[id(a)] for a in group if id(a) in acc]
        total = parts[0] if parts else _zeros(w)
        for p in parts[1:]:
            total = ops.add(total, p)
        out.append(total)
    return out


def _vjp_through(node, seed, wanted_ids):
    """{id(w): cotangent} for the wanted nodes that `node` reaches. A realized leaf hands its
    cotangent on to its computation -- unless it is wanted itself (its gradient stops there),
    or nothing wanted lies behind it."""
    acc, todo, leads = {}, [(node, seed)], {}
    while todo:
        root, g = todo.pop()
        if id(root) in wanted_ids:
            _add(acc, root, g)
            continue
        order = ir.topo_order([root])
        targets = [n for n in order if id(n) in wanted_ids and n is not root]
        realized = [n for n in order if id(n) not in wanted_ids and n in runtime.ORIGINS
                    and dt.is_float(n.dtype) and _leads_to(runtime.ORIGINS[n], wanted_ids, leads)]
        if not targets and not realized:
            continue
        grads = autodiff.vjp([root], [g], targets + realized)
        for t, c in zip(targets, grads):
            _add(acc, t, c)
        for r, c in zip(realized, grads[len(targets):]):
            todo.append((runtime.ORIGINS[r], c))
    return acc


def _leads_to(node, wanted_ids, memo):
    hit = memo.get(id(node))
    if hit is None:
        hit = memo[id(node)] = any(id(n) in wanted_ids for n in order_through(node))
    return hit


def _add(acc, node, g):
    acc[id(node)] = g if id(node) not in acc else ops.add(acc[id(node)], g)


def _zeros(node):
    return ops.broadcast_in_dim(ir.constant(0, node.dtype), shape=node.shape,
                                broadcast_dimensions=())
