"""Padding a varying dimension up to a few fixed sizes ("buckets").

A compiled program is specialized to its input shapes, so a dimension that changes from step
to step (a sequence length, a short last batch) compiles one program per size. Padded to the
next bucket, with a mask that says which elements are real, every size within a bucket runs
the same program: with power-of-two buckets, lengths 17..128 need three.

`lazyx.pad_to_bucket` takes a NumPy array (or anything np.asarray accepts) or a tensor of any
frontend, host or lazy; each frontend also has its own spelling (`lt.pad_to_bucket(t, dim)`,
`lnp.pad_to_bucket`, `ltf.pad_to_bucket`). Pad *before* a value becomes lazy (the batch from the
data loader), so the graph's input already has the bucket's shape.
"""
import operator

import numpy as np


def bucket_size(n, buckets=None):
    """The smallest bucket >= n: from `buckets` (sizes, any order), or the next power of two."""
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"pad_to_bucket: a size must be >= 0, got {n}")
    if buckets is None:
        return 1 if n <= 1 else 1 << (n - 1).bit_length()
    sizes = sorted(operator.index(b) for b in buckets)
    if not sizes or sizes[0] < 1:
        raise ValueError(f"pad_to_bucket: buckets must be positive sizes, got {list(buckets)}")
    for size in sizes:
        if size >= n:
            return size
    raise ValueError(f"pad_to_bucket: size {n} exceeds the largest bucket {sizes[-1]} "
                     f"(buckets {sizes})")


def suggest_buckets(seen):
    """Power-of-two buckets covering the sizes `seen`: what LAZYX_DEBUG proposes."""
    return tuple(sorted({bucket_size(n) for n in seen}))


def pad_plan(shape, axis, buckets=None):
    """(normalized axis, old size, padded size) for padding `shape` along `axis`."""
    ndim = len(shape)
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"pad_to_bucket: axis {axis} is out of bounds for a {ndim}-d value")
    axis %= ndim
    return axis, shape[axis], bucket_size(shape[axis], buckets)


def host_mask(shape, axis, size):
    """Boolean array of `shape`: True for the first `size` positions along `axis` (the real
    elements), False for the padding."""
    along = np.arange(shape[axis]) < size
    return np.broadcast_to(along.reshape([-1 if d == axis else 1 for d in range(len(shape))]),
                           shape).copy()


def pad_numpy(array, axis=-1, buckets=None, value=0):
    """(padded array, mask) for a NumPy array: see pad_to_bucket."""
    array = np.asarray(array)
    axis, size, target = pad_plan(array.shape, axis, buckets)
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, target - size)
    padded = np.pad(array, widths, constant_values=value) if target != size else array.copy()
    return padded, host_mask(padded.shape, axis, size)


def pad_to_bucket(tensor, axis=-1, buckets=None, value=0):
    """Pad `tensor` at the end of `axis` with `value` up to the next bucket size; returns
    (padded, mask), both of the tensor's kind, the mask boolean and of the padded shape (True
    where the data is real).

    buckets: the allowed sizes (e.g. (32, 64, 128)); None means powers of two. A size past the
    largest bucket is an error rather than a silent extra compile."""
    kind = type(tensor).__module__.split(".")[0]
    if kind == "torch":
        from ..frontends.torch import pad_to_bucket as torch_pad
        return torch_pad(tensor, axis, buckets, value)
    if kind in ("tensorflow", "keras", "tf_keras") or \
            type(tensor).__module__.startswith("lazyx.frontends.tf"):
        from ..frontends.tf import pad_to_bucket as tf_pad
        return tf_pad(tensor, axis, buckets, value)
    if type(tensor).__module__.startswith("lazyx.frontends.numpy"):
        from ..frontends.numpy import pad_to_bucket as numpy_pad
        return numpy_pad(tensor, axis, buckets, value)
    return pad_numpy(tensor, axis, buckets, value)
