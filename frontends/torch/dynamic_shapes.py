"""torch.compile graphs with symbolic shapes (Dynamo's automatic dynamic dimension, or
dynamic=True), specialized per call: lazyx programs have static shapes, so each call's
concrete shapes and numbers get a static compile of the same graph (dynamo.py's), kept."""
import torch

from ...core import config, runtime
from . import dynamo


def symbolic(example_inputs):
    return any(isinstance(x, torch.SymInt) or (isinstance(x, torch.Tensor) and any(
        not isinstance(d, int) for d in x.shape)) for x in example_inputs)


def per_shape(gm):
    """A graph with symbolic shapes (Dynamo made a dimension dynamic after a second shape, or
    torch.compile(dynamic=True)): lazyx programs have static shapes, so each call's concrete
    shapes and integer arguments get their own static compile of the same graph (AOTAutograd
    traces it again with those), kept for later calls with the same ones. So do the values of
    the Python floats Dynamo passes as 0-d CPU tensors read by `.item()` (dynamic=True makes
    BatchNorm's momentum and eps such inputs), as dynamic=False would have baked them. A
    graph that cannot be specialized runs as torch runs it (lt.device inputs through the lazy
    frontend, CPU ones eagerly), counted as a fallback each call."""
    compiled = {}
    read_by_item = _read_by_item(gm)

    def run(*args):
        key = tuple(a.item() if k in read_by_item else
                    (tuple(a.shape), a.dtype, a.device, a.requires_grad)
                    if isinstance(a, torch.Tensor) else (type(a), a)
                    for k, a in enumerate(args))
        fn = compiled.get(key)
        if fn is None:
            if len(compiled) >= _SHAPES_KEPT:  # the oldest goes (its programs stay cached)
                del compiled[next(iter(compiled))]
            fn = compiled[key] = _static_compile(gm, args, read_by_item)
        return fn(*args)
    return run


# Specializations kept per dynamic graph: a loop over many lengths keeps its latest ones
_SHAPES_KEPT = 64


def _read_by_item(gm):
    """The positions of gm's inputs that are Python numbers wrapped as 0-d CPU tensors: read
    only by `.item()` calls (a fake tensor's .item() has no value: the static compile failed
    with DataDependentOutputException)."""
    found = set()
    for k, node in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        val = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(val, torch.Tensor) and val.dim() == 0 and val.device.type == "cpu" \
                and node.users and all(u.op == "call_method" and u.target == "item"
                                       for u in node.users):
            found.add(k)
    return found


def _static_compile(gm, args, read_by_item=frozenset()):
    """gm compiled for these concrete arguments (see per_shape): its integer arguments (the
    sizes Dynamo passes for dynamic dimensions) and numbers read by `.item()` baked into a
    copy of the graph, its tensors' shapes static. A callable taking the same arguments;
    gm's uncompiled runner on failure."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    kept = [k for k, a in enumerate(args)
            if isinstance(a, torch.Tensor) and k not in read_by_item]
    try:
        baked = _bake_numbers(gm, args, read_by_item)
        fake_mode = FakeTensorMode()
        inputs = [dynamo._unwrap(args[k], fake_mode) if torch._is_functional_tensor(args[k])
                  else fake_mode.from_tensor(args[k], static_shapes=True) for k in kept]
        with torch._guards.tracing(torch._guards.TracingContext(fake_mode)):
            fn = dynamo._compile_static(baked, inputs, fake_mode)
    except Exception as err:  # noqa: BLE001 -- never an error the user cannot act on
        return _uncompiled(gm, err)
    if len(kept) == len(args):
        return fn
    return lambda *call: fn(*[call[k] for k in kept])


def _bake_numbers(gm, args, read_by_item):
    """A copy of gm's graph (sharing its parameters) whose non-tensor placeholders are the
    call's values, used where they were used, and whose `.item()` reads of the inputs at
    `read_by_item` are the numbers read."""
    from torch import fx
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(args):
        raise ValueError(f"{len(placeholders)} graph inputs for {len(args)} arguments")
    values = {p: a for p, a in zip(placeholders, args) if not isinstance(a, torch.Tensor)}
    items = {u: args[k].item() for k in read_by_item for u in placeholders[k].users}
    graph, env = fx.Graph(), {}
    for node in gm.graph.nodes:
        if node in items:
            env[node] = items[node]
        elif node in values:
            env[node] = values[node]
        elif not (node.op == "placeholder" and placeholders.index(node) in read_by_item):
            env[node] = graph.node_copy(node, lambda n: env[n])
    return fx.GraphModule(gm, graph)


def _uncompiled(gm, err):
    """gm run as torch runs it, a counted fallback each call (see per_shape)."""
    name = (f"torch.compile graph with dynamic shapes lazyx could not specialize "
            f"({type(err).__name__})")
    if config.debug():
        import sys
        print(f"lazyx: {name}: {err}; it runs uncompiled (torch.compile(..., dynamic=False) "
              "compiles one graph per input shape from the start)", file=sys.stderr, flush=True)

    def run(*args):
        runtime.fallback(name, "torch")
        return gm(*args)
    return run
