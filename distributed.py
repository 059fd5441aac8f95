"""Scale out: device meshes, shardings and multi-process start-up.

    mesh = lazyx.distributed.mesh((4, 2), ("data", "model"))   # a jax.sharding.Mesh inside
    lazyx.shard(x, mesh, ("data", None))                       # any frontend's lazy tensor

A sharding is an annotation in the lazyx graph; the XLA backend compiles the graph with its
input shardings and sharding constraints, XLA's SPMD partitioner inserts the collectives, and
JAX runs the program on every device of the mesh (every process, after `initialize`). The
reference backend accepts the same annotations and computes the same numbers on one device.
Importing this module imports no framework; jax is loaded when a mesh is made.
"""
import math

from .core import runtime
from .core.sharding import MeshSpec, Sharding, annotate, make_sharding


class Mesh:
    """A named grid of devices: `shape`, `axis_names`, `device_ids` (row-major), and
    `jax_mesh`, the jax.sharding.Mesh itself (None where jax is not installed: the reference
    backend then simulates the devices)."""

    def __init__(self, spec, jax_mesh=None):
        self.spec = spec
        self.jax_mesh = jax_mesh

    shape = property(lambda self: self.spec.shape)
    axis_names = property(lambda self: self.spec.axis_names)
    device_ids = property(lambda self: self.spec.device_ids)
    size = property(lambda self: self.spec.size)

    def __repr__(self):
        axes = ", ".join(f"{name!r}: {n}" for name, n in zip(self.axis_names, self.shape))
        return f"lazyx.distributed.Mesh({{{axes}}}, devices {list(self.device_ids)})"

    def __eq__(self, other):
        return isinstance(other, Mesh) and self.spec == other.spec

    def __hash__(self):
        return hash(self.spec)


def _jax_available():
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


def mesh(shape, axis_names):
    """A device mesh of `shape` (ints) with one name per axis, over the first prod(shape)
    JAX devices -- across every process after `initialize`. Raises ValueError when there are
    fewer devices than the mesh needs."""
    shape = tuple(shape) if not isinstance(shape, int) else (shape,)
    axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    what = f"lazyx.distributed.mesh({shape}, {axis_names})"
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape):
        raise ValueError(f"{what}: the shape must be positive ints")
    if len(shape) != len(axis_names):
        raise ValueError(f"{what}: {len(shape)} mesh dimension(s) but {len(axis_names)} name(s)")
    if not all(isinstance(a, str) and a for a in axis_names) or \
            len(set(axis_names)) != len(axis_names):
        raise ValueError(f"{what}: axis names must be distinct non-empty strings")
    if _jax_available():
        from .backends.xla_sharding import build_mesh, mesh_spec
        jax_mesh = build_mesh(shape, axis_names)
        return Mesh(mesh_spec(jax_mesh), jax_mesh)
    if runtime.backend() != "reference":
        raise ImportError("lazyx.distributed.mesh needs jax: pip install 'lazyx[xla]'")
    return Mesh(MeshSpec(shape, axis_names, range(math.prod(shape))))  # simulated devices


def _mesh_spec(mesh):
    if isinstance(mesh, Mesh):
        return mesh.spec
    if isinstance(mesh, MeshSpec):
        return mesh
    if type(mesh).__module__.startswith("jax"):  # a jax.sharding.Mesh made by the user
        from .backends.xla_sharding import mesh_spec
        return mesh_spec(mesh)
    raise TypeError(f"lazyx.shard: mesh must be a lazyx.distributed.mesh(...) or a "
                    f"jax.sharding.Mesh, got {type(mesh).__name__}")


def shard(tensor, mesh, spec):
    """Lay `tensor` (a lazy tensor of any frontend) out over `mesh`: `spec` has one entry per
    leading dimension -- a mesh axis name, a tuple of names, or None (not split); missing
    trailing entries are None, so () replicates. In place: a pending value gets a sharding
    constraint in its graph, realized data moves to its devices. Returns `tensor`."""
    handle = runtime.handle_of(tensor)
    annotate(handle, make_sharding(_mesh_spec(mesh), spec, handle.node.shape))
    return tensor


def sharding_of(tensor):
    """The Sharding `tensor` has (realized data) or is constrained to (pending), or None for
    a value on one device."""
    node = runtime.handle_of(tensor).node
    if node.op in ("data", "sharding_constraint"):
        return node.attrs.get("sharding")
    return None


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, **kwargs):
    """Join a multi-process run: `jax.distributed.initialize` with the same arguments (on
    Cloud TPU and SLURM/Open MPI clusters they can all be left out). Call it first, before
    any lazyx or JAX work: afterwards `mesh` spans the devices of every process."""
    import jax
    jax.distributed.initialize(coordinator_address, num_processes, process_id,
                               local_device_ids, **kwargs)


def device_count():
    """Devices across every process (jax.device_count())."""
    import jax
    return jax.device_count()


def process_index():
    import jax
    return jax.process_index()


def process_count():
    import jax
    return jax.process_count()


__all__ = ["Mesh", "Sharding", "mesh", "shard", "sharding_of", "initialize", "device_count",
           "process_index", "process_count"]
