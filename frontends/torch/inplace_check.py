"""torch's shape and dtype check of an in-place op, run once per signature.

Functionalization, which every tensor on lt.device goes through, runs an in-place op's Meta
kernel on meta copies of its arguments before turning it into the functional op. That check is
what raises the errors only an in-place op has: a broadcast that would resize `self`, a result
dtype `self` cannot hold. Once `torch._meta_registrations` is imported (by torch._decomp, which
Dynamo, lazyx and every `optimizer.step()` import), those Meta kernels are torch's Python
reference functions, and they cost a lazy op more than everything else it does: `add_` 35 us
against 10 without the check, `addcmul_` 140 us against 13 (measured; AdamW paid 0.6 ms per
parameter per step to them). Setting TORCH_DISABLE_FUNCTIONALIZATION_META_REFERENCE=1 would
skip them but loses the errors: `ones(3).add_(ones(2, 3))` then silently resizes `self`.

The check of a pointwise in-place op reads only its arguments' types, dtypes, shapes and strides
and its Python numbers' types (and the values of ints, bools and strings: `pow_(-1)` of an
integer tensor fails, `pow_(2)` does not). So each such op's Meta kernel is wrapped: a signature
that passed once is not checked again, and a new one runs torch's own function, whose errors
are unchanged. The wrapper serves every Meta caller in the process (FakeTensor included); sizes
it cannot key (SymInts) always run the original. Only kernels torch registered from Python are
wrapped: where the C++ one is active it is already cheap. On a new signature the wrapper also
makes eager's cast check, which torch's Python Meta kernels make for some ops only.
"""
import torch

from .dtypes import cast_error

_MAX_SIGNATURES = 4096
ENABLED = True  # False: every call runs torch's check (benchmarks/inplace_check_bench.py)
_PASSED = set()  # (op, signature) of calls whose check passed (cleared when full)
ORIGINALS = {}  # OpOverload -> torch's Meta function the wrapper calls on a new signature


def _functional(op):
    """The out-of-place op of an in-place one (aten.add_.Tensor -> aten.add.Tensor), or None:
    the overload of the name without "_" whose arguments are the same (names are not enough:
    aten.ldexp.default is TorchScript's ldexp(float x, int i), not ldexp_.default's twin)."""
    def signature(o):
        return [(a.name, str(a.type), a.kwarg_only) for a in o._schema.arguments]
    name = op._opname
    name = "__" + name[3:] if name.startswith("__i") else name[:-1] if name.endswith("_") else None
    packet = getattr(torch.ops.aten, name, None) if name else None  # (__ilshift__: __lshift__)
    for name in packet.overloads() if packet is not None else ():
        candidate = getattr(packet, name)
        if signature(candidate) == signature(op):
            return candidate
    return None


def _check_cast(functional, args, kwargs):
    """Eager's rule for every in-place op: the functional op's result dtype must cast to self's
    (torch.can_cast), or the call fails. torch's Python Meta kernels make it for some ops only
    (not add_, mul_, addcmul_, addcdiv_, logit_, ldexp_), and functionalization then casts the
    result back into self silently: `int32.addcmul_(half, half)` would truncate."""
    result = functional(*args, **kwargs).dtype
    if not torch.can_cast(result, args[0].dtype):
        raise cast_error(result, args[0].dtype)


_REPLAY_LIMIT = 1 << 20  # elements of `self` a failed check's CPU replay may allocate


def _eager_error(op, args, kwargs, meta_error):
    """The error eager torch raises for a call whose check failed, or None when eager
    accepts the call (a Meta kernel stricter than the CPU one): torch's Meta kernels word
    (and type) some differently from its CPU kernels (`int.igamma_(int)`: NotImplementedError on
    CPU, a cast RuntimeError on Meta). Replayed on CPU ones of the same shapes and dtypes (ones:
    no division by zero); `self` only is materialized, the others are broadcast views."""
    def stand_in(x, materialize=False):
        if isinstance(x, torch.Tensor):
            if materialize:
                return torch.ones(x.shape, dtype=x.dtype)
            return torch.ones((), dtype=x.dtype).expand(x.shape) if x.dim() else \
                torch.ones((), dtype=x.dtype)
        if isinstance(x, (list, tuple)):
            return type(x)(stand_in(i) for i in x)
        return x
    tensors = [x for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor)]
    if any(type(n) is not int for t in tensors for n in t.shape) or \
            args[0].numel() > _REPLAY_LIMIT:  # a symbolic size (FakeTensor): torch's own error
        return meta_error
    try:
        op(stand_in(args[0], True), *stand_in(args[1:]),
           **{k: stand_in(v) for k, v in kwargs.items()})
    except Exception as cpu_error:  # noqa: BLE001  (whatever eager raises is the answer)
        return cpu_error.with_traceback(None)
    return None  # eager accepts what the Meta kernel refuses (`int <<= bool`): so do we


class _Unkeyable(Exception):
    """An argument the signature cannot hold (an object of an unknown kind)."""


def _part(value):
    cls = type(value)
    if cls is float or cls is complex:  # checked by type only (dtype promotion's category)
        return cls
    if cls is int or cls is bool or cls is str or value is None:
        return cls, value
    if isinstance(value, torch.Tensor):  # (a SymInt size makes the key unhashable: see meta)
        return value.dtype, value.device, value.shape, value.stride()
    if cls is list or cls is tuple:
        return (cls,) + tuple(map(_part, value))
    if cls is torch.dtype or cls is torch.memory_format or cls is torch.layout:
        return value
    raise _Unkeyable


def _checked_once(op):
    functional = _functional(op)

    def meta(*args, **kwargs):
        key = None
        if ENABLED:
            try:
                key = (op, tuple(map(_part, args)), tuple(map(_part, kwargs.items())))
                if key in _PASSED:
                    return args[0]
            except (_Unkeyable, TypeError):  # TypeError: hashing a symbolic size
                key = None
        self = args[0]
        before = (self.shape, self.stride(), self.dtype) if key is not None else None
        try:
            if functional is not None:  # first, as eager: `int.add_(float)` gets eager's message
                _check_cast(functional, args, kwargs)
            out = ORIGINALS[op](*args, **kwargs)
        except Exception as err:
            error = _eager_error(op, args, kwargs, err)
            if error is not None:
                raise error from None
            return self  # (not remembered: the next call asks both kernels again)
        # remember only a check that left `self` as it was and returned it (the in-place
        # contract); a kernel that changed metadata is asked again every time
        if key is not None and out is self and (self.shape, self.stride(), self.dtype) == before:
            if len(_PASSED) >= _MAX_SIGNATURES:
                _PASSED.clear()
            _PASSED.add(key)
        return out
    meta.__name__ = f"lazyx_checked_once_{op.__name__}"
    return meta


def _python_meta_is_active(op):
    """Whether the Meta kernel the dispatcher runs for `op` is torch's Python function."""
    for line in torch._C._dispatch_dump(op.name()).splitlines():
        if line.startswith("Meta:"):
            return "_meta_registrations.py" in line
    return False


def _targets():
    """Pointwise in-place ops (they return `self`, its metadata unchanged) whose active Meta
    kernel is torch's Python function (the ones torch._meta_registrations registered, from
    torch._decomp's tables)."""
    from torch._decomp import global_decomposition_table
    meta_key = torch._C.DispatchKey.Meta
    seen = set()
    for table in global_decomposition_table.values():
        for op in table:
            if op in seen or not isinstance(op, torch._ops.OpOverload):
                continue
            seen.add(op)
            arguments = op._schema.arguments
            if torch.Tag.pointwise not in op.tags or torch.Tag.inplace_view in op.tags or \
                    not arguments or arguments[0].alias_info is None or \
                    not arguments[0].alias_info.is_write:
                continue
            original = op.py_kernels.get(meta_key)
            if original is not None and _python_meta_is_active(op):
                yield op, original


_library = None


def install():
    """Wrap the Meta kernels (once per process; later calls do nothing)."""
    global _library
    if _library is not None:
        return
    import torch._meta_registrations  # noqa: F401  (torch's kernels must be in place first)
    _library = torch.library.Library("aten", "IMPL", "Meta")
    for op, original in _targets():
        ORIGINALS[op] = original
        _library.impl(op, _checked_once(op))
