"""What an observation cuts besides the value observed.

Reading one pending value (`.item()`, `print`, `.numpy()`, a conversion) used to cut that value
alone. Every other live pending value whose graph shares computation with it then computed
that shared part again in its own later cut: reading a model's gradients one by one
(`[g.numpy() for g in grads]`) compiled and ran the whole forward and backward once per
gradient -- 213 programs for EfficientNetB0, until XLA:CPU ran out of memory mappings and
aborted the process. So an observation also cuts the live pending values that share a
computed node with the observed one (not a leaf: sharing an input is no reason), and those the
cut then computes on the way (a step counter that only feeds them). Values that share nothing
stay pending, as before: a small read in the middle of a step does not cut unrelated work.

Which values share is a function of the graph's structure, so it is memoized by the
structural hashes of the observed value and of the live pending values; a repeated step pays
one pass over the live values and a lookup. A collision in that memo could only cut one
value more or one fewer -- never change a number -- since every value is computed from its
own graph either way.
"""
from . import ir

_MEMO = {}
_MEMO_LIMIT = 4096


def companions(observed, live):
    """The handles among `live` (pending, in registration order) to cut with `observed`."""
    others = [h for h in live if h is not observed and h.node.op not in ir.LEAF_OPS]
    if not others:
        return []
    key = (observed.node.hash, tuple([h.node.hash for h in others]))
    picks = _MEMO.get(key)
    if picks is None:
        picks = _sharing(observed.node, [h.node for h in others])
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        _MEMO[key] = picks
    return [others[i] for i in picks]


def _sharing(node, candidates):
    """Positions of the candidates whose graphs contain a computed node of `node`'s graph,
    and of those that are themselves a node the cut computes anyway."""
    mine = set()
    _computed(node, mine)
    if not mine:
        return ()
    reaches = {}  # id(node) -> whether its graph contains one of `mine`
    picks = [i for i, c in enumerate(candidates) if _reaches(c, mine, reaches)]
    # A value the picked ones read, but which reads nothing of the observed one's graph
    # (torch's capturable Adam: `step += 1` feeds every parameter's update), is computed
    # inside the cut all the same. Left pending, it kept its graph, one node deeper at every
    # step, and every later cut that read it was a new graph: a compile per step.
    if picks:
        for i in picks:
            _computed(candidates[i], mine)
        picked = set(picks)
        picks += [i for i, c in enumerate(candidates) if i not in picked and id(c) in mine]
        picks.sort()
    return tuple(picks)


def _computed(root, seen):
    """Add the computed nodes of root's graph (not leaves or constants) to `seen`."""
    stack = [root]
    while stack:
        n = stack.pop()
        if id(n) in seen or not n.inputs:  # leaves and constants are no shared work
            continue
        seen.add(id(n))
        stack.extend(n.inputs)


def _reaches(root, mine, reaches):
    """Whether root's graph contains a node of `mine` (post-order, memoized across roots)."""
    stack = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        key = id(n)
        if key in reaches:
            continue
        if key in mine:
            reaches[key] = True
        elif not n.inputs:
            reaches[key] = False
        elif expanded:
            reaches[key] = any(reaches[id(i)] for i in n.inputs)
        else:
            stack.append((n, True))
            stack.extend((i, False) for i in n.inputs if id(i) not in reaches)
    return reaches[id(root)]
