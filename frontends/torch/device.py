"""The `lazyx` device: torch's PrivateUse1 backend renamed, plus what a backend must provide.

* `torch.device("lazyx")` exists; allocation (`empty`, `empty_strided`) on it is registered
  with torch.library, so every factory (zeros, randn, arange, ...) and `.to("lazyx")` work:
  torch's composite kernels allocate with `empty` and fill in place, and functionalization
  turns the fill into a functional op that our dispatcher lowers.
* Tensors handed to users are `torch._to_functional_tensor(LazyTensor)`: torch's
  FunctionalTensorWrapper, the functionalization PyTorch/XLA uses. Views and in-place writes
  are resolved by torch before our dispatcher sees them.
* What lazyx changes in torch's own classes and functions (Tensor.numpy, repr,
  nn.Module.to, the autograd engine's entry) is all in hooks.py.
"""
import contextlib

import torch
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

from ...core import compose
from . import autocast, dtypes, fused_attention, fused_optim, hooks, readless, recurrent, tensor
from .aten import data_dependent, indexing, losses, random as lazy_random


class _BackendModule:
    """What torch looks for at `torch.lazyx` (manual_seed reaches our RNG through it)."""

    @staticmethod
    def is_available():
        # What torch.accelerator.is_available() answers. True made unrelated code change once
        # lazyx was imported (tests/frontends/torch/test_isolation.py): a DataLoader with
        # pin_memory=True asked the lazyx device for a pinned-memory allocator (which a Python
        # backend cannot give) and raised, and every torch.compile'd call saved the lazyx
        # stream. Like PyTorch/XLA's device, lazyx is then not "the accelerator": lt.device
        # works the same, and code picking a device with torch.accelerator stays on the CPU.
        return False

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

    # The RNG state, for torch.utils.checkpoint (which saves and restores a device's state
    # only where `_initialized` is true: without it the recomputed forward drew a new dropout
    # mask, and the gradients were silently those of another mask) and torch.random.fork_rng.
    # As CUDA's, a CPU uint8 tensor: here the stream's (seed, counter).
    _initialized = True

    @staticmethod
    def get_rng_state(device=None):
        return lazy_random.get_state()

    @staticmethod
    def set_rng_state(new_state, device=None):
        lazy_random.set_state(new_state)

    @staticmethod
    def get_rng_state_all():
        return [lazy_random.get_state()]

    @staticmethod
    def set_rng_state_all(new_states):
        lazy_random.set_state(new_states[0])

    @staticmethod
    def device(index):
        """`with torch.lazyx.device(0):` -- one device: nothing to switch."""
        return contextlib.nullcontext()

    @staticmethod
    def get_amp_supported_dtype():
        # torch.autocast(device_type="lazyx") asks for it -- and so does every non-reentrant
        # torch.utils.checkpoint recomputation, which re-enters the forward's autocast state
        # (without it the recomputation raised inside the autograd engine: std::terminate)
        return [torch.bfloat16, torch.float16]

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
    return _allocated(tensor.from_node(node, dtype))


def _allocated(lazy):
    """A factory's or an allocation's result: wrapped for users -- unless functionalization
    itself asked, for an out= call into a lazy tensor (`torch.eye(3, out=w)`, which
    nn.init.eye_ makes; `torch.randperm(5, out=t)`, whose kernel allocates and fills): it
    runs the functional op with Functionalize excluded, then puts the result in `out`, which
    torch asserts is not wrapped. (torch.tensor and torch.as_tensor allocate with it excluded
    too, for the user; they exclude the Python key as well, which functionalization leaves.)"""
    excluded = torch._C._dispatch_tls_is_dispatch_key_excluded
    if excluded(_FUNCTIONALIZE) and not excluded(_PYTHON):
        return lazy
    return user_tensor(lazy)


_FUNCTIONALIZE, _PYTHON = torch._C.DispatchKey.Functionalize, torch._C.DispatchKey.Python


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
        return _allocated(tensor.dispatch(op, args, kwargs))
    return kernel


FACTORIES = ("arange.default", "arange.start", "arange.start_step", "linspace.default",
             "eye.default", "eye.m", "full.default", "zeros.default", "ones.default",
             "randn.default", "rand.default", "randint.default", "randint.low",
             "scalar_tensor.default", "normal.float_float", "randperm.default",
             # torch's own kernels cannot build these on a PrivateUse1 device (aten/factories.py)
             "range.default", "range.step", "kaiser_window.default", "kaiser_window.periodic",
             "kaiser_window.beta", "triu_indices.default", "tril_indices.default",
             # forward-mode AD's zero tangent of a constant (torch.func.jvp, jacfwd, hessian):
             # a plain zero tensor here (torch's marks it to skip work; only slower)
             "_efficientzerotensor.default")

_registered = []


def register():
    if _registered:
        return
    _registered.append(True)
    _setup_privateuseone_for_python_backend("lazyx", backend_module=_BackendModule(),
                                            device_guard=hooks.DeviceGuard())
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
    fused_optim.register(lib)  # Adam(fused=True) and kin: ATen has CPU and CUDA kernels only
    fused_attention.register(lib)  # inference fast paths of nn.MultiheadAttention & encoders
    readless.register(lib)  # combinations, cov (and corrcoef): ATen's read values they need not
    lib.impl("one_hot", data_dependent.one_hot, "AutogradPrivateUse1")  # its class count read
    lib.impl("ctc_loss.Tensor", losses.ctc_loss, "AutogradPrivateUse1")  # CPU lengths
    lib.impl("embedding_backward", indexing.embedding_backward, "AutogradPrivateUse1")  # dense
    lib.impl("_embedding_bag_backward", indexing.embedding_bag_backward, "AutogradPrivateUse1")
    _registered.append(autocast.register(lib))  # torch.autocast("lazyx")
    _registered.append(lib)  # the registrations live as long as the Library object
    hooks.install()
