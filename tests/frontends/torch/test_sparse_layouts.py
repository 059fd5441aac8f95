"""Sparse layouts on lt.device: lazy tensors are dense. nn.Embedding(sparse=True) and
nn.EmbeddingBag(sparse=True) get the dense gradient (with a warning) and train to CPU
torch's numbers with the optimizers that take both layouts; their sparse gradient used to
abort the whole process inside autograd. An op that would make a sparse lazy tensor raises."""
import warnings

import pytest
import torch

import lazyx.frontends.torch as lt

OPTIMIZERS = {"sgd": lambda p: torch.optim.SGD(p, lr=0.5),
              "adagrad": lambda p: torch.optim.Adagrad(p, lr=0.3)}
MODULES = {
    "embedding": (lambda: torch.nn.Embedding(10, 3, sparse=True),
                  lambda m, dev: m(torch.tensor([[1, 4, 1], [7, 1, 0]]).to(dev))),
    "embedding_bag": (lambda: torch.nn.EmbeddingBag(10, 3, mode="sum", sparse=True),
                      lambda m, dev: m(torch.tensor([1, 2, 4, 1, 9]).to(dev),
                                       torch.tensor([0, 2]).to(dev))),
    "embedding_bag_mean": (lambda: torch.nn.EmbeddingBag(10, 3, mode="mean", sparse=True),
                           lambda m, dev: m(torch.tensor([1, 2, 4, 1, 9]).to(dev),
                                            torch.tensor([0, 2]).to(dev))),
}


def _train(module, optimizer, dev):
    torch.manual_seed(0)
    make, call = MODULES[module]
    m = make().to(dev)
    opt = OPTIMIZERS[optimizer](m.parameters())
    for _ in range(3):
        opt.zero_grad()
        call(m, dev).pow(2).sum().backward()
        opt.step()
    return m.weight.detach().cpu(), m.weight.grad


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("module", sorted(MODULES))
def test_sparse_embeddings_train_like_cpu_torch_with_dense_gradients(module, optimizer):
    want, want_grad = _train(module, optimizer, "cpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, got_grad = _train(module, optimizer, lt.device)
    assert want_grad.is_sparse and got_grad.layout == torch.strided
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_grad.cpu(), want_grad.to_dense())
    # (warned once per process: only the first test that gets here sees it)
    assert all("sparse=True" in str(w.message) for w in caught
               if "dense gradient" in str(w.message))


@pytest.mark.parametrize("make", [lambda: torch.ones(3, device=lt.device).to_sparse(),
                                  lambda: torch.eye(2).to_sparse().to(lt.device)],
                         ids=["to_sparse", "move_sparse"])
def test_a_sparse_lazy_tensor_is_refused_clearly(make):
    with pytest.raises(RuntimeError, match="dense .strided. only"):
        make()
