"""lazyx.compile for torch: tensors, modules and optimizers as captured state.

* A user's tensor is torch's FunctionalTensorWrapper around a LazyTensor; an in-place op
  swaps the inner LazyTensor, so a replay reaches the *current* inner handle through the
  wrapper (the wrapper is the state's identity) and writes the new value into it.
* A module's state is its parameters and buffers (and their .grad, which a step may replace
  each call); an optimizer's is its per-parameter state.
* While a step is traced, optimizers on the lazyx device take their `capturable` path
  (checked against torch 2.13): its step counter and bias corrections are tensors on the
  device, so they are part of the replayed program. The default path keeps the counter on
  the CPU and computes the corrections in Python, which a replay would never advance. (So
  an Adam replay rounds otherwise than the uncompiled run, by float32 ulps, its counters
  float64 (`_WideCounters`); and the flag is kept out of the optimizer's state_dict,
  `_keep_out_of_state_dict`.) An optimizer with no
  capturable path (Adagrad) keeps its counters on the CPU; a replay advances them again
  (`_HostSteps`).
* An LR scheduler stepped inside the step after its optimizer's step is a host effect each
  replay makes again after its program (`_scheduler_steps`, capture.replayed_effect): the
  next call reads the numbers it set, as the uncompiled run would.
"""
import contextlib
import functools
import sys
import types
import weakref

import torch
from torch.distributions import Distribution
from torch.optim.optimizer import (_get_scalar_dtype, _get_value,
                                   register_optimizer_step_post_hook,
                                   register_optimizer_step_pre_hook)

from ...core import capture, host_state, replay
from . import hooks
from . import device as _device
from . import tensor as _tensor


_is_lazy = _tensor.on_device


def _handle(t):
    if type(t) is _tensor.LazyTensor:
        return t._lazyx_handle
    # a write through an alias (p.data.mul_(0), p.detach().lerp_(...): EMA, weight clipping)
    # updated the functional storage, not p's inner tensor: sync applies it, or a replay read
    # p's value from before the write. When the only mutation since the last replay is that
    # replay's own commit (_write), the inner tensor holds the value already: the sync would
    # only regenerate it (25 us per tensor, measured, against 0.2 for the counter's read).
    # (Not the handle that commit wrote: a sync since, which any op reading the tensor
    # makes, regenerates the inner tensor, with a new handle, and counts no mutation.)
    entry = _commits.get(id(t))
    if entry is None or entry.mutations != _mutations(t) or entry.ref() is not t:
        _sync(t)
    return torch._from_functional_tensor(t)._lazyx_handle


_sync = torch._functionalize_sync
_mutations = torch._functionalize_mutation_counter  # +1 per mutation of t's storage


def _wrap(template, node):
    return _device.user_tensor(_tensor.from_node(node, template.dtype))


class _Commits:
    """What a replay's writes left queued on a tensor's functional storage: how many commits
    since it last synced, and the storage's mutation count right after the latest (so _handle
    can tell "only our own commit since" from a write through an alias). Keyed by id, with a
    weak reference to tell a tensor from a later one at the same address."""
    __slots__ = ("ref", "queued", "mutations")

    def __init__(self, t):
        self.ref = weakref.ref(t, lambda _, key=id(t): _commits.pop(key, None))
        self.queued = 0
        self.mutations = None


_commits = {}  # id(tensor) -> _Commits


def _write(t, handle, node):
    """Store a replay's value: rebind the inner tensor's handle, then tell functionalization
    it is the tensor's new value. Views (t.detach(), state_dict()) are regenerated from the
    functional storage's base, not from the inner tensor: without the commit they would read
    the value of the last traced call. Each commit is queued on the storage until something
    syncs it; syncing every 256 keeps the queue short (0.7 us per commit, 0.2 ms per sync of
    1000, measured)."""
    handle.node = node
    if type(t) is _tensor.LazyTensor:
        return
    torch._functionalize_replace(t, torch._from_functional_tensor(t))
    torch._functionalize_commit_update(t)
    entry = _commits.get(id(t))
    if entry is None or entry.ref() is not t:
        entry = _commits[id(t)] = _Commits(t)
    entry.queued += 1
    if entry.queued >= 256:
        torch._functionalize_sync(t)
        entry.queued = 0
    entry.mutations = _mutations(t)


def _module_state(module):
    for name, t in module.named_parameters():
        yield ("param", name), t, True
        if t.grad is not None:
            yield ("grad", name), t.grad, False
    for name, t in module.named_buffers():
        yield ("buffer", name), t, True
    # tensors a module keeps as plain attributes: a table it never registered as a buffer
    # (`self.pe = torch.zeros(...)`, a list of them), or one its forward stores (`self.last
    # = y`). Unsearched, the first made every call trace again, and the second was rebound in
    # place by each replay, changing the tensor a caller had kept from an earlier call. Like
    # a .grad, a step may replace them each call (a replay then stores a new tensor there).
    for prefix, sub in module.named_modules():
        for name, value in sub.__dict__.items():
            if _plain_attr(name, value):
                yield ("attr", f"{prefix}.{name}" if prefix else name), value, False


def _plain_attr(name, value):
    """A module attribute that may hold state: a tensor that is not a parameter, or a plain
    list, tuple, dict or object of the user's (`self.helper.last = y`) with a tensor or a
    module among its own items -- searched from there as the step's plain objects are. Not
    torch's `_parameters`, `_buffers`, hooks, ..., nor whatever else a module refers to (a
    config, a data set, a trainer): a trace walks its state twice."""
    if isinstance(value, torch.Tensor):
        return not isinstance(value, torch.nn.Parameter)
    if name.startswith("_"):
        return False
    if type(value) in (list, tuple):
        items = value
    elif type(value) is dict:
        items = value.values()
    elif isinstance(value, _NOT_STATE) or type(getattr(value, "__dict__", None)) is not dict:
        return False
    else:
        items = value.__dict__.values()
    return any(isinstance(v, (torch.Tensor, torch.nn.Module)) for v in items)


_NOT_STATE = (torch.nn.Module, types.FunctionType, types.MethodType, types.ModuleType, type,
              functools.partial)


_DOTTED = {}  # "net.0.weight" -> ("net.0", ["net", "0"], "weight")


def _dotted(name):
    parts = _DOTTED.get(name)
    if parts is None:
        prefix, _, last = name.rpartition(".")
        parts = _DOTTED[name] = (prefix, prefix.split(".") if prefix else [], last)
    return parts


def _owner(module, dotted):
    """(the submodule holding the parameter or buffer named `dotted`, its own name)."""
    _, path, last = _dotted(dotted)
    for part in path:
        module = module._modules[part]
    return module, last


def _module_child(module, name):
    """What `_module_state` calls `name`, found directly, or None."""
    return _module_children(module, (name,))[0]


def _module_children(module, names):
    """_module_child of each name (capture.register_container's children_at: a replay reads
    a module's state in one call): each submodule on the way found once, not once per
    tensor it holds. An "attr" is what is there now: a replay's own checks refuse a
    non-tensor."""
    owners, out = {}, []
    for kind, dotted in names:
        prefix, path, last = _dotted(dotted)
        owner = owners.get(prefix, _UNSEEN)
        if owner is _UNSEEN:
            owner = owners[prefix] = _walk(module, path)
        if owner is None:
            out.append(None)
        elif kind == "param":
            out.append(owner._parameters.get(last))
        elif kind == "grad":
            p = owner._parameters.get(last)
            out.append(None if p is None else p.grad)
        elif kind == "buffer":
            out.append(owner._buffers.get(last))
        else:
            out.append(owner.__dict__.get(last))
    return out


_UNSEEN = object()


def _walk(module, path):
    for part in path:
        module = module._modules.get(part)
        if module is None:
            return None
    return module


def _set_module_child(module, name, value):
    kind, dotted = name
    if kind not in ("grad", "attr"):
        return False
    module, last = _owner(module, dotted)
    if kind == "attr":
        setattr(module, last, value)  # (a plain tensor: Module.__setattr__ keeps it so)
    else:
        module._parameters[last].grad = value
    return True


def _optimizer_child(opt, name):
    return _optimizer_children(opt, (name,))[0]


def _optimizer_children(opt, names):
    """_optimizer_child of each name (children_at: a replay reads an optimizer's state in
    one call): the parameters listed once."""
    groups = opt.param_groups
    params = [p for group in groups for p in group["params"]]
    state, out = opt.state, []
    for name in names:
        kind, index = name[0], name[1]
        if kind == "state":
            held = state.get(params[index]) if index < len(params) else None
            out.append(None if held is None else held.get(name[2]))
        elif kind == "param":
            out.append(params[index] if index < len(params) else None)
        else:
            out.append(groups[index].get(name[2]) if index < len(groups) else None)
    return out


def _optimizer_state(opt):
    index = 0
    for g, group in enumerate(opt.param_groups):
        for key, value in group.items():
            if isinstance(value, torch.Tensor):
                yield ("group", g, key), value, True
        for p in group["params"]:
            yield ("param", index), p, True
            for key, value in opt.state.get(p, {}).items():
                if isinstance(value, torch.Tensor):
                    yield ("state", index, key), value, True
            index += 1


# hyperparameters schedulers change between calls (every scheduler: lr; CyclicLR and
# OneCycleLR: momentum, or betas[0] for Adam-like optimizers): numbers of each call
_SCHEDULED = ("lr", "momentum", "betas")


def _symbolic(group):
    """Make `group`'s scheduled hyperparameters numbers of the call (capture.state_number)."""
    for key in _SCHEDULED:
        value = group.get(key)
        if type(value) is float:
            group[key] = capture.state_number(value, _reader(group, key))
        elif type(value) is tuple and all(type(v) is float for v in value):
            group[key] = tuple(capture.state_number(v, _reader(group, key, i))
                               for i, v in enumerate(value))


def _reader(group, key, i=None):
    read = (lambda: group[key]) if i is None else (lambda: group[key][i])
    read.holder = group  # (an LR scheduler's replayed step changes it: _scheduler_steps)
    return read


def _capturable(opt, args, kwargs, symbolic=None):
    for group in opt.param_groups:
        if symbolic is not None and not any(group is g for g in symbolic):
            _symbolic(group)  # a scheduler may change them between calls: read at each call
            symbolic.append(group)
        if "capturable" not in group:
            continue
        if not group["params"] or not all(_is_lazy(p) for p in group["params"]):
            continue
        if not group["capturable"]:
            group["capturable"] = True
            _keep_out_of_state_dict(opt, group)
        wide = _WideCounters.dtype(opt, group)
        for p in group["params"]:
            state = opt.state.get(p, {})
            step = state.get("step")
            if isinstance(step, torch.Tensor) and (not _is_lazy(step) or
                                                   wide and step.dtype != wide):
                state["step"] = step.to(p.device, wide or step.dtype)
                if wide:
                    _WideCounters.narrowed_in_state_dict(opt)
    return None


@contextlib.contextmanager
def _unvalidated_distributions():
    """While a step is traced, torch.distributions does not validate by default: its checks
    (`scale > 0`, log_prob's support) read values on the host, which a replay cannot do, so
    a VAE's step failed to compile. torch.compile does the same, process-wide from its first
    call (torch._dynamo.eval_frame); here only while tracing. A distribution made with
    validate_args=True still reads, and the error says so."""
    validating = Distribution._validate_args
    Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        Distribution.set_default_validate_args(validating)


class _WideCounters:
    """The capturable path computes an optimizer's bias corrections on the device from its
    step counter, in the counter's dtype: float32, where the default path computes them in
    Python's float64. `1 - 0.999 ** step` cancels: in float32 it is 1e-5 off at step 1, so
    an Adam replay's updates were 5e-5 off the uncompiled run's, and its parameters 5e-6 off
    after 10 steps (RAdam's rectification, NAdam's momentum products alike). While such an
    optimizer steps in a traced call, the counters it makes are float64 (its module's
    _get_scalar_dtype, as under a float64 default dtype; a fused step keeps float32), and
    _capturable widens the ones it has: the replay then rounds as the uncompiled run does,
    to float32 ulps. The state_dict shows them in float32, as the optimizer would have made
    them. Only where the trace made the optimizer capturable: one the user made capturable
    computes in float32 uncompiled too. One optimizer step at a time."""
    patched = []  # modules whose _get_scalar_dtype is `wide` while an optimizer step runs

    # the optimizers whose default path computes corrections from the counter in Python
    # (ASGD keeps float32 tensors there too; RMSprop, Adadelta, Rprop compute none)
    MODULES = ("torch.optim.adam", "torch.optim.adamw", "torch.optim.nadam",
               "torch.optim.radam", "torch.optim.adamax")

    @classmethod
    def dtype(cls, opt, group):
        """The counters' dtype for `group`, which the trace made capturable: float64, or None
        where they keep their own (a fused step's float32, a float64 default dtype already,
        a group the user made capturable, whose uncompiled run computes in float32, and an
        optimizer outside MODULES)."""
        if group.get("fused") or torch.get_default_dtype() == torch.float64 or \
                not any(g is group for g in opt.__dict__.get("_lazyx_capturable", ())) or \
                not any(klass.__module__ in cls.MODULES for klass in type(opt).__mro__):
            return None
        return torch.float64

    @staticmethod
    def wide(is_fused=None):
        return torch.float32 if is_fused else torch.float64

    @classmethod
    def begin(cls, opt):
        cls.end()
        if not all(group.get("capturable") and cls.dtype(opt, group) and
                   all(_is_lazy(p) for p in group["params"]) for group in opt.param_groups):
            return
        for klass in type(opt).__mro__:
            module = sys.modules.get(klass.__module__)
            if klass.__module__ in cls.MODULES and \
                    getattr(module, "_get_scalar_dtype", None) is _get_scalar_dtype:
                module._get_scalar_dtype = cls.wide
                cls.patched.append(module)
        if cls.patched:
            cls.narrowed_in_state_dict(opt)

    @classmethod
    def end(cls):
        for module in cls.patched:
            module._get_scalar_dtype = _get_scalar_dtype
        cls.patched = []

    @staticmethod
    def narrowed_in_state_dict(opt):
        if "_lazyx_wide_counters" not in opt.__dict__:
            opt.__dict__["_lazyx_wide_counters"] = True
            opt.register_state_dict_post_hook(_narrow_counters)


_COUNTERS = ("step", "mu_product", "eta", "mu")  # the 0-d state made by _get_scalar_dtype


def _narrow_counters(opt, state):
    """_WideCounters' float64 counters in `opt.state_dict()` as float32, the dtype the
    optimizer makes them in under a float32 default dtype (copies: the live ones stay)."""
    for index, entry in state["state"].items():
        narrowed = {key: entry[key].to(torch.float32) for key in _COUNTERS
                    if isinstance(entry.get(key), torch.Tensor) and
                    entry[key].dtype == torch.float64 and entry[key].dim() == 0}
        if narrowed:  # (a new dict: `entry` is the optimizer's own state for the parameter)
            state["state"][index] = {**entry, **narrowed}
    return state


def _keep_out_of_state_dict(opt, group):
    """The user's capturable=False in `opt.state_dict()` for `group`, which the trace made
    capturable: a checkpoint carrying True fails to resume in a CPU optimizer ("params and
    state_steps must be on supported devices"). The flag itself stays: a replay and the lazy
    calls after it keep the counter on the device, which the default path would read back at
    every step."""
    forced = opt.__dict__.get("_lazyx_capturable")
    if forced is None:
        forced = opt.__dict__["_lazyx_capturable"] = []
        opt.register_state_dict_post_hook(_user_capturable)
    if not any(g is group for g in forced):  # (each trace of the step comes here again)
        forced.append(group)  # (by identity: a group load_state_dict made is the user's own)


def _user_capturable(opt, state):
    forced = opt.__dict__.get("_lazyx_capturable", ())
    for group, packed in zip(opt.param_groups, state["param_groups"]):
        if packed.get("capturable") and any(g is group for g in forced):
            packed["capturable"] = False
    return state


@contextlib.contextmanager
def _tracing():
    symbolic = []  # param groups whose hyperparameters are symbolic while this trace runs
    stepped, scheduled = set(), set()  # optimizers stepped; those a scheduler stepped after

    def pre_step(opt, args, kwargs):
        if id(opt) in scheduled:  # its update used its scheduler's new numbers: a replay,
            capture.effect_spoiled()  # which reads them at the start, could not
        stepped.add(id(opt))
        _capturable(opt, args, kwargs, symbolic)
        _WideCounters.begin(opt)
        _HostSteps.begin(opt)

    hook = register_optimizer_step_pre_hook(pre_step)
    def post_step(opt, args, kwargs):
        _WideCounters.end()
        _HostSteps.end(opt)

    post_hook = register_optimizer_step_post_hook(post_step)
    rec = capture.current()
    items = hooks.split_item() if rec is not None and rec.on_observe == "split" else \
        contextlib.nullcontext()
    steps = _scheduler_steps(stepped, scheduled)
    try:
        with items, steps as recorded, _unvalidated_distributions():
            yield
    finally:
        hook.remove()
        post_hook.remove()
        _WideCounters.end()  # (an optimizer step that raised)
        _HostSteps.end(None)
        for group in symbolic:  # plain numbers again (SymFloats while tracing)
            for key in _SCHEDULED:
                if key in group:
                    group[key] = capture._plain_deep(group[key])
        for scheduler in recorded:
            scheduler._last_lr = capture._plain_deep(scheduler._last_lr)


class _HostSteps:
    """An optimizer with no capturable path (Adagrad) keeps each parameter's step counter on
    the CPU: its step adds one to the counter and reads it back through
    torch.optim.optimizer._get_value (Adagrad's `lr / (1 + (step - 1) * lr_decay)`). While a
    step is traced, such a read is a number of the call (capture.state_number: the counter's
    value at each call, plus what the step adds), and the counter is advanced again after
    each replay (capture.host_counter), where the step would otherwise run lazily for writing
    host state. One optimizer step at a time (`steps`: the counters it found, by id)."""
    steps = {}      # id(counter) -> (optimizer, parameter, value before the step)
    patched = []    # modules whose _get_value is `read` while an optimizer step runs

    @classmethod
    def begin(cls, opt):
        cls.end(None)
        for group in opt.param_groups:
            if "capturable" in group:  # (_capturable put its counters on the device)
                continue
            for p in group["params"]:
                step = opt.state.get(p, {}).get("step")
                if _is_lazy(p) and isinstance(step, torch.Tensor) and not _is_lazy(step) and \
                        step.numel() == 1 and step.is_floating_point():
                    cls.steps[id(step)] = (opt, p, step.item())
        if not cls.steps:
            return
        for klass in type(opt).__mro__:
            module = sys.modules.get(klass.__module__)
            if getattr(module, "_get_value", None) is _get_value:
                module._get_value = cls.read
                cls.patched.append(module)

    @classmethod
    def end(cls, opt):
        for module in cls.patched:
            module._get_value = _get_value
        cls.patched = []
        if opt is not None:
            for key, (owner, p, was) in cls.steps.items():
                step = owner.state.get(p, {}).get("step")
                by = step.item() - was if step is not None and id(step) == key else 0
                if by:
                    capture.host_counter(step, functools.partial(_advance, owner, p, by))
        cls.steps = {}

    @staticmethod
    def read(x):
        found = _HostSteps.steps.get(id(x)) if isinstance(x, torch.Tensor) else None
        if found is None:
            return _get_value(x)
        opt, p, was = found
        value = x.item()
        read = functools.partial(_counter_read, opt, p, value - was)
        read.lazyx_counter = True
        return capture.state_number(value, read)


def _advance(opt, p, by):
    opt.state[p]["step"].add_(by)


def _counter_read(opt, p, by):
    """The value a step counter will hold once the next call's step has advanced it."""
    return opt.state[p]["step"].item() + by


_LRScheduler = torch.optim.lr_scheduler.LRScheduler


@contextlib.contextmanager
def _scheduler_steps(stepped, scheduled):
    """While a step is traced: an LR scheduler's `step()` made after its optimizer's step is
    an effect each replay makes again after its program (capture.replayed_effect): it sets
    the next call's learning rate (momentum, betas) from the scheduler's own counters, which
    the replay reads at its start as a scheduled number. A scheduler stepping others
    (SequentialLR, ChainedScheduler) is one effect, theirs included; a class with a `step`
    of its own (CosineAnnealingWarmRestarts) is one like the rest. One made otherwise --
    before its optimizer's step (that update used the new rate), or with an argument (an
    epoch, ReduceLROnPlateau's metric) -- spoils them: the step runs lazily, warned, as
    before. Yields the schedulers recorded."""
    recorded = []
    running = [0]  # scheduler steps under way: an inner one is part of the outer's effect

    def stepping(own):
        @functools.wraps(own)
        def step(self, *args, **kwargs):
            running[0] += 1
            try:
                out = own(self, *args, **kwargs)
            finally:
                running[0] -= 1
            if running[0]:
                return out
            if args or kwargs or id(self.optimizer) not in stepped:
                capture.effect_spoiled()
            else:
                scheduled.add(id(self.optimizer))
                owners = [self] + _inner_schedulers(self)
                recorded.extend(owners)
                capture.replayed_effect(owners, functools.partial(own, self),
                                        list(self.optimizer.param_groups))
            return out
        return step

    patched = [(cls, cls.__dict__["step"])
               for cls in [_LRScheduler, *_subclasses(_LRScheduler)] if "step" in cls.__dict__]
    for cls, own in patched:
        cls.step = stepping(own)
    try:
        yield recorded
    finally:
        for cls, own in patched:
            cls.step = own


def _inner_schedulers(scheduler):
    """The schedulers `scheduler` steps itself (SequentialLR's, ChainedScheduler's), deep."""
    inner = []
    for sub in getattr(scheduler, "_schedulers", None) or ():
        if isinstance(sub, _LRScheduler):
            inner += [sub] + _inner_schedulers(sub)
    return inner


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _modes(module):
    """The class, the train/eval flag, the number of buffers and submodules, which
    parameters require grad, and the hooks registered (on modules and parameters), of each
    module of `module`'s tree, in a fixed order: a replay's guard, so that `model.eval()`,
    `Sequential.append(...)`, a parameter registered, a layer frozen (`requires_grad_(False)`),
    an activation swapped (`model.act = nn.ReLU()`), a hook added or an int the module's
    code reads (`self.k`, `self.num_heads`) changed between calls trace again. (Its floats
    are guarded as numbers: host_state.read_numbers.) Checked at every replay, so a plain
    walk of `_modules` (Module.modules() is a recursive generator, 3x slower)."""
    flags, stack = [], [module]
    while stack:
        m = stack.pop()
        d = m.__dict__
        keys = _INT_KEYS.get(type(m))
        if keys is None:
            keys = _INT_KEYS[type(m)] = _int_keys(m)
        hooks = (tuple(m._forward_hooks), tuple(m._forward_pre_hooks),
                 tuple(m._backward_hooks), tuple(m._backward_pre_hooks)) \
            if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or \
            m._backward_pre_hooks else ()
        flags.append((type(m), m.training, len(m._buffers), len(m._modules),
                      tuple([p is not None and (p.requires_grad, _tensor_hooks(p))
                             for p in m._parameters.values()]), hooks,
                      [d.get(k) for k in keys] if keys else None))
        stack.extend([c for c in m._modules.values() if c is not None])
    return tuple(flags)


_INT_KEYS = {}  # module class -> its int attributes its code spells, as first seen


def _int_keys(module):
    # (per class, not per call; spelled by the class's code, so a counter the training loop
    # keeps on the model, `model.global_step`, does not trace again at each change)
    spelled = host_state.class_keys(type(module))
    return tuple([k for k, v in module.__dict__.items() if type(v) is int and k in spelled])


def _tensor_hooks(p):
    hooks = p._backward_hooks
    return tuple(hooks) if hooks else ()


def _param_groups(opt):
    """How many parameters each param group holds, and its settings other than the scheduled
    numbers (weight_decay, eps, nesterov, maximize, ...): a group added between calls
    (`add_param_group`) or a setting changed traces again, instead of replaying the old
    update. (The scheduled numbers are numbers of each call: _symbolic.)"""
    return tuple([(len(group["params"]),) + tuple(
        [(key, value) for key, value in group.items()
         if key != "params" and key not in _SCHEDULED and
         isinstance(value, (bool, int, float, str, type(None), tuple))])
        for group in opt.param_groups])


def _takes_grad(t):
    """A call given `t` records a backward into it (saliency maps, FGSM: x.requires_grad_())."""
    return t.requires_grad and torch.is_grad_enabled()


def _has_backward(t):
    return t.grad_fn is not None


def _version(t):
    return t._version


def _memory(t):
    """Its storage (a view and its base share one): lazyx.compile does not replay a step
    that writes one of two arguments viewing one storage."""
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


def _base(t):
    return t._base if _is_lazy(t) else None


def _own_storage(t):
    """A result that an in-place view op reshaped (quantile's `squeeze_`) regenerates its
    views (`.detach()`) from a hidden storage base of another shape, which replays rebind
    (core/replay_entry's handle_writes): it gets a storage of its own, holding its value."""
    if _is_lazy(t) and t._base is None and _view_metas(t):
        torch._functionalize_unsafe_set(t, _wrap(t, _handle(t).node))


_view_metas = torch._C._functionalization.get_view_meta_sequence


replay.register_tensor(torch.Tensor, _handle, _wrap, _is_lazy, _write, _takes_grad,
                       _has_backward, _version, _memory, _base, _own_storage)
replay.register_container(torch.nn.Module, _module_state, mode=_modes, child=_module_child,
                          set_child=_set_module_child, numbers=True,
                          children_at=_module_children)
replay.register_container(torch.optim.Optimizer, _optimizer_state, mode=_param_groups,
                          child=_optimizer_child, children_at=_optimizer_children)
replay.register_trace_hook(_tracing)


def _ambient():
    """Torch's global modes that change what a step records: grad mode (a call under
    torch.no_grad records no backward) and autocast on the lazyx device and the CPU."""
    if not _any_autocast():  # (the usual call: one C call for every device's)
        return torch.is_grad_enabled()
    return (torch.is_grad_enabled(), torch.is_autocast_enabled("lazyx"),
            torch.get_autocast_dtype("lazyx"), torch.is_autocast_enabled("cpu"))


_any_autocast = torch._C._is_any_autocast_enabled


replay.register_ambient(_ambient)
