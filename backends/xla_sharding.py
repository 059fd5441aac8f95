"""lazyx's framework-free shardings (core/sharding.py) as jax.sharding objects, and back.

A MeshSpec names its devices by id; the jax Mesh over those devices is built once per MeshSpec.
Buffers of a sharded program come back as NamedShardings over that mesh; `sharding_of` reads
them into a core Sharding, which becomes part of the data leaf (and so of the cache key).
"""
import contextlib
import functools

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from ..core.sharding import MeshSpec, Sharding


@functools.lru_cache(maxsize=64)
def jax_mesh(mesh):
    """The jax.sharding.Mesh for a MeshSpec."""
    by_id = {d.id: d for d in jax.devices()}
    missing = [i for i in mesh.device_ids if i not in by_id]
    if missing:
        raise ValueError(f"lazyx: {mesh!r} names devices {missing}, which JAX does not have "
                         f"(it has {len(by_id)}: ids {sorted(by_id)})")
    devices = np.array([by_id[i] for i in mesh.device_ids], dtype=object).reshape(mesh.shape)
    return Mesh(devices, mesh.axis_names)


@functools.lru_cache(maxsize=256)
def named(sharding):
    """The NamedSharding for a core Sharding."""
    return NamedSharding(jax_mesh(sharding.mesh), PartitionSpec(*sharding.spec))


def replicated(mesh):
    return named(Sharding(mesh, ()))


@functools.lru_cache(maxsize=64)
def mesh_spec(mesh):
    """The MeshSpec of a jax Mesh."""
    return MeshSpec(mesh.devices.shape, mesh.axis_names,
                    [d.id for d in mesh.devices.reshape(-1)])


@functools.lru_cache(maxsize=256)
def _from_jax(sharding):
    if isinstance(sharding, SingleDeviceSharding):
        return None
    if isinstance(sharding, NamedSharding):
        return Sharding(mesh_spec(sharding.mesh), tuple(sharding.spec))
    if sharding.is_fully_replicated:
        ids = [d.id for d in sharding._device_assignment]
        return Sharding(MeshSpec((len(ids),), ("devices",), ids), ())
    raise NotImplementedError(f"lazyx: a buffer with sharding {sharding} (not a NamedSharding); "
                              f"lay data out through lazyx.shard")


def sharding_of(buffer):
    """The core Sharding of a device buffer, or None when it lies on one device (or is no
    device buffer: a host array, or a test's placeholder leaf)."""
    sharding = getattr(buffer, "sharding", None)
    return None if sharding is None else _from_jax(sharding)


def shard_buffer(buffer, sharding):
    """`buffer` laid out as `sharding` (a core Sharding): moved between this process's devices,
    or, for a mesh spanning several processes, built from the (same) host value in each."""
    target = named(sharding)
    wide = buffer.dtype.itemsize == 8 and buffer.dtype.kind in "iufc"
    with jax.enable_x64(True) if wide else contextlib.nullcontext():
        if target.is_fully_addressable or isinstance(buffer, np.ndarray) or \
                not buffer.is_fully_addressable:
            return jax.device_put(buffer, target)
        host = np.asarray(buffer)
        return jax.make_array_from_callback(host.shape, target, lambda index: host[index])


def mesh_of(program, leaf_shardings):
    """The one mesh a program's shardings use (None: a single-device program)."""
    meshes = {s.mesh for s in leaf_shardings if s is not None}
    meshes |= {attrs["sharding"].mesh for op, attrs, *_ in program.instructions
               if op == "sharding_constraint"}
    if len(meshes) > 1:
        raise ValueError(f"lazyx: one graph uses shardings over different meshes "
                         f"({', '.join(sorted(map(repr, meshes)))}); lay all of its inputs out "
                         f"on one mesh")
    return meshes.pop() if meshes else None


def memory_per_device():
    """{device: bytes held by live jax.Arrays on it} for this process's devices."""
    totals = {}
    for array in jax.live_arrays():
        sharding = array.sharding
        nbytes = int(np.prod(sharding.shard_shape(array.shape))) * array.dtype.itemsize
        for device in sharding.addressable_devices:
            totals[str(device)] = totals.get(str(device), 0) + nbytes
    return totals


def build_mesh(shape, axis_names):
    """A jax Mesh of `shape` over the first prod(shape) devices (in the order XLA's topology
    helpers pick on TPU/GPU), or a ValueError naming the mesh and the devices there are."""
    devices = jax.devices()
    needed = int(np.prod(shape))
    if needed > len(devices):
        hint = (" (on CPU, simulate devices with XLA_FLAGS=--xla_force_host_platform_device_count"
                f"={needed} set before jax starts)" if devices[0].platform == "cpu" else "")
        raise ValueError(f"lazyx.distributed.mesh: a mesh of shape {tuple(shape)} with axes "
                         f"{tuple(axis_names)} needs {needed} devices, but JAX has "
                         f"{len(devices)} ({devices[0].platform}){hint}")
    from jax.experimental import mesh_utils
    try:
        grid = mesh_utils.create_device_mesh(tuple(shape), devices[:needed])
    except (ValueError, NotImplementedError, AssertionError):
        grid = np.array(devices[:needed], dtype=object).reshape(shape)
    return Mesh(grid, tuple(axis_names))


def place_replicated(value, target):
    """A single-device buffer or host array replicated as `target` (a NamedSharding) -- for a
    mesh spanning several processes, from the host value every process holds."""
    if target.is_fully_addressable:
        return jax.device_put(value, target)
    host = np.asarray(value)
    return jax.make_array_from_callback(host.shape, target, lambda index: host[index])
