"""TF functions that take lazy values only as their materialized values: counted fallbacks.

Each maps a Python function over a tensor's rows or hands it to Python or to tf.data, and
rebuilds a lazy tensor from TF components on the way (its TypeSpec's batching, or a graph
function's inputs) -- which a lazy value has no components for, so they raised deep inside
TF. They take no dispatch, so each is wrapped in its public namespace
(registry.fallback_undispatched): lazy inputs are materialized, TF's function runs, and
its results come back lazy.
"""
import tensorflow as tf

from .registry import fallback_undispatched

for _namespace, _name in ((tf, "map_fn"), (tf, "vectorized_map"), (tf, "py_function"),
                          (tf.data.Dataset, "from_tensor_slices"),
                          (tf.data.Dataset, "from_tensors")):
    fallback_undispatched(_namespace, _name)
