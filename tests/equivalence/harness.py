"""Runs a corpus program through one frontend, lazily or eagerly, and returns NumPy results."""
import importlib

import numpy as np

import lazyx

FRONTENDS = ("numpy", "torch", "tf")


def framework(frontend):
    """The framework module the programs are written against."""
    return importlib.import_module({"numpy": "numpy", "torch": "torch", "tf": "tensorflow"}[frontend])


def available(frontend):
    try:
        framework(frontend)
        importlib.import_module(f"lazyx.frontends.{frontend}")
    except ImportError:
        return False
    return True


def _lazy_inputs(frontend, arrays):
    if frontend == "numpy":
        import lazyx.frontends.numpy as lnp
        return [lnp.asarray(a) for a in arrays]
    if frontend == "torch":
        import torch
        import lazyx.frontends.torch as lt
        return [torch.from_numpy(a).to(lt.device) for a in arrays]
    import lazyx.frontends.tf as ltf
    return [ltf.constant(a) for a in arrays]


def _eager_inputs(frontend, arrays):
    if frontend == "numpy":
        return [a.copy() for a in arrays]
    if frontend == "torch":
        import torch
        return [torch.from_numpy(a.copy()) for a in arrays]
    import tensorflow as tf
    return [tf.constant(a) for a in arrays]


def to_numpy(frontend, value):
    if frontend == "torch":
        return value.detach().cpu().numpy()
    if frontend == "tf":
        return np.asarray(value.numpy())
    return np.asarray(value)


def run_lazy(program, frontend, arrays):
    """(graph hash, result as NumPy, result dtype name) of the lazy version."""
    fn = getattr(program, frontend)
    out = fn(framework(frontend), *_lazy_inputs(frontend, arrays))
    digest = lazyx.graph_hash(out)
    result = to_numpy(frontend, out)
    return digest, result


def run_eager(program, frontend, arrays):
    fn = getattr(program, frontend)
    return to_numpy(frontend, fn(framework(frontend), *_eager_inputs(frontend, arrays)))


def max_error(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a - b))) if a.size else 0.0
