"""tf.cond and keras.ops.cond on a lazy predicate: both branches traced, their results selected.

Reading the predicate would be a sync mid-step (and a step lazyx.compile cannot replay: Keras'
warm-up learning-rate schedules, EMA overwrites and gradient accumulation all branch on the
step counter). So lazyx does what TF's graph mode (tf.function) does with a tensor predicate:

* Both branch functions run, true_fn first -- their Python side effects both happen, as
  when tf.function traces a cond. What they compute is recorded, not run.
* Every variable a branch assigns (assign, assign_add/sub, the scatters) gets a lazy value
  in that branch: a variable holding no lazy value is made lazy first (hooks.py redirects its
  writes while a branch is traced), so no write reaches TF's buffer. After the true branch
  each assigned variable's value is noted and the variable restored; then the false branch;
  then each gets `where(pred, value after true, value after false)`.
* The results are `where(pred, true result, false result)` per tensor. The two results must
  have one structure (TF's TypeError otherwise, as tf.function raises it); a pair that
  cannot be selected (other shapes or dtypes, non-tensors that differ) reads the predicate
  and takes the chosen branch's results and variable values as recorded.

A branch that needs a value -- a sync, a read of a value, an op with no lowering (run
eagerly on TF), a write lazyx cannot record -- is stopped there, before the read or write
happens (`_Watch` below, a runtime listener), its variables are restored, the predicate is
read (what lazyx did before: a counted fallback, or lazyx.compile's observation error), and
only the chosen branch counts: one that ran to its end is taken as recorded, else it runs
again, plainly. The stopped branch's Python side effects up to that point have happened.
"""
import functools
import sys
import threading

import tensorflow as tf

from ...core import runtime
from . import saved_functions
from . import variables as _vars
from .tensor import LazyTensor, _tf_leaf, framework_request, silent_turn

DEPTH = [0]  # branches being traced, in all threads (a cheap test before the thread-local one)
_local = threading.local()
_lock = threading.Lock()


class _Untraceable(BaseException):
    """A traced branch needs something only an eager run gives. (BaseException: user and
    framework code between here and the cond must not swallow it.)"""


def _frames():
    return getattr(_local, "frames", None)


def tracing():
    """Whether this thread is tracing a branch of a lazy cond."""
    return bool(DEPTH[0] and _frames())


def untraceable(what):
    """Stop the branch being traced: `what` cannot be recorded (called before it happens)."""
    if tracing():
        raise _Untraceable(what)


def note_assign(var):
    """`var` is about to get a new lazy value: each open branch keeps its state from before."""
    for frame in _frames() or ():
        if id(var) not in frame:
            frame[id(var)] = (var, getattr(var, "_lazyx_shadow", None),
                              getattr(var, "_lazyx_left", None))


def redirect_write(var):
    """A write to a plain tf.Variable inside a traced branch: make it lazy-aware, so the write
    is recorded instead of reaching TF's buffer (hooks.py then calls the method again)."""
    if not tracing() or isinstance(var, _vars.LazyVariable):
        return False
    _vars._make_lazy(var)
    return True


def value_for(var, value):
    """`value` as a lazy tensor for `var.assign*(value)` inside a traced branch."""
    if isinstance(value, LazyTensor):
        return value
    source = _vars.tf_variable(value)
    if source is not None:
        return _value_of(source)
    from .tensor import node_of
    return LazyTensor(node_of(value, var.dtype))  # (another shape: TF's error, see assign)


class _Watch:
    """A runtime listener: a sync, read or eager op in a traced branch stops the branch before
    it happens (a cut at the node cap only computes, and may go on)."""

    def on_sync(self, cause, source, program, roots=()):
        if cause != "node_cap" and _frames():
            raise _Untraceable(f"a sync ({cause})")

    def on_read(self, cause, source, handle):
        if _frames():
            raise _Untraceable(f"a read ({cause})")

    def on_fallback(self, op_name, source):
        if _frames():
            raise _Untraceable(op_name)


_WATCH = _Watch()


def _run_branch(fn):
    """fn() traced: (its results, variables read as values; {id: (var, shadow, left)} from
    before; {id: value after}). The variables are restored before this returns."""
    frame = {}
    frames = _frames()
    if frames is None:
        frames = _local.frames = []
    with _lock:
        if DEPTH[0] == 0:
            runtime.LISTENERS.insert(0, _WATCH)
        DEPTH[0] += 1
    frames.append(frame)
    try:
        out = fn()
        out = tf.nest.map_structure(
            lambda x: _value_of(x) if _vars.tf_variable(x) is not None else x, out)
        after = {k: var._lazyx_shadow for k, (var, _, _) in frame.items()}
    finally:
        frames.pop()
        with _lock:
            DEPTH[0] -= 1
            if DEPTH[0] == 0:
                runtime.LISTENERS.remove(_WATCH)
        _restore(frame)
    return out, frame, after


def _restore(frame):
    for var, shadow, left in frame.values():
        var._lazyx_shadow, var._lazyx_left = shadow, left
        if shadow is None:
            _vars._SHADOWED.pop(id(var), None)
        else:
            _vars._SHADOWED[id(var)] = var


def _value_of(var):
    """A variable's current value as a lazy tensor (its shadow, else what TF holds)."""
    var = _vars.tf_variable(var)
    shadow = getattr(var, "_lazyx_shadow", None)
    if shadow is not None:
        return shadow
    value = _vars.read(var)
    return value if value is not None else LazyTensor(_tf_leaf(var.value()))


def _apply(after):
    for var, value in after.values():
        _vars.record_assign(var, "assign", value)


def cond(pred, true_fn, false_fn, name=None):
    """`true_fn() if pred else false_fn()` for a lazy `pred`, without reading it (module doc).
    `name`: what a read of the predicate is counted as (None: the TF or Keras function that
    called, found on the stack)."""
    if pred.dtype != tf.bool or pred.shape.num_elements() != 1:
        return _taken(pred, true_fn, false_fn, {}, name)  # (TF's eager truth value of it)
    if pred.shape.rank:
        pred = tf.reshape(pred, [])
    done = {}
    try:
        out_t, saved_t, after_t = _run_branch(true_fn)
        done[True] = (out_t, {k: (saved_t[k][0], v) for k, v in after_t.items()})
        out_f, saved_f, after_f = _run_branch(false_fn)
        done[False] = (out_f, {k: (saved_f[k][0], v) for k, v in after_f.items()})
    except _Untraceable:
        return _taken(pred, true_fn, false_fn, done, name)
    try:
        tf.nest.assert_same_structure(out_t, out_f)
    except (TypeError, ValueError) as err:
        raise TypeError(
            "true_fn and false_fn arguments to tf.cond must have the same number, type, and "
            f"overall structure of return values.\n\ntrue_fn output: {out_t}\nfalse_fn output: "
            f"{out_f}\n\nError details:\n{err}") from None
    picked = [_select(pred, a, b)
              for a, b in zip(tf.nest.flatten(out_t), tf.nest.flatten(out_f))]
    if any(p is _NO for p in picked):
        return _taken(pred, true_fn, false_fn, done, name)
    saved = {**saved_f, **saved_t}
    for k, (var, _, _) in saved.items():
        before = None if k in after_t and k in after_f else _value_of(var)
        on_true = after_t[k] if k in after_t else before
        on_false = after_f[k] if k in after_f else before
        _vars.record_assign(var, "assign", tf.where(pred, on_true, on_false))
    return tf.nest.pack_sequence_as(out_t, picked)


def _taken(pred, true_fn, false_fn, done, name):
    """The predicate read (the eager way): the chosen branch as recorded, or run plainly."""
    if name is not None and framework_request() is None:
        # the user's tf.cond: a counted fallback, as TF's own cond reading it was (TF's or
        # Keras' code calling it: the read below is counted, named after that caller)
        silent_turn(name)
    chosen = bool(pred)
    if chosen in done:
        out, after = done[chosen]
        _apply(after)
        return out
    return true_fn() if chosen else false_fn()


_NO = object()
_NUMBERS = (bool, int, float, complex)


def _select(pred, a, b):
    """where(pred, a, b) for one result; `a` itself when both are the same; _NO when the
    pair cannot be selected."""
    if a is b:
        return a
    if type(a) is type(b) and type(a) in _NUMBERS + (str, bytes, type(None)) and a == b:
        return a
    a, b = _tensor(a), _tensor(b)
    if a is None or b is None or a.dtype != b.dtype or a.shape != b.shape:
        return _NO
    return tf.where(pred, a, b)


def _tensor(x):
    if isinstance(x, (LazyTensor, tf.Tensor)):
        return x
    if isinstance(x, _NUMBERS) or hasattr(x, "__array__") and not hasattr(x, "numpy"):
        try:
            return tf.convert_to_tensor(x)
        except (TypeError, ValueError):
            return None
    return None


def tf_cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """tf.compat.v1.cond for a lazy predicate (tf.cond calls it with strict=True): TF's
    dispatch brings the call here (hooks.py registers it)."""
    for alias, given, what in ((fn1, true_fn, "true_fn"), (fn2, false_fn, "false_fn")):
        if alias is not None and given is not None:
            raise TypeError(f"cond(): '{what}' and 'fn{1 if what == 'true_fn' else 2}' may "
                            f"not be set simultaneously.")
    true_fn = fn1 if true_fn is None else true_fn
    false_fn = fn2 if false_fn is None else false_fn
    for fn, what in ((true_fn, "true_fn"), (false_fn, "false_fn")):
        if fn is None:
            raise TypeError(f"cond(): '{what}' argument required")
        if not callable(fn):
            raise TypeError(f"'{what}' must be callable.")
    out = cond(pred, true_fn, false_fn, name="tf.cond")
    if not strict and isinstance(out, (list, tuple)) and len(out) == 1:
        return out[0]  # (TF's _UnpackIfSingleton)
    return out


def tf_cond_v2(pred, true_fn=None, false_fn=None, name=None):
    """tf.cond itself: dispatched here too, or a TypeError or ValueError raised inside a
    branch would send the whole call to TF's fallback dispatch (registry._Fallback), which
    runs it again, eagerly."""
    return tf_cond(pred, true_fn, false_fn, strict=True)


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """tf.switch_case on a lazy index (it has no dispatch: api_eager_only.py wraps its public
    name): nested lazy conds, so nothing is read (TF's own check refused the LazyTensor with
    "'branch_index' must be a Tensor"). TF's eager rule: an index out of range runs the
    last action (`default` when given, else the last branch)."""
    from tensorflow.python.ops import control_flow_switch_case as tf_switch_case
    from .lowering import Reject
    if not isinstance(branch_index, LazyTensor) or branch_index.shape.rank != 0:
        raise Reject()  # (TF's own call: eager indices, and TF's error for a non-scalar)
    # TF's argument checks and its list of actions (default last), on an eager stand-in
    stand_in = tf.zeros((), branch_index.dtype)
    actions = tf_switch_case._indexed_case_verify_and_canonicalize_args(
        branch_fns, default, stand_in)
    last = len(actions) - 1
    k = tf.where((branch_index < 0) | (branch_index > last),
                 tf.constant(last, branch_index.dtype), branch_index)

    def from_(j):
        if j == last:
            return actions[j]
        return lambda: cond(tf.equal(k, j), actions[j], from_(j + 1), name="tf.switch_case")
    return from_(0)()


# --- tf.function called with lazy arguments ------------------------------------------------

class _CreatesVariable(BaseException):
    """The Python body of a tf.function run lazily is about to create a variable."""


def _no_creation(next_creator, **kwargs):
    """A later call: a Keras optimizer building its slots there (a second optimizer passed to
    the function, the TF guide's function.ipynb) is TF's error for a variable made on a
    retrace -- stopped instead, the fallback's trace met the optimizer half built (an
    AttributeError on `_momentums`). Any other creation stops the body (function_call)."""
    if _keras_optimizer_building():
        raise ValueError(
            "tf.function only supports singleton tf.Variables created on the first call. "
            "Make sure the tf.Variable is only created once or created outside tf.function. "
            "See https://www.tensorflow.org/guide/function#creating_tfvariables for more "
            "information.")
    raise _CreatesVariable()


def _first_call_creation(next_creator, **kwargs):
    """A Keras optimizer building its slots in the first apply_gradients of a tf.function
    (Keras 3 builds lazily) creates them, as TF's first trace does: stopped there, the
    optimizer was left `built` without its slots and TF's trace of the fallback failed on
    the missing `_momentums`. Any other creation stops the body (function_call)."""
    if _keras_optimizer_building():
        return next_creator(**kwargs)
    raise _CreatesVariable()


def _keras_optimizer_building():
    """Whether a Keras optimizer's code is creating the variable being created."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("keras.src.optimizers."):
            return True
        frame = frame.f_back
    return False


def function_call(function, original, args, kwargs):
    """A tf.function called with lazy arguments: its Python function runs on them, recorded --
    what TF does under tf.config.run_functions_eagerly(True). (A TF graph cannot hold a lazy
    value; running the graph on materialized arguments split the step at every call.)

    The plain `python_function`, not AutoGraph's conversion of it: AutoGraph's `if`/`while` on
    a tensor convert it to a TF tensor (a lazy one refuses) and loop over TensorArrays, so it
    would need lazyx wrappers of AutoGraph's private operators. A Python `if` on a lazy tensor
    reads it instead (a sync, as in an eager step); tf.cond is traced (module doc).

    TF's graph run on the materialized values (the counted fallback "tf.function(<name>)")
    stays for: Keras' own tf.functions (fit / train_on_batch / predict drive data iterators
    and distribution strategies around them), a function restored from a SavedModel (only
    its graphs were saved), and a call whose body creates a variable (TF
    creates a tf.function's variables once, on its first trace; rerunning the Python body at
    each call would create them again): the body is stopped before the creation."""
    from . import registry
    python_function = function.python_function
    fallback = functools.partial(registry.run_eagerly, functools.partial(original, function),
                                 args, kwargs, name=f"tf.function({function._name})")
    if getattr(python_function, "__module__", "").startswith("keras."):
        return fallback()
    if _restored(function):  # its Python function picks one of its graphs: no lazy value enters
        return fallback()
    if function.input_signature is not None:
        _check_signature(function, args, kwargs)
    creator = _first_call_creation if _first_call(function) else _no_creation
    seeds = _op_seeds()
    try:
        with tf.variable_creator_scope(creator):
            result = python_function(*args, **kwargs)
    except _CreatesVariable:
        # the body's draws before the stop (the guide's `tf.Variable(tf.random.uniform(..))`)
        # took op seeds from TF's stream: given back, so TF's trace draws what eager TF draws
        # and every later unseeded draw (a Dataset.shuffle) is eager TF's
        _restore_op_seeds(seeds)
        return fallback()
    saved_functions.remember_signature(function, args, kwargs)  # for tf.saved_model.save
    return result


def _restored(function):
    """Whether `function` was loaded from a SavedModel (its graphs are all it has)."""
    module = sys.modules.get("tensorflow.python.saved_model.function_deserialization")
    return module is not None and isinstance(function, module.RestoredFunction)


def _op_seeds():
    """The state of the eager context's op-seed stream (TF draws an unseeded random op's seed
    from it once a global seed is set), or None."""
    from tensorflow.python.eager import context
    rng = getattr(context.context(), "_rng", None)
    return (rng, rng.getstate()) if rng is not None else None


def _restore_op_seeds(saved):
    if saved is not None:
        saved[0].setstate(saved[1])


def _first_call(function):
    """Whether `function` has neither been traced by TF nor run lazily (marked from now):
    TF lets a tf.function create variables on its first trace only."""
    if function.__dict__.get("_lazyx_ran") or function.experimental_get_tracing_count():
        return False
    function._lazyx_ran = True
    return True


def _check_signature(function, args, kwargs):
    """TF's checks of the arguments against an input_signature (its TypeError), which its
    graph call makes and the Python function does not."""
    import inspect
    signature = function.input_signature
    try:
        bound = inspect.signature(function.python_function).bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"Binding inputs to tf.function failed due to `{err}`.") from None
    given = list(bound.arguments.values())
    if len(given) > len(signature):
        raise TypeError(f"Binding inputs to tf.function failed due to `too many positional "
                        f"arguments`. Received args: {args} and kwargs: {kwargs} for "
                        f"signature: {signature}.")
    for value, spec in zip(given, signature):
        try:
            tf.nest.assert_same_structure(spec, value, expand_composites=False)
        except (TypeError, ValueError):
            ok = False
        else:
            ok = all(_fits(v, s) for v, s in zip(tf.nest.flatten(value), tf.nest.flatten(spec)))
        if not ok:
            raise TypeError(f"Binding inputs to tf.function failed due to `Can not cast "
                            f"{value!r} to {spec}`. Received args: {args} and kwargs: "
                            f"{kwargs} for signature: {signature}.")


def _fits(value, spec):
    if not isinstance(spec, tf.TensorSpec):
        return True
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        value = tf.convert_to_tensor(value, spec.dtype)  # (a Python number: TF's cast)
    return tf.as_dtype(value.dtype) == spec.dtype and \
        spec.shape.is_compatible_with(tf.TensorShape(value.shape))


# --- map_fn, scan, foldl/foldr, vectorized_map, keras.ops.map/scan over lazy elements --------
# TF loops over TensorArrays in a tf.while_loop (map_fn, scan, Keras' scan) or traces a graph
# (vectorized_map): a lazy value enters neither. A lazy tensor's leading dimension is static,
# so the Python body runs once per element and the results are stacked -- one graph, n copies
# of the body in it (docs/tf.md). NOT_LAZY: no lazy input, or no static trip count (0,
# unknown, or over UNROLL_LIMIT): the caller runs TF's own function (for lazy inputs, the
# counted fallback on their materialized values).

NOT_LAZY = object()
# XLA's compile time grows with the copies: a 64-row map of tanh took 13 s on a loaded 2-core
# machine, a 1000-step scan 205 s, where TF's own loop on the materialized values takes
# milliseconds and one sync
UNROLL_LIMIT = 128


def _rows(elems):
    """`elems` (a structure of tensors) as a list of per-row structures; None without a static
    trip count."""
    flat = tf.nest.flatten(elems)
    sizes = {tf.TensorShape(x.shape)[0] if tf.TensorShape(x.shape).rank else None
             for x in flat}
    if len(sizes) != 1 or None in sizes or 0 in sizes or max(sizes) > UNROLL_LIMIT:
        return None
    columns = [tf.unstack(x) for x in flat]
    return [tf.nest.pack_sequence_as(elems, list(row)) for row in zip(*columns)]


def _lazy(*values):
    from . import registry
    return registry._has_lazy(list(values))


def _tensors(x):
    return tf.nest.map_structure(
        lambda t: t if isinstance(t, (LazyTensor, tf.Tensor)) or t is None else tf.constant(t),
        x)


def _stacked(outs):
    """Per-row results (one structure each) stacked along a new leading axis."""
    flat = [tf.nest.flatten(_tensors(out)) for out in outs]
    return tf.nest.pack_sequence_as(outs[0], [tf.stack(list(c)) for c in zip(*flat)])


def _simple_signature(signature):
    return all(s is None or isinstance(s, (tf.dtypes.DType, tf.TensorSpec))
               for s in tf.nest.flatten(signature))


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None, fn_output_signature=None):
    if not _simple_signature((dtype, fn_output_signature)):  # ragged / sparse results
        return NOT_LAZY
    rows = _rows(elems) if _lazy(elems) else None
    return NOT_LAZY if rows is None else _stacked([fn(row) for row in rows])


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    rows = _rows(elems) if _lazy(elems) else None
    return NOT_LAZY if rows is None else _stacked([fn(row) for row in rows])


def _accumulate(fn, elems, initializer, reverse):
    """(per-row accumulators, the last) of scan / fold, or None (NOT_LAZY)."""
    rows = _rows(elems) if _lazy(elems, initializer) else None
    if rows is None:
        return None
    order = list(range(len(rows)))[::-1] if reverse else list(range(len(rows)))
    accs = [None] * len(rows)
    acc = initializer
    if initializer is None:  # TF: the first row starts it
        acc = accs[order[0]] = rows[order[0]]
        order = order[1:]
    for i in order:
        acc = accs[i] = fn(acc, rows[i])
    return accs, acc


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    done = _accumulate(fn, elems, initializer, reverse)
    return NOT_LAZY if done is None else _stacked(done[0])


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    done = _accumulate(fn, elems, initializer, False)
    return NOT_LAZY if done is None else _tensors(done[1])


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    done = _accumulate(fn, elems, initializer, True)
    return NOT_LAZY if done is None else _tensors(done[1])


def keras_map(f, xs):
    rows = _rows(xs) if _lazy(xs) else None
    return NOT_LAZY if rows is None else _stacked([f(row) for row in rows])


def keras_scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """keras.ops.scan (jax.lax.scan's contract): f(carry, x) -> (carry, y); (carry, ys)."""
    if not callable(f) or not _lazy(init, xs):
        return NOT_LAZY  # (Keras' own errors)
    if xs is None:
        if length is None or not 0 < int(length) <= UNROLL_LIMIT:
            return NOT_LAZY
        rows = [None] * int(length)
    else:
        rows = _rows(xs)
        if rows is None or length is not None and int(length) != len(rows):
            return NOT_LAZY
    carry, ys = init, [None] * len(rows)
    for i in (range(len(rows))[::-1] if reverse else range(len(rows))):
        carry, ys[i] = f(carry, rows[i])
    return _tensors(carry), None if all(y is None for y in ys) else _stacked(ys)


def divide_slices(x1, x2, divide):
    """Keras' divide of tf.IndexedSlices `x1` by a dense `x2` (its TF backend's sparse_wrapper)
    without its tf.cond: that one reads whether `x2` has a zero or NaN row and then returns
    the slices on x1's indices, or on their union with those rows (tf.where: a data-dependent
    shape, so a lazy cond cannot select it -- a sync a step for RMSprop / Adagrad on an
    Embedding, and lazyx.compile raised). Here the union is static: x1's slices, then one
    slice per row of `x2`, divide(0, row) where the row has a zero or NaN and 0 elsewhere --
    the same sum per row (a 0 added is exact; a row in both gets v/0 + 0/0, NaN where Keras
    gives +-inf)."""
    bad = tf.equal(x2, tf.zeros([], x2.dtype))
    if not tf.as_dtype(x2.dtype).is_integer:
        bad = tf.math.logical_or(bad, tf.math.is_nan(x2))
    rank = len(x2.shape)
    bad = tf.reduce_any(bad, axis=tuple(range(1, rank))) if rank > 1 else bad
    on_indices = divide(x1.values, tf.gather(x2, x1.indices))
    rows = divide(tf.zeros(x2.shape, on_indices.dtype), x2)
    rows = tf.where(tf.reshape(bad, [-1] + [1] * (rank - 1)), rows, tf.zeros_like(rows))
    indices = tf.concat([x1.indices, tf.range(x2.shape[0], dtype=x1.indices.dtype)], 0)
    return tf.IndexedSlices(tf.concat([on_indices, rows], 0), indices, x1.dense_shape)
