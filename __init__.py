"""lazyx: eager-looking lazy tensors for PyTorch, NumPy and TensorFlow, compiled by XLA.

Importing lazyx imports neither torch, tensorflow nor jax; frontends and the XLA backend load
their framework when first used.
"""
from .core.metrics import metrics, metrics_report, reset_metrics
from .core.runtime import backend, graph_hash, sync

__all__ = ["sync", "backend", "graph_hash", "metrics", "metrics_report", "reset_metrics"]
__version__ = "0.1.0"
