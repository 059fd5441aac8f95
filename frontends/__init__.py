"""Frontends: lazy tensors for PyTorch, NumPy and TensorFlow over the shared core."""
