"""Fused optimizer steps on the lazyx device: `Adam(..., fused=True)` and its kin, and the
two GradScaler ops that feed them.

torch.optim accepts fused=True for any device in its list of fused-kernel devices, which
names the PrivateUse1 backend, so lazyx parameters reach `aten::_fused_adam_` and friends.
Those ops have CPU and CUDA kernels only, and their functionalization refuses an empty tensor
list (`max_exp_avg_sqs` without amsgrad: an internal assert). The kernels here, registered
for the device's autograd key like recurrent.py's, compute the same update from plain ops,
following torch's CPU kernels (aten/src/ATen/native/cpu/Fused*Kernel.cpp): what the fused
kernel reads as a host number (the step count) stays a device value here, so a step never
syncs, and `found_inf` (GradScaler's skipped step) selects the old values on the device
instead of returning early. An unscaled gradient is written back, as the CPU kernel does.
The step counts are incremented by torch.optim before the call, as for the CPU kernel.

GradScaler's unscale and scale update (`_amp_foreach_non_finite_check_and_unscale_`,
`_amp_update_scale_`) had no lowering and ran eagerly, reading every gradient to the host at
each step; as device ops, a fused optimizer with a GradScaler traces a whole AMP step.
"""
import math

import torch


def _fused(update):
    """The fused op around `update(param, grad, *its state tensors, **options)`, which gives
    (tensor, new value) pairs for one parameter (a state list the op got empty, such as
    max_exp_avg_sqs without amsgrad, gives None). What every fused kernel does besides: the
    gradient is unscaled by grad_scale (and written back so) and negated under maximize, and
    each new value is written into its tensor -- or the old one kept where GradScaler found an
    inf or a NaN in this step's gradients (the kernels skip the whole step then)."""
    def kernel(params, grads, *states, maximize, grad_scale=None, found_inf=None, **options):
        keep = None if found_inf is None else found_inf.to(torch.bool)
        for i, param in enumerate(params):
            unscaled = grads[i] if grad_scale is None else grads[i] / grad_scale
            pairs = update(param, -unscaled if maximize else unscaled,
                           *(state[i] if len(state) else None for state in states), **options)
            if grad_scale is not None:
                pairs.append((grads[i], unscaled))
            for target, value in pairs:
                target.copy_(value if keep is None else torch.where(keep, target, value))
    return kernel


def _one_minus_power(beta, step):
    """1 - beta ** step, to float32's precision: torch's CPU kernel computes it in double, and
    `1 - torch.pow(beta, step)` in float32 rounds beta first (0.999 -> 0.99899995): 1 - 0.999
    came out 5e-5 too large, and Adam's first steps moved parameters by 2e-5 of lr too much.
    -expm1(step * log(beta)) with log(beta) taken in double keeps the small difference."""
    if beta <= 0:
        return 1 - torch.pow(beta, step)  # (0 ** step: exact in any precision)
    return -torch.expm1(step * math.log(beta))


def _adam(decoupled):
    def update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, state_step, *, lr, beta1,
               beta2, weight_decay, eps, amsgrad):
        step = state_step.to(param.dtype)
        bias_correction1 = _one_minus_power(beta1, step)
        bias_correction2_sqrt = _one_minus_power(beta2, step).sqrt()
        value = param
        if weight_decay != 0:
            if decoupled:  # AdamW: decay the parameter
                value = value - lr * weight_decay * value
            else:  # Adam: decay through the gradient
                grad = grad + weight_decay * value
        new_avg = exp_avg.lerp(grad, 1 - beta1)
        new_avg_sq = exp_avg_sq * beta2 + (1 - beta2) * grad * grad
        pairs = [(exp_avg, new_avg), (exp_avg_sq, new_avg_sq)]
        if amsgrad:
            new_avg_sq = torch.maximum(max_exp_avg_sq, new_avg_sq)
            pairs.append((max_exp_avg_sq, new_avg_sq))
        denom = new_avg_sq.sqrt() / bias_correction2_sqrt + eps
        return pairs + [(param, value - (lr / bias_correction1) * new_avg / denom)]
    return _fused(update)


def _sgd_update(param, grad, buf, *, weight_decay, momentum, lr, dampening, nesterov,
                is_first_step):
    if weight_decay != 0:
        grad = grad + weight_decay * param
    pairs = []
    if momentum != 0:
        new_buf = grad if is_first_step else buf * momentum + (1 - dampening) * grad
        grad = grad + momentum * new_buf if nesterov else new_buf
        pairs.append((buf, new_buf))
    return pairs + [(param, param - lr * grad)]


def _adagrad_update(param, grad, state_sum, state_step, *, lr, lr_decay, weight_decay, eps):
    if weight_decay != 0:
        grad = grad + weight_decay * param
    clr = lr / (1 + (state_step.to(param.dtype) - 1) * lr_decay)
    new_sum = state_sum + grad * grad
    return [(state_sum, new_sum), (param, param - clr * grad / (new_sum.sqrt() + eps))]


def _unscale(grads, found_inf, inv_scale):
    """GradScaler.unscale_: each gradient times inv_scale, found_inf set to 1 where any
    unscaled value is not finite (the CPU kernel's semantics), all on the device: a fused
    optimizer then skips the step without the host ever reading found_inf."""
    bad = []
    for g in grads:
        unscaled = g * inv_scale
        bad.append(~torch.isfinite(unscaled).all())
        g.copy_(unscaled)
    if bad:
        found_inf.copy_(torch.maximum(found_inf, torch.stack(bad).any().to(found_inf.dtype)))


def _update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                  growth_interval):
    """GradScaler.update: back off after a step with infs, grow after growth_interval clean
    steps (keeping the scale if the grown one is not finite), as the CPU kernel does; the
    count of clean steps restarts after either."""
    found = found_inf > 0
    successful = growth_tracker + 1
    grow = (~found) & (successful == growth_interval)
    grown = scale * growth_factor
    new_scale = torch.where(found, scale * backoff_factor,
                            torch.where(grow & torch.isfinite(grown), grown, scale))
    new_tracker = torch.where(found | grow, torch.zeros_like(successful), successful)
    scale.copy_(new_scale)
    growth_tracker.copy_(new_tracker)
    return scale


KERNELS = {"_fused_adam_": _adam(decoupled=False), "_fused_adamw_": _adam(decoupled=True),
           "_fused_sgd_": _fused(_sgd_update), "_fused_adagrad_": _fused(_adagrad_update)}
AMP_KERNELS = {"_amp_foreach_non_finite_check_and_unscale_": _unscale,
               "_amp_update_scale_": _update_scale}


def register(lib):
    """Register on `lib` (a torch.library.Library for aten IMPL, kept alive by the caller):
    each op's float-lr and tensor-lr overloads take the same kernel."""
    for name, kernel in KERNELS.items():
        lib.impl(name, kernel, "AutogradPrivateUse1")
        lib.impl(name + ".tensor_lr", kernel, "AutogradPrivateUse1")
    for name, kernel in AMP_KERNELS.items():
        lib.impl(name, kernel, "AutogradPrivateUse1")
