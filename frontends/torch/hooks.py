"""Every change lazyx makes to torch's own classes and functions, in one place.

Each hook acts only on lazyx tensors and models moved to the lazyx device: for anything
else it calls torch's original, so code in the same process that never touches lazyx
behaves exactly as without it (tests/frontends/torch/test_isolation.py runs a plain torch
program with and without `import lazyx.frontends.torch` and compares).

Checked against torch 2.13.0. Each hook names the torch internal it depends on; on a torch
upgrade, re-read those:

  Tensor.numpy                 lazy tensors materialize (torch refuses a non-CPU tensor);
                               a functional CPU tensor reads its value, not its wrapper
  Tensor.__repr__              lazy tensors print their values (not the functional wrapper)
  Tensor.__lazyx_handle__      new attribute: the IR handle behind a lazyx tensor
  torch._mirror_autograd_meta_to       Dynamo fakes lazyx parameters (torch.compile)
  meta_utils.MetaTensorDescriber.describe_tensor   lazy tensors are faked as xla's are
  nn.Module.to, nn.Module.cpu  tied weights stay tied when a model moves to or from the device
  autograd._engine_run_backward        lazy backward runs on the calling thread; an error
                               raised in it is re-raised (see DeviceGuard)
  Tensor._reduce_ex_internal   torch.save/pickle of lazy tensors: values go through the CPU
  Tensor.__deepcopy__          copy.deepcopy of lazy tensors (a model's buffers): a clone
  nn.utils.parametrize._maybe_set      no set_ on a lazy parameter (it froze its storage)
  Tensor.copy_, __setitem__    a plain tensor written from a lazy one reads it first;
                               x[bool_mask] = row on lazyx with a row that requires grad is
                               where(mask, row, x) (no count-shaped gradient: _mask_write)
  torch._dynamo.trace_rules    Dynamo runs lazyx's own code, never compiles it (add)
  Tensor.item                  only while a split lazyx.compile step traces (split_item)
  UntypedStorage.data_ptr      a lazyx storage's is its StorageImpl's address (safetensors)
  proxy_tensor.get_proxy_slot, set_proxy_slot, dispatch_trace, HANDLED_TYPES
                               make_fx in real mode (torch.func.linearize) traces lazy ops
  torch.func.functionalize     (and eager_transforms.functionalize) runs `func` itself on
                               lazyx tensors; a name bound before lazyx's import is torch's
  autograd.graph.save_on_cpu.__init__  its pack hook keeps lazyx tensors lazy (no host copy)
  higher_order.cond            a rule for LazyTensor (py_impl): the predicate is read, the
                               branch it picks runs, recorded (torch raised "no rule
                               registered for HOP cond and subclass LazyTensor")
  torch.inference_mode.__enter__/__exit__   once lazyx has built a node, the block also
                               pushes _InferenceViews (a TorchFunctionMode): calls on lazyx
                               tensors made outside the block run with inference mode off

Besides these, device.py registers the PrivateUse1 backend under the name "lazyx" (torch's
public backend-registration API) and its kernels through torch.library: registrations,
not patches.
"""
import contextlib
import copy
import copyreg
import dataclasses
import ctypes
import functools
import itertools
import sys
import threading
import types
import warnings

import torch

from ...core import ir, runtime, split_steps
from . import tensor

_ORIGINAL = {}


def _numpy(self, *, force=False):
    if tensor.on_device(self):
        if self.requires_grad and not force:  # torch's own check, before the device's
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self.detach().to("cpu").numpy()
    if torch._is_functional_tensor(self) and (force or not self.requires_grad):
        # a CPU result of an op on lazyx tensors (`torch.zeros_like(x, device="cpu")`,
        # `torch.linspace` of lazy bounds) comes back wrapped by functionalization, whose
        # own storage holds no values: torch's numpy() read garbage from it (one that
        # requires grad gets torch's own error below)
        torch._sync(self)
        return _ORIGINAL["numpy"](torch._from_functional_tensor(self).detach(), force=force)
    return _ORIGINAL["numpy"](self, force=force)


def _repr(self, *, tensor_contents=None):
    if not tensor.on_device(self) or isinstance(self, tensor.LazyTensor):
        return _ORIGINAL["__repr__"](self, tensor_contents=tensor_contents)
    tensor._state.cause = "print"
    try:
        host = self.detach().to("cpu")
    finally:
        tensor._state.cause = None
    text = _ORIGINAL["__repr__"](host)[:-1] + ", device='lazyx:0'"
    if self.grad_fn is not None:
        text += f", grad_fn=<{type(self.grad_fn).__name__}>"
    elif self.requires_grad:
        text += ", requires_grad=True"
    return text + ")"


def _handle(self):
    """The LazyHandle behind a lazyx tensor (pending view writes applied first)."""
    if isinstance(self, tensor.LazyTensor):
        return self._lazyx_handle
    if not tensor.on_device(self) or not torch._is_functional_tensor(self):
        raise AttributeError("__lazyx_handle__")
    torch._sync(self)
    return torch._from_functional_tensor(self)._lazyx_handle




def _is_wrapper(obj):
    """Whether `obj` is a user's lazyx tensor: torch's functional wrapper of a LazyTensor."""
    return type(obj) is not tensor.LazyTensor and isinstance(obj, torch.Tensor) and \
        torch._is_functional_tensor(obj) and tensor.on_device(obj) and \
        type(torch._from_functional_tensor(obj)) is tensor.LazyTensor  # (not a fake's)


def _lazy_wrapper(obj):
    """The LazyTensor inside a user's lazyx tensor now, or None."""
    if not _is_wrapper(obj):
        return None
    torch._sync(obj)  # a view of a written base: its current value
    return torch._from_functional_tensor(obj)


# make_fx in real mode (torch.func.linearize traces with it) gives the user's inputs proxies,
# but functionalization hands each op to the proxy mode with the LazyTensors inside them, which
# had none: every op was taken for one on constants and the graph returned the first call's
# result (checked against torch 2.13's fx/experimental/proxy_tensor.py: its own calls of these
# two module globals). So a lazyx tensor's proxy is its LazyTensor's too, and a lookup of a
# lazyx tensor asks for its current LazyTensor's first (an in-place op's functional result)
def _set_proxy_slot(obj, tracer, proxy):
    _ORIGINAL["set_proxy_slot"](obj, tracer, proxy)
    inner = _lazy_wrapper(obj)
    if inner is not None:
        _ORIGINAL["set_proxy_slot"](inner, tracer, proxy)
        inputs = getattr(tracer, "_lazyx_inputs", None)
        if inputs is not None and proxy.proxy.node.op == "placeholder":
            inputs.append((obj, inner, proxy.proxy.node))


def _dispatch_trace(root, tracer, concrete_args=None):
    """make_fx's trace: a lazyx input the function wrote in place reached the proxy mode as
    its functional update (`add`, not `add_`), so the graph would leave the input unchanged;
    its final value is copied back into it at the graph's end, as eager make_fx's `add_`
    writes it (and as AOTAutograd's functionalized graphs do)."""
    trace = tracer.trace

    def tracing(*args, **kwargs):
        tracer._lazyx_inputs = []
        graph = trace(*args, **kwargs)
        _write_back_inputs(tracer, graph, tracer._lazyx_inputs)
        return graph
    tracer.trace = tracing
    try:
        return _ORIGINAL["dispatch_trace"](root, tracer, concrete_args)
    finally:
        del tracer.trace, tracer._lazyx_inputs


def _write_back_inputs(tracer, graph, inputs):
    output = next(n for n in graph.nodes if n.op == "output")
    for wrapper, first, placeholder in inputs:
        now = _lazy_wrapper(wrapper)
        if now is first:
            continue
        value = tracer.tensor_tracker.get(now)
        if value is None:
            raise RuntimeError("lazyx: make_fx cannot trace a write of a constant into the "
                               f"input {placeholder.name}; use tracing_mode='fake'")
        with graph.inserting_before(output):
            graph.call_function(torch.ops.aten.copy_.default, (placeholder, value.proxy.node))


# and a LazyTensor without one (a closure's, as W in `lambda x: W @ x`) is a constant, as a CPU
# tensor is: the proxy mode handed a type it does not know back to LazyTensor's dispatch, with
# the mode still on, and it recorded lazyx's own meta-kernel calls and made the op's result a
# constant (proxy_tensor.HANDLED_TYPES, read at each call)
def _get_proxy_slot(obj, tracer, *args, **kwargs):
    inner = _lazy_wrapper(obj)
    if inner is not None and inner in tracer.tensor_tracker:
        obj = inner
    return _ORIGINAL["get_proxy_slot"](obj, tracer, *args, **kwargs)


def _functionalize(func, *args, **kwargs):
    """torch.func.functionalize: a lazyx tensor already is torch's functional wrapper (its
    ops reach lazyx as a functional trace), and functorch's wrapping it a second time failed
    on an internal assert of FunctionalStorageImpl (torch 2.13's
    _functorch/eager_transforms.functionalize). A call with a lazyx tensor among its
    arguments therefore runs `func` itself: the same results and the same writes to its
    inputs; any other call is functorch's."""
    functional = _ORIGINAL["functionalize"](func, *args, **kwargs)

    @functools.wraps(func)
    def wrapped(*call_args, **call_kwargs):
        leaves = torch.utils._pytree.tree_leaves((call_args, call_kwargs))
        if any(_is_lazy(leaf) for leaf in leaves):
            return func(*call_args, **call_kwargs)
        return functional(*call_args, **call_kwargs)
    return wrapped


def _is_lazy(obj):
    """Whether `obj` is a lazyx tensor, under any functorch transforms' wrappers (vmap's)."""
    if not isinstance(obj, torch.Tensor):
        return False
    functorch = torch._C._functorch
    while functorch.is_functorch_wrapped_tensor(obj):
        obj = functorch.get_unwrapped(obj)
    return type(obj) is tensor.LazyTensor or _is_wrapper(obj)


def _save_on_cpu_init(self, *args, **kwargs):
    """torch.autograd.graph.save_on_cpu packs each saved activation with `tensor.cpu()`
    (torch 2.13), which on a lazyx tensor computes the pending forward and reads it to the
    host: a sync and a counted fallback per saved tensor, and a step lazyx.compile cannot
    replay. A lazyx tensor is kept as it is instead (its unpack, `.to(its device)`, is then a
    no-op): it is a value of the step's program, which XLA places, not a device buffer held
    until the backward, so there is no device memory for a host copy to free."""
    _ORIGINAL["save_on_cpu_init"](self, *args, **kwargs)
    pack = self.pack_hook

    def pack_lazy_as_is(t):
        return (t.device, t) if tensor.on_device(t) else pack(t)
    self.pack_hook = pack_lazy_as_is


def _run_backward(outputs, *args, **kwargs):
    """Backward of a lazyx graph runs on the calling thread. The autograd engine runs a
    non-CPU device's backward on a worker thread of its own (torch 2.13); there it would
    record into that thread's trace and pending handles: a training step's cut could not use
    the expression ids (it would walk the whole graph every step), and a barrier on the
    user's thread would not see the gradients as pending.
    A Python exception raised in the backward (a hook, a fallback's error, lazyx.compile's
    CompileError) was taken out of the engine by DeviceGuard.type_ (below); it is raised
    here, in place of the engine's "returned NULL without setting an exception"."""
    original = _ORIGINAL["run_backward"]
    raised = _raised_in_backward()
    raised.clear()
    try:
        if any(isinstance(t, torch.Tensor) and tensor.on_device(t) for t in outputs):
            with torch.autograd.set_multithreading_enabled(False):
                return original(outputs, *args, **kwargs)
        return original(outputs, *args, **kwargs)
    except BaseException:
        if not raised:
            raise
        exc = raised.pop()
        raised.clear()
        raise exc from None


# A Python exception raised inside the autograd engine on a lazyx node (a hook, our
# dispatcher) leaves CPython's error indicator set while the engine unwinds; torch 2.13's
# engine then restores its stream guard (InlineStreamGuard's destructor, noexcept), which for
# a Python-registered PrivateUse1 device calls the device guard's `type_` in Python --
# and a call made with an error pending fails, so the process died in std::terminate
# ("terminate called without an active exception"), or on some paths lost the error
# (SystemError: run_backward returned NULL without setting an exception). The device guard's
# `type_` (torch.acc.PythonDeviceGuard calls it for exchangeStream, getStream,
# exchangeDevice, getDevice) therefore first takes a pending error out of the interpreter
# (PyErr_Fetch, through ctypes: the first call it makes, so nothing runs with the error
# set) and keeps it for _run_backward to raise. Checked against torch 2.13.0 (engine.cpp's
# evaluate_function; torch/csrc/acc/Module.cpp's PythonDeviceGuard), CPython 3.11.
# Per thread: the backward runs on its caller's thread (above), and two threads' backwards
# must not take (or clear) each other's errors.
_RAISED_IN_BACKWARD = threading.local()


def _raised_in_backward():
    """This thread's errors taken out of its backward (a list)."""
    errors = getattr(_RAISED_IN_BACKWARD, "errors", None)
    if errors is None:
        errors = _RAISED_IN_BACKWARD.errors = []
    return errors


_ERR_SLOTS = [ctypes.c_void_p() for _ in range(3)]
_ERR_REFS = tuple(ctypes.byref(s) for s in _ERR_SLOTS)
_PYERR_FETCH = ctypes.pythonapi.PyErr_Fetch
_PYERR_FETCH.restype = None
_PY_DECREF = ctypes.pythonapi.Py_DecRef
_PY_DECREF.argtypes = (ctypes.c_void_p,)
_PY_DECREF.restype = None


def _take_pending_error():
    """The error PyErr_Fetch put in _ERR_SLOTS, as an exception with its traceback."""
    parts = []
    for slot in _ERR_SLOTS:
        address, slot.value = slot.value, None
        if address is None:
            parts.append(None)
            continue
        parts.append(ctypes.cast(address, ctypes.py_object).value)  # a new reference
        _PY_DECREF(address)  # PyErr_Fetch's
    kind, value, traceback = parts
    if not isinstance(value, BaseException):
        value = kind() if value is None else kind(*(value if isinstance(value, tuple)
                                                    else (value,)))
    if traceback is not None:
        value = value.with_traceback(traceback)
    _raised_in_backward().append(value)


def _native_take():
    """_native_dispatch.c's take_pending_error: fetch and return in one C call, so no other
    thread runs between them (the ctypes fetch below goes through _ERR_SLOTS, shared by all
    threads: another thread's guard call could overwrite them before they are read, and an
    error came back without its message). Used whenever the extension is built, LAZYX_NATIVE=0
    included (it is no part of the tracing core); an install without it keeps the ctypes way."""
    try:
        from ...core import _native
    except ImportError:
        return None
    return getattr(getattr(_native, "FastDispatch", None), "take_pending_error", None)


class DeviceGuard(torch._C._acc.DeviceGuard):
    """The lazyx device's guard (device.register passes it to torch's registration)."""

    def type_(self, _take=_native_take(), _fetch=_PYERR_FETCH, _refs=_ERR_REFS,
              _slots=_ERR_SLOTS, _type=torch._C._autograd.DeviceType.PrivateUse1):
        if _take is not None:  # (an identity test: no call runs with the error pending)
            error = _take()  # first: with an error pending, any other call would fail
            if error is not None:
                _raised_in_backward().append(error)
            return _type
        _fetch(*_refs)  # first: with an error pending, any other call would fail
        if _slots[0].value is not None:
            _take_pending_error()
        return _type


def _describe_tensor(self, t, *, recurse=True, trace=False):
    """Dynamo and AOTAutograd fake a tensor from torch._subclasses.meta_utils'
    MetaTensorDescriber.describe_tensor. A FunctionalTensorWrapper is faked as a functional
    wrapper around a fake -- except on the "xla" and "lazy" devices, whose tensors "present as
    functional tensors" and are faked as plain tensors of their device (torch 2.13 compares
    the device type's name). lazyx's are the same kind: faked as functional wrappers, a
    tensor a compiled function made itself (torch.zeros(..., device=x.device)) was a plain
    fake, and writing an input into it (`.index_add_(0, idx, x)`, `.add_(x)`) failed on
    functionalization's internal assert ("mutating a non-functional tensor with a functional
    tensor"). A lazyx tensor's description is therefore the xla one: not functional."""
    desc = _ORIGINAL["describe_tensor"](self, t, recurse=recurse, trace=trace)
    if desc.is_functional and not desc.is_functorch_wrapped and tensor.on_device(t):
        desc = dataclasses.replace(desc, is_functional=False, unwrapped=None,
                                   autograd_meta_from=None)
    return desc


def _mirror_autograd_meta_to(source, target):
    """torch.compile of lt.device parameters: Dynamo fakes a FunctionalTensorWrapper by
    wrapping a fake tensor and mirroring the original's autograd metadata onto it, which
    (torch 2.13) turns a leaf that requires grad into a non-leaf (grad_fn=Error), and Dynamo's
    own consistency check then fails. For a lazyx leaf, mirror what a leaf has:
    requires_grad."""
    if tensor.on_device(target) and getattr(source, "is_leaf", False) and \
            target.is_leaf:
        target.requires_grad_(bool(source.requires_grad))
        return
    _ORIGINAL["mirror_autograd_meta"](source, target)


def _module_to(self, *args, **kwargs):
    """model.to(lt.device) must keep tied weights tied (HF models share embeddings with the
    output layer), and so must model.to("cpu") of a model on the device. torch re-creates
    Parameters per module for a tensor type it cannot shallow-copy into; swapping (torch's
    announced future default) updates them in place. The swap is switched on for this
    conversion only: other code in the process keeps torch's default. A module whose
    parameters torch cannot swap (a TorchScript module, the GraphModule of torch.export)
    moves the default way, as it would without lazyx."""
    device, dtype = torch._C._nn._parse_to(*args, **kwargs)[:2]
    if (device is None or torch.device(device).type != "lazyx") and not _on_device(self):
        return _ORIGINAL["module_to"](self, *args, **kwargs)
    with _uninitialized_set_aside(self, device, dtype):
        return _swapping(_ORIGINAL["module_to"], self, *args, **kwargs)


def _module_cpu(self):
    """model.cpu() of a model on the device: tied weights stay tied (see _module_to)."""
    if not _on_device(self):
        return _ORIGINAL["module_cpu"](self)
    with _uninitialized_set_aside(self, torch.device("cpu"), None):
        return _swapping(_ORIGINAL["module_cpu"], self)


@contextlib.contextmanager
def _uninitialized_set_aside(module, device, dtype):
    """The uninitialized parameters and buffers of lazy modules (nn.LazyLinear, LazyConv2d:
    d2l builds every model from them and moves it before the first forward) are left out
    of the swap, and made again as the same uninitialized kind on `device`, in `dtype` if
    floating: the first forward materializes them there, as on CUDA. Swapped, one became
    a plain 0-element Parameter (the forward then failed); and the move read the shape
    torch's placeholder refuses to give."""
    aside = []
    for owner in module.modules():
        for table in (owner._parameters, owner._buffers):
            for name, value in table.items():
                if value is not None and torch.nn.parameter.is_lazy(value):
                    aside.append((table, name, value))
                    table[name] = None
    try:
        yield
    finally:
        for table, name, value in aside:
            kind = dtype if dtype is not None and value.is_floating_point() else value.dtype
            remade = type(value)(requires_grad=value.requires_grad,
                                 device=device if device is not None else value.device,
                                 dtype=kind)
            if hasattr(value, "persistent"):  # an UninitializedBuffer's
                remade.persistent = value.persistent
            table[name] = remade


def _on_device(module):
    """Whether a parameter or buffer of `module` is on lt.device (the first one tells)."""
    for t in itertools.chain(module.parameters(), module.buffers()):
        return tensor.on_device(t)
    return False


# torch's swap flag is one global: two threads moving modules at once (each its own model)
# could restore each other's "before" and leave it on for the process -- where an LSTM's
# load_state_dict then failed ("Cannot swap t1 because it has weakref associated with it").
# Moves take turns (re-entrant: a module's conversion may move another).
_SWAP_TURN = threading.RLock()


def _swapping(convert, module, *args, **kwargs):
    with _SWAP_TURN:
        return _swapping_alone(convert, module, *args, **kwargs)


def _swapping_alone(convert, module, *args, **kwargs):
    before = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    tied = _tied(module)
    try:
        return convert(module, *args, **kwargs)
    except RuntimeError as err:
        if "Couldn't swap" not in str(err):
            raise
        torch.__future__.set_swap_module_params_on_conversion(before)
        # torch's default way re-creates each module's Parameters: tie them again (a swap
        # also fails while a live autograd graph holds a parameter -- a CPU forward's output
        # kept before model.to(lt.device) -- and word_language_model's tied decoder then
        # trained apart from its embedding, silently)
        result = convert(module, *args, **kwargs)
        _tie(tied)
        warnings.warn(
            f"model.to(lt.device): torch could not move the parameters in place ({err}), so "
            f"the moved module holds new Parameter objects; an optimizer made before this "
            f"call still holds the old CPU ones and would update nothing the model uses. "
            f"Make optimizers after moving the model (or move it before running it on the "
            f"CPU).", RuntimeWarning, stacklevel=3)
        return result
    finally:
        torch.__future__.set_swap_module_params_on_conversion(before)


def _tied(module):
    """[[(module, name), ...], ...]: the parameters and buffers held under two names or more."""
    holders = {}
    for owner in module.modules():
        for table in (owner._parameters, owner._buffers):
            for name, value in table.items():
                if value is not None:
                    holders.setdefault(id(value), []).append((owner, name))
    return [group for group in holders.values() if len(group) > 1]


def _tie(groups):
    """Make every holder of each group hold its first holder's (converted) value."""
    for (first, first_name), *others in groups:
        kept = getattr(first, first_name)
        for owner, name in others:
            table = owner._parameters if name in owner._parameters else owner._buffers
            table[name] = kept


def _reduce_ex_internal(self, proto):
    """torch.save and pickle of a lazyx tensor (a checkpoint's state_dict): torch's own route
    for a device with no host storage (torch 2.13 takes it for "xla", or a PrivateUse1 tensor
    without storage; a lazyx tensor's functional wrapper has a storage object with no data,
    so torch took the CPU route and failed reading its data pointer). The value is computed
    and saved as a CPU tensor; loading puts it back on the device it came from, or where
    `map_location` says."""
    if not tensor.on_device(self):
        return _ORIGINAL["reduce_ex_internal"](self, proto)
    if torch.serialization._serialization_tls.skip_data:
        raise RuntimeError("Cannot serialize tensors on backends with no storage under "
                           "skip_data context manager")
    return (torch._utils._rebuild_device_tensor_from_cpu_tensor,
            (self.detach().cpu(), self.dtype, str(self.device), self.requires_grad))


def _maybe_set(dest, src):
    """nn.utils.parametrize moves a parametrization's right_inverse result into the original
    parameter with `dest.set_(src)` (torch 2.13's `_maybe_set`), keeping its id for the
    optimizer; without right_inverse it is `original.set_(original)`. On a functional
    tensor (lazyx's), set_ freezes the source's storage, so the next optimizer step failed
    with "cannot mutate tensors with frozen storage" (register_parametrization,
    parametrizations.weight_norm/spectral_norm/orthogonal added after .to(lt.device)). For a
    lazyx tensor: a set_ onto itself does nothing; any other takes torch's own swap branch
    (torch.utils.swap_tensors, as under set_swap_module_params_on_conversion)."""
    if tensor.on_device(dest):
        if src is dest:
            return
        if isinstance(dest, torch.nn.Parameter) and not isinstance(src, torch.nn.Parameter):
            src = torch.nn.Parameter(src, requires_grad=dest.requires_grad)
        torch.utils.swap_tensors(dest, src)
        return
    _ORIGINAL["parametrize_maybe_set"](dest, src)


def _deepcopy(self, memo):
    """copy.deepcopy of a lazyx tensor (a model with buffers copied for an EMA or a teacher):
    torch's own route for a device with no host storage (the one it takes for "xla"), a clone.
    Its storage route crashed the process: it clones the functional wrapper's storage, which
    has no data. Otherwise as torch does it: graph leaves only, with requires_grad, .grad,
    slots and attributes copied, and each tensor copied once per memo."""
    if not tensor.on_device(self) or not self.is_leaf or \
            torch.overrides.has_torch_function_unary(self):
        return _ORIGINAL["__deepcopy__"](self, memo)  # (torch's own errors and subclasses)
    if id(self) in memo:
        return memo[id(self)]
    with torch.no_grad():
        new = self.clone()
        if self.requires_grad:
            new.requires_grad_()
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        if type(self) is not torch.Tensor:  # a subclass: clone keeps its type, then its slots
            if type(new) is not type(self):
                raise RuntimeError(f"lazyx: copy.deepcopy of a {type(self).__name__} on the "
                                   "lazyx device needs clone() to return the same subclass")
            for slot in copyreg._slotnames(type(self)):
                if hasattr(self, slot):
                    setattr(new, slot, copy.deepcopy(getattr(self, slot), memo))
        self._clear_non_serializable_cached_data()
        new.__dict__ = copy.deepcopy(self.__dict__, memo)
    memo[id(self)] = new
    return new


def _read_across(dst, src):
    """A plain tensor (a CPU model's parameter in load_state_dict, a CPU buffer) written from
    a lazyx tensor: torch's functionalization refuses to write a plain tensor from a
    functional one (an internal assert), while a CUDA tensor copied into a CPU one is read
    across. So the lazy value is read to `dst`'s device first."""
    if torch._is_functional_tensor(dst) or not tensor.on_device(src):
        return src
    return src.to(dst.device)


# Called for every copy_ and item assignment of the process: the common case (no functional
# source) costs two C calls, about 0.25 us over torch's 0.7 us for a 4x4 copy_ (measured)
def _copy_(self, src, non_blocking=False, _functional=torch._is_functional_tensor):
    if isinstance(src, torch.Tensor) and _functional(src):
        src = _read_across(self, src)
    return _ORIGINAL["copy_"](self, src, non_blocking)


def _setitem(self, index, value, _functional=torch._is_functional_tensor):
    if isinstance(value, torch.Tensor):
        if _functional(value):
            value = _read_across(self, value)
        if value.requires_grad and type(index) is torch.Tensor and tensor.on_device(self) \
                and torch.is_grad_enabled() and _mask_write(self, index, value):
            return None
    return _ORIGINAL["__setitem__"](self, index, value)


# torch 2.13: a view of a non-inference FunctionalTensorWrapper made inside inference mode
# fails ("Cannot set version_counter for inference tensor", pytorch#170419): the wrapper
# functionalization makes for the view is born an inference tensor, and ADInplaceOrView then
# gives it its base's version counter. Every lazyx tensor is such a wrapper, so `x[1:3]`,
# `x.view(-1)` or `cache[i] = v` of a tensor made before `torch.inference_mode()` failed.
# No dispatch key of ours runs above ADInplaceOrView there, so the block pushes a mode that
# runs a call on such tensors with inference mode off (and grad off), as PyTorch's own
# FunctionalTensorMode does. A view of a normal tensor is a normal tensor in eager too; any
# other tensor the call makes is re-wrapped inside the block, so it is an inference tensor
# as eager's would be (is_inference(), no version counter, refused by autograd later).
class _InferenceViews(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        # (the common case first, per call: no argument made outside the block -- every
        # tensor of an inference loop after its first op; a C call per tensor argument)
        if not _outside(args, kwargs) or not torch.is_inference_mode_enabled() or \
                _writes_inference(func, args, kwargs):
            # nothing made outside the block (its views are fine), an inference_mode(False)
            # inside it, or an in-place write into an inference tensor, which eager allows
            # only inside the block
            return func(*args, **kwargs)
        with torch._C._InferenceMode(False), torch.no_grad():
            out = func(*args, **kwargs)
        lazies = [t for t in _tensors(args, kwargs) if tensor.on_device(t)]
        return _as_inference(out, {id(t) for t in lazies}, {_storage(t) for t in lazies})


def _tensors(args, kwargs):
    for a in itertools.chain(args, kwargs.values()):
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (t for t in a if isinstance(t, torch.Tensor))


def _outside(args, kwargs):
    """Whether a lazyx tensor made outside inference mode is among the arguments."""
    for t in _tensors(args, kwargs) if kwargs or any(type(a) in (list, tuple) for a in args) \
            else args:
        if isinstance(t, torch.Tensor) and not t.is_inference() and tensor.on_device(t):
            return True
    return False


def _writes_inference(func, args, kwargs):
    name = getattr(func, "__name__", "")
    written = [kwargs.get("out")]
    if args and (name == "__setitem__" or (name.endswith("_") and not name.endswith("__"))
                 or (name.startswith("__i") and name.endswith("__"))):
        written.append(args[0])
    return any(isinstance(t, torch.Tensor) and t.is_inference() for t in written)


def _storage(t):
    return t.untyped_storage()._cdata


def _as_inference(out, inputs, storages):
    """A call's results, each new lazyx tensor (not an input, nor a view of one) re-wrapped
    in inference mode: the same value, an inference tensor as eager makes."""
    if isinstance(out, (list, tuple)):
        items = [_as_inference(o, inputs, storages) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    if not isinstance(out, torch.Tensor) or id(out) in inputs or not tensor.on_device(out) \
            or not torch._is_functional_tensor(out) or _storage(out) in storages:
        return out
    torch._sync(out)
    inner = torch._from_functional_tensor(out)
    # (a wrapper is an inference tensor only if what it wraps is one: a new LazyTensor)
    return torch._to_functional_tensor(tensor.LazyTensor(
        runtime.LazyHandle(inner._lazyx_handle.node), inner.dtype))


_inference_views = threading.local()


def _inference_enter(self):
    _ORIGINAL["inference_enter"](self)
    # only once lazyx has built a node: a process that never used it keeps torch's own
    # inference mode (no mode on the stack for Dynamo or anyone else to see)
    pushed = self.mode and ir.CREATED[0] > 0 and not getattr(_inference_views, "on", False)
    self._lazyx_views = _InferenceViews() if pushed else None
    if pushed:
        _inference_views.on = True
        self._lazyx_views.__enter__()


def _inference_exit(self, exc_type, exc_value, traceback):
    views = getattr(self, "_lazyx_views", None)
    if views is not None:
        self._lazyx_views = None
        _inference_views.on = False
        views.__exit__(exc_type, exc_value, traceback)
    return _ORIGINAL["inference_exit"](self, exc_type, exc_value, traceback)


def _mask_write(x, mask, value):
    """x[mask] = value for a boolean mask over x's leading axes and a value that requires a
    gradient and does not span the masked count (one row broadcast to every picked one, HF
    Wav2Vec2's SpecAugment: `hidden[mask_time_indices] = self.masked_spec_embed`), written as
    x.copy_(where(mask, value, x)): the same values, and a backward that needs no count. torch's
    index_put backward gathers the gradient by the mask (`grad[mask]`), whose shape is the
    count of True: a sync at every step, and a new program for every count. False when the
    write is not of that form (torch's own __setitem__ then)."""
    if mask.dtype != torch.bool or not 0 < mask.dim() <= x.dim() or \
            tuple(mask.shape) != tuple(x.shape[:mask.dim()]):
        return False
    row = x.shape[mask.dim():]
    if value.dim() > len(row) + 1 or (value.dim() == len(row) + 1 and value.shape[0] != 1):
        return False
    try:
        value = torch.broadcast_to(value.to(x.dtype), (1,) * mask.dim() + tuple(row))
    except RuntimeError:
        return False  # (not broadcastable: torch's own error)
    spread = mask.reshape(tuple(mask.shape) + (1,) * len(row)).to(x.device)
    x.copy_(torch.where(spread, value, x))
    return True


# lazyx's runtime, not model code: Dynamo must run it as it is, as it runs torch's own Python.
# A compiled function runs every Python frame it reaches under Dynamo's frame hook, those of a
# graph break's eager region included: an op there that lazyx handles in Python (a kernel
# registered through torch.library, __torch_dispatch__) made Dynamo compile lazyx's dispatcher
# and runtime as if they were the user's (F.ctc_loss on lt.device tensors under
# torch.compile failed inside Dynamo's NumPy support). The test and benchmark files stay
# traceable: only these packages are skipped.
_RUNTIME_PACKAGES = ("lazyx.core", "lazyx.backends", "lazyx.frontends")


def _skip_in_dynamo():
    """Calls into lazyx from a function Dynamo traces break the graph there (trace_rules: as
    for torch's own modules), and a lazyx frame Dynamo meets at run time runs without it, with
    everything it calls (jax's Python included): each function's code is marked skip, for
    itself and recursively."""
    try:
        from torch._dynamo import trace_rules
        from torch._dynamo.eval_frame import set_code_exec_strategy
        from torch._dynamo.types import FrameAction, FrameExecStrategy
        add = trace_rules.add
    except (ImportError, AttributeError):  # another torch: Dynamo may compile our frames
        return
    for package in _RUNTIME_PACKAGES:
        add(package)
    skip = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
    for name, module in list(sys.modules.items()):
        if module is not None and name.startswith(_RUNTIME_PACKAGES):
            for code in _codes(module):
                set_code_exec_strategy(code, skip)


def _codes(module):
    """The code of every function and method defined in `module`."""
    for value in list(vars(module).values()):
        if getattr(value, "__module__", None) != module.__name__:
            continue
        members = vars(value).values() if isinstance(value, type) else (value,)
        for member in members:
            for fn in (getattr(member, "__func__", member), getattr(member, "fget", None),
                       getattr(member, "fset", None)):
                code = getattr(fn, "__code__", None)
                if isinstance(code, types.CodeType):
                    yield code


_item_users = [0]
_item_lock = threading.Lock()


def _item(self):
    # torch's dispatcher returns `.item()`'s value as a plain number: inside a split
    # lazyx.compile step, a float read this way is one its replays recompute
    return split_steps.as_number(_ORIGINAL["item"](self))


@contextlib.contextmanager
def split_item():
    """Tensor.item as _item while some thread traces a split lazyx.compile step (only then:
    a user's tensor is torch's functional wrapper, not our subclass, so only the class itself
    can answer; core/split_steps.as_number acts for the tracing thread alone)."""
    with _item_lock:
        if not _item_users[0]:
            _ORIGINAL["item"] = torch.Tensor.item
            torch.Tensor.item = _item
        _item_users[0] += 1
    try:
        yield
    finally:
        with _item_lock:
            _item_users[0] -= 1
            if not _item_users[0]:
                torch.Tensor.item = _ORIGINAL.pop("item")


def _storage_data_ptr(self):
    """A lazyx storage has no host memory, and its data_ptr raised "invalid python storage":
    safetensors' storage_ptr lets only NotImplementedError through, so HF's save_pretrained
    (its tied-weight check) crashed. It is the StorageImpl's address instead: stable, unique
    per storage and shared by its views and tied weights, never 0 (which HF takes for "no
    storage", every tensor tied). Nothing reads memory through it: a lazyx tensor is copied
    to the host before its bytes are read."""
    if tensor.on_device(self):
        return self._cdata
    return _ORIGINAL["storage_data_ptr"](self)


def _load(f, map_location=None, *args, **kwargs):
    """torch.load(f, map_location=lt.device) -- word_language_model's generate.py, and the
    usual way to load any checkpoint onto the device -- raised "Attempting to deserialize
    object on a LAZYX device but torch.lazyx.is_available() is False": torch checks that
    the device module is available, and lazyx's says no on purpose (device.py). The
    checkpoint is loaded onto the CPU and its tensors, parameters and modules are moved onto
    lt.device, as a CUDA map_location puts them on the GPU. A tensor held twice stays one."""
    if not _names_lazyx(map_location):
        return _ORIGINAL["load"](f, map_location, *args, **kwargs)
    return _onto(_ORIGINAL["load"](f, "cpu", *args, **kwargs), torch.device(map_location), {})


def _optimizer_state_value(param, value, param_id, param_groups, key=None):
    """Optimizer.load_state_dict's placement of a loaded state value. torch leaves a `step`
    counter where the checkpoint was mapped unless the group is capturable or fused; mapped
    to lt.device (nanoGPT's resume: torch.load(ckpt, map_location=device)), a non-capturable
    AdamW then read each counter with .item() at every step -- one host sync per parameter
    per step, forever. Such a counter goes to the CPU, where a fresh optimizer keeps it."""
    out = _ORIGINAL["optimizer_state_value"](param, value, param_id, param_groups, key)
    if key == "step" and isinstance(out, torch.Tensor) and tensor.on_device(out):
        group = next((g for g in param_groups if param_id in g["params"]), {})
        if not (group.get("capturable") or group.get("fused")):
            return out.to("cpu")
    return out


def _names_lazyx(map_location):
    if not isinstance(map_location, (str, torch.device)):
        return False  # (a dict or a function: torch's own handling)
    try:
        return torch.device(map_location).type == "lazyx"
    except RuntimeError:  # not a device: torch.load raises its own error
        return False


def _onto(obj, device, moved):
    """obj with every CPU tensor in it (through dicts, lists, tuples, modules) on `device`;
    containers are changed in place, so a state_dict keeps its `_metadata`."""
    if id(obj) in moved:
        return moved[id(obj)]
    if isinstance(obj, torch.Tensor):
        if tensor.on_device(obj):  # (a module's parameter, moved with it: the same object)
            return obj
        result = obj.detach().to(device)
        if isinstance(obj, torch.nn.Parameter):
            result = torch.nn.Parameter(result, requires_grad=obj.requires_grad)
        elif obj.requires_grad:
            result.requires_grad_(True)
    elif isinstance(obj, torch.nn.Module):
        result = obj.to(device)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            obj[key] = _onto(value, device, moved)
        result = obj
    elif isinstance(obj, list):
        obj[:] = [_onto(value, device, moved) for value in obj]
        result = obj
    elif isinstance(obj, tuple):
        values = [_onto(value, device, moved) for value in obj]
        result = type(obj)(*values) if hasattr(obj, "_fields") else type(obj)(values)
    else:
        return obj
    moved[id(obj)] = result
    return result


def _log_graph_break(self, code_options, reason, exc):
    """Dynamo reports each graph break here. Most reach the backend with the graph before
    them (`dynamo._note_graph_break` counts those); one it cannot resume from ("Failed to
    handle graph break gracefully") makes it skip the whole function, which then runs in
    eager CPU torch at every call and never reaches the backend: mnist_rnn's model (an LSTM
    first) compiled with backend="lazyx" ran entirely eagerly while lazyx reported no compile
    and no graph break. Such a skip is counted here, for lazyx's compiles only."""
    first = not exc.logged
    _ORIGINAL["log_graph_break"](self, code_options, reason, exc)
    if first and reason.startswith(_SKIPPED_FUNCTION) and _for_lazyx(self.output.compiler_fn):
        from . import dynamo
        dynamo.note_skipped_function(exc)


_SKIPPED_FUNCTION = "Failed to handle graph break gracefully"  # Dynamo's words (torch 2.13)


def _for_lazyx(compiler_fn):
    """Whether Dynamo compiles for lazyx's backend (through torch.compile's wrappers)."""
    from . import dynamo
    for _ in range(4):
        if compiler_fn is dynamo.backend or compiler_fn is None:
            return compiler_fn is not None
        compiler_fn = getattr(compiler_fn, "_torchdynamo_orig_backend", None) or \
            getattr(compiler_fn, "compiler_fn", None)
    return False


def _cond(pred, true_fn, false_fn, operands):
    """torch.cond on lazyx tensors (torch_controlflow_tutorial): as eager torch, one branch
    runs -- the one the predicate picks, read on the host (a data-dependent sync; a Python
    bool is taken as it is). Tracing both and selecting would be one program, but the branch
    eager never runs could put NaNs into the gradient through the select."""
    if isinstance(pred, tensor.LazyTensor):
        take = bool(runtime.to_host(pred._lazyx_handle, cause="data_dependent"))
    else:
        take = bool(pred)
    return (true_fn if take else false_fn)(*operands)


def install():
    """Install the hooks (once; device.register calls this)."""
    if _ORIGINAL:
        return
    _skip_in_dynamo()
    for name, patched in (("numpy", _numpy), ("__repr__", _repr), ("copy_", _copy_),
                          ("__setitem__", _setitem)):
        _ORIGINAL[name] = getattr(torch.Tensor, name)
        setattr(torch.Tensor, name, patched)
    torch.Tensor.__lazyx_handle__ = property(_handle)
    _ORIGINAL["storage_data_ptr"] = torch.UntypedStorage.data_ptr
    torch.UntypedStorage.data_ptr = _storage_data_ptr
    from torch._subclasses import meta_utils
    _ORIGINAL["describe_tensor"] = meta_utils.MetaTensorDescriber.describe_tensor
    meta_utils.MetaTensorDescriber.describe_tensor = _describe_tensor
    _ORIGINAL["mirror_autograd_meta"] = torch._mirror_autograd_meta_to
    torch._mirror_autograd_meta_to = _mirror_autograd_meta_to
    _ORIGINAL["module_to"] = torch.nn.Module.to
    torch.nn.Module.to = _module_to
    _ORIGINAL["module_cpu"] = torch.nn.Module.cpu
    torch.nn.Module.cpu = _module_cpu
    _ORIGINAL["reduce_ex_internal"] = torch.Tensor._reduce_ex_internal
    torch.Tensor._reduce_ex_internal = _reduce_ex_internal
    _ORIGINAL["__deepcopy__"] = torch.Tensor.__deepcopy__
    torch.Tensor.__deepcopy__ = _deepcopy
    import torch.nn.utils.parametrize as parametrize
    _ORIGINAL["parametrize_maybe_set"] = parametrize._maybe_set
    parametrize._maybe_set = _maybe_set
    # torch.autograd.backward and .grad both call this module global (torch 2.13); torch's own
    # torch.compiler patch swaps both names, so we replace both and stay in place under it
    _ORIGINAL["save_on_cpu_init"] = torch.autograd.graph.save_on_cpu.__init__
    torch.autograd.graph.save_on_cpu.__init__ = _save_on_cpu_init
    import torch._functorch.eager_transforms as eager_transforms
    _ORIGINAL["functionalize"] = eager_transforms.functionalize
    eager_transforms.functionalize = torch.func.functionalize = _functionalize
    from torch.fx.experimental import proxy_tensor
    for name, patched in (("set_proxy_slot", _set_proxy_slot),
                          ("get_proxy_slot", _get_proxy_slot),
                          ("dispatch_trace", _dispatch_trace)):
        _ORIGINAL[name] = getattr(proxy_tensor, name)
        setattr(proxy_tensor, name, patched)
    proxy_tensor.HANDLED_TYPES += (tensor.LazyTensor,)
    from torch._higher_order_ops.cond import cond_op
    cond_op.py_impl(tensor.LazyTensor)(_cond)
    _ORIGINAL["inference_enter"] = torch.autograd.grad_mode.inference_mode.__enter__
    _ORIGINAL["inference_exit"] = torch.autograd.grad_mode.inference_mode.__exit__
    torch.autograd.grad_mode.inference_mode.__enter__ = _inference_enter
    torch.autograd.grad_mode.inference_mode.__exit__ = _inference_exit
    _ORIGINAL["run_backward"] = torch.autograd.graph._engine_run_backward
    torch.autograd.graph._engine_run_backward = _run_backward
    torch.autograd._engine_run_backward = _run_backward
    _ORIGINAL["load"] = torch.serialization.load
    # (__wrapped__: inspect.signature(torch.load) stays torch's; HF reads it for weights_only)
    functools.update_wrapper(_load, _ORIGINAL["load"], assigned=())
    torch.load = torch.serialization.load = _load
    policy = torch.optim.Optimizer._process_value_according_to_param_policy
    _ORIGINAL["optimizer_state_value"] = policy
    torch.optim.Optimizer._process_value_according_to_param_policy = staticmethod(
        functools.update_wrapper(_optimizer_state_value, policy, assigned=()))
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslatorBase as translator
        _ORIGINAL["log_graph_break"] = translator.log_graph_break
    except (ImportError, AttributeError):  # another torch: skipped functions go uncounted
        return
    translator.log_graph_break = _log_graph_break
