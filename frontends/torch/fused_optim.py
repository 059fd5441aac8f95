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
import torch


def _store(targets, values, found_inf):
    """Write each new value into its tensor, or keep the old one where GradScaler found an
    inf or a NaN in this step's gradients (the fused kernels skip the whole step then)."""
    keep = None if found_inf is None else found_inf.to(torch.bool)
    for target, value in zip(targets, values):
        target.copy_(value if keep is None else torch.where(keep, target, value))


def _grad(grad, grad_scale, maximize):
    if grad_scale is not None:
        grad = grad / grad_scale
    return grad, (-grad if maximize else grad)


def _adam(decoupled):
    def kernel(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr,
               beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None,
               found_inf=None):
        for i, param in enumerate(params):
            unscaled, grad = _grad(grads[i], grad_scale, maximize)
            step = state_steps[i].to(param.dtype)
            bias_correction1 = 1 - torch.pow(beta1, step)
            bias_correction2_sqrt = (1 - torch.pow(beta2, step)).sqrt()
            value = param
            if weight_decay != 0:
                if decoupled:  # AdamW: decay the parameter
                    value = value - lr * weight_decay * value
                else:  # Adam: decay through the gradient
                    grad = grad + weight_decay * value
            exp_avg = exp_avgs[i].lerp(grad, 1 - beta1)
            exp_avg_sq = exp_avg_sqs[i] * beta2 + (1 - beta2) * grad * grad
            updated = [exp_avgs[i], exp_avg_sqs[i]]
            new = [exp_avg, exp_avg_sq]
            if amsgrad:
                exp_avg_sq = torch.maximum(max_exp_avg_sqs[i], exp_avg_sq)
                updated.append(max_exp_avg_sqs[i])
                new.append(exp_avg_sq)
            denom = exp_avg_sq.sqrt() / bias_correction2_sqrt + eps
            value = value - (lr / bias_correction1) * exp_avg / denom
            updated.append(param)
            new.append(value)
            if grad_scale is not None:
                updated.append(grads[i])
                new.append(unscaled)
            _store(updated, new, found_inf)
    return kernel


def _sgd(params, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening,
         nesterov, maximize, is_first_step, grad_scale=None, found_inf=None):
    for i, param in enumerate(params):
        unscaled, grad = _grad(grads[i], grad_scale, maximize)
        if weight_decay != 0:
            grad = grad + weight_decay * param
        updated, new = [], []
        if momentum != 0:
            buf = momentum_buffer_list[i]
            buf_new = grad if is_first_step else buf * momentum + (1 - dampening) * grad
            grad = grad + momentum * buf_new if nesterov else buf_new
            updated.append(buf)
            new.append(buf_new)
        updated.append(param)
        new.append(param - lr * grad)
        if grad_scale is not None:
            updated.append(grads[i])
            new.append(unscaled)
        _store(updated, new, found_inf)


def _adagrad(params, grads, state_sums, state_steps, *, lr, lr_decay, weight_decay, eps,
             maximize, grad_scale=None, found_inf=None):
    for i, param in enumerate(params):
        unscaled, grad = _grad(grads[i], grad_scale, maximize)
        if weight_decay != 0:
            grad = grad + weight_decay * param
        step = state_steps[i].to(param.dtype)
        clr = lr / (1 + (step - 1) * lr_decay)
        state_sum = state_sums[i] + grad * grad
        updated = [state_sums[i], param]
        new = [state_sum, param - clr * grad / (state_sum.sqrt() + eps)]
        if grad_scale is not None:
            updated.append(grads[i])
            new.append(unscaled)
        _store(updated, new, found_inf)


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
           "_fused_sgd_": _sgd, "_fused_adagrad_": _adagrad}
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
