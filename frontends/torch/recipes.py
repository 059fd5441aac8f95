"""Recipes: a lowered call, recorded once per signature, stamped by the C dispatcher after.

The general dispatcher (tensor.py) pays 10-130 us of Python for a call off the C routes (a
`view_copy`, an `addmm`, a broadcasting `add` with `alpha=`): torch's meta memo, the lowering
and its helpers, the wrapping. Yet for one signature a pure lowering always makes the same
nodes from the same operands. So after the general path lowers a user's call, `record` keeps
what it made -- each new node's op, attributes, types, interned entry, and inputs named as the
call's operand nodes or earlier new nodes -- and the next call with that key is stamped in C
(`_native_dispatch.c`, `stamp`): the same nodes, graph hash, params and source lines.

The key is made by the C code that looks it up (`FastDispatch.recipe_key`): the op, torch's
default dtype (a float number's param dtype), each argument by value (numbers, sizes, dtypes,
strings, None), and per lazy operand its interned structure, its first input's (what
ops.SIMPLIFY reads), and which earlier operand it repeats. A call with any other argument (a
CPU tensor, whose values a lowering may read) has no key.

A call is recorded only where replaying its nodes is provably the lowering's whole effect
(an op's value check, bounds.py, is not part of it: the C side runs it before each stamp):
- the op is not a view or in-place op, and nothing cut, synced or drew random numbers while
  it lowered (a random key is a run-time input that must change on every call);
- every node reached from its results, below its operands (and their first inputs, which a
  simplifier may look through to), was made by this lowering (none from a memo or an earlier
  trace), in the order its leaves were first used; it is no data leaf, multi-result node or
  projection, and is a param only if its host value is a shared Python number's (ir._HOSTS:
  made from the signature's numbers or the lowering's own constants, never from state) and
  not an operand's own number (a splat of a scalar operand, whose value no key holds);
- the operands still have their nodes (an expansion may rebind a raw tensor in place);
- each node's interned entry is the one its structure interns to (so `new_node` builds it).
Any other call is recorded as None -- never stamped, never analysed again.
"""
import hashlib

import torch

from ...core import ir, ops
from .aten import random as _random
from .tensor import LazyTensor

RECIPES = {}       # key -> (entries, outputs, form), or None: not stampable (the C side reads it)
RECIPES_LIMIT = 8192  # signatures kept; the table is emptied when full (a refill costs a lowering)
SIMPLE_TYPES = (torch.dtype, torch.device, torch.memory_format, torch.layout)
_FAST = [None]  # the FastDispatch stamping these recipes (tensor.use_fast_dispatch), or None
# Keys recorded per key with its float arguments blanked, since the table was last emptied. A
# call whose floats keep changing (non-foreach Adam's bias corrections through addcdiv's value=,
# every step) would otherwise pay a recording per call for recipes never used again: past the
# limit that call is not recorded. (Shapes and ints vary too, but they repeat.)
_FLOAT_VARIANTS = {}
FLOAT_VARIANT_LIMIT = 16


def _floats_blanked(key):
    """The key with its float arguments' values left out (positional: (float, v); keyword:
    (name, (float, v)))."""
    return tuple(_blank(item) if type(item) is tuple and item else item for item in key)


def _blank(item):
    if item[0] is float:
        return (float,)
    if type(item[0]) is str and type(item[1]) is tuple and item[1] and item[1][0] is float:
        return (item[0], (float,))
    return item


class _Decline(Exception):
    """The lowering did something a recipe cannot replay."""


def before(func, args, kwargs):
    """Taken as a user's call begins: its key, operand nodes and key with floats blanked, and
    what `record` compares after it lowered (nodes made, the trace and its leaves so far, the
    RNG stream); None for a call with no key, one already recorded, or one whose floats keep
    changing."""
    keyed = _FAST[0].recipe_key(func, args, kwargs)
    if keyed is None or keyed[0] in RECIPES:
        return None
    blanked = _floats_blanked(keyed[0])
    if _FLOAT_VARIANTS.get(blanked, 0) >= FLOAT_VARIANT_LIMIT:
        return None
    trace = ir.TRACE
    return (*keyed, blanked), ir.CREATED[0], trace.serial, len(trace.leaves), _random._rng.seed, \
        _random._rng.counter


def record(func, args, kwargs, result, mark):
    """Keep the recipe of the user's call `func(*args, **kwargs)`, which just lowered or
    expanded to `result` (mark: `before`'s), or None if it has no replayable recipe."""
    (key, operands, blanked), *rest = mark
    if len(RECIPES) >= RECIPES_LIMIT:
        RECIPES.clear()
        _FLOAT_VARIANTS.clear()
    _FLOAT_VARIANTS[blanked] = _FLOAT_VARIANTS.get(blanked, 0) + 1
    try:
        # an expansion may rebind a raw tensor's handle in place (tensor._in_place): the
        # call's own operands must be as they were, or its effect is more than its results
        after = _FAST[0].recipe_key(func, args, kwargs)
        if after is None or after[0] != key or any(a is not b for a, b in zip(after[1],
                                                                               operands)):
            raise _Decline
        recipe = _recipe(func, args, kwargs, operands, result, rest)
    except _Decline:
        recipe = None
    RECIPES[key] = recipe


def _recipe(func, args, kwargs, operands, result, mark):
    created, serial, leaves, seed, counter = mark
    trace = ir.TRACE
    if func.is_view or func._schema.is_mutable or \
            (trace.serial, _random._rng.seed, _random._rng.counter) != (serial, seed, counter):
        raise _Decline
    if isinstance(result, (tuple, list)):
        form, results = (1 if type(result) is tuple else 2), result
    else:
        form, results = 0, (result,)
    given = {id(x) for x in (*args, *kwargs.values())}  # (a pass-through result is no new tensor)
    given.update(id(x) for seq in (*args, *kwargs.values()) if type(seq) in (list, tuple)
                 for x in seq)
    refs = {}  # id(node) -> its ref: -k-1 for operand k, (k,) for its first input, j for entry j
    for k, node in enumerate(operands):
        refs.setdefault(id(node), -k - 1)
    for k, node in enumerate(operands):  # (the key holds each operand's first input's type)
        if node.inputs:
            refs.setdefault(id(node.inputs[0]), (k,))
    made = {}  # id(node) -> node: what the lowering made that its results reach
    shared = {id(host) for host in ir._HOSTS.values()}
    copied = _operand_values(operands)
    stack = []
    for out in results:
        if out is None:
            continue
        if type(out) is not LazyTensor or id(out) in given:
            raise _Decline
        stack.append(out._lazyx_handle.node)
    while stack:
        node = stack.pop()
        if id(node) in refs or id(node) in made:
            continue
        if node.serial <= created or node.op == "data" or node.is_multi or node.op == "result":
            raise _Decline  # older than the call, a buffer, or a multi-result node
        if node.op == "param" and (id(node.value) not in shared or id(node.value) in copied):
            # a value not made from a number (a random key, an array), or an operand's
            # number (ops.broadcast_in_dim's splat of a scalar param), which no key holds
            raise _Decline
        made[id(node)] = node
        stack.extend(node.inputs)
    # in creation order, which is the lowering's build order: leaves are numbered in the
    # trace as they are first used, so a stamp must use them in the order the lowering did
    order = sorted(made.values(), key=lambda n: n.serial)
    numbered = {id(leaf) for leaf in trace.leaves[:leaves]}
    first_used = []
    entries = []
    for j, node in enumerate(order):
        for i in node.inputs:
            if i.op in ir.LEAF_OPS and id(i) not in numbered:
                numbered.add(id(i))
                first_used.append(i)
        extra = hashlib.blake2b(node.value.tobytes(), digest_size=16).digest() \
            if node.op == "constant" else 0
        entry = ir.local_entry(node.op, node.attrs, node.shape, node.dtype, extra)
        if entry[0] != node.local:
            raise _Decline  # interned otherwise than new_node would: not ours to remake
        value = node.value if node.op in ("param", "constant") else None
        entries.append((node.op, tuple(refs[id(i)] for i in node.inputs), node.attrs,
                        node.shape, node.dtype, value, entry, node.op in ops.COMMUTATIVE))
        refs[id(node)] = j
    new_leaves = trace.leaves[leaves:]
    if len(first_used) != len(new_leaves) or any(a is not b for a, b in zip(first_used,
                                                                             new_leaves)):
        raise _Decline  # a node the results do not reach used a leaf first
    outputs = tuple(None if out is None else (refs[id(out._lazyx_handle.node)], out.dtype)
                    for out in results)
    return tuple(entries), outputs, form


_CHAIN_LIMIT = 64


def _operand_values(operands):
    """ids of the host values of the params under the operands' one-input chains: a lowering
    may make a splat of one (ops._fold_broadcast looks through unary ops to a scalar param)."""
    values = set()
    for node in operands:
        for _ in range(_CHAIN_LIMIT):
            if node.op == "param":
                values.add(id(node.value))
                break
            if len(node.inputs) != 1:
                break
            node = node.inputs[0]
        else:
            raise _Decline  # (a chain longer than any simplifier walks: not worth knowing)
    return values
