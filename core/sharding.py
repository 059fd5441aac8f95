"""SPMD shardings described without any framework: a device mesh and a partition spec.

A `MeshSpec` is a mesh's shape, axis names and the ids of its devices in row-major order; a
`Sharding` is a MeshSpec plus a partition spec (per tensor dimension: None, one mesh axis name
or a tuple of them). Both are plain values with a process-independent hash, so they can be
node attributes (part of the graph key and of `graph_hash`, shown by `lazyx.ir_text`). The
XLA backend turns them into jax.sharding objects; the reference backend ignores them.

`annotate` is what `lazyx.shard` does to one lazy tensor: a pending value gets a
`sharding_constraint` node, a data leaf is laid out on the mesh (its buffer moves) and keeps
the sharding in its own attrs, so a later step reads its input sharding from the data itself.
"""
import math
import zlib

from . import ir, runtime


def _stable_hash(value):
    # str hashes are salted per process; graph_hash must be the same in every run
    if isinstance(value, str):
        return zlib.crc32(value.encode())
    if isinstance(value, tuple):
        return hash(tuple(_stable_hash(v) for v in value))
    return hash(value)


class MeshSpec:
    """A logical device mesh: `shape` (ints), `axis_names` (strs), `device_ids` (row-major)."""
    __slots__ = ("shape", "axis_names", "device_ids", "_hash")

    def __init__(self, shape, axis_names, device_ids):
        self.shape = tuple(int(n) for n in shape)
        self.axis_names = tuple(axis_names)
        self.device_ids = tuple(int(i) for i in device_ids)
        self._hash = _stable_hash(("mesh", self.shape, self.axis_names, self.device_ids))

    @property
    def size(self):
        return math.prod(self.shape)

    def axis_size(self, name):
        return self.shape[self.axis_names.index(name)]

    def __eq__(self, other):
        return isinstance(other, MeshSpec) and (self.shape, self.axis_names, self.device_ids) \
            == (other.shape, other.axis_names, other.device_ids)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        axes = ", ".join(f"{name}={n}" for name, n in zip(self.axis_names, self.shape))
        default = self.device_ids == tuple(range(self.size))
        return f"mesh({axes})" if default else f"mesh({axes}; devices {list(self.device_ids)})"


def _entry_text(entry):
    if entry is None:
        return "None"
    if isinstance(entry, tuple):
        return "(" + ", ".join(entry) + ")"
    return entry


class Sharding:
    """How one value is laid out: a MeshSpec and one partition entry per dimension (trailing
    Nones dropped, so ("data",) and ("data", None) are the same sharding)."""
    __slots__ = ("mesh", "spec", "_hash")

    def __init__(self, mesh, spec):
        spec = tuple(tuple(e) if isinstance(e, list) else e for e in spec)
        spec = tuple((e[0] if len(e) == 1 else e) if isinstance(e, tuple) else e for e in spec)
        while spec and (spec[-1] is None or spec[-1] == ()):
            spec = spec[:-1]
        self.mesh = mesh
        self.spec = tuple(None if e == () else e for e in spec)
        self._hash = _stable_hash(("sharding", mesh._hash,
                                   tuple("\0" if e is None else e for e in self.spec)))

    def axes(self, dim):
        """The mesh axes dimension `dim` is split over (a tuple, maybe empty)."""
        entry = self.spec[dim] if dim < len(self.spec) else None
        return () if entry is None else entry if isinstance(entry, tuple) else (entry,)

    def __eq__(self, other):
        return isinstance(other, Sharding) and self.mesh == other.mesh and self.spec == other.spec

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"({', '.join(_entry_text(e) for e in self.spec)}) on {self.mesh!r}"


def _mesh_text(mesh):
    return ", ".join(f"{name!r}: {n}" for name, n in zip(mesh.axis_names, mesh.shape))


def make_sharding(mesh, spec, shape, what="lazyx.shard"):
    """A validated Sharding of a value of `shape` over `mesh` (a MeshSpec): errors name the
    value's shape and the mesh, at the call that asked for the layout."""
    if spec is None:
        spec = ()
    elif isinstance(spec, str):
        spec = (spec,)
    spec = tuple(spec)
    where = f"{what}: tensor of shape {tuple(shape)} on mesh {{{_mesh_text(mesh)}}}"
    if len(spec) > len(shape):
        raise ValueError(f"{where}: partition spec {spec} has {len(spec)} entries but the tensor "
                         f"has {len(shape)} dimension(s)")
    used = []
    for dim, entry in enumerate(spec):
        names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        split = 1
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"{where}: partition spec entries are None, a mesh axis name or "
                                f"a tuple of names; got {entry!r} for dimension {dim}")
            if name not in mesh.axis_names:
                raise ValueError(f"{where}: dimension {dim} names mesh axis {name!r}, which is "
                                 f"not in the mesh (axes: {', '.join(mesh.axis_names)})")
            if name in used:
                raise ValueError(f"{where}: mesh axis {name!r} is used by more than one "
                                 f"dimension in {spec}")
            used.append(name)
            split *= mesh.axis_size(name)
        if shape[dim] % split:
            raise ValueError(f"{where}: dimension {dim} (size {shape[dim]}) is not divisible by "
                             f"its mesh axes {' x '.join(names)} ({split} devices)")
    return Sharding(mesh, spec)


def annotate(handle, sharding):
    """Lay the value behind `handle` out as `sharding` (a Sharding), in place."""
    from .ops import sharding_constraint
    activate()
    node = handle.node
    if node.op == "data":
        if node.attrs.get("sharding") == sharding:
            return
        buffer = runtime.get_backend().shard(node.value, sharding)
        handle.set(ir.data(buffer, node.shape, node.dtype, source=node.source,
                           sharding=sharding))
    else:
        handle.set(sharding_constraint(node, sharding=sharding))


def activate():
    """From the first mesh on, data leaves record their buffer's layout (ir.LAYOUT_OF); until
    then a plain single-device run pays nothing for sharding."""
    if ir.LAYOUT_OF[0] is None:
        ir.LAYOUT_OF[0] = getattr(runtime.get_backend(), "sharding_of", None) or _no_layout


def _no_layout(buffer):
    return None
