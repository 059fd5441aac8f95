"""Every change lazyx makes to TensorFlow's global state, in one place.

TensorFlow has public extension points for new tensor types, and lazyx uses only those
to install itself; each acts on lazyx's own values alone, so TF code in the same process
that never touches lazyx runs exactly as without it (tests/frontends/tf/test_isolation.py
runs a plain TF + Keras program with and without `import lazyx.frontends.tf` and compares).

Checked against tensorflow-cpu 2.21.0 and keras 3 (the versions constraints.txt pins).

Installed here, once:
  tf.register_tensor_conversion_function(LazyTensor)   a lazy value converted implicitly
      is refused, which routes the call to the global dispatcher below (registry.py);
      only LazyTensor is registered.
  GlobalOpDispatcher (registry._Fallback)   TF calls it for an API whose arguments could
      not be converted; it answers NOT_SUPPORTED unless a lazy value is among them.
  dispatch.register_dispatchable_type(LazyVariable, keras' TF Variable)   a TF API whose
      only lazy operand is a variable holding a lazy value dispatches to its lowering; for
      a variable holding none, the lowering's dispatch target calls TF's own API.

  keras.src.backend.tensorflow.nn.conv is wrapped: for a lazy input it calls tf.nn.convolution
      directly. Keras runs a grouped convolution (ConvNeXt's depthwise 7x7 as Conv2D with
      groups) inside a `tf.function(jit_compile=True)` it builds per call, where a lazy input
      meets a graph tensor and nothing can be lazy; tf.nn.convolution itself takes groups.
      Any other input goes to Keras' own function unchanged.

  tensorflow.python.ops.custom_gradient._eager_mode_decorator is wrapped: a call of a
      tf.custom_gradient function with a lazy argument gets its gradient function on the IR
      (custom_gradients.py); any other call goes to TF's own decorator unchanged.

  keras.src.backend.rnn is wrapped: for a lazy input it runs Keras' own loop with
      unroll=True. Keras' TF backend loops over time with tf.while_loop over TensorArrays,
      which take no lazy value (LSTM, GRU, SimpleRNN, Bidirectional raised TypeError); a
      lazy tensor's time dimension is always static, so the unrolled loop is one graph, the
      same numbers as eager TF. Any other input goes to Keras' own function unchanged.

  keras.src.backend.tensorflow.core.cond is wrapped, and tf.compat.v1.cond (which tf.cond
      calls) gets a dispatch target, for a lazy predicate (Keras hands `smart_cond` only
      tensors or bools, so `ops.cond` on a lazy value was a TypeError): both branches are
      traced and their results and variable assigns selected (control_flow.py).
  keras.src.backend.tensorflow.numpy.divide is wrapped: tf.IndexedSlices with lazy values
      divided by a dense tensor (RMSprop's and Adagrad's update of an Embedding's gradient)
      skips Keras' tf.cond on "has the divisor a zero row", which reads it -- a sync a step
      (control_flow.divide_slices); any other call is Keras' own.
  keras.src.backend.tensorflow.numpy.gcd is wrapped (keras.ops.gcd, and lcm, which calls it):
      with a lazy operand its tf.while_loop, which ran eagerly, is unrolled
      (api_bitwise.keras_gcd); any other call is Keras' own. Its nanquantile too (nanmedian
      and nanpercentile call it): a lazy call sorts NaNs last instead of boolean_mask, a sync
      (keras_nanquantile.py). And argpartition: its tf.where + scatter, a sync, is a select
      (keras_argpartition.py). And histogram: its boolean_mask, a sync, becomes zero
      updates for the values outside the range (keras_histogram.py).
  BaseResourceVariable.assign/assign_add/assign_sub and the scatters lazyx does not already
      wrap: while a lazy cond's branch is traced (control_flow.py), a write to a plain
      variable makes it lazy-aware first, so the write is recorded instead of reaching
      TF's buffer (it could not be undone); every other call is TF's own.

  ResourceVariable._init_from_args is wrapped: tf.Variable(lazy value) is made from zeros
      and assigned the lazy value (its shadow), instead of reading it on the host.

  Function._list_all_concrete_functions_for_serialization and get_concrete_function,
      ConcreteFunction.__call__ and saved_model.save.save_and_return_nodes are wrapped
      (saved_functions.py): a function saved after lazy calls only traces their signatures
      first; get_concrete_function traces a lazy example as its TensorSpec; a concrete (or
      restored) function called with lazy arguments runs on their values, a counted
      fallback; a save stores the variables' pending lazy values first. Calls without
      lazy values go to TF unchanged (but for that store, as a tf.function call's).

  Function.__call__ (tensorflow/python/eager/polymorphic_function) is wrapped: a
      tf.function called with lazy arguments runs its Python function on them, as TF's
      run_functions_eagerly mode does (control_flow.function_call; a lazy value cannot
      enter a TF graph). Keras' own tf.functions and a body creating a variable run TF's
      graph on the materialized values instead -- a counted fallback "tf.function(<name>)".
      Calls without lazy arguments go to TF unchanged.

  tf.map_fn / vectorized_map / scan / foldl / foldr (public names in `tf`) and Keras' TF
      backend map / scan are wrapped: with lazy elements and a static trip count the Python
      body runs per element and the results are stacked (control_flow.py); TF loops over
      TensorArrays or traces a graph, which a lazy value cannot enter. Other calls go to the
      function found there (TF's, Keras', or registry's counted fallback).

  tf.convert_to_tensor gets a dispatch target for tf.IndexedSlices (indexed_slices.densify):
      IndexedSlices with lazy values or indices (ltf.GradientTape's gradient of a gather)
      are summed lazily; for any other it answers NotImplemented and TF converts as ever.

  BaseResourceVariable.scatter_add / _sub / _update / _max / _min / _mul are wrapped: with
      IndexedSlices holding lazy values (Keras' optimizers write a sparse gradient so), the
      scatter is recorded as the variable's new lazy value (variables.scatter_lazily; the
      variable becomes lazy-aware, as on a lazy assign); every other call is TF's own.

  tensor_array_ops._EagerTensorArray._write / stack are wrapped: a lazy value written to an
      eager tf.TensorArray (a hand-written RNN loop's `ta.write(t, h)`) is checked by TF's
      own write on zeros of its shape and dtype (TF's errors), then kept as it is; stack of
      an array holding one is tf.stack, lazy. TF converted both to an EagerTensor (refused:
      TypeError deep in TF). Other values and arrays go to TF's own methods.

  einops (not a dependency; checked against einops 0.8.2) picks a backend among the
      subclasses of einops._backends.AbstractBackend whose framework_name is imported; its
      TensorflowBackend takes tf.Tensor alone ("Tensor type unknown to einops" for a lazy
      one). A subclass of it for LazyTensor is defined when einops._backends is imported: at
      install() if it already is, else when it is (core/after_import.py, which the NumPy
      frontend's backend waits on too). einops is never imported here.

  registry.UNDISPATCHED: a TF function with no dispatch hook at all is replaced, in its
      public namespace, by a wrapper that lowers lazy inputs and calls the original for
      anything else: tf.linalg.slogdet (a generated op), tf.signal.rfft/irfft and their
      2-D/3-D forms (they convert their input before anything can dispatch). TF's own
      internal callers of those functions are unaffected.

  registry.DIRECT: every public name (tf and tf.compat.v1) of an element-wise API lowered
      with a `direct` form (tf.tanh, tf.math.add, ...) is replaced by a wrapper that takes a
      lazy operand straight to the lowering (TF's eager fast path and type-based dispatch
      cost a lazy tf.tanh 5.6 of its 8.5 us) and calls TF's function for anything else.
      A variable holding a lazy value (a shadow) is a lazy operand too: TF's eager fast path
      of a generated op (tf.maximum) would read it, a sync.

  tf.py_function / tf.numpy_function (already wrapped as above) are wrapped again for their
      decorator form, whose function called TF's internal op past the public name
      (api_eager_only.decorator_form); any other call is the wrapper's.

  Every other lowered API that is a generated op (tf.tile, tf.nn.l2_loss, tf.linalg.det;
      registry.lazy_operand_wrapper) gets the same treatment for its public names: a call
      with a lazy operand or a shadowed variable goes to its lowering's dispatch target; so
      does one of tf.einsum (registry.VARARG_APIS), which calls a generated op before any
      conversion could fail and bring TF's fallback dispatch.

  tf.SparseTensor.__init__ is wrapped: components holding a lazy value are materialized
      (a counted fallback named tf.SparseTensor); any other call is TF's own constructor.

Registered where the lowerings are (registry.lower): `tf.experimental.dispatch_for_api`
per lowered API, for signatures that name LazyTensor or a variable type. (TF matches an
operand through the annotation's class: the lazy variables' marker class is named in the
signature itself, or a shadowed tf.Variable would match as a plain, undispatchable one.)

Reached by TF internals, and so re-read on a TF upgrade:
  registry._as_api shares TF's private dispatch._TYPE_BASED_DISPATCH_SIGNATURES entry of an
      API with the wrapper that replaces its public names (dispatch_for_api indexes it by
      the object it is given), and marks the wrapper an AutoGraph artifact.
  tensor.framework_request walks the stack past lazyx and `tensorflow/python/util` (TF's
      dispatch wrappers) to tell a conversion the user asked for (an observation) from one
      TF's or Keras' own code asked for (kept lazy, or counted as a fallback).
  registry._refuse_implicit_conversion walks up to 8 frames to recognise
      `resource_variable_ops` assigning a lazy value (the assign has no dispatch hook).
  tensor._GradientHook.replace_gradient_components asks whether its caller is
      `custom_gradient` (tf.distribute's all-reduce) or `tape.gradient`.
  variables._lazy_class swaps one variable's __class__ for a subclass when a lazy value
      is first assigned to it -- that variable only -- and compares the refcount of its
      handle with a free handle's (measured at import) to know whether anything else
      holds the buffer.
"""
import functools
import inspect

import tensorflow as tf
from tensorflow.python.util import dispatch, tf_decorator

from ...core import runtime
from ...core.after_import import after_import
from . import (api_bitwise, api_eager_only, api_random, control_flow, indexed_slices, registry,
               saved_functions, variables)
from . import keras_argpartition as keras_argpartitions
from . import keras_histogram as keras_histograms
from . import keras_nanquantile as keras_nanquantiles
from .tensor import LazyTensor

_installed = []


def install():
    """Install the hooks (once; importing the TF frontend calls this)."""
    if _installed:
        return
    _installed.append(True)
    tf.register_tensor_conversion_function(LazyTensor, registry._refuse_implicit_conversion)
    registry.FALLBACK.register()
    dispatch.register_dispatchable_type(variables.LazyVariable)
    if variables._KerasTFVariable is not None:
        dispatch.register_dispatchable_type(variables._KerasTFVariable)
    for (namespace, name), lowering in registry.UNDISPATCHED.items():
        wrapper = registry.undispatched_wrapper(getattr(namespace, name), lowering)
        if isinstance(inspect.getattr_static(namespace, name), staticmethod):
            wrapper = staticmethod(wrapper)  # tf.data.Dataset.from_tensor_slices
        setattr(namespace, name, wrapper)
    for namespace, name in api_eager_only.DECORATOR_FORMS:
        setattr(namespace, name, api_eager_only.decorator_form(getattr(namespace, name)))
    for api, (operator, arity) in registry.DIRECT.items():
        wrapper = registry.direct_wrapper(api, operator, arity)
        for namespace, name in _public_names(api):
            setattr(namespace, name, wrapper)
    for api, target in list(registry.TARGETS.items()):
        if api not in registry.DIRECT and registry.is_generated_op(api):
            wrapper = registry.lazy_operand_wrapper(api, target)
            for namespace, name in _public_names(api):
                setattr(namespace, name, wrapper)
    for api in registry.VARARG_APIS:
        wrapper = registry.lazy_operand_wrapper(
            api, lambda *args, _api=api, **kwargs: registry.FALLBACK.handle(_api, args, kwargs))
        for namespace, name in _public_names(api):
            setattr(namespace, name, wrapper)
    _wrap_keras_conv()
    _wrap_keras_rnn()
    _wrap_custom_gradient()
    _wrap_jacobians()
    _wrap_output_gradients()
    _wrap_stop_recording()
    _wrap_checkpoints()
    _wrap_keras_cond()
    _wrap_keras_sparse_divide()
    _wrap_keras_gcd()
    _wrap_tf_function()
    _wrap_saved_functions()
    _wrap_mapping()
    _wrap_random_draws()
    _wrap_keras_seed_generators()
    # a tf.random.Generator with a lazy state (captured by lazyx.compile) draws TF's numbers
    tf.random.Generator.uniform = api_random.generator_uniform
    tf.random.Generator.normal = api_random.generator_normal
    tf.experimental.dispatch_for_api(tf.convert_to_tensor, {"value": tf.IndexedSlices})(
        indexed_slices.densify)
    _wrap_variable_scatters()
    _wrap_variable_init()
    _redirect_branch_writes()
    _wrap_tensor_arrays()
    _wrap_sparse_tensor()
    after_import("einops._backends", _einops_backend)


_EINOPS_BACKEND = []  # held here: einops finds it through __subclasses__, a weak reference


def _einops_backend(backends):
    """Define the einops backend for LazyTensor, a subclass einops finds on its own."""
    class LazyTensorflowBackend(backends.TensorflowBackend):
        framework_name = "lazyx.frontends.tf"  # not "tensorflow": one backend per name

        def is_appropriate_type(self, tensor):
            return isinstance(tensor, LazyTensor)

    _EINOPS_BACKEND.append(LazyTensorflowBackend)


def _wrap_sparse_tensor():
    """tf.SparseTensor built from lazy components (a CTC loss's labels from lazy dense ones)
    holds their materialized values: a counted fallback. A SparseTensor is TF's own type,
    which no lazy value can live in, and TF's constructor converted the components
    implicitly, which lazyx refuses: it raised a TypeError."""
    cls = tf.SparseTensor
    original = cls.__init__

    @functools.wraps(original)
    def __init__(self, indices, values, dense_shape):
        parts = (indices, values, dense_shape)
        if registry._has_lazy(parts):
            control_flow.untraceable("tf.SparseTensor")
            runtime.fallback("tf.SparseTensor", "tensorflow")
            indices, values, dense_shape = registry._materialize(parts)
        original(self, indices, values, dense_shape)
    cls.__init__ = __init__


def _wrap_tensor_arrays():
    from tensorflow.python.ops import tensor_array_ops
    cls = tensor_array_ops._EagerTensorArray
    write, stack = cls._write, cls.stack

    @functools.wraps(write)
    def _write(self, index, value):
        if not isinstance(value, LazyTensor):
            return write(self, index, value)
        write(self, index, tf.zeros(value.shape, value.dtype))  # TF's checks and growth
        self._tensor_array[int(index)] = value
        return None

    @functools.wraps(stack)
    def stack_lazily(self, name=None):
        if not any(isinstance(t, LazyTensor) for t in self._tensor_array):
            return stack(self, name)
        return tf.stack([self._maybe_zero(ix) for ix in range(len(self._tensor_array))])
    cls._write, cls.stack = _write, stack_lazily


def _redirect_branch_writes():
    from tensorflow.python.ops import resource_variable_ops
    from . import control_flow
    tf.experimental.dispatch_for_api(tf.compat.v1.cond, {"pred": LazyTensor})(
        control_flow.tf_cond)
    tf.experimental.dispatch_for_api(tf.cond, {"pred": LazyTensor})(control_flow.tf_cond_v2)
    # (tensorflow/python/ops/weak_tensor_ops.py gives ResourceVariable assign methods of its
    # own, calling the base class's as they were: both classes' are wrapped)
    for cls in (resource_variable_ops.BaseResourceVariable, resource_variable_ops.ResourceVariable):
        for name in ("assign", "assign_add", "assign_sub", *variables.STORED_FIRST):
            if name not in cls.__dict__:
                continue
            original = cls.__dict__[name]

            def method(self, *args, _original=original, _name=name, **kwargs):
                if control_flow.DEPTH[0] and control_flow.redirect_write(self):
                    return getattr(self, _name)(*args, **kwargs)  # the lazy-aware method
                return _original(self, *args, **kwargs)
            method.__name__, method.__wrapped__ = name, original
            setattr(cls, name, method)


def _wrap_variable_scatters():
    from tensorflow.python.ops import resource_variable_ops
    cls = resource_variable_ops.BaseResourceVariable
    for name in variables.SCATTER_MODES:
        original = getattr(cls, name)

        def method(self, sparse_delta, *args, _original=original, _name=name, **kwargs):
            if variables.scatter_lazily(self, _name, sparse_delta):
                return self
            return _original(self, sparse_delta, *args, **kwargs)
        method.__name__, method.__wrapped__ = name, original
        setattr(cls, name, method)


def _graph_call(original, lazy_call):
    """A __call__ for a class running TF graphs (tf.function, ConcreteFunction): `original`
    for calls without lazy values, after storing the pending shadows a graph may read (it
    reads the TF buffer with no Python on its way); `lazy_call(self, args, kwargs)` else."""
    def __call__(self, *args, **kwargs):
        if not (registry._has_lazy(args) or registry._has_lazy(kwargs)):
            if variables._SHADOWED:
                variables.store_captured()
            return original(self, *args, **kwargs)
        return lazy_call(self, args, kwargs)
    __call__.__wrapped__ = original
    return __call__


def _wrap_tf_function():
    from tensorflow.python.eager.polymorphic_function import polymorphic_function
    from . import control_flow
    function_class = polymorphic_function.Function
    original = function_class.__call__
    function_class.__call__ = _graph_call(
        original, lambda self, args, kwargs: control_flow.function_call(self, original, args,
                                                                        kwargs))


def _wrap_saved_functions():
    """tf.functions beside their graphs (saved_functions.py): a function listed for a
    SavedModel first traces the signatures of its lazy calls; a ConcreteFunction called with
    lazy arguments runs on their values (a counted fallback); get_concrete_function traces a
    lazy example argument as its TensorSpec; and a save first stores the variables' pending
    lazy values, as a checkpoint's does."""
    from tensorflow.python.eager.polymorphic_function import concrete_function
    from tensorflow.python.eager.polymorphic_function import polymorphic_function
    from tensorflow.python.saved_model import save
    function_class = polymorphic_function.Function
    listing = function_class._list_all_concrete_functions_for_serialization
    get_concrete = function_class.get_concrete_function

    @functools.wraps(listing)
    def list_for_serialization(self):
        saved_functions.trace_remembered(self)
        return listing(self)

    @functools.wraps(get_concrete)
    def get_concrete_function(self, *args, **kwargs):
        if registry._has_lazy(args) or registry._has_lazy(kwargs):
            args, kwargs = saved_functions.as_specs(args), saved_functions.as_specs(kwargs)
        return get_concrete(self, *args, **kwargs)
    function_class._list_all_concrete_functions_for_serialization = list_for_serialization
    function_class.get_concrete_function = get_concrete_function

    concrete_class = concrete_function.ConcreteFunction
    call = concrete_class.__call__
    concrete_class.__call__ = _graph_call(call, lambda self, args, kwargs: registry.run_eagerly(
        functools.partial(call, self), args, kwargs,
        name=f"ConcreteFunction({saved_functions.name_of(self)})"))

    save_nodes = save.save_and_return_nodes  # what tf.saved_model.save (and Keras' export) call

    @functools.wraps(save_nodes)
    def save_and_return_nodes(*args, **kwargs):
        variables.write_back(cause="explicit")
        return save_nodes(*args, **kwargs)
    save.save_and_return_nodes = save_and_return_nodes


def _wrap_mapping():
    """tf.map_fn / vectorized_map / scan / foldl / foldr and Keras' TF backend map / scan: with
    lazy elements (or a lazy initializer) and a static trip count the Python body runs per
    element and the results are stacked (control_flow.py); anything else is the function
    found here (TF's own, or for map_fn / vectorized_map the counted fallback registry put
    in its place)."""
    from tensorflow.python.autograph.impl.api import autograph_artifact
    from . import control_flow

    def wrapper(original, lazy):
        @functools.wraps(original)
        def call(*args, **kwargs):
            out = lazy(*args, **kwargs)
            return original(*args, **kwargs) if out is control_flow.NOT_LAZY else out
        return autograph_artifact(call)  # (inside a tf.function: called as is, not converted)
    for name in ("map_fn", "vectorized_map", "scan", "foldl", "foldr"):
        setattr(tf, name, wrapper(getattr(tf, name), getattr(control_flow, name)))
    try:
        from keras.src.backend.tensorflow import core as keras_tf_core
    except ImportError:  # pragma: no cover - keras is optional
        return
    for name, lazy in (("map", control_flow.keras_map), ("scan", control_flow.keras_scan)):
        # (Keras' own function cannot take a lazy value: a too long or empty one runs it on
        # the materialized values, a counted fallback)
        keras_fn = getattr(keras_tf_core, name)
        fallback = functools.partial(lambda keras_fn, name, *args, **kwargs: (
            registry.run_eagerly(keras_fn, args, kwargs, name=f"keras.ops.{name}")
            if registry._has_lazy([args, kwargs]) else keras_fn(*args, **kwargs)),
            keras_fn, name)
        setattr(keras_tf_core, name, wrapper(fallback, lazy))


# TF's stateful random ops, by the generated function its Python APIs call (random_ops,
# stateful_random_ops, nn's dropout, tf.image's random_*): each draw changes TF's own state
_RANDOM_DRAWS = {
    "gen_random_ops": ("random_standard_normal", "random_uniform", "random_uniform_int",
                       "truncated_normal", "parameterized_truncated_normal", "multinomial",
                       "random_shuffle", "random_gamma", "random_poisson",
                       "random_poisson_v2"),
    "gen_stateful_random_ops": ("stateful_standard_normal", "stateful_standard_normal_v2",
                                "stateful_truncated_normal", "stateful_uniform",
                                "stateful_uniform_full_int", "stateful_uniform_int",
                                "stateful_random_binomial", "rng_read_and_skip", "rng_skip",
                                "non_deterministic_ints"),
}


def _wrap_random_draws():
    """While lazyx.compile traces a step, TF's own draws with host inputs (tf.random.normal,
    uniform, truncated_normal, gamma, poisson, with or without an op seed; tf.nn.dropout) are
    run-time parameters a replay asks TF for again (api_random.compiled_draw). Any other draw
    of TF's own random numbers (of a lazy tensor: a categorical of lazy logits, a shuffle)
    keeps the step lazy: TF runs it eagerly, so its result would enter the program as a
    constant and every replay would reuse the traced call's noise (a VAE's eps, silently).
    Outside a trace: TF's own."""
    import importlib
    import inspect
    import sys
    from ...core import capture
    for module_name, names in _RANDOM_DRAWS.items():
        module = importlib.import_module(f"tensorflow.python.ops.{module_name}")
        for name in names:
            original = getattr(module, name, None)
            if original is None:
                continue

            def draw(*args, _original=original, _name=name, **kwargs):
                if capture.current() is not None:
                    try:
                        bound = inspect.signature(_original).bind(*args, **kwargs)
                    except TypeError:
                        bound = None
                    out = bound and api_random.compiled_draw(_name, _original, bound,
                                                             sys._getframe(1))
                    if out is not None:
                        return out
                    capture.host_read(f"TF's own random numbers ({_name}, drawn by its "
                                      f"kernel from a lazy input), which a replay would not "
                                      f"draw again (draws from host inputs, and keras.random, "
                                      f"are replayed)")
                return _original(*args, **kwargs)
            functools.update_wrapper(draw, original)  # (sets __wrapped__)
            setattr(module, name, draw)


def _wrap_keras_seed_generators():
    """While lazyx.compile traces a step, Keras' global SeedGenerator (keras.random's, for a
    draw without a seed), which the step does not capture, hands out its seeds as run-time
    parameters a replay asks it for again (api_random.uncaptured_seed): its traced seed was
    baked in, and every replay drew the traced call's numbers. Outside a trace: Keras' own."""
    try:
        from keras.src.random.seed_generator import SeedGenerator
    except ImportError:  # pragma: no cover - keras is optional
        return
    from ...core import capture
    original = SeedGenerator.next

    def next_seed(self, ordered=True):
        if capture.current() is not None:
            out = api_random.uncaptured_seed(self, ordered, original)
            if out is not None:
                return out
        return original(self, ordered)
    functools.update_wrapper(next_seed, original)
    SeedGenerator.next = next_seed


def _public_names(api):
    """(namespace, attribute) pairs under which tf and tf.compat.v1 export `api` itself."""
    target = tf_decorator.unwrap(api)[1]
    out = []
    for root, names in ((tf, getattr(target, "_tf_api_names", ())),
                        (tf.compat.v1, getattr(target, "_tf_api_names_v1", ()))):
        for path in names:
            *parents, name = path.split(".")
            namespace = root
            for part in parents:
                namespace = getattr(namespace, part, None)
            if namespace is not None and getattr(namespace, name, None) is api:
                out.append((namespace, name))
    return out


def _wrap_keras_conv():
    try:
        from keras.src import backend as keras_backend
        from keras.src.backend.tensorflow import nn as keras_tf_nn
    except ImportError:  # pragma: no cover - keras is optional
        return
    keras_conv = keras_tf_nn.conv

    def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
        if not isinstance(inputs, LazyTensor):
            return keras_conv(inputs, kernel, strides, padding, data_format, dilation_rate)
        data_format = keras_backend.standardize_data_format(data_format)
        return tf.nn.convolution(
            inputs, kernel, strides, padding.upper(),
            data_format=keras_tf_nn._convert_data_format(data_format, len(inputs.shape)),
            dilations=dilation_rate)
    conv.__wrapped__ = keras_conv
    keras_tf_nn.conv = conv


def _wrap_keras_rnn():
    try:
        import keras.src.backend as keras_backend
        import keras.src.backend.tensorflow as keras_tf
    except ImportError:  # pragma: no cover - keras is optional
        return
    keras_rnn = keras_backend.rnn
    parameters = inspect.signature(keras_rnn)

    def rnn(*args, **kwargs):
        bound = parameters.bind(*args, **kwargs)
        arguments = bound.arguments
        if isinstance(arguments.get("inputs"), LazyTensor):
            arguments["unroll"] = True  # a Python loop over the (static) time steps
            if arguments.get("go_backwards") and arguments.get("mask") is not None:
                # Keras' unrolled loop zeroes a backward pass's masked outputs with the mask in
                # forward order (Bidirectional over Embedding(mask_zero=True)); its while_loop
                # reverses the mask first. Iterating over the reversed sequence forwards is
                # what go_backwards means, with the mask reversed alongside
                axis = 0 if arguments.get("time_major") else 1
                arguments["inputs"] = tf.nest.map_structure(
                    lambda t: tf.reverse(t, [axis]), arguments["inputs"])
                arguments["mask"] = tf.reverse(arguments["mask"], [axis])
                arguments["go_backwards"] = False
        return keras_rnn(*bound.args, **bound.kwargs)
    rnn.__wrapped__ = keras_rnn
    keras_backend.rnn = rnn
    if getattr(keras_tf, "rnn", None) is keras_rnn:
        keras_tf.rnn = rnn


def _wrap_keras_cond():
    try:
        from keras.src.backend.tensorflow import core as keras_tf_core
    except ImportError:  # pragma: no cover - keras is optional
        return
    keras_cond = keras_tf_core.cond

    from . import control_flow

    def cond(pred, true_fn, false_fn):
        if not isinstance(pred, LazyTensor):
            return keras_cond(pred, true_fn, false_fn)
        return control_flow.cond(pred, true_fn, false_fn)
    cond.__wrapped__ = keras_cond
    keras_tf_core.cond = cond


def _wrap_keras_sparse_divide():
    try:
        from keras.src.backend.tensorflow import numpy as keras_tf_numpy
    except ImportError:  # pragma: no cover - keras is optional
        return
    from . import control_flow
    keras_divide = keras_tf_numpy.divide
    dense_divide = getattr(keras_divide, "__wrapped__", None)  # (inside Keras' sparse_wrapper)
    if dense_divide is None:  # pragma: no cover - another Keras
        return

    def divide(x1, x2):
        if isinstance(x1, tf.IndexedSlices) and \
                registry._has_lazy([x1.values, x1.indices, x2]) and \
                not isinstance(x2, (tf.IndexedSlices, tf.SparseTensor)) and \
                len(getattr(x2, "shape", ())) > 0 and x2.shape[0] is not None:
            return control_flow.divide_slices(x1, x2, dense_divide)
        return keras_divide(x1, x2)
    divide.__wrapped__ = keras_divide
    keras_tf_numpy.divide = divide


def _wrap_keras_gcd():
    try:
        from keras.src.backend.tensorflow import numpy as keras_tf_numpy
    except ImportError:  # pragma: no cover - keras is optional
        return
    keras_gcd = keras_tf_numpy.gcd

    def gcd(x1, x2):
        if registry._has_lazy([x1, x2]):
            return api_bitwise.keras_gcd(x1, x2)
        return keras_gcd(x1, x2)
    gcd.__wrapped__ = keras_gcd
    keras_tf_numpy.gcd = gcd
    keras_nanquantile = keras_tf_numpy.nanquantile

    def nanquantile(x, q, axis=None, method="linear", keepdims=False):
        if registry._has_lazy([x, q]):
            return keras_nanquantiles.nanquantile(x, q, axis, method, keepdims,
                                                  keras_nanquantile)
        return keras_nanquantile(x, q, axis=axis, method=method, keepdims=keepdims)
    nanquantile.__wrapped__ = keras_nanquantile
    keras_tf_numpy.nanquantile = nanquantile  # (nanmedian and nanpercentile call it)
    keras_argpartition = keras_tf_numpy.argpartition

    def argpartition(x, kth, axis=-1):
        if registry._has_lazy([x, kth]):
            return keras_argpartitions.argpartition(x, kth, axis, keras_argpartition)
        return keras_argpartition(x, kth, axis=axis)
    argpartition.__wrapped__ = keras_argpartition
    keras_tf_numpy.argpartition = argpartition
    keras_histogram = keras_tf_numpy.histogram

    def histogram(x, bins=10, range=None):  # noqa: A002 - Keras' names
        if registry._has_lazy([x, range]):
            return keras_histograms.histogram(x, bins, range, keras_histogram)
        return keras_histogram(x, bins=bins, range=range)
    histogram.__wrapped__ = keras_histogram
    keras_tf_numpy.histogram = histogram


def _wrap_custom_gradient():
    """tf.custom_gradient's eager decorator (custom_gradient._eager_mode_decorator, which the
    decorated functions look up at each call): a call with a lazy argument gets its gradient
    function on the IR (custom_gradients.py); any other call is TF's own."""
    from tensorflow.python.ops import custom_gradient as module
    from . import custom_gradients
    original = module._eager_mode_decorator

    @functools.wraps(original)
    def eager_mode_decorator(f, args, kwargs):
        if any(isinstance(x, LazyTensor) for x in tf.nest.flatten((args, kwargs))):
            return custom_gradients.call(original, f, args, kwargs)
        return original(f, args, kwargs)
    module._eager_mode_decorator = eager_mode_decorator


def _wrap_jacobians():
    """tape.jacobian / batch_jacobian of a lazy target (jacobians.py): TF's pfor cannot trace
    a lazy value into its graph."""
    from . import jacobians
    cls = tf.GradientTape

    def lazy_target(original, ours):
        parameters = inspect.signature(original)  # (TF's names: sources, source)

        @functools.wraps(original)
        def method(*args, **kwargs):
            bound = parameters.bind(*args, **kwargs)
            bound.apply_defaults()
            self, target, sources, how = list(bound.arguments.values())[:4]
            if not isinstance(target, LazyTensor):
                return original(*args, **kwargs)
            return ours(self, target, sources, how)
        return method

    cls.jacobian = lazy_target(cls.jacobian, lambda tape, target, sources, how: (
        jacobians.jacobian(jacobians.tape_gradient(tape, target, sources), target, sources,
                           how)))
    cls.batch_jacobian = lazy_target(cls.batch_jacobian, lambda tape, target, source, how: (
        jacobians.batch_jacobian(jacobians.tape_gradient(tape, target, [source]), target,
                                 source, how)))


def _wrap_output_gradients():
    """tf.GradientTape.gradient with lazy output_gradients: TF flattens them into their
    composite components (a lazy value's is its gradient token, a zero), so the seed was lost.
    Lazy targets take the sum of each target times its seed as their one target -- recorded
    on the tape, so its gradient is the seeded one, in the same program; other targets get
    the seeds' values. Lazy sources of a lazy target get the IR's gradient
    (tape_bridge.lazy_source_gradients): TF's tape finds none for a value computed under it."""
    from . import tape as lazy_tape, tape_bridge
    from .tensor import wrap
    original = tf.GradientTape.gradient

    def _merged(tape, lazy, target, sources, output_gradients, unconnected_gradients):
        # the IR's gradients of lazy sources, TF's (through this wrapper) of the rest
        flat = tf.nest.flatten(sources)
        rest = [s for i, s in enumerate(flat) if i not in lazy]
        theirs = iter(gradient(tape, target, rest, output_gradients, unconnected_gradients)
                      if rest else ())
        return tf.nest.pack_sequence_as(
            sources, [lazy[i] if i in lazy else next(theirs) for i in range(len(flat))])

    @functools.wraps(original)
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE):
        if not isinstance(self, lazy_tape.GradientTape):
            lazy = tape_bridge.lazy_source_gradients(self, target, sources, output_gradients,
                                                     unconnected_gradients)
            if lazy:
                return _merged(self, lazy, target, sources, output_gradients,
                               unconnected_gradients)
        seeds = tf.nest.flatten(output_gradients) if output_gradients is not None else ()
        if isinstance(self, lazy_tape.GradientTape) or \
                not any(isinstance(s, LazyTensor) for s in seeds):
            return original(self, target, sources, output_gradients, unconnected_gradients)
        targets = tf.nest.flatten(target)
        if all(isinstance(t, LazyTensor) for t in targets) and len(seeds) == len(targets):
            with self._ensure_recording():
                target = wrap(lazy_tape._summed(targets, seeds), *targets)
            output_gradients = None
        else:
            output_gradients = tf.nest.map_structure(
                lambda s: tf.convert_to_tensor(s) if isinstance(s, LazyTensor) else s,
                output_gradients)
        return original(self, target, sources, output_gradients, unconnected_gradients)
    tf.GradientTape.gradient = gradient


def _wrap_stop_recording():
    """tape.stop_recording(): lazy values made inside it are stop_gradient nodes (tensor.py's
    STOPPED), since the IR, not TF's tape, differentiates them -- for every tape, where TF
    stops only the one (nested tapes that should see them are rare)."""
    import contextlib
    from . import tensor
    original = tf.GradientTape.stop_recording

    @functools.wraps(original)
    @contextlib.contextmanager
    def stop_recording(self):
        with original(self):
            tensor.STOPPED[0] += 1
            try:
                yield
            finally:
                tensor.STOPPED[0] -= 1
    tf.GradientTape.stop_recording = stop_recording


def _wrap_variable_init():
    """tf.Variable(lazy value) -- how tf.Module code makes its weights,
    `tf.Variable(tf.random.normal(...))` on lazy values: TF's initialization converts the
    value, which read it on the host, a counted fallback and a sync per variable (36 in the TF
    guide's intro_to_modules). The variable is made from zeros of the value's shape and dtype
    and given the lazy value as an assign, recorded as its shadow (variables.py) as every
    lazy assign is; reading it runs the value. Any other initial value (a callable, a tensor,
    a dtype to convert to, graph mode) goes to TF's own initialization."""
    from tensorflow.python.ops import resource_variable_ops
    cls = resource_variable_ops.ResourceVariable
    original = cls._init_from_args

    @functools.wraps(original)
    def init(self, initial_value=None, *args, **kwargs):
        dtype = kwargs.get("dtype")
        if type(initial_value) is not LazyTensor or not tf.executing_eagerly() or \
                (dtype is not None and tf.as_dtype(dtype) != initial_value.dtype):
            return original(self, initial_value, *args, **kwargs)
        original(self, tf.zeros(initial_value.shape, initial_value.dtype), *args, **kwargs)
        self.assign(initial_value)
    cls._init_from_args = init


def _wrap_checkpoints():
    """tf.train.Checkpoint's save/write/restore/read reach variables through their resource
    handles, under lazyx's shadows (variables.py): a save stored the values before the pending
    updates, a restore was undone by them. Each first stores the pending shadows."""
    cls = tf.train.Checkpoint
    for name in ("save", "write", "restore", "read"):
        original = getattr(cls, name)

        @functools.wraps(original)
        def method(self, *args, _original=original, **kwargs):
            variables.write_back(cause="explicit")
            return _original(self, *args, **kwargs)
        setattr(cls, name, method)
