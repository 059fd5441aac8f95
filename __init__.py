"""lazyx: eager-looking lazy tensors for PyTorch, NumPy and TensorFlow, compiled by XLA.

Importing lazyx imports neither torch, tensorflow nor jax; frontends and the XLA backend load
their framework when first used.
"""
from .core import dump as _dump, explain as _explain
from .core.buckets import pad_to_bucket
from .core.debug import ir_text, render, to_dot
from .core.explain import analysis, explain
from .core.metrics import metrics, metrics_report, reset_metrics
from .core.replay import CompileError, compile  # noqa: A004
from .core.runtime import backend, graph_hash, sync
from .core.timeline import profile
from . import distributed
from .distributed import shard

__all__ = ["sync", "backend", "graph_hash", "metrics", "metrics_report", "reset_metrics",
           "ir_text", "to_dot", "render", "explain", "analysis", "profile", "pad_to_bucket",
           "shard", "distributed", "compile", "CompileError"]
__version__ = "0.1.0"

# LAZYX_DEBUG / LAZYX_DUMP_DIR: their listeners are registered only when the variable is set.
_explain.install_from_env()
_dump.install_from_env()
