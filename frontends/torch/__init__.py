"""PyTorch frontend: lazy tensors on the `lazyx` device (written `lt` in the docs).

    import lazyx.frontends.torch as lt
    model = Model().to(lt.device)
    x = torch.randn(8, 4, device=lt.device)
    loss = model(x).sum(); loss.backward(); opt.step()
    lt.mark_step()          # cut: the whole step is one compiled program, cached
"""
import torch

from ...core import runtime
from ...core.metrics import metrics, metrics_report, reset_metrics
from . import aten  # noqa: F401  (fills the lowering table)
from . import device as _device
from . import replay as _replay  # noqa: F401  (lazyx.compile learns torch's types)
from .tensor import LazyTensor

_device.register()
device = torch.device("lazyx", 0)


def mark_step():
    """The barrier: compile (or fetch from the cache) and start everything pending."""
    runtime.sync(cause="explicit")


def is_lazy(tensor):
    """True for a tensor on the lazyx device."""
    return isinstance(tensor, torch.Tensor) and tensor.device.type == "lazyx"


__all__ = ["device", "mark_step", "is_lazy", "LazyTensor", "metrics", "metrics_report",
           "reset_metrics"]
