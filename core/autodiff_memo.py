"""Gradient graphs built by the rules once per step structure, then stamped out (autodiff.vjp).

A training loop differentiates the same forward graph at every step: the same ops, on new
leaves. autodiff's rules are Python (a dot's transposes and dimension numbers, a reduction's
broadcast back, the sums of cotangents), and through TF they were half of W1's tracing. A
node's eid names its whole expression in terms of the trace's leaves (core/ir.py), so the
eids of the outputs, cotangents and sources name the gradient graph too. The first vjp of a
key records the nodes it made, each as (op, inputs, attrs, shape, dtype) with every input a
position in the forward graph's topological order, a cotangent, a source, an earlier made
node or a leaf-free node (a constant) kept as it is. A later vjp of the same key whose forward
graph has the same eid at every position makes those nodes directly, with none of the rules'
Python. The rules read structure only (shapes, dtypes, attributes, which input is which),
never a leaf's value, so the stamped graph is the graph they would build: the same eids, the
same compiled program. A rule that raises is never recorded, and a gradient that reads a
node the key does not name (a leaf from elsewhere) is not recorded either: the rules run.
"""
from . import ir
from .compose import HELD_CONSTANT, is_held
from .ir import LEAF_OPS, TRACE, new_node

_LIMIT = 64  # recipes kept; a step has one or two gradient calls, so this is many programs
_RECIPES = {}
_GENERATION = [ir.LOCALS_GENERATION[0]]  # recorded local ids go stale when the table empties
# Where a stamped node's input comes from: the forward order, a cotangent, a source (wrt), a
# node stamped earlier, or a kept leaf-free node.
_ORDER, _COTANGENT, _WRT, _MADE, _KEPT = range(5)
_SPLAT_OF = object()  # a step's value: the splat of the param its one ref names


def _eid(node):
    """`node`'s exact id in this thread's trace, or None where it has none here."""
    epoch = node.epoch
    if epoch is None:  # a leaf: numbered at its first use in the trace (never numbered here)
        return TRACE.leaf_eids.get(id(node))
    if epoch == 0 or epoch == TRACE.serial:
        return node.eid
    return None


def key_of(outputs, cotangents, wrt):
    """The memo key of a vjp call, or None where an output has no exact id (a cut walks it)."""
    key = []
    for o in outputs:
        e = _eid(o)
        if e is None:
            return None
        key.append(e)
    key.append(None)
    for n in (*cotangents, *wrt):  # referenced by position: a leaf not yet used by its type
        if n is None:  # (no cotangent for this output)
            key.append(("none",))
            continue
        e = _eid(n)
        key.append(e if e is not None else ("type", n.local))
    return tuple(key)


def _held(order):
    """Positions in `order` of the nodes held constant for differentiation (compose.py): they
    shape the gradient as much as the structure does, and no eid names them."""
    return tuple(k for k, n in enumerate(order) if is_held(n)) if HELD_CONSTANT else ()


class Recipe:
    __slots__ = ("eids", "held", "steps", "kept", "results")

    def __init__(self, eids, held, steps, kept, results):
        self.eids, self.held, self.steps, self.kept, self.results = \
            eids, held, steps, kept, results

    def stamp(self, order, cotangents, wrt):
        """The gradients of `wrt`, made as recorded; None when `order` differs in structure."""
        if len(order) != len(self.eids) or \
                any(_eid(n) != e for n, e in zip(order, self.eids)) or \
                _held(order) != self.held:
            return None
        made = []
        where = (order, cotangents, wrt, made, self.kept)
        for op, refs, attrs, shape, dtype, entry, value in self.steps:
            if value is _SPLAT_OF:  # a splat of a named leaf: its value, now (ir.splat)
                kind, k = refs[0]
                made.append(ir.splat(where[kind][k], shape))
                continue
            inputs = tuple([where[kind][k] for kind, k in refs])
            made.append(new_node(op, inputs, attrs, shape, dtype, value, 0, False, entry))
        return [where[kind][k] for kind, k in self.results]


def record(order, cotangents, wrt, results, first_serial):
    """A Recipe of the nodes made since serial `first_serial` that `results` read, or None
    where they read a node it could not name (see the module doc)."""
    named = {}
    for kind, nodes in ((_WRT, wrt), (_COTANGENT, cotangents), (_ORDER, order)):
        for k, n in enumerate(nodes):
            if n is not None:
                named[id(n)] = (kind, k)
    new, stack, seen = [], list(results), set()
    while stack:
        node = stack.pop()
        if id(node) in seen or id(node) in named or node.serial <= first_serial:
            continue
        seen.add(id(node))
        new.append(node)
        stack.extend(node.inputs)
    new.sort(key=lambda n: n.serial)  # creation order: inputs first
    kept, steps = [], []

    def ref(node):
        where = named.get(id(node))
        if where is None and not node.inputs and node.op not in LEAF_OPS:
            kept.append(node)  # a constant, an iota: the same in every trace
            where = named[id(node)] = (_KEPT, len(kept) - 1)
        return where

    values = {id(n.value): named[id(n)] for n in (*order, *cotangents, *wrt)
              if n is not None and n.op == "param"}
    for node in new:
        if node.op == "param" and not node.inputs:
            source = values.get(id(node.value))
            if source is not None:  # ops.broadcast_in_dim of a param folds to its splat,
                refs, value = (source,), _SPLAT_OF  # sharing its value: the seed's, say
            else:
                # a number a rule feeds at run time (compose.scalar): a fresh leaf of the
                # same value, as the rule would make (rules read shapes, never a leaf's value)
                refs, value = (), node.value
        elif not node.inputs:
            if ref(node) is None:
                return None  # a data leaf made by a rule (none does today): not stamped
            continue
        else:
            refs, value = tuple(ref(i) for i in node.inputs), None
            if None in refs:
                return None
        named[id(node)] = (_MADE, len(steps))
        steps.append((node.op, refs, node.attrs, node.shape, node.dtype,
                      ir.local_entry(node.op, node.attrs, node.shape, node.dtype), value))
    outs = tuple(ref(r) for r in results)
    if None in outs:
        return None
    return Recipe(tuple(_eid(n) for n in order), _held(order), tuple(steps), kept, outs)


def vjp(outputs, cotangents, wrt, order, build):
    """build(order) -> the gradients (autodiff's rules), through the memo."""
    if _GENERATION[0] != ir.LOCALS_GENERATION[0]:
        _RECIPES.clear()
        _GENERATION[0] = ir.LOCALS_GENERATION[0]
    key = key_of(outputs, cotangents, wrt)
    recipe = _RECIPES.get(key) if key is not None else None
    if recipe is not None:
        stamped = recipe.stamp(order, cotangents, wrt)
        if stamped is not None:
            return stamped
    first_serial = ir.CREATED[0]
    results = build(order)
    # (a custom_vjp's gradient is a frontend's Python, which may read more than structure)
    if key is not None and not any(n.op == "custom_vjp" for n in order):
        made = record(order, cotangents, wrt, results, first_serial)
        if made is not None:
            if len(_RECIPES) >= _LIMIT:
                _RECIPES.clear()
            _RECIPES[key] = made
    return results
