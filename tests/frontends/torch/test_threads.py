"""Independent threads never interfere (issue 18): each trains its own torch model on the
lazyx device with its own mark_step; every thread's weights equal its single-threaded run's
on CPU torch."""
import os
import sys

import torch

import lazyx.frontends.torch as lt

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import shared  # noqa: E402  (tests/shared.py)

STEPS, THREADS = 500, 4


def initial(seed):
    """Made before the threads start: torch's global RNG (module init) is shared by threads."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    return model


def train(seed, device, model):
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(32, 8, generator=g).to(device)
    y = torch.randn(32, 1, generator=g).to(device)
    for _ in range(STEPS):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if device is lt.device:
            lt.mark_step()
    return [p.detach().cpu() for p in model.parameters()]


def test_four_threads_train_as_if_alone():
    models = [initial(t) for t in range(THREADS)]
    results = shared.run_in_threads(lambda t: train(t, lt.device, models[t]), THREADS)
    for t in range(THREADS):
        for got, want in zip(results[t], train(t, "cpu", initial(t))):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_threads_moving_modules_at_once_leave_torchs_swap_flag_as_it_was():
    """model.to(lt.device) turns torch's global swap flag on while it converts; threads moving
    their own models at once must not leave it on (an LSTM's load_state_dict then failed:
    "Cannot swap t1 because it has weakref associated with it")."""
    assert torch.__future__.get_swap_module_params_on_conversion() is False

    def move(t):
        for _ in range(30):
            torch.nn.Sequential(*[torch.nn.Linear(2, 2) for _ in range(4)]).to(lt.device)
    shared.run_in_threads(move, 8)
    assert torch.__future__.get_swap_module_params_on_conversion() is False
    lstm = torch.nn.LSTM(4, 6, num_layers=2).to(lt.device)
    lstm.load_state_dict(torch.nn.LSTM(4, 6, num_layers=2).state_dict())
