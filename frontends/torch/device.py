"""The `lazyx` device: torch's PrivateUse1 backend renamed, plus what a backend must provide.

* `torch.device("lazyx")` exists; allocation (`empty`, `empty_strided`) on it is registered
  with torch.library, so every factory (zeros, randn, arange, ...) and `.to("lazyx")` work:
  torch's composite kernels allocate with `empty` and fill in place, and functionalization
  turns the fill into a functional op that our dispatcher lowers.
* Tensors handed to users are `torch._to_functional_tensor(LazyTensor)`: torch's
  FunctionalTensorWrapper, the functionalization PyTorch/XLA uses. Views and in-place writes
  are resolved by torch before our dispatcher sees them.
* A few torch.Tensor methods learn about the device: `numpy()` and `repr` materialize (torch
  would refuse or print the wrapper's internals), and `__lazyx_handle__` reaches the IR.
"""
import torch
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

from ...core import compose
from . import dtypes, recurrent, tensor
from .aten import random as lazy_random


class _BackendModule:
    """What torch looks for at `torch.lazyx` (manual_seed reaches our RNG through it)."""

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def device_count():
        return 1

    @staticmethod
    def current_device():
        return 0

    @staticmethod
    def _is_in_bad_fork():
        return False

    @staticmethod
    def manual_seed_all(seed):
        lazy_random.manual_seed(seed)

    manual_seed = manual_seed_all

    @staticmethod
    def synchronize(device=None):
        from ...core import runtime
        runtime.sync(cause="explicit")


def user_tensor(lazy):
    """What users hold: the lazy tensor inside torch's functionalization wrapper."""
    if tensor.inside_dispatch():
        return lazy
    return torch._to_functional_tensor(lazy)


def _filled(shape, dtype, value=0):
    dtype = dtype or torch.get_default_dtype()
    node = compose.const(value, dtypes.to_ir(dtype), shape)
    return user_tensor(tensor.from_node(node, dtype))


def _check_size(size):
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")


def _empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    _check_size(size)
    return _filled(size, dtype)  # torch leaves empty memory undefined; zeros are a valid choice


def _empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    _check_size(size)
    return _filled(size, dtype)


def _copy_from(src, dst, non_blocking=False):
    """Backend copy, reached when torch copies with functionalization off (torch.tensor(...,
    device=lt.device) builds on CPU, then copies): rebind the destination's value."""
    if src.device.type == "lazyx":
        dst.copy_(src.detach().to("cpu"))
        return dst
    with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(
            torch._C.DispatchKey.Python)):
        host = src.to(dst.dtype).expand(dst.shape).contiguous()
    value = tensor.from_cpu(host)
    if isinstance(dst, tensor.LazyTensor):
        dst._lazyx_handle.set(value._lazyx_handle.node)
    else:
        torch._functionalize_replace(dst, value)
        torch._functionalize_commit_update(dst)
    return dst


def _factory(op):
    """A direct PrivateUse1 kernel for a factory: lowered by the dispatcher, then wrapped."""
    def kernel(*args, **kwargs):
        return user_tensor(tensor.dispatch(op, args, kwargs))
    return kernel


FACTORIES = ("arange.default", "arange.start", "arange.start_step", "linspace.default",
             "eye.default", "eye.m", "full.default", "zeros.default", "ones.default",
             "randn.default", "rand.default", "randint.default", "randint.low",
             "scalar_tensor.default", "normal.float_float")

_ORIGINAL = {}


def _numpy(self, *, force=False):
    if self.device.type == "lazyx":
        return self.detach().to("cpu").numpy()
    return _ORIGINAL["numpy"](self, force=force)


def _repr(self, *, tensor_contents=None):
    if self.device.type != "lazyx" or isinstance(self, tensor.LazyTensor):
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
    if self.device.type != "lazyx" or not torch._is_functional_tensor(self):
        raise AttributeError("__lazyx_handle__")
    torch._sync(self)
    return torch._from_functional_tensor(self)._lazyx_handle


_registered = []


def register():
    if _registered:
        return
    _registered.append(True)
    _setup_privateuseone_for_python_backend("lazyx", backend_module=_BackendModule())
    tensor.DEVICE = torch.device("lazyx", 0)
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("empty.memory_format", _empty, "PrivateUse1")
    lib.impl("empty_strided", _empty_strided, "PrivateUse1")
    lib.impl("_copy_from", _copy_from, "PrivateUse1")
    for name in FACTORIES:
        packet, overload = name.split(".")
        lib.impl(name.replace(".default", ""),
                 _factory(getattr(getattr(torch.ops.aten, packet), overload)), "PrivateUse1")
    recurrent.register(lib)  # nn.LSTM / nn.GRU: ATen's route for non-CPU devices is CUDA-only
    _registered.append(lib)  # the registrations live as long as the Library object
    for name, patched in (("numpy", _numpy), ("__repr__", _repr)):
        _ORIGINAL[name] = getattr(torch.Tensor, name)
        setattr(torch.Tensor, name, patched)
    torch.Tensor.__lazyx_handle__ = property(_handle)
    _ORIGINAL["mirror_autograd_meta"] = torch._mirror_autograd_meta_to
    torch._mirror_autograd_meta_to = _mirror_autograd_meta_to
    _ORIGINAL["module_to"] = torch.nn.Module.to
    torch.nn.Module.to = _module_to
    # torch.autograd.backward and .grad both call this module global (torch 2.13); torch's own
    # torch.compiler patch swaps both names, so we replace both and stay in place under it
    _ORIGINAL["run_backward"] = torch.autograd.graph._engine_run_backward
    torch.autograd.graph._engine_run_backward = _run_backward
    torch.autograd._engine_run_backward = _run_backward


def _run_backward(outputs, *args, **kwargs):
    """Backward of a lazyx graph runs on the calling thread. The autograd engine runs a
    non-CPU device's backward on a worker thread of its own (torch 2.13); there it would
    record into that thread's trace and pending handles: a training step's cut could not use
    the expression ids (it would walk the whole graph every step), and a barrier on the
    user's thread would not see the gradients as pending."""
    original = _ORIGINAL["run_backward"]
    if any(isinstance(t, torch.Tensor) and t.device.type == "lazyx" for t in outputs):
        with torch.autograd.set_multithreading_enabled(False):
            return original(outputs, *args, **kwargs)
    return original(outputs, *args, **kwargs)


def _mirror_autograd_meta_to(source, target):
    """torch.compile of lt.device parameters: Dynamo fakes a FunctionalTensorWrapper by
    wrapping a fake tensor and mirroring the original's autograd metadata onto it, which
    (torch 2.13) turns a leaf that requires grad into a non-leaf (grad_fn=Error), and Dynamo's
    own consistency check then fails. For a lazyx leaf, mirror what a leaf has:
    requires_grad."""
    if target.device.type == "lazyx" and getattr(source, "is_leaf", False) and \
            target.is_leaf:
        target.requires_grad_(bool(source.requires_grad))
        return
    _ORIGINAL["mirror_autograd_meta"](source, target)


def _module_to(self, *args, **kwargs):
    """model.to(lt.device) must keep tied weights tied (HF models share embeddings with the
    output layer). torch re-creates Parameters per module for a tensor type it cannot
    shallow-copy into; swapping (torch's announced future default) updates them in place.
    The swap is switched on for this conversion only: other code in the process keeps
    torch's default."""
    device = torch._C._nn._parse_to(*args, **kwargs)[0]
    if device is None or torch.device(device).type != "lazyx":
        return _ORIGINAL["module_to"](self, *args, **kwargs)
    before = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        return _ORIGINAL["module_to"](self, *args, **kwargs)
    finally:
        torch.__future__.set_swap_module_params_on_conversion(before)
