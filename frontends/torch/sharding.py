"""The PyTorch spelling of lazyx's sharding (lazyx.shard / lazyx.distributed), after
PyTorch/XLA's `xs.mark_sharding`, plus sharding a module's parameters by name."""
import fnmatch

from ... import distributed


def mark_sharding(tensor, mesh, spec):
    """Lay a lazy tensor out over `mesh` by `spec` (one mesh axis name, tuple of names or None
    per dimension), in place; returns it. Parameters stay laid out so across steps, and so
    do the optimizer's states made from them."""
    return distributed.shard(tensor, mesh, spec)


def shard_parameters(module, mesh, rules, default=()):
    """Shard `module`'s parameters (and buffers) on the lazyx device by name: `rules` maps a
    glob pattern on the qualified name ("*.attn.c_attn.weight", "layers.*.fc1.*") to a
    partition spec; the first matching pattern wins. Names no pattern matches get `default`
    (() = replicated on every device of the mesh; None = left where they are). Returns
    {name: spec} of what was applied."""
    applied = {}
    tensors = list(module.named_parameters()) + list(module.named_buffers())
    for name, tensor in tensors:
        if tensor.device.type != "lazyx":
            raise ValueError(f"shard_parameters: {name} is on {tensor.device}; move the module "
                             f"to lt.device first (model.to(lt.device))")
        spec = next((s for pattern, s in rules.items() if fnmatch.fnmatchcase(name, pattern)),
                    default)
        if spec is None:
            continue
        # a parameter's `.data` shares its handle: the Parameter object itself is kept
        distributed.shard(tensor, mesh, spec)
        applied[name] = spec
    return applied
