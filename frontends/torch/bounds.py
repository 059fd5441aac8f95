"""Errors eager torch raises from operand *values* (an index out of range, an integer division
by zero), raised at the call whenever those values are already known on the host.

A lazy index tensor is only a shape until the graph runs, so torch's value checks cannot run
in general; but an index made from a Python list, a batch uploaded from the host or a finished
result is known (core/host_values.py). For those, each op below names the operand to read and
the range it must lie in. When a value is out of range the call is replayed on CPU with the
real values of those operands (zeros elsewhere), so the error is torch's own, type and text;
a replay that does not raise means our range was stricter than torch's and the call goes on.
Values still being computed are not checked: docs/errors.md says what they give.
"""
import numpy as np
import torch

from ...core import host_values
from .dtypes import C_NAMES
from .tensor import SPECIAL, VALUE_CHECKS, LazyTensor

aten = torch.ops.aten


def _value(x):
    """x's value as NumPy if known without a sync, else None."""
    if isinstance(x, LazyTensor):
        return host_values.known(x._lazyx_handle.node)
    if isinstance(x, torch.Tensor):
        if x.device.type != "cpu" or x.numel() > host_values.MAX_ELEMENTS:
            return None
        return x.detach().numpy() if x.dtype != torch.bfloat16 else None
    if isinstance(x, (bool, int, float)):
        return np.asarray(x)
    return None


def _size(t, dim):
    return t.shape[dim] if t.dim() else 1


def _cpu(x, real):
    if isinstance(x, LazyTensor):
        value = real.get(id(x))
        return torch.from_numpy(np.array(value)) if value is not None else \
            torch.zeros(x.shape, dtype=x.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_cpu(v, real) for v in x)
    if isinstance(x, torch.device) and x.type == "lazyx":
        return torch.device("cpu")
    return x


def _replay(func, args, kwargs, real):
    try:
        func(*_cpu(args, real), **{k: _cpu(v, real) for k, v in kwargs.items()})
    except Exception as err:  # noqa: BLE001 - torch's own error, re-raised unchanged
        raise err.with_traceback(None) from None


def _check_ranges(func, args, kwargs, operands):
    """operands: (tensor, low, high, ignore) to check; replay on the first one out of range."""
    real = {}
    for tensor, low, high, ignore in operands:
        node = tensor._lazyx_handle.node if isinstance(tensor, LazyTensor) else None
        if node is not None and host_values.known_in_range(node, low, high, ignore):
            continue  # (the same targets, checked at an earlier step)
        values = _value(tensor)
        if values is None:
            continue
        if host_values.out_of_range(values, low, high, ignore):
            real[id(tensor)] = values
        elif node is not None:
            host_values.remember_in_range(node, low, high, ignore)
    if real:
        _replay(func, args, kwargs, real)


def _dim_index(self_pos=0, dim_pos=1, index_pos=2, wraps=False):
    def check(func, args, kwargs):
        if len(args) <= index_pos:
            return
        x, dim, index = args[self_pos], args[dim_pos], args[index_pos]
        if not isinstance(dim, int) or not -max(x.dim(), 1) <= dim < max(x.dim(), 1):
            return  # torch's meta kernel reports a bad dim
        if isinstance(index, torch.Tensor) and (index.is_floating_point() or index.is_complex()):
            _replay(func, args, kwargs, {})  # torch refuses a float index whatever its values
        n = _size(x, dim)
        _check_ranges(func, args, kwargs, [(index, -n if wraps else 0, n, None)])
    return check


def _embedding(func, args, kwargs):
    weight, indices = args[0], args[1]
    _check_ranges(func, args, kwargs, [(indices, 0, weight.shape[0], None)])


def _take(func, args, kwargs):
    n = args[0].numel()
    _check_ranges(func, args, kwargs, [(args[1], -n, n, None)])


def _advanced_index(func, args, kwargs):
    """x[i, j, ...] with integer tensors: each against the dimension it indexes."""
    x, indices = args[0], args[1]
    operands, dim = [], 0
    for index in indices:
        if isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8):
            dim += index.dim()  # a mask: torch checks its shape, not values
            continue
        if index is not None and dim < x.dim():
            operands.append((index, -x.shape[dim], x.shape[dim], None))
        dim += 1
    _check_ranges(func, args, kwargs, operands)


def _nll_loss(func, args, kwargs):
    x, target = args[0], args[1]
    ignore = args[4] if len(args) > 4 else kwargs.get("ignore_index", -100)
    classes = x.shape[-1] if x.dim() == 1 else x.shape[1]
    _check_ranges(func, args, kwargs, [(target, 0, classes, ignore)])


def _one_hot(func, args, kwargs):
    classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
    if classes >= 0:
        _check_ranges(func, args, kwargs, [(args[0], 0, classes, None)])


def _integer_divisor(divisor_pos):
    """torch raises "ZeroDivisionError" (a RuntimeError) for an integer division by zero."""
    def check(func, args, kwargs):
        if func in _TRUE_DIVISION and kwargs.get("rounding_mode") is None:
            return
        dividend, divisor = args[0], args[divisor_pos]
        kinds = [t.dtype for t in (dividend, divisor) if isinstance(t, torch.Tensor)]
        if any(k.is_floating_point or k.is_complex or k == torch.bool for k in kinds) or \
                any(isinstance(v, (float, complex)) for v in (dividend, divisor)):
            return
        values = _value(divisor)
        if values is not None and values.dtype.kind in "iu" and not values.all():
            _replay(func, args, kwargs, {id(divisor): values})
    return check


_TRUE_DIVISION = (aten.div.Tensor_mode, aten.div.Scalar_mode)


def _index_put(func, args, kwargs):
    """index_put's values must have self's dtype in eager (no meta kernel checks it: a float
    written into an integer tensor was truncated silently); then the indices' range."""
    self, values = args[0], args[2] if len(args) > 2 else kwargs["values"]
    if isinstance(values, torch.Tensor) and values.dtype != self.dtype:
        raise RuntimeError("Index put requires the source and destination dtypes match, got "
                           f"{C_NAMES.get(self.dtype, self.dtype)} for the destination and "
                           f"{C_NAMES.get(values.dtype, values.dtype)} for the source.")
    _advanced_index(func, args, kwargs)


def _reflection_pad(func, args, kwargs):
    """Reflected padding must be narrower than the dimension it pads: a shape check torch's
    kernels make and its decomposition, which lazyx runs, does not (a wider one gave values
    from nowhere). Replayed on CPU zeros for torch's own error."""
    x, padding = args[0], args[1]
    for k in range(len(padding) // 2):
        size = x.shape[x.dim() - 1 - k]
        if padding[2 * k] >= size or padding[2 * k + 1] >= size:
            func(torch.zeros(x.shape, dtype=x.dtype), *args[1:], **kwargs)
            return


def _assert_async(x, assert_msg=None):
    """torch._assert_async (torch's one_hot decomposition asserts its class range with it in
    a torch.compile graph): checked with torch's own error when x's value is known, as the
    index checks above; a pending value is not read. torch lets a device's assert be
    asynchronous (CUDA reports it later); lazyx never reports it: docs/errors.md."""
    args = (x,) if assert_msg is None else (x, assert_msg)
    func = aten._assert_async.default if assert_msg is None else aten._assert_async.msg
    if x.numel() != 1:
        _replay(func, args, {}, {})  # torch's error whatever the value
    values = _value(x)
    if values is not None and not values.any():
        _replay(func, args, {}, {id(x): values})


CHECKS = {
    aten.reflection_pad1d.default: _reflection_pad, aten.reflection_pad2d.default: _reflection_pad,
    aten.reflection_pad3d.default: _reflection_pad,
    aten.index_select.default: _dim_index(),
    aten.gather.default: _dim_index(),
    aten.scatter.src: _dim_index(), aten.scatter.value: _dim_index(),
    aten.scatter.reduce: _dim_index(), aten.scatter.value_reduce: _dim_index(),
    aten.scatter_add.default: _dim_index(), aten.scatter_reduce.two: _dim_index(),
    # eager's index_add refuses a negative index, as index_select does (index_fill wraps it)
    aten.index_add.default: _dim_index(),
    # (eager's index_copy refuses one too, but torch's index_fill decomposition, which lazyx
    # runs, calls index_copy with index_fill's wrapped-by-eager negative indices)
    aten.index_copy.default: _dim_index(wraps=True),
    aten.index_fill.int_Tensor: _dim_index(wraps=True),
    aten.index_fill.int_Scalar: _dim_index(wraps=True),
    aten.embedding.default: _embedding,
    aten.take.default: _take,
    aten.index.Tensor: _advanced_index,
    aten.index_put.default: _index_put, aten._unsafe_index_put.default: _advanced_index,
    aten.nll_loss_forward.default: _nll_loss, aten.nll_loss2d_forward.default: _nll_loss,
    aten.one_hot.default: _one_hot,
    aten.div.Tensor_mode: _integer_divisor(1), aten.div.Scalar_mode: _integer_divisor(1),
    aten.floor_divide.default: _integer_divisor(1), aten.floor_divide.Scalar: _integer_divisor(1),
    aten.remainder.Tensor: _integer_divisor(1), aten.remainder.Scalar: _integer_divisor(1),
    aten.remainder.Scalar_Tensor: _integer_divisor(1),
    aten.fmod.Tensor: _integer_divisor(1), aten.fmod.Scalar: _integer_divisor(1),
}
VALUE_CHECKS.update(CHECKS)
SPECIAL.update({aten._assert_async.default: _assert_async, aten._assert_async.msg: _assert_async})
