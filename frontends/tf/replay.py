"""lazyx.compile for TF: lazy tensors, and tf.Variables (plain or Keras) as captured state.

A variable's state is its *shadow* (variables.py): the LazyTensor holding its value while a
lazy step updates it. A trace gives every variable it can find a shadow before the step runs,
so the step's reads are that shadow's data leaf; a replay reads and writes the shadow's
handle, and the variable stays shadowed between replays (its value stays on the device; TF
code that reads it eagerly gets it written back first, as after any lazy step).
Keras layers, models and optimizers hold their variables in `.variables`; a model's metrics
hold theirs apart (`metrics_variables`).
"""
import contextlib
import threading

import tensorflow as tf

from ...core import capture, replay
from . import variables as _vars
from .tensor import LazyTensor, _tf_leaf, wrap

try:
    import keras
except ImportError:  # pragma: no cover - keras is optional
    keras = None


def _tensor_handle(t):
    return t._handle


def _wrap(template, node):
    return wrap(node)


def _var_handle(value):
    var = _vars.tf_variable(value)
    shadow = var._lazyx_shadow if isinstance(var, _vars.LazyVariable) else None
    if shadow is None:
        _vars._make_lazy(var)
        shadow = LazyTensor(_tf_leaf(var.value()))
        _vars._set_shadow(var, shadow)
    return shadow._handle


def _is_variable(value):
    return _vars.tf_variable(value) is not None


def _variables(obj):
    for k, v in enumerate(obj.variables):
        yield (k, getattr(v, "path", None) or v.name), v, True


def _module_state(module):
    """A tf.Module's variables, and the lazy tensors it and its submodules keep as plain
    attributes (see _attrs)."""
    yield from _variables(module)
    for k, sub in enumerate((module,) + tuple(module.submodules)):
        yield from _attrs(sub, k)


def _attrs(obj, where):
    """The lazy tensors `obj` keeps as plain attributes (see _lazy_attr)."""
    for name, value in obj.__dict__.items():
        if _lazy_attr(name, value):
            yield ("attr", where, name), value, False


def _lazy_attr(name, value):
    """Whether an attribute holds lazy tensors: one a call stores (`self.last = y`), or a
    table made once. Unsearched, a replay rebound the first in place, changing the tensor a
    caller had kept from an earlier call, and the second made every call trace again. A step
    may replace them each call (a replay then stores a new tensor there). A list or dict
    attribute (Keras' TrackedList/TrackedDict) counts when it holds lazy tensors: a step
    appending to one (`self.history.append(y)`) makes state a replay cannot add, so each
    call traces. (Only those: a functional model's `inputs` lead to its whole graph.)"""
    if type(value) is LazyTensor:
        return True
    if name.startswith("_"):
        return False
    if isinstance(value, list):
        return any(type(v) is LazyTensor for v in value)
    return isinstance(value, dict) and any(type(v) is LazyTensor for v in value.values())


def _set_attr(holder_at):
    def set_child(obj, name, value):
        if name[0] != "attr":
            return False
        holder = holder_at(obj, name[1])
        if holder is None:
            return False
        holder.__dict__[name[2]] = value  # (past Keras' attribute tracking, as a layer's own)
        return True
    return set_child


def _submodule(module, k):
    """The module _module_state numbered k: the module itself, then its submodules."""
    if k == 0:
        return module
    subs = module.submodules
    return subs[k - 1] if k <= len(subs) else None


def _sublayer(layer, path):
    for k in path:
        layers = layer.__dict__.get("_layers", ())
        if k >= len(layers):
            return None
        layer = layers[k]
    return layer


def _layer_variables(layer):
    """A Keras layer's variables, and the state variables of the stateful RNNs in its tree:
    Keras makes those untracked, so they are not in `variables`, and a replay that did not
    know them baked the traced call's state and dropped every update of it (a stateful
    SimpleRNN/LSTM/GRU's outputs drifted from eager from the second call, silently)."""
    yield from _variables(layer)
    stack = [(layer, ())]
    while stack:
        node, path = stack.pop()
        d = node.__dict__
        states = d.get("states") if d.get("stateful") else None
        if states is not None:
            for j, v in enumerate(tf.nest.flatten(list(states))):
                if _is_variable(v):
                    yield ("rnn_state", d.get("name"), j), v, True
        # an optimizer the layer holds (model.compile's `optimizer`, a train_step's
        # `self.d_optimizer`): its iterations and slots are not in `variables`, and a replay
        # that did not know them baked the traced values (Adam's step count stayed 1)
        # (one pass over the layer's attributes: a replay lists these children each call)
        for attr, value in d.items():
            if _lazy_attr(attr, value):
                yield ("attr", path, attr), value, False
            elif isinstance(value, keras.optimizers.Optimizer):
                for k, v in enumerate(value.variables):
                    yield ("optimizer", d.get("name"), attr, k), v, True
        stack.extend((sub, path + (k,)) for k, sub in enumerate(d.get("_layers", ())))
    # Keras 3 keeps metric variables (a train_step's `self.loss_tracker`, compile()'s
    # metrics) out of `variables`: a replay that did not know them baked the traced call's
    # totals, and a Mean's result was each call's own value (count stayed 1), silently.
    # `metrics_variables` follows a model's own `metrics` (often overridden); `_metrics`
    # of each layer catches a tracked metric such an override leaves out.
    seen = set()
    metrics = list(_own_metrics(layer))
    try:
        metrics[:0] = layer.metrics
    except Exception:  # a user's `metrics` property that fails before build: walk only
        pass
    for metric in metrics:
        for v in getattr(metric, "variables", ()):
            if id(v) not in seen and _is_variable(v):
                seen.add(id(v))
                yield ("metric", getattr(v, "path", None) or v.name, len(seen)), v, True


def _own_metrics(layer):
    stack = [layer]
    while stack:
        d = stack.pop().__dict__
        yield from d.get("_metrics", ())
        stack.extend(d.get("_layers", ()))


_PLAIN = (bool, int, float, str, type(None))


def _layer_modes(layer):
    """Each layer of `layer`'s tree: its class, trainable flag, activation and the numbers
    its graph bakes in (BatchNormalization's momentum and epsilon, Dropout's rate, a custom
    layer's own number: an annealed `self.temperature`) -- a replay's guard, so
    `layer.trainable = False` (fine-tuning), a swapped activation or a changed number
    between calls trace again instead of replaying the old values. A walk of `_layers`,
    read from __dict__ (get_config() is 20x slower)."""
    out, stack = [], [layer]
    while stack:
        node = stack.pop()
        d = node.__dict__
        keys = _NUMBER_KEYS.get(type(node))
        if keys is None:
            keys = _NUMBER_KEYS[type(node)] = _number_keys(d)
        out.append((type(node), d.get("_trainable"), d.get("activation"),
                    [d.get(k) for k in keys]))
        stack.extend(d.get("_layers", ()))
    return tuple(out)


_NUMBER_KEYS = {}  # layer class -> the public attributes holding numbers, as first seen


def _number_keys(attrs):
    # (per class, not per call: a walk of every layer's __dict__ was 6x the guard's cost)
    return tuple([k for k, v in attrs.items() if k[0] != "_" and type(v) in (int, float)])


def _optimizer_settings(opt):
    """A Keras optimizer's plain settings (weight_decay, momentum, nesterov, clipnorm,
    clipvalue, beta_1, epsilon, ...): changed between calls, the step traces again. The
    learning rate is a variable, read at each replay."""
    return tuple([(k, v) for k, v in opt.__dict__.items()
                  if k[0] != "_" and k != "built" and type(v) in _PLAIN])


replay.register_tensor(LazyTensor, _tensor_handle, _wrap)
replay.register_tensor(tf.Variable, _var_handle, _wrap, _is_variable)
if _vars._KerasTFVariable is not None:
    replay.register_tensor(_vars._KerasTFVariable, _var_handle, _wrap, _is_variable)
replay.register_container(tf.Module, _module_state, set_child=_set_attr(_submodule),
                          numbers=True)
# a tf.random.Generator's state: its draws in a step read and advance it (api_random.py)
replay.register_container(tf.random.Generator, lambda g: [(("state",), g.state, True)])
if keras is not None:
    replay.register_container(keras.layers.Layer, _layer_variables, mode=_layer_modes,
                              set_child=_set_attr(_sublayer))
    replay.register_container(keras.optimizers.Optimizer, _variables,
                              mode=_optimizer_settings)


# ---------------------------------------------------------------- a callable learning rate

# A Keras optimizer whose learning rate is a callable (`SGD(learning_rate=lambda: lr[0])`)
# calls it at each step and computes with the float it returns. While a step traces, that
# float is a number of the call (capture.state_number) read by calling the callable again
# at each replay: a new value is a run-time parameter, not the traced one baked in.
_lr_lock = threading.Lock()
_lr_tracing = [0]


def _current_learning_rate(self):
    value = _ORIGINAL_LR(self)
    fn = self.__dict__.get("_learning_rate")
    if type(value) is float and callable(fn) and not isinstance(fn, tf.Variable):
        return capture.state_number(value, fn)
    return value


@contextlib.contextmanager
def _callable_learning_rates():
    # (installed only while some thread traces; capture.state_number acts for that thread)
    with _lr_lock:
        _lr_tracing[0] += 1
        _OPTIMIZER._get_current_learning_rate = _current_learning_rate
    try:
        yield
    finally:
        with _lr_lock:
            _lr_tracing[0] -= 1
            if not _lr_tracing[0]:
                _OPTIMIZER._get_current_learning_rate = _ORIGINAL_LR


_OPTIMIZER = None
if keras is not None:
    _OPTIMIZER = next((c for c in keras.optimizers.Optimizer.__mro__
                       if "_get_current_learning_rate" in c.__dict__), None)
if _OPTIMIZER is not None:
    _ORIGINAL_LR = _OPTIMIZER._get_current_learning_rate
    replay.register_trace_hook(_callable_learning_rates)


# ---------------------------------------------------------------- tf.random.set_seed inside

# tf.random.set_seed(s) inside a step restarts TF's op seeds, from which its unseeded draws
# take their (seed, seed2) pairs (api_random._OpSeeds): a replay, running no Python, would
# ask TF for the pairs after the traced call's and draw other numbers than the uncompiled
# call (which draws the same ones at each call). TF replaces its context's generator at
# each set_seed: a step that did runs lazily, warned.
@contextlib.contextmanager
def _global_seed_set():
    from tensorflow.python.eager import context
    ctx = context.context()
    before = getattr(ctx, "_rng", None)
    try:
        yield
    finally:
        if getattr(ctx, "_rng", None) is not before:
            capture.host_read("tf.random.set_seed inside the step (TF's op seeds restart "
                              "there; set it outside the compiled function)")


replay.register_trace_hook(_global_seed_set)
