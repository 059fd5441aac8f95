"""TF functions that take lazy values only as their materialized values: counted fallbacks.

Each hands a tensor to Python, to tf.data or to bytes, or maps a Python function over its rows, and
rebuilds a lazy tensor from TF components on the way (its TypeSpec's batching, or a graph
function's inputs) -- which a lazy value has no components for, so they raised deep inside
TF. They take no dispatch, so each is wrapped in its public namespace
(registry.fallback_undispatched): lazy inputs are materialized, TF's function runs, and
its results come back lazy.

tf.map_fn / vectorized_map are usually lazy: hooks._wrap_mapping wraps these wrappers and
runs the body per row (control_flow.py). What it leaves to TF -- over UNROLL_LIMIT rows, no
rows, a ragged or sparse fn_output_signature -- reaches the fallback registered here.
(tf.scan / foldl / foldr need none: TF's dispatch reaches registry's fallback for them.)

tf.py_function and tf.numpy_function used as decorators (`@tf.py_function(Tout=...)`) return
a function that calls TF's internal op, past the public name: `decorator_form` (applied by
hooks.py) makes that function call the public, wrapped name instead.

tf.switch_case takes no dispatch either, and refused a lazy index outright: its public name
is wrapped the same way, with a lowering (control_flow.switch_case: nested lazy conds).

tf.strings.format (what tf.print formats its inputs with) reads values to print them: an
observation, as print(x) is -- a sync whose cause is "print", not a counted fallback.
"""
import functools

import tensorflow as tf

from . import control_flow
from .registry import fallback_undispatched, lower, lower_undispatched
from .tape_bridge import to_tf
from .tensor import LazyTensor

lower_undispatched(tf, "switch_case")(control_flow.switch_case)

for _namespace, _name in ((tf, "map_fn"), (tf, "vectorized_map"), (tf, "py_function"),
                          (tf, "numpy_function"),
                          (tf.data.Dataset, "from_tensor_slices"),
                          (tf.data.Dataset, "from_tensors"),
                          (tf.io, "serialize_tensor"),  # (a checkpoint or a tf.train.Example)
                          (tf.summary, "write")):  # (TensorBoard's scalar / histogram / image)
    fallback_undispatched(_namespace, _name)


@lower(tf.strings.format, lists=("inputs",))
def strings_format(template, inputs, placeholder="{}", summarize=3):
    def read(value):
        return to_tf(value, cause="print") if isinstance(value, LazyTensor) else value
    values = read(inputs) if isinstance(inputs, LazyTensor) else [read(v) for v in inputs]
    return tf.strings.format(template, values, placeholder=placeholder, summarize=summarize)


DECORATOR_FORMS = ((tf, "py_function"), (tf, "numpy_function"))


def decorator_form(public):
    """`public` (the wrapped tf.py_function or tf.numpy_function), whose decorator form's
    calls go through `public` too."""
    @functools.wraps(public)
    def call(func=None, inp=None, Tout=None, **kwargs):
        if func is not None:
            return public(func, inp, Tout, **kwargs)
        public(None, inp, Tout, **kwargs)  # TF's checks of a decorator's arguments

        def decorator(fun):
            @functools.wraps(fun)
            def wrapper(*args):
                return public(fun, inp=args, Tout=Tout, **kwargs)
            return wrapper
        return decorator
    return call
