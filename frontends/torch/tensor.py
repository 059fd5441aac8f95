"""The lazy tensor: a torch.Tensor wrapper subclass holding a LazyHandle, and its dispatcher.

Users never hold a LazyTensor directly: factories and `.to(lt.device)` wrap it in torch's own
FunctionalTensorWrapper (see device.py), so views and in-place ops reach `__torch_dispatch__`
already functionalized (view_copy, select_scatter, ...) and autograd runs above both.

Every call: cut at the node cap, then ask torch's meta kernel for the output's shape and dtype
(raising torch's own error at the call for a bad one; memoized per signature), then lower
through the aten table, else torch._decomp, else run eagerly on CPU torch (a counted fallback).
This path runs per op: what does not depend on the op's arguments is computed once (the meta
result per signature, as a Meta record) rather than per call.
"""
import contextlib
import os
import threading

import torch
from torch._decomp import decomposition_table

from ...core import config, ir, metrics, runtime, source
from ...core.capture import CompileError
from ...core.split_steps import observed
from ...core.tables import Table
from . import dtypes

_OP_LINE = source.OP_LINE
DEVICE = None  # torch.device("lazyx", 0), set by device.register() once the name exists


def on_device(t):
    """t.device.type == "lazyx", at a sixth of the cost: a device's .type resolves the
    PrivateUse1 backend's name at each read (0.6 us; a replayed step read it for each
    argument and state tensor). Compared with DEVICE instead (0.1 us)."""
    d = t.device
    return d == DEVICE or (d.index not in (None, 0) and d.type == "lazyx")


# OpOverload -> fn(out_meta, *args, **kwargs) -> Node | tuple of Nodes (aten/table.lower)
LOWERINGS = Table("lazyx.frontends.torch LOWERINGS (the aten table)")
EAGER_ONLY = set()  # ops that must run on CPU torch (data-dependent shapes)
# OpOverload -> fn(func, args, kwargs): torch's value errors (bounds.py)
VALUE_CHECKS = Table("lazyx.frontends.torch VALUE_CHECKS")


class _State(threading.local):
    depth = 0     # > 0 while lowering (class defaults: no getattr fallback per op)
    cause = None  # set by patched Tensor methods that name their sync cause
    views = None  # per running expansion: {id: tensor} of raw views made in it (and bases)
    capturing = False  # lowering a torch.compile graph: no value exists yet to run eagerly
    op = None     # the outermost op being dispatched: what a read inside its expansion names


_state = _State()


class NeedsEager(Exception):
    """While a torch.compile graph is lowered (dynamo.py), an op would run eagerly: the
    graph's compiler runs that node on CPU torch at each call instead."""


@contextlib.contextmanager
def capturing():
    """Lowering a compiled graph: values stay raw LazyTensors (as inside dispatch), and an op
    that would run eagerly raises NeedsEager instead."""
    before, _state.capturing = _state.capturing, True
    _state.depth += 1
    try:
        yield
    finally:
        _state.capturing = before
        _state.depth -= 1


class Unsupported(Exception):
    """A lowering does not cover these arguments: try a decomposition, then eager torch."""


def inside_dispatch():
    """True while lowering: factories made then must be raw LazyTensors, not user wrappers."""
    return _state.depth > 0


# op -> (arity, builder, lowering): ops whose lowering, for float operands of one shape (or a
# Python number), is builder(operand nodes); the C dispatcher (_native_dispatch.c) builds those
# calls directly. aten/elementwise.py and aten/shapes.py register them beside the lowerings.
FAST_ROUTES = Table("lazyx.frontends.torch FAST_ROUTES (the C dispatcher's ops)")
_NATIVE = config.native()
# [recipes.record, recipes.before] while the C dispatcher stamps recipes (recipes.py), else []
_RECORDER = []


class LazyTensor(torch.Tensor):
    """Shape and dtype come from the IR node; the storage is the LazyHandle.

    The handle lives in `_lazyx_handle`; the public `__lazyx_handle__` is a property that
    device.py puts on torch.Tensor, so it also answers for the user's functional wrapper.
    """

    @staticmethod
    def __new__(cls, handle, dtype):
        node = handle.node
        t = torch.Tensor._make_wrapper_subclass(cls, node.shape, dtype=dtype, device=DEVICE)
        t._lazyx_handle = handle
        return t

    def __repr__(self):
        return f"LazyTensor(shape={tuple(self.shape)}, dtype={self.dtype}, " \
               f"pending={self._lazyx_handle.pending})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return dispatch(func, args, kwargs or {})


_PY_DISPATCH = LazyTensor.__dict__["__torch_dispatch__"]


def _fast_routes():
    """FAST_ROUTES' ops that still lower as registered, with no value check or special handler
    (made again by the C dispatcher whenever those tables change size)."""
    return {op: (arity, builder) for op, (arity, builder, lowering) in FAST_ROUTES.items()
            if LOWERINGS.get(op) is lowering and op not in VALUE_CHECKS and op not in SPECIAL}


def use_fast_dispatch(on=True):
    """With the C core built, LazyTensor.__torch_dispatch__ is the C dispatcher: the routes
    whose op still lowers as registered, with no value check or special handler, are built in
    C, and every other call goes to `dispatch` below. `on=False`: Python only (tests compare
    the two). Returns whether the C dispatcher is now in place."""
    if not on or _NATIVE is None:
        LazyTensor.__torch_dispatch__ = _PY_DISPATCH
        _RECORDER[:] = []
        return False
    from ...core import capture
    from . import recipes
    floats = {name: dtypes.to_torch(name) for name in ("float32", "float64")}
    fast = _NATIVE.FastDispatch(
        slow=dispatch, tables=(VALUE_CHECKS, SPECIAL, LOWERINGS), refresh=_fast_routes,
        state=_state, op_line=_OP_LINE,
        maybe_cut=runtime.maybe_cut, lazy_type=LazyTensor, handle_type=runtime.LazyHandle,
        torch_dtypes=floats, param=ir.param, hosts=ir._HOSTS, new_node=ir.new_node,
        splat=ir._SPLAT, make_wrapper=torch.Tensor._make_wrapper_subclass,
        globals=globals(), recording=capture._active, recipes=recipes.RECIPES,
        generation=ir.LOCALS_GENERATION, simple_types=recipes.SIMPLE_TYPES,
        default_dtype=torch.get_default_dtype, created=ir.CREATED, readers=READY_READS)
    LazyTensor.__torch_dispatch__ = classmethod(fast)
    _RECORDER[:] = [recipes.record, recipes.before]
    recipes._FAST[0] = fast
    return True


def from_node(node, torch_dtype=None):
    return LazyTensor(runtime.LazyHandle(node), torch_dtype or dtypes.to_torch(node.dtype))


def from_cpu(tensor):
    """A lazy copy of a CPU tensor (a device data leaf)."""
    return from_node(runtime.from_host(dtypes.to_numpy_array(tensor), dtypes.to_ir(tensor.dtype)),
                     tensor.dtype)


def to_cpu(lazy, cause):
    return dtypes.from_numpy_array(_host_value(lazy, cause), lazy.dtype)


def _host_value(lazy, cause):
    """The lazy tensor's value as a NumPy array (host), the read counted as `cause` says."""
    if _state.capturing and lazy._lazyx_handle.node.op != "data":
        raise NeedsEager(cause)
    cause = _cause(cause)
    # (while a torch.compile graph is lowered, a leaf read is the graph compiler's own)
    if cause not in _COUNTED_ELSEWHERE and not _state.capturing:
        # a read inside an expansion we run (torch._decomp's decomposition, or the op's C++
        # composite kernel through func.decompose) is the op's doing, not the user's
        asker = str(_state.op) if _state.views else framework_request()
        if asker is not None:  # torch's own code reads the value: a silent eager turn
            runtime.fallback(asker, "torch", read=True)
            cause = "fallback"
            try:
                return runtime.to_host(lazy._lazyx_handle, cause=cause)
            except CompileError as e:
                raise CompileError(_asked_by(str(e), asker)) from None
    return runtime.to_host(lazy._lazyx_handle, cause=cause)


_NO_LOWERING = "an op with no lowering runs eagerly there (its inputs are read)"
# what to do about a read torch's own code makes, by the asker's name
_ADVICE = (
    ("GradScaler", "GradScaler's step reads found_inf on the host unless the optimizer is "
                   "fused: torch.optim.Adam/AdamW/SGD(..., fused=True) take found_inf as a "
                   "tensor, and the step replays"),
    ("_BatchNorm", "BatchNorm with momentum=None reads num_batches_tracked on the host for "
                   "its averaging factor; give it a momentum"),
    ("torch.distributions.", "torch.distributions checks a distribution's parameters (and "
                             "log_prob's values) on the host when it validates its arguments: "
                             "make it with validate_args=False, or call torch.distributions."
                             "Distribution.set_default_validate_args(False) once, and the "
                             "step replays"),
)


def _asked_by(message, asker):
    """lazyx.compile's observation error for a read torch's own Python code made: it names
    the function that asked (the plain lazy run's warning does) instead of blaming an op
    with no lowering, and says what to do where lazyx knows."""
    asked = f"torch's own code, {asker}, reads a lazy value there"
    if _NO_LOWERING in message:
        message = message.replace(_NO_LOWERING, asked)
    else:
        message = f"{message} (the read: {asked})"
    advice = [text for name, text in _ADVICE if name in asker]
    return message + "".join(f" {text}." for text in advice)


# an op run eagerly is counted as its aten op already; a data-dependent op's sync is its design
_COUNTED_ELSEWHERE = ("fallback", "data_dependent")
_FRAMEWORKS = ("torch",)
# torch's Python code that only forwards what the user wrote: Tensor's dunders (__array__,
# __format__, __contains__ are the user's np.asarray(x), f"{x}", `v in x`), the
# __torch_function__/dispatch plumbing, boolean_dispatch wrappers, and torch.testing, whose
# assertions read values because the user asked them to compare (as np.testing does).
_PLUMBING = tuple(os.sep.join(("torch", *parts)) for parts in (
    ("_tensor.py",), ("_tensor_str.py",), ("overrides.py",), ("_ops.py",),
    ("utils", "_python_dispatch.py"), ("_jit_internal.py",), ("testing", ""),
    ("serialization.py",),  # torch.save: the user asked for the values
    ("nn", "modules", "module.py")))  # model.cpu() / .to("cpu"): so did they


def framework_request():
    """"module.function" of torch's own Python code asking for a lazy value on the host
    (F.gaussian_nll_loss's `if torch.any(var < 0)`, torch.lobpcg's convergence checks), or
    None when the user's own code asked: `x.item()`, `print(x)`, `if x:`, `x.cpu()` written
    by the user are observations (DESIGN.md principle 9).
    Only Python frames are visible here; C++ composite kernels reach us as the ops they
    call, and a read inside one is caught as a read inside an expansion (see to_cpu)."""
    return source.requester(_FRAMEWORKS, _PLUMBING)


def _cause(default):
    """A patched Tensor method (repr: 'print') may name the cause for the ops it runs."""
    return _state.cause or default


# ---------------------------------------------------------------- meta: shapes, dtypes, errors

class Meta:
    """What a lowering needs of torch's meta result: the shape (a tuple), the torch dtype and
    its IR name. Made once per signature, so a repeated op asks torch for nothing."""
    __slots__ = ("shape", "dtype", "ir")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.ir = dtypes.IR.get(dtype)  # None: no IR dtype (the op falls back if it is made)

    def __repr__(self):
        return f"Meta(shape={self.shape}, dtype={self.dtype})"


def _as_meta(out):
    if isinstance(out, torch.Tensor):
        return Meta(out.shape, out.dtype)
    if isinstance(out, (tuple, list)):
        return type(out)(_as_meta(o) for o in out)
    return out


_meta_cache = {}
_META_LIMIT = 20000  # signatures; emptied when full (a refill costs one meta call each)
_SCALARS = (float, int, bool)


def _key(x):
    """An argument's part of the signature: what torch's meta kernel can see of it."""
    t = type(x)
    if t is LazyTensor:
        node = x._lazyx_handle.node
        return (node.shape, node.dtype)
    if t in _SCALARS:
        return (t, x)  # 1, 1.0 and True promote differently (and True == 1 == 1.0)
    if isinstance(x, torch.Tensor):
        # a CPU tensor's values are invisible to meta kernels, but a CPU scalar tensor is
        # treated like a Python number: its dtype and device decide promotion
        return ("cpu", tuple(x.shape), x.dtype, x.device.type)
    if t is list or t is tuple:
        return (t, *[_key(i) for i in x])
    if t is dict:
        return tuple((k, _key(v)) for k, v in x.items())
    return (t, x)


_default_dtype = torch.get_default_dtype


def _signature(func, args, kwargs):
    """The meta cache's key: the op, torch's default dtype (which a Python float's type is,
    so `int_tensor * 0.5` follows it) and each argument's key (None if one is unhashable). The
    op is keyed by id: OpOverload's __hash__ is Python code, and _ROUTES keeps every op that
    reaches the cache alive, so an id is never reused."""
    key = [id(func), _default_dtype()]
    for x in args:
        t = type(x)
        if t is LazyTensor:
            node = x._lazyx_handle.node
            key.append((node.shape, node.dtype))
        elif t in _SCALARS:
            key.append((t, x))
        else:
            key.append(_key(x))
    if kwargs:
        key.append(_key(kwargs))
    key = tuple(key)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _to_meta(x):
    if isinstance(x, torch.Tensor):
        if isinstance(x, LazyTensor) or x.dim() > 0 or x.device.type == "meta":
            return torch.empty(x.shape, dtype=x.dtype, device="meta")
        return x  # a CPU scalar tensor stays CPU, as torch treats it: like a Python number
    if isinstance(x, (list, tuple)):
        return type(x)(_to_meta(i) for i in x)
    if isinstance(x, torch.device) and x.type == "lazyx":
        return torch.device("meta")
    return x


# copy_ is how CPU data enters the device; CPU index tensors are fine for indexing (as on CUDA)
_CPU_ARGS_OK = {torch.ops.aten.copy.default, torch.ops.aten.index.Tensor,
                torch.ops.aten.index_put.default, torch.ops.aten._unsafe_index_put.default}


class _DeviceMismatch(RuntimeError):
    """torch's error for a device tensor mixed with a CPU one (a RuntimeError, as torch's)."""


def _check_devices(func, args):
    """torch refuses to mix a device tensor with a non-scalar CPU tensor; so do we."""
    for x in args:
        if isinstance(x, (list, tuple)):
            _check_devices(func, x)
        elif isinstance(x, torch.Tensor) and not isinstance(x, LazyTensor) and x.dim() > 0 \
                and x.device.type == "cpu":
            raise _DeviceMismatch("Expected all tensors to be on the same device, but found "
                                  f"at least two devices, lazyx:0 and cpu! (when checking "
                                  f"argument for {func})")


def meta_of(func, args, kwargs):
    """torch's meta kernel on the inputs' shapes, as Meta records (or torch's error).

    Memoized per signature (op, then each argument's shape and dtype, or type and value for
    a non-tensor): a signature is everything a meta kernel reads, so a hit is exactly what
    torch would answer. The device check runs only on a miss: the key records which
    arguments are CPU tensors (and their shapes), so a hit is a call that already passed it.
    Errors are not memoized: a bad call asks torch again, and raises again.
    """
    key = _signature(func, args, kwargs)
    if key is not None:
        hit = _meta_cache.get(key)
        if hit is not None:
            return hit
    if func not in _CPU_ARGS_OK:
        _check_devices(func, args)
    kwargs = {k: _to_meta(v) for k, v in kwargs.items()}
    if "device" in kwargs:
        kwargs["device"] = torch.device("meta")
    out = _as_meta(func(*_to_meta(args), **kwargs))
    if key is not None and out is not None:
        if len(_meta_cache) >= _META_LIMIT:
            _meta_cache.clear()
        _meta_cache[key] = out
    return out


def _to_cpu_zeros(x):
    if isinstance(x, LazyTensor):
        return torch.zeros(x.shape, dtype=x.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_cpu_zeros(i) for i in x)
    if isinstance(x, torch.device) and x.type == "lazyx":
        return torch.device("cpu")
    return x


def _cpu_answer(func, args, kwargs, meta_error):
    """(Meta records, None) or (None, the error to raise) for a call torch's meta kernel
    refused: replayed on CPU zeros of the same shapes. The CPU kernel's error is the one
    users know (meta kernels word and type some errors differently); and where the CPU kernel
    accepts what the meta kernel refuses -- torch's meta kernel for `int << bool` is stricter
    than its CPU kernel -- the CPU result's shapes and dtypes are the call's (memoized).
    Not for our own refusal of a CPU tensor among the arguments: CPU zeros cannot tell."""
    if isinstance(meta_error, _DeviceMismatch):
        return None, meta_error
    try:
        # (a random op's replay must not advance the user's CPU generator)
        with torch.random.fork_rng(devices=[], enabled=torch.Tag.nondeterministic_seeded
                                   in func.tags):
            result = func(*_to_cpu_zeros(args),
                          **{k: _to_cpu_zeros(v) for k, v in kwargs.items()})
    except Exception as cpu_error:
        # the CPU kernel's error is the one eager torch raises, even where its type differs
        # from the meta kernel's (an empty argmax: IndexError on CPU, RuntimeError on meta)
        return None, cpu_error
    out = _as_meta(result)
    if not isinstance(out, (Meta, tuple, list)) or \
            isinstance(out, (tuple, list)) and not all(isinstance(o, Meta) for o in out):
        return None, meta_error
    key = _signature(func, args, kwargs)
    if key is not None:
        _meta_cache[key] = out
    return out, None


_META_KEYS = ("Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
              "CompositeExplicitAutogradNonFunctional")
_meta_kernels = {}  # op -> whether torch runs it on meta tensors at all


def _has_meta_kernel(func):
    known = _meta_kernels.get(func)
    if known is None:
        known = _meta_kernels[func] = any(
            torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), key)
            for key in _META_KEYS)
    return known


def _probes_dtypes(func):
    """Whether a user's call of `func` is first tried on CPU torch for its dtypes: the
    element-wise ops (tiny stand-ins broadcast like the real arguments), not random ones."""
    tags = func.tags
    if torch.Tag.nondeterministic_seeded in tags:
        return False
    return torch.Tag.pointwise in tags or func._opname in _UNTAGGED_ELEMENTWISE


# element-wise ops torch does not tag pointwise, whose CPU kernels refuse some dtypes
_UNTAGGED_ELEMENTWISE = {"complex", "polar", "log_sigmoid_forward"}


_probed = set()  # signatures whose dtypes CPU torch accepted


def _stand_in(x):
    if isinstance(x, LazyTensor):  # ones: no division by zero; shape () or (1,): promotion
        return torch.ones((1,) * min(x.dim(), 1), dtype=x.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_stand_in(i) for i in x)
    if isinstance(x, torch.device) and x.type == "lazyx":
        return torch.device("cpu")
    return x


def _probe_dtypes(func, args, kwargs):
    """Eager torch refuses some element-wise ops for some dtypes (`floor` of bools, `lerp` or
    `frac` of integers, `relu` of bools, `addcdiv` dividing integers, Bessel functions of
    halves), where meta kernels and XLA compute something: run the op once per signature on
    CPU stand-ins of its arguments, and raise what eager raises. (torch 2.13's element-wise
    ops refuse the same dtypes on CPU and CUDA, complex32 aside, which lazyx does not hold.)"""
    key = _signature(func, args, kwargs)
    if key is None or key in _probed:
        return
    try:
        with _cpu_dispatch_keys():
            # (a memory format decides no dtype, and channels_last needs a stand-in of rank 4)
            func(*_stand_in(args), **{k: _stand_in(v) for k, v in kwargs.items()
                                      if k != "memory_format"})
    except (NotImplementedError, RuntimeError) as err:
        raise err.with_traceback(None) from None
    if len(_probed) >= _META_LIMIT:
        _probed.clear()
    _probed.add(key)


# ---------------------------------------------------------------- the dispatcher

def dispatch(func, args, kwargs):
    state = _state
    if state.depth:
        return _dispatch(func, args, kwargs, state)
    read = READY_READS.get(func)
    if read is not None and len(args) == 1 and not kwargs and not state.capturing:
        value = read(args[0])
        if value is not None:
            return value
    state.op = func
    with _OP_LINE:  # a user's op: its source line is found once, for every node (and sync) it makes
        return _dispatch(func, args, kwargs, state)


# id(op) -> (tables' size, op, value check, special handler, lowering): one lookup per call
# for what three tables say of the op. A route made before a table grew is made again (the
# tables only ever grow: core/tables.py); the op is kept, so its id stays its own.
_ROUTES = {}


def _route(func):
    size = len(VALUE_CHECKS) + len(SPECIAL) + len(LOWERINGS)
    route = _ROUTES.get(id(func))
    if route is None or route[0] != size:
        route = _ROUTES[id(func)] = (size, func, VALUE_CHECKS.get(func), SPECIAL.get(func),
                                     LOWERINGS.get(func), _probes_dtypes(func))
    return route


def _dispatch(func, args, kwargs, state):
    if not state.capturing:  # a compiled graph's leaves have no values yet: never cut them
        runtime.maybe_cut()
    state.depth += 1
    try:
        _, _, check, special, lowering, probe = _route(func)
        if check is not None:
            check(func, args, kwargs)
        if probe and state.depth == 1:
            _probe_dtypes(func, args, kwargs)
        if state.depth == 1 and kwargs.get("device") is not None and special is None and \
                torch.device(kwargs["device"]).type != "lazyx":
            # a result asked for on another device (`torch.zeros_like(x, device="cpu")`):
            # CPU torch makes it, as eager would (the lowerings build device values only)
            return eager(func, args, kwargs, cause="convert", to_device=False)
        if special is not None:
            return special(*args, **kwargs)
        # a user's call (depth 1) that lowers or expands is kept as a recipe, which the C
        # dispatcher stamps the next call of its signature from (recipes.py), after running
        # the op's value check as above; its mark (the key, built in C) is taken only then
        recorder = _RECORDER if state.depth == 1 and not state.capturing else None
        if lowering is not None:
            try:
                out = meta_of(func, args, kwargs)
            except NotImplementedError as err:
                out = None  # a data-dependent shape: run it eagerly
                if not _has_meta_kernel(func):
                    # torch has no meta kernel for it (`_standard_gamma_grad`), but its
                    # lowering fixes the shapes by the inputs' shapes: CPU torch on zeros
                    # gives them (and eager's error for a bad call), once per signature
                    out, error = _cpu_answer(func, args, kwargs, err)
                    if error is not None and error is not err:
                        raise error.with_traceback(None) from None
            except Exception as err:
                if "data-dependent" in str(err) or "DynamicOutputShape" in type(err).__name__:
                    out = None
                else:
                    out, error = _cpu_answer(func, args, kwargs, err)
                    if error is not None:
                        raise error.with_traceback(None) from None
            if out is not None:
                mark = recorder[1](func, args, kwargs) if recorder else None
                try:
                    result = _wrap(lowering(out, *args, **kwargs), out)
                    if state.views and func.is_view:
                        _note_view(args[0], result)
                    if mark is not None:
                        recorder[0](func, args, kwargs, result, mark)
                    return result
                except Unsupported:
                    pass
                except ViewWrite:
                    return eager(func, args, kwargs, cause="fallback")
                except (TypeError, ValueError) as err:
                    # The IR refused a dtype torch's meta kernel let through (e.g. remainder
                    # of bools): CPU torch either computes it or raises its own error.
                    if "lazyx" in str(err) or ": " not in str(err):
                        raise
                    return eager(func, args, kwargs, cause="fallback")
            else:
                return eager(func, args, kwargs, cause="data_dependent")
        elif func.__name__.startswith("_foreach_"):
            return foreach(func, args, kwargs)
        elif _is_in_place(func, args):
            return _in_place(func, args, kwargs)
        mark = recorder[1](func, args, kwargs) if recorder else None
        for expansion in _expansions(func):
            try:
                out = expand(expansion, *args, **kwargs)
            except ViewWrite:
                break  # the expansion's result would miss a write: run the op on CPU torch
            if out is not NotImplemented:
                if func.is_view and state.views:  # a view to the code that called it
                    _note_view(args[0], out)
                if mark is not None:
                    recorder[0](func, args, kwargs, out, mark)
                return out
        return eager(func, args, kwargs, cause="fallback")
    finally:
        state.depth -= 1


_EXPANSIONS = {}  # op -> (size of torch's decomposition table when looked up, expansions)


def _expansions(func):
    """torch's decomposition of `func`, then its CompositeImplicitAutograd kernel: looked up
    once per op (again if torch has registered decompositions since)."""
    known = _EXPANSIONS.get(func)
    if known is not None and known[0] == len(decomposition_table):
        return known[1]
    expansions = []
    decomposition = decomposition_table.get(func)
    if decomposition is not None:
        expansions.append(decomposition)
    # Below autograd, torch's composite ops (x.to(dtype), result_type, ...) reach us
    # whole when a decomposition calls them: expand them as torch would above us.
    if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd"):
        expansions.append(func.decompose)
    _EXPANSIONS[func] = (len(decomposition_table), tuple(expansions))
    return tuple(expansions)


def _wrap(result, out):
    if isinstance(result, ir.Node):  # (an ir.Derived data leaf too: a lowering may return it)
        want = out.ir or dtypes.to_ir(out.dtype)  # (to_ir raises for a dtype the IR lacks)
        if result.shape != out.shape:
            raise AssertionError(f"lazyx: lowering made shape {result.shape}, torch says "
                                 f"{out.shape}")
        if result.dtype != want:
            from ...core import ops
            result = ops.convert(result, dtype=want)
        return LazyTensor(runtime.LazyHandle(result), out.dtype)
    if isinstance(result, (tuple, list)):
        return type(out)(_wrap(r, o) for r, o in zip(result, out))
    return result  # a pass-through value (e.g. an input tensor returned as is)


def eager(func, args, kwargs, cause, to_device=True):
    """Run `func` on CPU torch: inputs materialized, outputs become device data (or stay CPU
    tensors, `to_device=False`: a result the user asked for on another device)."""
    if _state.capturing:
        raise NeedsEager(func)
    if cause == "fallback":
        runtime.fallback(str(func), "torch")
    lazies = [x for x in _flatten(args) + _flatten(list(kwargs.values()))
              if isinstance(x, LazyTensor) and x._lazyx_handle.pending]
    if lazies:
        runtime.sync(*[x._lazyx_handle for x in lazies], cause=cause, sharing=True)

    def cpu(x):
        if isinstance(x, LazyTensor):
            return to_cpu(x, cause)
        if isinstance(x, (list, tuple)):
            return type(x)(cpu(i) for i in x)
        if isinstance(x, torch.device) and x.type == "lazyx":
            return torch.device("cpu")
        return x

    cpu_args, cpu_kwargs = cpu(args), {k: cpu(v) for k, v in kwargs.items()}
    with _cpu_dispatch_keys():
        out = func(*cpu_args, **cpu_kwargs)
    if not to_device:
        return out
    return _lazify(out, func, _write_back(func, args, kwargs, cpu_args, cpu_kwargs))


def _write_back(func, args, kwargs, cpu_args, cpu_kwargs):
    """What an op run on CPU torch wrote into its arguments becomes their lazy values: an
    in-place op with no functional twin, or an out= op functionalization left to us
    (`torch.randperm(5, out=t)`), otherwise lost its write. {id(CPU argument): the lazy one},
    so a result that is a written argument comes back as that argument."""
    schema = getattr(func, "_schema", None)
    written = {}
    for i, arg in enumerate(schema.arguments if schema is not None else ()):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        if arg.kwarg_only or i >= len(args):
            lazy, host = kwargs.get(arg.name), cpu_kwargs.get(arg.name)
        else:
            lazy, host = args[i], cpu_args[i]
        pairs = zip(lazy, host) if isinstance(lazy, (list, tuple)) else ((lazy, host),)
        for lazy, host in pairs:
            if not isinstance(lazy, LazyTensor) or not isinstance(host, torch.Tensor):
                continue
            if tuple(host.shape) != tuple(lazy.shape) or host.dtype != lazy.dtype:
                raise RuntimeError(
                    f"lazyx: {func}, run on CPU torch, resized or retyped its argument "
                    f"{arg.name} ({tuple(lazy.shape)} {lazy.dtype} -> {tuple(host.shape)} "
                    f"{host.dtype}), which a lazy tensor cannot follow: pass an argument of "
                    f"the result's shape and dtype")
            lazy._lazyx_handle.set(from_cpu(host)._lazyx_handle.node)
            written[id(host)] = lazy
    return written


_VIEW_BIT_KEYS = (torch._C.DispatchKey.Conjugate, torch._C.DispatchKey.Negative,
                  torch._C.DispatchKey.ZeroTensor)


def _cpu_dispatch_keys():
    """Inside __torch_dispatch__ torch excludes the Conjugate/Negative/ZeroTensor keys (they
    sit above Python). A CPU kernel that makes a conj view internally (pinv's mH, ...) needs
    them, or it reads the view as unconjugated: a silently wrong result. Re-enable them."""
    exclude = torch._C._dispatch_tls_local_exclude_set()
    for key in _VIEW_BIT_KEYS:
        exclude = exclude.remove(key)
    return torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), exclude)


def _lazify(out, func=None, written=None):
    if isinstance(out, torch.Tensor):
        if written and id(out) in written:  # an argument it wrote: that same lazy tensor
            return written[id(out)]
        if out.layout != torch.strided:
            # a lazy value is a dense array: a sparse result cannot come back to the device
            raise RuntimeError(
                f"lazyx: {func} makes a {out.layout} tensor, and lazyx tensors are dense "
                f"(strided) only: keep sparse tensors on CPU, or call .to_dense() before "
                f".to(lt.device)")
        return from_cpu(out) if dtypes.supported(out.dtype) else out
    if isinstance(out, (list, tuple)):
        return type(out)(_lazify(o, func, written) for o in out)
    return out


def _flatten(xs):
    flat = []
    for x in xs:
        if isinstance(x, (list, tuple)):
            flat.extend(_flatten(x))
        else:
            flat.append(x)
    return flat


def _is_in_place(func, args):
    name = func._opname
    return name.endswith("_") and not name.startswith("_") and args and \
        isinstance(args[0], LazyTensor)


class ViewWrite(Exception):
    """A decomposition wrote in place into a view of a raw lazy tensor (or into a tensor it has
    taken views of). Raw lazy tensors share no storage, so the write would not reach the
    other side: the op that is being expanded runs on CPU torch instead (a counted fallback)."""


def expand(expansion, *args, **kwargs):
    """Run a decomposition on raw lazy tensors, watching the views it makes: an in-place
    write into one of them (or into a tensor it took views of) raises ViewWrite."""
    if _state.views is None:
        _state.views = []
    _state.views.append({})
    try:
        return expansion(*args, **kwargs)
    finally:
        _state.views.pop()


def _note_view(base, view):
    """A view made by the running expansion's code. User-level views never get here (they
    are functionalized above us), and a view made inside a nested op's expansion is that
    op's business: once the op returns, its result is a plain value to its caller."""
    scope = _state.views[-1]
    for t in (base, *(view if isinstance(view, (list, tuple)) else (view,))):
        if isinstance(t, LazyTensor):
            scope[id(t)] = t


def _in_place(func, args, kwargs):
    """x.op_(...) on a raw lazy tensor (decompositions do this, e.g. batch norm's running
    stats): compute the functional op, rebind x's handle. Users' in-place ops never get here:
    torch's functionalization rewrote them above us."""
    target = args[0]
    if _state.views and id(target) in _state.views[-1]:
        raise ViewWrite(str(func))
    packet = getattr(torch.ops.aten, func._opname[:-1], None)
    functional = getattr(packet, func._overloadname, None) if packet is not None else None
    if functional is None:
        return eager(func, args, kwargs, cause="fallback")
    result = dispatch(functional, args, kwargs)
    node = result._lazyx_handle.node
    if result.dtype != target.dtype:
        from ...core import ops
        node = ops.convert(node, dtype=dtypes.to_ir(target.dtype))
    target._lazyx_handle.set(node)
    return target


def _powsum(x, ord=2, dtype=None):
    return torch.sum(torch.abs(x) ** ord, dtype=dtype)


# torch.X where the foreach op's element is another function: maximum and minimum take a
# number only as a clamp (torch.maximum wants a tensor; clamp propagates NaN as they do),
# and _foreach_powsum (sum(|x| ** ord) per tensor, new in torch 2.13) has no torch.powsum
_ELEMENT_WITH_A_NUMBER = {"maximum": torch.clamp_min, "minimum": torch.clamp_max}
_ELEMENTS = {"powsum": _powsum}


def _scalars_on_cpu(scalars):
    """The Tensor overload of _foreach_addcmul/addcdiv's scalars as numbers, as torch reads
    them (a CPU tensor, one value per element)."""
    if scalars.device.type != "cpu":
        raise RuntimeError(f"Expected scalars to be on CPU, got {scalars.device.type} instead.")
    return scalars.tolist()


def foreach(func, args, kwargs):
    """torch._foreach_X(lists, ...) (what optimizers call): X per element, lists zipped."""
    name = func.__name__.split(".")[0][len("_foreach_"):]
    # torch.X, else the ATen op itself: functionalization's _foreach_copy / _foreach_zero
    # (Rprop's and ASGD's foreach paths) have no torch.copy or torch.zero
    fn = _ELEMENTS.get(name) or getattr(torch, name, None) or \
        getattr(torch.Tensor, name, None) or getattr(torch.ops.aten, name)
    length = next(len(a) for a in args if isinstance(a, (list, tuple)))
    if name in ("addcmul", "addcdiv") and len(args) == 4:  # value is keyword-only in torch.X
        scalars = args[3]
        if isinstance(scalars, torch.Tensor):
            scalars = _scalars_on_cpu(scalars)
        args, kwargs = args[:3], dict(kwargs, value=scalars)
    if name in _ELEMENT_WITH_A_NUMBER:  # (a number, or a list of one per element)
        other = args[1][0] if isinstance(args[1], (list, tuple)) and args[1] else args[1]
        if not isinstance(other, torch.Tensor):
            fn = _ELEMENT_WITH_A_NUMBER[name]
    results = []
    # A user's foreach call (depth 1) makes its element calls as the user's own: at depth 0
    # each takes the C dispatcher's fast path or stamps its recipe (recipes.py), as a
    # per-parameter optimizer's calls do, instead of the general path every time. Optimizers
    # default to foreach on lt.device (torch lists "lazyx" among its foreach devices).
    state = _state
    outermost = state.depth == 1 and not state.capturing
    if outermost:
        state.depth = 0
    try:
        for i in range(length):
            pick = [a[i] if isinstance(a, (list, tuple)) else a for a in args]
            kw = {k: v[i] if isinstance(v, (list, tuple)) else v for k, v in kwargs.items()}
            results.append(fn(*pick, **kw))
    finally:
        if outermost:
            state.depth = 1
    return results


# ---------------------------------------------------------------- ops that leave the device

# Reads torch makes only to choose a performance hint it passes on, by asker, with the answer
# that is always right for them: the value is not read (no cut of the pending step, no
# fallback; a lazyx.compile step replays). nn.Transformer, TransformerEncoder and
# TransformerDecoder ask whether the float mask they were given is the causal one,
# `bool((mask == causal).all())`, to pass is_causal=True on, which lets attention drop the
# mask for its causal mode; "no" keeps the mask, and the mask applied as given is the same
# attention (torch documents a False hint for a causal mask as costing speed only).
# pytorch/examples' word_language_model and language_translation steps were cut into two
# and three programs by it, and lazyx.compile refused them.
_HINT_READS = {"torch.nn.modules.transformer._detect_is_causal_mask": False}


def _hint_answer(x):
    """The answer of a hint read (`_HINT_READS`) of the bool scalar x, or None."""
    if x.dtype != torch.bool or _state.views or _state.capturing or x.numel() != 1:
        return None
    return _HINT_READS.get(framework_request())


def _local_scalar_dense(x):
    if x.dtype == torch.bool:
        hint = _hint_answer(x)
        if hint is not None:
            return hint
    host = _host_value(x, "item")
    if host.dtype.kind in "biufc":  # NumPy's item() is torch's: the same Python number
        value = host.item()
        # (a split lazyx.compile step remembers the read: core/split_steps; not print's)
        return observed(value, x._lazyx_handle) if _cause("item") == "item" else value
    return dtypes.from_numpy_array(host, x.dtype).item()  # (bfloat16: ml_dtypes' scalar)


def _ready_item(x):
    """`x.item()` of a value already computed, asked by the user's own code (a loss read
    after a barrier or a replay), with no listener and no split step tracing: the read
    _local_scalar_dense makes, without the general dispatcher around it (the op's line, a
    node-cap check, its route), which cost 7 of a 9 us read. None: not such a read, take the
    general path. Called from `dispatch` (depth 0) and from the C dispatcher (not busy)."""
    if x.__class__ is not LazyTensor or _state.cause is not None or _state.views or \
            runtime.LISTENERS:
        return None
    node = x._lazyx_handle.node
    if node.op != "data" or node.dtype == "bool" or framework_request() is not None:
        return None  # (pending: a cut; bool: hint reads; torch's code asking: a fallback)
    # (not runtime.to_host: the transfer is counted only once the read is answered here, or
    # a bfloat16 read handed to the general path counted twice; and 0.6 us less)
    host = runtime.get_backend().to_host(node.value)
    if host.dtype.kind not in "biufc":  # (bfloat16: ml_dtypes' scalar, the general path)
        return None
    metrics.record_transfer("to_host", host.nbytes)
    return host.item()


# The item reads _ready_item serves, each also SPECIAL's _local_scalar_dense below
READY_READS = {torch.ops.aten._local_scalar_dense.default: _ready_item,
               torch.ops.prims.item.default: _ready_item,
               torch.ops.aten.item.default: _ready_item}


def _to_copy(x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    replacing = _from_replace(layout, device)
    if _state.depth == 1 and replacing and dtype is not None and \
            not torch.can_cast(x.dtype, dtype):
        # an out= op's result into `out`, or an in-place op's into `self`: eager's rule, which
        # no Meta kernel of an out= op makes (`torch.mul(half, half, out=int32)` truncated)
        raise dtypes.cast_error(x.dtype, dtype)
    result = _copy_to(x, dtype, device)
    if _state.depth == 1 and isinstance(result, LazyTensor) and not replacing:
        # torch's functionalization kernel for _to_copy wraps its result again only for the
        # XLA and Lazy device types ("device_opted_into_functionalization"); for ours it
        # would hand users this raw tensor (x.to(torch.long) escaping functionalization, so
        # a later in-place op mixing it with functional tensors fails): wrap it here
        return torch._to_functional_tensor(result)
    return result


def _from_replace(layout, device):
    """Whether this _to_copy is functionalization's own, casting an in-place op's result
    back to self's dtype (FunctionalTensorWrapper::replace_, e.g. half.mul_(float32)). That
    call must get a raw tensor back (torch asserts it), and it is the only top-level caller
    that names a layout without a device: Tensor.to and its kin pass no layout, or both."""
    return layout is not None and device is None


def _copy_to(x, dtype, device):
    if device is not None and torch.device(device).type == "meta":
        # a shape without values (torch's ZeroTensor kernels size their result so, as forward
        # AD's zero tangents do): nothing to read
        return torch.empty(x.shape, dtype=dtype or x.dtype, device="meta")
    if device is not None and torch.device(device).type != "lazyx":
        cpu = to_cpu(x, "convert")
        return cpu.to(device=device, dtype=dtype or cpu.dtype)
    target = dtype or x.dtype
    if not dtypes.supported(target):
        return eager(torch.ops.aten._to_copy.default, (x,), {"dtype": target}, "fallback")
    node = x._lazyx_handle.node
    from ...core import ops
    want = dtypes.to_ir(target)
    # Values are immutable: a same-dtype copy is a second handle on the same node.
    return from_node(ops.convert(node, dtype=want) if node.dtype != want else node, target)


def _fused_sdp_choice(*args, **kwargs):
    return 0  # SDPBackend.MATH: attention as ordinary ops that we lower


def _has_same_storage_numel(a, b):
    # forward AD's check at make_dual: a lazy tensor's storage is its own values (views are
    # resolved by functionalization before us), so its numel -- no read of the values
    return a.numel() == b.numel()


SPECIAL = {
    torch.ops.aten._has_same_storage_numel.default: _has_same_storage_numel,
    torch.ops.aten._local_scalar_dense.default: _local_scalar_dense,
    torch.ops.prims.item.default: _local_scalar_dense,  # torch._refs' Tensor.item
    # Tensor.item of an inference tensor: with autograd's keys off, its composite kernel
    # does not run above us and `item` itself arrives; expanded here, its read looked like
    # torch's own code reading inside aten.item (a counted fallback, not the user's item)
    torch.ops.aten.item.default: _local_scalar_dense,
    torch.ops.aten._to_copy.default: _to_copy,
    torch.ops.aten._fused_sdp_choice.default: _fused_sdp_choice,
}
