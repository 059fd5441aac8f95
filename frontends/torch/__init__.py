"""PyTorch frontend: lazy tensors on the `lazyx` device (written `lt` in the docs).

    import lazyx.frontends.torch as lt
    model = Model().to(lt.device)
    x = torch.randn(8, 4, device=lt.device)
    loss = model(x).sum(); loss.backward(); opt.step()
    lt.mark_step()          # cut: the whole step is one compiled program, cached

or, with PyTorch 2's graph capture: `torch.compile(model, backend="lazyx")` (the same as
`backend=lt.dynamo_backend`).
"""
import torch

from ...core import buckets as _buckets, runtime
from ...core.metrics import metrics, metrics_report, reset_metrics
from . import aten  # noqa: F401  (fills the lowering table)
from . import bounds  # noqa: F401  (torch's index and divisor errors, where values are known)
from . import device as _device
from . import inplace_check as _inplace_check
from .dynamo import backend as dynamo_backend
from .sharding import mark_sharding, shard_parameters
from . import replay as _replay  # noqa: F401  (lazyx.compile learns torch's types)
from . import tensor as _tensor
from .tensor import LazyTensor

_device.register()
device = torch.device("lazyx", 0)
_tensor.use_fast_dispatch()  # (after every table above is filled: it checks them)
_inplace_check.install()  # torch's check of each in-place op, once per signature


def mark_step():
    """The barrier: compile (or fetch from the cache) and start everything pending."""
    runtime.sync(cause="explicit")


def is_lazy(tensor):
    """True for a tensor on the lazyx device."""
    return isinstance(tensor, torch.Tensor) and _tensor.on_device(tensor)


def pad_to_bucket(tensor, dim=-1, buckets=None, value=0):
    """(padded, mask): `tensor` padded with `value` at the end of `dim` up to the next bucket
    size (`buckets`, or powers of two), and a bool mask of the padded shape, True where the data
    is real -- on the tensor's device. Pad before `.to(lt.device)`: then every length in a
    bucket is one compiled program (see lazyx.pad_to_bucket)."""
    dim, size, target = _buckets.pad_plan(tuple(tensor.shape), dim, buckets)
    if target == size:
        padded = tensor.clone()
    else:  # F.pad lists (left, right) pairs from the last dimension backwards
        widths = [0, 0] * (tensor.ndim - 1 - dim) + [0, target - size]
        padded = torch.nn.functional.pad(tensor, widths, value=value)
    mask = torch.from_numpy(_buckets.host_mask(tuple(padded.shape), dim, size))
    return padded, mask.to(tensor.device)


__all__ = ["device", "mark_step", "is_lazy", "LazyTensor", "dynamo_backend", "mark_sharding", "shard_parameters",
           "metrics", "metrics_report", "reset_metrics", "pad_to_bucket"]


# (last: every object its import made exists now; see core/long_lived.py)
from ...core.long_lived import freeze_imported as _freeze_imported  # noqa: E402
_freeze_imported()
